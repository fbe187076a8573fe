// Combining hash values (the boost::hash_combine recipe), for the hash tables keyed by several
// integers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace alpa {

// `h` with `v` mixed in.
inline size_t HashMix(size_t h, uint64_t v) {
  return h ^ (static_cast<size_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

}  // namespace alpa
