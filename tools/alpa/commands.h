// The `alpa` command-line program: one function per subcommand. A thin client of alpa.h.
#pragma once

#include <cstdint>
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
  bool json = false;   // statistics as one JSON object (alpa_graph_stats_to_json)
  std::string output;  // write the graph JSON here instead of printing statistics ("-": stdout)
};
// Statistics of a model or graph file (text or JSON), or its graph JSON with -o.
// Exit code 0, or 1 with the message on stderr.
int RunGraph(const GraphArgs& args);

struct ShardArgs {
  std::string model;           // a model-zoo spec, or
  std::string file;            // a graph JSON file
  std::string mesh;            // "8" or "2x4"
  std::string cluster;         // preset spec ("p3.16xlarge:hosts=2") or cluster JSON file
  std::string alpha, beta;     // comma lists per mesh dim: an abstract mesh
  std::string cost_model;      // "alpa" | "real"; empty: alpa with --alpha/--beta, else real
  std::string zero;            // "" (off), "off", "search", "force"
  bool force_dp = false;       // force data parallelism
  std::string batch_mesh_dim;  // "" (free), "free", "all" or a mesh dim
  bool no_all_gather = false;
  bool no_all_to_all = false;
  std::string memory_budget;  // bytes per device: "16e9", "16GB", "16GiB"; empty: none
  double time_limit_seconds = 0;
  int threads = 0;
  bool json = false;
  bool quiet = false;
};
// Auto-shards a graph on one logical mesh and prints the plan (or one JSON object with --json,
// last line). Exit code: 0 a plan was found, 2 infeasible / none found, 1 bad input (stderr).
int RunShard(const ShardArgs& args);

// The planner options `alpa plan` and `alpa baseline` share.
struct PlannerOptionArgs {
  std::string device_memory;       // bytes per device ("16GiB"); empty: the cluster's
  double intra_op_time_limit = 0;  // <= 0: the library's default
  bool exact = false;              // intra-op solves proven by GLPK
  int threads = 0;
};

struct PlanArgs {
  std::string model;         // a model-zoo spec (default gpt-2.6b when no --file), or
  std::string file;          // a graph JSON file (one microbatch)
  std::string cluster;       // "PRESET:HOSTS", a preset spec or a cluster JSON file
  int64_t microbatches = 0;  // searched unless given
  bool microbatches_given = false;
  int32_t layers = 0;  // layer groups; 0: the graph's layers, at most 16
  std::string remat;   // "", "search", "off", "on"
  PlannerOptionArgs planner;
  std::string output;  // write the detailed plan JSON here
  std::string svg;     // write the timeline of the plan's simulated iteration (1F1B) here
  bool json = false;   // print the summary JSON as the last line
  bool quiet = false;
};
// Plans a model on a cluster (Alpa's two-level search) and prints a readable summary, or one
// JSON object with --json (last line). Exit code: 0 a plan was found, 2 no plan fits the
// device memory, 1 bad input (stderr).
int RunPlan(const PlanArgs& args);

struct BaselineArgs {
  std::string model;    // a model-zoo spec (default gpt-2.6b)
  std::string cluster;  // as PlanArgs::cluster (default p3.16xlarge:2)
  // A manual plan: all three degrees given (each *_given), else the grid search.
  int64_t dp = 0, tp = 0, pp = 0;
  bool dp_given = false, tp_given = false, pp_given = false;
  int64_t microbatches = 0;  // required for a manual plan; fixes B in the search
  bool microbatches_given = false;
  int32_t zero = 0;  // ZeRO stage of a manual plan (0..2)
  bool zero_given = false;
  std::string remat;             // "on" / "off": a manual plan's (default off); fixes the search's
  bool tp_across_hosts = false;  // a manual plan's tensor parallelism across hosts
  PlannerOptionArgs planner;
  int64_t top = 5;     // grid points listed after a search
  std::string output;  // write the detailed plan JSON here
  std::string svg;     // write the timeline of the plan's simulated iteration (1F1B) here
  bool json = false;   // print the summary JSON (with the "baseline" object) as the last line
  bool quiet = false;
};
// The Megatron-LM baseline of a model on a cluster: the grid search over manual 3-D parallel
// configurations (or one manual plan with --dp/--tp/--pp), predicted with the planner's cost
// model, printed as `alpa plan` prints a plan plus the configuration (and the search's grid
// counts and fastest points). Exit code: 0 a plan, 2 nothing fits the device memory, 1 bad
// input (stderr).
int RunBaseline(const BaselineArgs& args);

struct SimulateArgs {
  std::string file;               // a plan JSON file (alpa plan -o / --json)
  std::string schedule = "1f1b";  // or "gpipe"
  std::string svg;                // write the timeline SVG here
  int32_t width = 0;              // SVG width in pixels; 0: the library's default
  bool json = false;              // print alpa_simulation_to_json's object as the last line
};
// Simulates one iteration of a plan and prints the simulated iteration time, the planner's
// prediction and the relative error, and per stage its busy / communication-wait / idle time,
// bubble fraction and peak memory. Exit code 0, or 1 for bad input (stderr).
int RunSimulate(const SimulateArgs& args);

// Lists the model-zoo presets (name, family, nominal size, GPUs) and each family's keys.
int RunModels(bool json);

}  // namespace alpa_cli
