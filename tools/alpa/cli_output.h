// Helpers shared by the `alpa` subcommands: error reporting, number formatting, progress lines
// and whole-file reads and writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "alpa.h"

namespace alpa_cli {

// Prints "alpa: error: MESSAGE" on stderr and returns exit code 1.
int ReportBadInput(const std::string& message);
// The same for a library error (freed here), prefixed with "OPTION: " when `option` is given.
int ReportError(alpa_error* err, const std::string& option = "");
// The C ABI's statuses for a search that ended without an answer (infeasible, time limit,
// cancelled): the commands exit 2 for them.
bool IsNoAnswer(int32_t status);

// The one number formatter of the program: integers below 9e15 in full, other values with
// `significant_digits` digits; inf, -inf, nan.
std::string FormatNumber(double value, int significant_digits);

// A solver progress line, "#    0.012s  phase      objective X  bound Y", its numbers with
// `significant_digits` digits (without the seconds when `with_seconds` is false); flushed, so
// that it shows while the solve runs.
void PrintSolveProgress(const alpa_progress& progress, int significant_digits,
                        bool with_seconds = true);

// x divided by `base` while it stays >= base, with the matching entry of `units` (a list ending
// in nullptr): integers without decimals, scaled values with `decimals` decimals.
// ScaledNumber(354823168, {"", "K", "M", ...}, 1000, 1) = "354.8M".
std::string ScaledNumber(double x, const char* const* units, double base, int decimals);
// Bytes in B, KiB, MiB, ... ("1.50 GiB" with 2 decimals).
std::string Bytes(double bytes, int decimals);

// Seconds with a unit: "12.3 us" below 1 ms, else `decimals` digits in ms or s ("1.234 s");
// "n/a" when not finite.
std::string Seconds(double seconds, int decimals);

// Device ids as runs: "0-7", "0-3,8-11".
std::string DeviceRuns(const std::vector<int64_t>& ids);

// "optimal", "feasible", "infeasible", "cancelled", "invalid_input", "no_solution".
const char* SolveStatusName(int32_t status);

// "16GiB" -> 17179869184, "1e9" -> 1000000000, "512MB" -> 512000000. Suffixes (any case):
// KB MB GB TB are powers of 1000; K M G T, KiB MiB GiB TiB powers of 1024; B is bytes.
bool ParseBytes(const std::string& text, int64_t* out);

// Whether `path` names a file that can be opened for reading.
bool IsFile(const std::string& path);

// What ReadStream checks in the first bytes: nothing, or that they can start a JSON document
// (whitespace, then '{' or '['), so that garbage fails at once instead of after the limit.
enum class StreamContent { kText, kJson };

// Reads the rest of `stream` into `bytes`, in pieces and at most `max_bytes` of them; false, with
// the reason in `reason` (the system's, the limit's, "not JSON: byte 0 is 0x00 ..." or "out of
// memory"), when it cannot.
bool ReadStream(std::FILE* stream, std::string* bytes, int64_t max_bytes, std::string* reason,
                StreamContent content = StreamContent::kText);

// Reads the file `path` into `bytes` as ReadStream does; false, with the reason, when it cannot.
bool ReadFile(const std::string& path, std::string* bytes, int64_t max_bytes, std::string* reason,
              StreamContent content = StreamContent::kText);

// Writes `size` bytes to the file `path` (replacing it); false when it cannot.
bool WriteFile(const std::string& path, const char* data, size_t size);

// ALPA_SCHEDULE_* for a --schedule value ("1f1b", "gpipe", "zb-h1", "interleaved-1f1b"; the
// display names "1F1B", "GPipe", "ZB-H1", "interleaved 1F1B" too); -1 for anything else.
int32_t ScheduleFromName(const std::string& name);

}  // namespace alpa_cli
