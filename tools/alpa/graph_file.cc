// --file with --train, --hlo, the warnings on graphs that lack a backward phase or layer markers,
// and the planning commands' graph file options.
#include "graph_file.h"

#include <cstdint>
#include <cstdio>
#include <set>

#include "cli_output.h"

namespace alpa_cli {

void AddTrainOption(CLI::App* command, std::string* train) {
  command
      ->add_option("--train", *train,
                   "Make the --file forward graph (loss first among its outputs) a training "
                   "step with this optimizer: sgd, momentum or adam[:lr=X,eps=X,...]")
      ->needs(command->get_option("--file"));
}

void AddHloOption(CLI::App* command, std::string* hlo) {
  command
      ->add_option("--hlo", *hlo,
                   "XLA HLO text of a JAX step, as jax.jit(step).lower(...).as_text() prints it "
                   "(donate_argnums marks the weights and optimizer state; docs/hlo-import.md)")
      ->excludes(command->get_option("--model"))
      ->excludes(command->get_option("--file"));
}

int32_t ReadGraphFileForTraining(const std::string& path, const InputLimit& limit,
                                 const std::string& train, alpa_graph** out, alpa_error** err) {
  alpa_graph* forward = nullptr;
  if (int32_t status = ReadGraphFile(path, limit, &forward, err)) return status;
  if (train.empty()) {
    *out = forward;
    return ALPA_OK;
  }
  const int32_t status = alpa_graph_make_training(out, forward, train.c_str(), err);
  alpa_graph_destroy(forward);
  return status;
}

void WarnIncompleteGraph(const alpa_graph* graph, const std::string& path, bool check_layers,
                         bool from_hlo) {
  bool backward = false;
  std::set<int32_t> forward_layers;
  const int64_t ops = alpa_graph_op_count(graph);
  for (int64_t i = 0; i < ops; ++i) {
    const int32_t id = static_cast<int32_t>(i);
    const int32_t phase = alpa_graph_op_phase(graph, id);
    if (phase == ALPA_PHASE_BACKWARD) backward = true;
    const int32_t layer = alpa_graph_op_layer(graph, id);
    if (phase == ALPA_PHASE_FORWARD && layer >= 0) forward_layers.insert(layer);
  }
  if (!backward) {
    std::fprintf(stderr,
                 "warning: %s has no backward phase: the plan misses the gradient "
                 "synchronization and the optimizer's memory and update (%s)\n",
                 path.c_str(),
                 from_hlo ? "lower the whole train step, with donate_argnums for the weights and "
                            "the optimizer state"
                          : "make it a training step with --train adam");
  }
  if (check_layers && forward_layers.size() < 2) {
    std::fprintf(stderr,
                 "warning: %s has no layer markers (its forward ops carry fewer than two distinct "
                 "layers): the planner's clustering cuts the ops into layers by FLOPs, so "
                 "pipeline stages need not end at the model's layers (%s)\n",
                 path.c_str(),
                 from_hlo ? "name each layer's scope layers_N, e.g. jax.named_scope(\"layers_3\")"
                          : "set each op's \"layer\"");
  }
}

void AddPlanGraphFileOptions(CLI::App* command, PlanGraphFileArgs* args) {
  command
      ->add_option("--file", args->file,
                   "Graph JSON file of the global batch (its input parameters hold the batch in "
                   "--batch-dim), planned with the microbatch search like a --model")
      ->excludes(command->get_option("--model"));
  AddTrainOption(command, &args->train);
  AddHloOption(command, &args->hlo);
  args->batch_dim_option =
      command
          ->add_option(
              "--batch-dim", args->batch_dim,
              "With --file or --hlo: the dim of every input parameter that holds the batch "
              "(default 0); -1: the file is one microbatch, run -B times per iteration")
          ->check(CLI::Range(-1, 1 << 20));
  AddInputLimitOption(command, &args->limit);
}

const std::string& PlanGraphFilePath(const PlanGraphFileArgs& args) {
  return args.hlo.empty() ? args.file : args.hlo;
}

int CheckPlanGraphFileArgs(const PlanGraphFileArgs& args) {
  if (args.batch_dim_option != nullptr && args.batch_dim_option->count() > 0 && args.file.empty() &&
      args.hlo.empty()) {
    return ReportBadInput("--batch-dim requires --file or --hlo");
  }
  return 0;
}

int LoadPlanGraphFile(const PlanGraphFileArgs& args, alpa_plan_options* options, alpa_graph** out) {
  alpa_error* err = nullptr;
  if (alpa_plan_options_set_int(options, ALPA_PLAN_OPT_GRAPH_BATCH_DIM, args.batch_dim, &err) !=
      ALPA_OK) {
    return ReportError(err, "--batch-dim");
  }
  if (!args.hlo.empty()) {
    if (alpa_graph_read_hlo_file(out, args.hlo.c_str(), &err) != ALPA_OK) {
      return ReportError(err, "--hlo");
    }
    WarnIncompleteGraph(*out, args.hlo, true, /*from_hlo=*/true);
    return 0;
  }
  if (ReadGraphFileForTraining(args.file, args.limit, args.train, out, &err) != ALPA_OK) {
    return ReportError(err, "--file");
  }
  WarnIncompleteGraph(*out, args.file, true);
  return 0;
}

}  // namespace alpa_cli
