// 128-bit integers for exact sums of int64 values (memory totals, integer cost sums).
#pragma once

#include <cstdint>
#include <limits>

namespace alpa {

__extension__ typedef __int128 Int128;  // NOLINT: GCC/Clang extension, -Wpedantic safe

// `value` clamped into int64_t: a byte or cost total past the range saturates instead of wrapping.
inline int64_t ClampToInt64(Int128 value) {
  if (value > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (value < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

}  // namespace alpa
