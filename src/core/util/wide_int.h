// 128-bit integers for exact sums of int64 values (memory totals, integer cost sums).
#pragma once

namespace alpa {

__extension__ typedef __int128 Int128;  // NOLINT: GCC/Clang extension, -Wpedantic safe

}  // namespace alpa
