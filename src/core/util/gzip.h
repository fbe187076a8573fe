// gzip detection and inflation for problem files (.json.gz): the format is recognised by its
// magic bytes, never by a file name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace alpa {

// Decompression bombs: a few KiB of deflate can expand a thousandfold, so the output is capped.
inline constexpr uint64_t kMaxInflatedBytes = uint64_t{4} << 30;  // 4 GiB

// True when `bytes` starts with the gzip magic number 1f 8b.
bool IsGzip(std::string_view bytes);

// Inflates a gzip stream (several concatenated members are read one after the other, as gzip
// itself does). Corrupt or truncated input gives kParse; output beyond `max_bytes` gives kParse
// naming the limit.
Result<std::string> Gunzip(std::string_view bytes, uint64_t max_bytes = kMaxInflatedBytes);

}  // namespace alpa
