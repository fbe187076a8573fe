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

struct GraphArgs {
  std::string model;   // a model-zoo spec, or
  std::string file;    // a graph JSON file
  bool json = false;   // statistics as one JSON object (alpa_graph_stats_json)
  std::string output;  // write the graph JSON here instead of printing statistics ("-": stdout)
};
// Statistics of a model or graph file (text or JSON), or its graph JSON with -o.
// Exit code 0, or 1 with the message on stderr.
int RunGraph(const GraphArgs& args);

// Lists the model-zoo presets (name, family, nominal size, GPUs) and each family's keys.
int RunModels(bool json);

}  // namespace alpa_cli
