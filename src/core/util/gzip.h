// gzip detection and inflation for problem files (.json.gz): the format is recognised by its
// magic bytes, never by a file name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/bounded_input.h"
#include "core/util/status.h"

namespace alpa {

// True when `bytes` starts with the gzip magic number 1f 8b.
bool IsGzip(std::string_view bytes);

// Inflates a gzip stream (several concatenated members are read one after the other, as gzip
// itself does). Corrupt or truncated input gives kParse; output beyond `max_bytes` gives kParse
// naming the limit and how to raise it. Decompression bombs: a few KiB of deflate can expand a
// thousandfold, so the output is counted against the limit before any of it is kept; the result
// is allocated once at its exact size.
Result<std::string> Gunzip(std::string_view bytes, uint64_t max_bytes = kDefaultMaxInputBytes);

// kParse "gzip: inflated data exceeds the limit of <max_bytes> bytes (decompression bomb?); ...".
Status InflatedLimitError(uint64_t max_bytes);

}  // namespace alpa
