// Graph files for `alpa graph`, `alpa plan`, `alpa baseline` and `alpa shard`: --file, optionally
// made a training step with --train OPTIMIZER (alpa_graph_make_training), the warnings on a graph
// that is planned as it is although it lacks what a plan needs, and the planning commands' batch
// semantics (--batch-dim: the file holds the global batch, split into microbatches).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "alpa.h"
#include "input_limit.h"

namespace alpa_cli {

// Adds --train OPTIMIZER (an optimizer spec: "adam", "sgd:lr=0.1", ...) to `command`; it needs
// the command's --file option.
void AddTrainOption(CLI::App* command, std::string* train);

// Adds --hlo FILE (XLA HLO text, imported by alpa_graph_read_hlo_file; docs/hlo-import.md) to
// `command`, excluding its --model and --file options.
void AddHloOption(CLI::App* command, std::string* hlo);

// Reads the graph file `path` under `limit` and, when `train` is not empty, replaces it by its
// training step with that optimizer. The C ABI's status (*err set as it sets it); on ALPA_OK the
// caller frees *out with alpa_graph_destroy.
int32_t ReadGraphFileForTraining(const std::string& path, const InputLimit& limit,
                                 const std::string& train, alpa_graph** out, alpa_error** err);

// What a plan of `graph` (read from `path`) will miss, one "warning: ..." line each on stderr:
// without a backward phase, gradient synchronization and the optimizer's memory and update; with
// `check_layers`, without two distinct layer markers among the forward ops, stages cut where the
// planner's clustering puts them rather than between the model's own layers. The library's
// outputs are unchanged.
// `from_hlo`: the hints speak of the JAX step rather than of the graph file.
void WarnIncompleteGraph(const alpa_graph* graph, const std::string& path, bool check_layers,
                         bool from_hlo = false);

// The graph file of a planning command (`alpa plan`, `alpa baseline`).
struct PlanGraphFileArgs {
  std::string file;   // empty: the command plans --model (or --hlo)
  std::string hlo;    // --hlo: XLA HLO text of a JAX step
  std::string train;  // --train OPTIMIZER
  InputLimit limit;   // --max-input-bytes
  int32_t batch_dim =
      0;  // the inputs' batch dim (ALPA_PLAN_OPT_GRAPH_BATCH_DIM); -1: one microbatch
  const CLI::Option* batch_dim_option = nullptr;  // set by AddPlanGraphFileOptions
};

// Adds --file (excluding --model, which the command must have), --train, --hlo, --batch-dim and
// --max-input-bytes to `command`.
void AddPlanGraphFileOptions(CLI::App* command, PlanGraphFileArgs* args);

// The file a planning command reads its graph from (--hlo or --file); empty when it plans
// --model.
const std::string& PlanGraphFilePath(const PlanGraphFileArgs& args);

// 0, or the exit code after the error (stderr) when --batch-dim was given without --file or --hlo.
int CheckPlanGraphFileArgs(const PlanGraphFileArgs& args);

// Reads args.hlo or args.file (a training step with --train), prints WarnIncompleteGraph's
// warnings and sets
// ALPA_PLAN_OPT_GRAPH_BATCH_DIM on `options`: 0, or the exit code after the error (stderr). The
// caller frees *out with alpa_graph_destroy.
int LoadPlanGraphFile(const PlanGraphFileArgs& args, alpa_plan_options* options, alpa_graph** out);

}  // namespace alpa_cli
