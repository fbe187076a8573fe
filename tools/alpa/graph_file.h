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
void WarnIncompleteGraph(const alpa_graph* graph, const std::string& path, bool check_layers);

// The graph file of a planning command (`alpa plan`, `alpa baseline`).
struct PlanGraphFileArgs {
  std::string file;   // empty: the command plans --model
  std::string train;  // --train OPTIMIZER
  InputLimit limit;   // --max-input-bytes
  int32_t batch_dim =
      0;  // the inputs' batch dim (ALPA_PLAN_OPT_GRAPH_BATCH_DIM); -1: one microbatch
};

// Adds --file (excluding --model, which the command must have), --train, --batch-dim and
// --max-input-bytes to `command`.
void AddPlanGraphFileOptions(CLI::App* command, PlanGraphFileArgs* args);

// Reads args.file (a training step with --train), prints WarnIncompleteGraph's warnings and sets
// ALPA_PLAN_OPT_GRAPH_BATCH_DIM on `options`: 0, or the exit code after the error (stderr). The
// caller frees *out with alpa_graph_destroy.
int LoadPlanGraphFile(const PlanGraphFileArgs& args, alpa_plan_options* options, alpa_graph** out);

}  // namespace alpa_cli
