// --max-input-bytes, shared by the commands that read files (solve, evaluate, graph, shard,
// plan, simulate): the most bytes of decoded input (after gzip inflation) one file may hold, the
// library's ALPA_OPT_MAX_INPUT_BYTES. Files the CLI reads itself (plans, assignments) are held to
// the same limit.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "alpa.h"

namespace alpa_cli {

// The default, as the library's: 1 GiB.
inline constexpr int64_t kDefaultMaxInputBytes = int64_t{1} << 30;

// The flag's value ("1GiB", "5e9", "300MB": ParseBytes), checked when the command line is
// parsed (a usage error, exit 1, otherwise).
struct InputLimit {
  int64_t bytes = kDefaultMaxInputBytes;
};

// Adds --max-input-bytes to `command`.
void AddInputLimitOption(CLI::App* command, InputLimit* limit);

// Solve options that carry only the limit, for alpa_*_read_file_with_options: 0, or the exit
// code after the error. The caller frees *out with alpa_solve_options_destroy.
int MakeReadOptions(const InputLimit& limit, alpa_solve_options** out);

// alpa_graph_read_file_with_options under the limit: the C ABI's status (*err set as it sets it).
int32_t ReadGraphFile(const std::string& path, const InputLimit& limit, alpa_graph** out,
                      alpa_error** err);

// The message of a file over the limit: "input exceeds the limit of N bytes; raise it with
// --max-input-bytes".
std::string InputLimitMessage(int64_t max_bytes);

}  // namespace alpa_cli
