// Input with a bound on its decoded size, shared by the file readers (problems, graphs, plans,
// clusters). A hostile or careless input must cost memory and time in proportion to what a
// caller allowed, not to what the file claims: files are read in pieces up to the limit, gzip
// is inflated against the same limit, and a file that cannot be JSON is refused after its
// first bytes instead of after it has been read whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace alpa {

// The default limit on the decoded bytes of one input (after gzip inflation): 1 GiB, far above
// the largest real problem or graph and far below what its parsed form would cost a machine.
inline constexpr uint64_t kDefaultMaxInputBytes = uint64_t{1} << 30;

// How a caller raises the limit; every limit error ends with it.
inline constexpr const char* kRaiseInputLimitHint =
    "raise the limit with the max_input_bytes option (ALPA_OPT_MAX_INPUT_BYTES; CLI: "
    "--max-input-bytes)";

// kParse "input exceeds the limit of <max_bytes> bytes (<e.g. 1 GiB>); <hint>".
Status InputLimitError(uint64_t max_bytes);

// Whether `head` (the first bytes of an input) can start a JSON document as the readers accept
// it: optional whitespace (and a UTF-8 byte order mark), then '{' or '['. An all-whitespace head
// passes (the rest decides). kParse "not JSON: byte <i> is 0x<hh> (a JSON document starts with
// '{' or '[')" otherwise.
Status SniffJson(std::string_view head);

// What ReadFileBytes checks before it reads a whole file.
enum class FileContent {
  kAny,         // any bytes (the size limit still applies)
  kJsonOrGzip,  // JSON text (sniffed) or gzip (inflated later against the same limit)
};

// The bytes of the file at `path`, read in binary mode and in pieces, at most `max_bytes` of
// them (a regular file larger than that is refused before reading). With kJsonOrGzip the first
// bytes are checked (SniffJson) before the rest is read. kIo "cannot open <path>: <reason>" or
// "cannot read <path>: <reason>"; kParse from SniffJson or InputLimitError (not prefixed by the
// path: callers add it); kOutOfMemory "out of memory while reading <path>".
Result<std::string> ReadFileBytes(const std::string& path,
                                  uint64_t max_bytes = kDefaultMaxInputBytes,
                                  FileContent content = FileContent::kAny);

// The decoded text of input bytes: gzip is inflated (at most `max_bytes` of output), plain text
// is checked against `max_bytes` and sniffed. `storage` keeps the inflated text; the result views
// either it or `bytes`.
Result<std::string_view> DecodeJsonInput(std::string_view bytes, uint64_t max_bytes,
                                         std::string* storage);

}  // namespace alpa
