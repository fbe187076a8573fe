// The `alpa` command-line program: one function per subcommand. A thin client of alpa.h.
#pragma once

#include <string>

namespace alpa_cli {

struct SolveArgs {
  std::string file;            // empty: the embedded default problem
  double timeout_seconds = 0;  // <= 0: no limit
  bool json = false;
  bool deterministic = false;
  int threads = 0;
  double relative_gap = 0;
  bool quiet = false;  // no progress lines
};

// Prints progress lines and, last, the assignment (or one JSON object with --json).
// Exit code: 0 an assignment was found, 2 infeasible / none found, 1 error (message on stderr).
int RunSolve(const SolveArgs& args);

// Prints the cost, or the violated constraint and exit code 1.
int RunEvaluate(const std::string& file, const std::string& assignment);

}  // namespace alpa_cli
