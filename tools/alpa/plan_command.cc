// `alpa plan`: Alpa's two-level search on a model and a cluster, printed as a readable summary
// (stages, submeshes, logical meshes, how each stage shards, predicted iteration time,
// throughput, memory, compile time) or as JSON. Run without arguments, it is the main job.
#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alpa.h"
#include "cli_output.h"
#include "commands.h"
#include "global_batch.h"
#include "graph_file.h"
#include "plan_output.h"
#include "run_command.h"

namespace alpa_cli {
namespace {

struct PlanArgs {
  std::string model;         // a model-zoo spec (default gpt-2.6b when no --file), or
  PlanGraphFileArgs graph;   // a graph JSON file (--file, --train, --batch-dim) or --hlo
  std::string cluster;       // "PRESET:HOSTS", a preset spec or a cluster JSON file
  int64_t microbatches = 0;  // searched unless given
  bool microbatches_given = false;
  std::string global_batch;   // "256,512,1024": searched over these (global_batch.h)
  int32_t layers = 0;         // layer groups; 0: the graph's layers, at most DefaultLayerGroupCap
  std::string remat;          // "", "search", "off", "on", "selective"
  std::string zero2;          // "", "search", "off"
  std::string zero3;          // "", "search", "off"
  std::string zero_bubble;    // "", "search", "off"
  std::string interleave;     // "", "search", "off"
  std::string nic_placement;  // "", "search", "off"
  // Pins (0 / false: searched): exact stage count, tensor-parallel cap, tp inside hosts.
  int64_t pipeline_stages = 0, max_tensor_parallel = 0;
  bool no_tp_across_hosts = false;
  std::optional<double> tp_across_hosts_margin;  // none: the library's default
  PlannerOptionArgs planner;
  double time_limit = 0;  // seconds for the whole search; 0: none
  std::string output;     // write the executable plan JSON here
  std::string svg;        // write the timeline of the plan's simulated iteration here
  bool json = false;      // print the summary JSON as the last line
  bool quiet = false;
  bool deterministic = false;  // print no clock readings: every run's output is the same
  RunArgs run{0};              // --run N: train the plan for N steps once it is made (run.steps)
};

// Exit code: 0 a plan was found, 2 no plan fits the device memory, 1 bad input (stderr).
int RunPlan(const PlanArgs& args) {
  if (int code = CheckPlanGraphFileArgs(args.graph)) return code;
  PlanHandles handles;
  alpa_error* err = nullptr;
  const std::string& graph_file = PlanGraphFilePath(args.graph);
  const std::string model =
      graph_file.empty() && args.model.empty() ? kDefaultPlanModel : args.model;
  const std::string cluster_text = args.cluster.empty() ? kDefaultPlanCluster : args.cluster;
  if (int rc = MakePlanCluster(cluster_text, args.planner.calibration, &handles.cluster)) return rc;

  if (alpa_plan_options_create(&handles.options, &err) != ALPA_OK) return ReportError(err);
  auto set_int = [&](int32_t key, int64_t value, const char* option) {
    return alpa_plan_options_set_int(handles.options, key, value, &err) == ALPA_OK
               ? 0
               : ReportError(err, option);
  };
  if (args.deterministic && (args.time_limit > 0 || args.planner.exact)) {
    return ReportBadInput(std::string("--deterministic: not with ") +
                          (args.time_limit > 0 ? "--time-limit" : "--exact") +
                          ", whose result depends on the clock (bound the work with "
                          "--max-intra-op-solves instead)");
  }
  std::vector<int64_t> global_batches;
  if (!args.global_batch.empty()) {
    std::string error;
    if (!graph_file.empty()) {
      return ReportBadInput(
          "--global-batch: only with --model (a graph file's batch is its "
          "inputs')");
    }
    if (!ParseGlobalBatches(args.global_batch, &global_batches, &error)) {
      return ReportBadInput("--global-batch: " + error);
    }
  }
  if (args.microbatches_given && args.microbatches < 1) {
    return ReportBadInput("--microbatches: must be >= 1 (got " + std::to_string(args.microbatches) +
                          "; leave it out to search)");
  }
  if (args.microbatches > 0) {
    if (int rc = set_int(ALPA_PLAN_OPT_MICROBATCHES, args.microbatches, "--microbatches")) {
      return rc;
    }
  }
  if (int rc = set_int(ALPA_PLAN_OPT_NUM_LAYERS, args.layers, "--layers")) return rc;
  if (int rc = set_int(ALPA_PLAN_OPT_PIPELINE_STAGES, args.pipeline_stages, "--pp")) return rc;
  if (int rc = set_int(ALPA_PLAN_OPT_MAX_TENSOR_PARALLEL, args.max_tensor_parallel, "--max-tp")) {
    return rc;
  }
  if (args.no_tp_across_hosts) {
    if (int rc = set_int(ALPA_PLAN_OPT_TENSOR_PARALLEL_INSIDE_HOST, 1, "--no-tp-across-hosts")) {
      return rc;
    }
  }
  if (args.tp_across_hosts_margin &&
      alpa_plan_options_set_double(handles.options,
                                   ALPA_PLAN_OPT_TENSOR_PARALLEL_ACROSS_HOSTS_MARGIN,
                                   *args.tp_across_hosts_margin, &err) != ALPA_OK) {
    return ReportError(err, "--tp-across-hosts-margin");
  }
  if (!args.remat.empty() && alpa_plan_options_set_by_name(handles.options, "remat",
                                                           args.remat.c_str(), &err) != ALPA_OK) {
    return ReportError(err, "--remat");
  }
  if (!args.zero2.empty() && alpa_plan_options_set_by_name(handles.options, "zero2",
                                                           args.zero2.c_str(), &err) != ALPA_OK) {
    return ReportError(err, "--zero2");
  }
  if (!args.zero3.empty() && alpa_plan_options_set_by_name(handles.options, "zero3",
                                                           args.zero3.c_str(), &err) != ALPA_OK) {
    return ReportError(err, "--zero3");
  }
  if (!args.zero_bubble.empty() &&
      alpa_plan_options_set_by_name(handles.options, "zero_bubble", args.zero_bubble.c_str(),
                                    &err) != ALPA_OK) {
    return ReportError(err, "--zero-bubble");
  }
  if (!args.interleave.empty() &&
      alpa_plan_options_set_by_name(handles.options, "interleave", args.interleave.c_str(), &err) !=
          ALPA_OK) {
    return ReportError(err, "--interleave");
  }
  if (!args.nic_placement.empty() &&
      alpa_plan_options_set_by_name(handles.options, "nic_placement", args.nic_placement.c_str(),
                                    &err) != ALPA_OK) {
    return ReportError(err, "--nic-placement");
  }
  if (int rc = SetPlannerOptions(handles.options, args.planner)) return rc;
  if (alpa_plan_options_set_double(handles.options, ALPA_PLAN_OPT_TIME_LIMIT_SECONDS,
                                   args.time_limit, &err) != ALPA_OK) {
    return ReportError(err, "--time-limit");
  }
  if (!args.quiet && !args.json && !args.deterministic) {
    alpa_plan_options_set_progress(handles.options, PrintPlanProgress, nullptr, nullptr);
  }

  const std::string& what = graph_file.empty() ? model : graph_file;
  if (!args.json && !args.quiet && !args.deterministic)
    PrintPlanHeader("planning", what, handles.cluster);
  int32_t rc;
  if (!global_batches.empty()) {
    std::string chosen;
    if (int code = PlanGlobalBatches(model, global_batches, handles.cluster, handles.options,
                                     args.json || args.quiet, &handles.plan, &chosen)) {
      return code;
    }
    rc = ALPA_OK;
  } else if (graph_file.empty()) {
    rc = alpa_model_plan(&handles.plan, model.c_str(), handles.cluster, handles.options, &err);
  } else {
    if (int code = LoadPlanGraphFile(args.graph, handles.options, &handles.graph)) return code;
    rc = alpa_graph_plan(&handles.plan, handles.graph, handles.cluster, handles.options, &err);
  }
  if (rc != ALPA_OK) return ReportPlanFailure(rc, err);

  const ClockReadings clock = args.deterministic ? ClockReadings::kOmit : ClockReadings::kPrint;
  if (int code = WritePlanFiles(handles.plan, args.output, args.svg, clock)) return code;
  if (args.json) {
    const int code = PrintPlanJson(handles.plan, clock);
    return code != 0 || args.run.steps == 0 ? code : RunPlanSteps(handles.plan, args.run);
  }
  PrintPlanSummary(handles.plan, handles.cluster, args.deterministic ? "" : "compile time");
  PrintWrote(args.output, args.svg);
  if (args.run.steps > 0) {
    std::printf("\n");
    return RunPlanSteps(handles.plan, args.run);
  }
  return 0;
}

}  // namespace

Command AddPlanCommand(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* plan = app.add_subcommand(
      "plan", "Plan pipeline stages and their sharding on a cluster (the default job)");
  plan->add_option("--model", args->model, "Model-zoo spec or preset (default gpt-2.6b)");
  AddPlanGraphFileOptions(plan, &args->graph);
  plan->add_option("--cluster", args->cluster,
                   "PRESET:HOSTS, a preset spec (p3.16xlarge:hosts=8; specs joined by '+' for "
                   "mixed GPU types: dgx-a100-80g:hosts=2+p3.16xlarge:hosts=2) or a cluster JSON "
                   "file (default p3.16xlarge:2)");
  CLI::Option* microbatches = plan->add_option(
      "--microbatches,-B", args->microbatches,
      "Microbatches (default: searched over the batch's divisors near powers of two)");
  plan->add_option("--global-batch", args->global_batch,
                   "Global batches the user allows, e.g. 256,512,1024 (--model only): the model "
                   "planned at each, the plan of the most samples per second kept (default: the "
                   "spec's batch)");
  plan->add_option("--layers", args->layers,
                   "Layer groups (default: the graph's, at most 16, or hosts / 6 up to 64 beyond "
                   "96 hosts; twice that on a mixed cluster)")
      ->check(CLI::Range(0, 1 << 20));
  plan->add_option("--remat", args->remat,
                   "Recomputation per stage: search (default), off, on (full) or selective (the "
                   "attention cores)");
  plan->add_option("--zero2", args->zero2,
                   "ZeRO-2 (gradients reduce-scattered every microbatch, held as shards) as a "
                   "stage option where it lets a stage fit: search (default) or off");
  plan->add_option("--zero3", args->zero3,
                   "ZeRO-3 (a weight held as shards over the data-parallel devices, gathered where "
                   "read every microbatch) as a per-weight choice of the intra-op solves under "
                   "memory pressure: search (default) or off");
  plan->add_option("--zero-bubble", args->zero_bubble,
                   "The zero-bubble schedule ZB-H1 (backward split into input and weight "
                   "gradients) where every stage fits it and it is predicted faster than 1F1B: "
                   "search or off (default)");
  plan->add_option("--interleave", args->interleave,
                   "Interleaved 1F1B (each device group runs 2-8 stages, the bubble shrinking by "
                   "that factor for more transfers and more microbatches in flight) where every "
                   "group fits and it is predicted faster: search or off (default)");
  plan->add_option("--nic-placement", args->nic_placement,
                   "Where a cluster file says which GPUs sit next to the NICs (nic_locality): the "
                   "stages that talk across hosts moved onto them where predicted faster: search "
                   "(default) or off");
  plan->add_option("--pp", args->pipeline_stages,
                   "Pin: exactly this many pipeline stages (default 0: searched)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  plan->add_option("--max-tp", args->max_tensor_parallel,
                   "Pin: tensor-parallel degree per stage at most this (default 0: no limit)")
      ->check(CLI::NonNegativeNumber);
  plan->add_flag("--no-tp-across-hosts", args->no_tp_across_hosts,
                 "Pin: tensor parallelism stays inside a host (stages spanning hosts split the "
                 "batch across them)");
  plan->add_option("--tp-across-hosts-margin", args->tp_across_hosts_margin,
                   "Tensor parallelism across hosts only where predicted this fraction faster "
                   "than the best plan keeping it inside hosts (default 0.05; 0: the faster wins; "
                   "inf: inside hosts wherever a plan fits)");
  AddPlannerOptions(plan, &args->planner);
  plan->add_option("--time-limit", args->time_limit,
                   "Seconds for the whole search; when they run out, the best plan found so far "
                   "(exit 1 with a timeout when there is none yet; default 0: no limit)");
  plan->add_option("-o,--output", args->output,
                   "Write the executable plan JSON (docs/planner.md) to this file");
  plan->add_option("--svg", args->svg,
                   "Write the timeline of the plan's simulated iteration (SVG) to this file");
  plan->add_flag("--json", args->json, "Print the plan summary as one JSON object (last line)");
  plan->add_flag("-q,--quiet", args->quiet, "No progress lines");
  plan->add_flag(
      "--deterministic", args->deterministic,
      "Print and write no clock readings (compile times, progress), so that every "
      "run's output is byte-identical; not with --time-limit or --exact, whose plans depend on the "
      "clock");
  plan->add_option("--run", args->run.steps,
                   "Then train the plan for this many steps on CPU devices (alpa run)");
  plan->add_option("--seed", args->run.seed, "With --run: seed of the synthetic data");
  plan->add_flag("--check", args->run.check, "With --run: compare with one device");
  return {plan, [args, microbatches] {
            args->microbatches_given = microbatches->count() > 0;
            return RunPlan(*args);
          }};
}

}  // namespace alpa_cli
