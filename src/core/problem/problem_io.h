// Readers and writers of sharding problems:
//   - the IOPDDL contest JSON (REFERENCE §2), plain or gzip-compressed;
//   - Alpa's serialized solver arrays as JSON: {"format": "alpa", "N", "M", "s_len", "s_follow",
//     "E", "A", "L", "c", "d", "m", "r", "v"} (node cost = c + d, M <= 0: no memory limit, live
//     sets per time step from L, v[i] == 1 marks a forbidden alias combination). An optional
//     "infinity" (default 1e13, Alpa's) gives the cost at or above which a choice is forbidden;
//     the writer sets it to 1e18 so that round trips are exact.
// Every error names the offending element (e.g. "nodes.costs[12]: expected an array").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/problem/sharding_problem.h"
#include "core/util/bounded_input.h"
#include "core/util/status.h"

namespace alpa {

enum class ProblemFormat : int32_t { kAuto = 0, kIopddl = 1, kAlpa = 2 };

// Parses bytes (gzip is detected by its magic number and inflated). kAuto picks Alpa when the
// top-level object has "format": "alpa", else IOPDDL. The result is validated (ValidateProblem).
// The decoded text may hold at most `max_input_bytes` (core/util/bounded_input.h); parsing costs
// a bounded multiple of the text (core/util/json_document.h), and running out of memory is
// kOutOfMemory, never an abort.
Result<ShardingProblem> ReadProblemBuffer(std::string_view bytes,
                                          ProblemFormat format = ProblemFormat::kAuto,
                                          uint64_t max_input_bytes = kDefaultMaxInputBytes);
// The same from a file, read in pieces: a file that does not start like JSON or gzip fails after
// its first bytes, one larger than the limit before it is read. Messages start with the path.
Result<ShardingProblem> ReadProblemFile(const std::string& path,
                                        ProblemFormat format = ProblemFormat::kAuto,
                                        uint64_t max_input_bytes = kDefaultMaxInputBytes);
// The same from an already parsed JSON value (used by the one-shot JSON API).
Result<ShardingProblem> ProblemFromJson(const nlohmann::json& json,
                                        ProblemFormat format = ProblemFormat::kAuto);

// Serializes a valid problem. IOPDDL cannot express followers, aliases or explicit live sets:
// writing such a problem as IOPDDL returns kUnsupported. Alpa has no intervals: the writer turns
// them into live sets, one per time step when the largest hi is at most N, else only the maximal
// sets (those contained in no other), which imply the same memory rows and never number more
// than N. Explicit live sets with more than N steps return kUnsupported.
Result<std::string> WriteProblem(const ShardingProblem& problem, ProblemFormat format);

// Parses an assignment written as IOPDDL prints it: "[0, 0, 2, 1, 0]".
Result<std::vector<int32_t>> ParseAssignment(std::string_view text);
// Prints an assignment as IOPDDL expects it: "[0, 0, 2, 1, 0]" ("[]" when empty).
std::string FormatAssignment(const std::vector<int32_t>& assignment);

}  // namespace alpa
