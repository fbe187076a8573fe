// The `alpa` command-line program's command table: each <name>_command.cc registers its
// subcommand, its arguments and its options on the app and returns how to run it once parsed.
// A thin client of alpa.h.
#pragma once

#include <functional>
#include <string>

#include "input_limit.h"

namespace CLI {
class App;
}  // namespace CLI

namespace alpa_cli {

// A registered subcommand. `run` reads the parsed arguments (it owns their storage) and returns
// the process exit code: 0 success, 2 no answer (infeasible, nothing fits), 1 bad input (the
// message on stderr names the offending element).
struct Command {
  CLI::App* subcommand = nullptr;
  std::function<int()> run;
};

// `alpa solve FILE [TIMEOUT]`: solves a sharding problem; prints progress lines and, last, the
// assignment (or one JSON object with --json); -o also writes the assignment to a file.
Command AddSolveCommand(CLI::App& app);

// `alpa evaluate FILE ASSIGNMENT|@FILE|-`: the cost of an assignment, or the violated constraint.
Command AddEvaluateCommand(CLI::App& app);

// `alpa graph`: statistics of a model or graph file (text or JSON), or its graph JSON with -o.
Command AddGraphCommand(CLI::App& app);

// `alpa models`: the model-zoo presets (name, family, nominal size, GPUs) and each family's keys.
Command AddModelsCommand(CLI::App& app);

// `alpa shard`: auto-shards a graph on one logical mesh and prints the plan.
Command AddShardCommand(CLI::App& app);

// `alpa plan`: Alpa's two-level search on a model and a cluster. Run without arguments, it is
// the main job (`alpa` alone).
Command AddPlanCommand(CLI::App& app);

// `alpa baseline`: the Megatron-LM grid search, or one manual dp x tp x pp plan.
Command AddBaselineCommand(CLI::App& app);

// `alpa simulate PLAN.json`: one simulated iteration of a plan next to the planner's prediction.
Command AddSimulateCommand(CLI::App& app);

// `alpa run PLAN.json`: trains a plan for some steps on CPU devices (threads or MPI processes).
Command AddRunCommand(CLI::App& app);

// `alpa calibrate [--out FILE] [--quick]`: measures the GPU and writes the calibration file.
Command AddCalibrateCommand(CLI::App& app);

// `alpa compile PLAN.json`: prints the device programs a plan lowers to.
Command AddCompileCommand(CLI::App& app);

// --model SPEC or --file graph.json, not both: the graph `alpa graph` and `alpa shard` work on;
// with --max-input-bytes for the file.
void AddGraphSourceOptions(CLI::App* command, std::string* model, std::string* file,
                           InputLimit* limit);

}  // namespace alpa_cli
