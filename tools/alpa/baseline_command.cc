// `alpa baseline`: the Megatron-LM baseline (alpa_model_plan_baseline: the grid search over manual
// data / tensor / pipeline parallel configurations) or one manual plan (alpa_model_plan_manual with
// --dp/--tp/--pp) of a zoo model or, with --file, of a graph file (alpa_graph_plan_baseline /
// alpa_graph_plan_manual, the file loaded as `alpa plan --file` loads it), printed as `alpa plan`
// prints a plan, plus the configuration and, for the search, its grid counts and fastest points.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "alpa_experimental.h"
#include "cli_output.h"
#include "commands.h"
#include "graph_file.h"
#include "plan_output.h"

namespace alpa_cli {
namespace {

struct BaselineArgs {
  std::string model;        // a model-zoo spec (default gpt-2.6b when no --file), or
  PlanGraphFileArgs graph;  // a graph JSON file (--file, --train, --batch-dim)
  std::string cluster;      // as `alpa plan --cluster` (default p3.16xlarge:2)
  // A manual plan: all three degrees given (each *_given), else the grid search.
  int64_t dp = 0, tp = 0, pp = 0;
  bool dp_given = false, tp_given = false, pp_given = false;
  int64_t microbatches = 0;  // required for a manual plan; fixes B in the search
  bool microbatches_given = false;
  int32_t zero = 0;  // ZeRO stage of a manual plan (0 to 3)
  bool zero_given = false;
  int32_t max_zero = 3;     // the search's highest ZeRO stage (1 to 3)
  std::string zero_bubble;  // "", "search", "off": ZB-H1 where it fits and pays (plan option)
  std::string interleave;   // "", "search", "off": the grid tries 2-4 stages per device group
  bool max_zero_given = false;
  std::string remat;             // "on" / "off": a manual plan's (default off); fixes the search's
  bool tp_across_hosts = false;  // a manual plan's tensor parallelism across hosts
  int32_t virtual_stages = 1;    // a manual plan's stages per device group (interleaved 1F1B)
  bool virtual_stages_given = false;
  PlannerOptionArgs planner;
  int64_t top = 5;     // grid points listed after a search
  std::string output;  // write the executable plan JSON here
  std::string svg;     // write the timeline of the plan's simulated iteration (1F1B) here
  bool json = false;   // print the summary JSON (with the "baseline" object) as the last line
  bool quiet = false;
  // "megatron" / "deepspeed": also print the plan's launch configuration (alone with -q).
  std::string launch;
};

// The library's words for a manual plan's remat: 0 off, 1 on (full), 2 selective.
std::string RematWord(int32_t remat) {
  return remat == 2 ? "selective" : remat == 1 ? "on" : "off";
}

// " vp=2" for a configuration with virtual pipeline stages (alpa_manual_plan version 2); ""
// otherwise, and for a grid point (the grid runs one stage per device group).
std::string VirtualStagesText(const alpa_manual_plan& config) {
  const bool has = config.version >= 2 && config.struct_size >= sizeof(alpa_manual_plan);
  return has && config.virtual_stages > 1 ? " vp=" + std::to_string(config.virtual_stages) : "";
}
std::string VirtualStagesText(const alpa_baseline_point&) { return ""; }

// "dp=2 tp=4 pp=2 B=256 zero=1 remat=off" (plus " vp=2" and " tp-across-hosts"), as the
// library's messages write a configuration; T is alpa_manual_plan or alpa_baseline_point.
template <typename T>
std::string ConfigString(const T& config) {
  std::string text = "dp=" + std::to_string(config.data_parallel) +
                     " tp=" + std::to_string(config.tensor_parallel) +
                     " pp=" + std::to_string(config.pipeline_parallel) +
                     " B=" + std::to_string(config.microbatches) +
                     " zero=" + std::to_string(config.zero_stage) +
                     " remat=" + RematWord(config.remat) + VirtualStagesText(config);
  if (config.tensor_inside_host == 0) text += " tp-across-hosts";
  return text;
}

// The search's grid counts and its `top` fastest points.
void PrintGrid(const alpa_plan* plan, int64_t top) {
  const int64_t evaluated = alpa_plan_baseline_evaluated(plan);
  std::printf(
      "grid                      %lld points evaluated, %lld fit the device memory, %lld "
      "pruned\n",
      static_cast<long long>(evaluated), static_cast<long long>(alpa_plan_baseline_feasible(plan)),
      static_cast<long long>(alpa_plan_baseline_pruned(plan)));
  const int64_t points = alpa_plan_baseline_table(plan, nullptr, 0, sizeof(alpa_baseline_point));
  if (top <= 0 || points <= 0) return;
  std::vector<alpa_baseline_point> table(static_cast<size_t>(points));
  if (alpa_plan_baseline_table(plan, table.data(), points, sizeof(alpa_baseline_point)) != points) {
    return;
  }
  const int64_t shown = std::min(top, points);
  std::printf("\nFastest %lld of %lld grid points:\n", static_cast<long long>(shown),
              static_cast<long long>(points));
  std::printf("%-5s %-44s %-12s %s\n", "rank", "configuration", "iteration", "vs best");
  const double best = table[0].iteration_seconds;
  for (int64_t i = 0; i < shown; ++i) {
    const alpa_baseline_point& p = table[static_cast<size_t>(i)];
    if (p.feasible == 0) {
      std::printf("%-5lld %-44s %s\n", static_cast<long long>(i + 1), ConfigString(p).c_str(),
                  "does not fit the device memory");
      continue;
    }
    std::printf("%-5lld %-44s %-12s %.3fx\n", static_cast<long long>(i + 1),
                ConfigString(p).c_str(), Seconds(p.iteration_seconds, 2).c_str(),
                p.iteration_seconds / best);
  }
}

// The plan's launch configuration for `framework` (alpa_plan_launch_config).
int PrintLaunchConfig(const alpa_plan* plan, const std::string& framework, bool alone) {
  alpa_error* err = nullptr;
  alpa_buffer* text = nullptr;
  const int32_t kind = framework == "megatron" ? ALPA_LAUNCH_MEGATRON : ALPA_LAUNCH_DEEPSPEED;
  if (alpa_plan_launch_config(&text, plan, kind, &err) != ALPA_OK) {
    return ReportError(err, "--launch");
  }
  std::printf("%s%s", alone ? "" : "\n", alpa_buffer_data(text));
  alpa_buffer_free(text);
  return 0;
}

// Exit code: 0 a plan, 2 nothing fits the device memory, 1 bad input (stderr).
int RunBaseline(const BaselineArgs& args) {
  if (int code = CheckPlanGraphFileArgs(args.graph)) return code;
  PlanHandles handles;
  alpa_error* err = nullptr;
  const std::string& graph_file = PlanGraphFilePath(args.graph);
  const bool from_file = !graph_file.empty();
  const std::string model = !from_file && args.model.empty() ? kDefaultPlanModel : args.model;
  const std::string& what = from_file ? graph_file : model;
  const std::string cluster_text = args.cluster.empty() ? kDefaultPlanCluster : args.cluster;

  // A manual plan needs all three degrees and the microbatch count; the search takes neither
  // the ZeRO stage nor where tensor parallelism goes (its grid covers ZeRO 0 and 1 and keeps
  // tensor parallelism inside a host).
  const int degrees = (args.dp_given ? 1 : 0) + (args.tp_given ? 1 : 0) + (args.pp_given ? 1 : 0);
  const bool manual = degrees == 3;
  if (degrees > 0 && !manual) {
    const char* missing = !args.dp_given ? "--dp" : !args.tp_given ? "--tp" : "--pp";
    return ReportBadInput(std::string(missing) +
                          ": a manual plan needs all of --dp, --tp and --pp (leave all three "
                          "out to search the grid)");
  }
  if (args.microbatches_given && args.microbatches < 1) {
    return ReportBadInput("--microbatches: must be >= 1 (got " + std::to_string(args.microbatches) +
                          ")");
  }
  if (manual && !args.microbatches_given) {
    return ReportBadInput(
        "--microbatches: a manual plan (--dp/--tp/--pp) needs the microbatch count, e.g. -B 8");
  }
  if (!manual && args.zero_given) {
    return ReportBadInput(
        "--zero: applies to a manual plan (--dp/--tp/--pp); the search tries ZeRO 0, 1, 2 and 3 "
        "(--max-zero narrows it)");
  }
  if (manual && args.max_zero_given) {
    return ReportBadInput("--max-zero: applies to the search; a manual plan takes --zero");
  }
  if (!manual && args.virtual_stages_given) {
    return ReportBadInput(
        "--virtual-stages: applies to a manual plan (--dp/--tp/--pp); the search runs one "
        "stage per device group");
  }
  if (args.virtual_stages_given && args.virtual_stages < 1) {
    return ReportBadInput("--virtual-stages: must be >= 1 (got " +
                          std::to_string(args.virtual_stages) + ")");
  }
  if (!manual && args.tp_across_hosts) {
    return ReportBadInput(
        "--tp-across-hosts: applies to a manual plan (--dp/--tp/--pp); the "
        "search keeps tensor parallelism inside a host");
  }
  if (!args.remat.empty() && args.remat != "on" && args.remat != "off" &&
      args.remat != "selective") {
    return ReportBadInput("--remat: must be on, off or selective (got \"" + args.remat + "\")");
  }
  if (!args.launch.empty() && args.launch != "megatron" && args.launch != "deepspeed") {
    return ReportBadInput("--launch: must be megatron or deepspeed (got \"" + args.launch + "\")");
  }
  if (!args.launch.empty() && args.json) {
    return ReportBadInput("--launch: prints text; leave out --json (or run twice)");
  }

  if (int rc = MakePlanCluster(cluster_text, args.planner.calibration, &handles.cluster)) return rc;
  if (alpa_plan_options_create(&handles.options, &err) != ALPA_OK) return ReportError(err);
  if (int rc = SetPlannerOptions(handles.options, args.planner)) return rc;
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
  if (!manual) {
    if (args.microbatches_given &&
        alpa_plan_options_set_int(handles.options, ALPA_PLAN_OPT_MICROBATCHES, args.microbatches,
                                  &err) != ALPA_OK) {
      return ReportError(err, "--microbatches");
    }
    if (!args.remat.empty() && alpa_plan_options_set_by_name(handles.options, "remat",
                                                             args.remat.c_str(), &err) != ALPA_OK) {
      return ReportError(err, "--remat");
    }
    // The grid's ZeRO stages: 0 and 1 always (1 where dp > 1), 2 and 3 as the plan options say.
    if (alpa_plan_options_set_int(handles.options, ALPA_PLAN_OPT_ZERO2, args.max_zero >= 2 ? 1 : 0,
                                  &err) != ALPA_OK ||
        alpa_plan_options_set_int(handles.options, ALPA_PLAN_OPT_ZERO3, args.max_zero >= 3 ? 1 : 0,
                                  &err) != ALPA_OK) {
      return ReportError(err, "--max-zero");
    }
  }
  if (!args.quiet && !args.json) {
    alpa_plan_options_set_progress(handles.options, PrintPlanProgress, nullptr, nullptr);
  }
  if (from_file) {
    if (int code = LoadPlanGraphFile(args.graph, handles.options, &handles.graph)) return code;
  }

  alpa_manual_plan spec = ALPA_MANUAL_PLAN_INIT;
  int32_t rc;
  if (manual) {
    spec.data_parallel = args.dp;
    spec.tensor_parallel = args.tp;
    spec.pipeline_parallel = args.pp;
    spec.microbatches = args.microbatches;
    spec.zero_stage = args.zero;
    spec.remat = args.remat == "selective" ? 2 : args.remat == "on" ? 1 : 0;
    spec.tensor_inside_host = args.tp_across_hosts ? 0 : 1;
    spec.virtual_stages = args.virtual_stages;
    if (!args.json && !args.quiet) {
      PrintPlanHeader("evaluating the manual plan " + ConfigString(spec) + " of", what,
                      handles.cluster);
    }
    rc = handles.graph != nullptr
             ? alpa_graph_plan_manual(&handles.plan, handles.graph, handles.cluster, &spec,
                                      handles.options, &err)
             : alpa_model_plan_manual(&handles.plan, model.c_str(), handles.cluster, &spec,
                                      handles.options, &err);
  } else {
    if (!args.json && !args.quiet) {
      PrintPlanHeader("searching the Megatron-LM baseline of", what, handles.cluster);
    }
    rc = handles.graph != nullptr
             ? alpa_graph_plan_baseline(&handles.plan, handles.graph, handles.cluster,
                                        handles.options, &err)
             : alpa_model_plan_baseline(&handles.plan, model.c_str(), handles.cluster,
                                        handles.options, &err);
  }
  if (rc != ALPA_OK) return ReportPlanFailure(rc, err);

  if (int code = WritePlanFiles(handles.plan, args.output, args.svg)) return code;
  if (args.json) return PrintPlanJson(handles.plan);
  if (!args.launch.empty() && args.quiet) {
    return PrintLaunchConfig(handles.plan, args.launch, true);
  }
  if (alpa_plan_manual_spec(&spec, sizeof spec, handles.plan, &err) != ALPA_OK)
    return ReportError(err);
  std::printf("\n%s configuration: %s\n", manual ? "Manual" : "Best", ConfigString(spec).c_str());
  PrintPlanSummary(handles.plan, handles.cluster, manual ? "evaluation time" : "search time");
  if (!manual) PrintGrid(handles.plan, args.top);
  PrintWrote(args.output, args.svg);
  if (!args.launch.empty()) return PrintLaunchConfig(handles.plan, args.launch, false);
  return 0;
}

}  // namespace

Command AddBaselineCommand(CLI::App& app) {
  auto args = std::make_shared<BaselineArgs>();
  CLI::App* baseline = app.add_subcommand(
      "baseline",
      "The Megatron-LM baseline: search manual data x tensor x pipeline parallel plans (or "
      "evaluate one with --dp/--tp/--pp) with the planner's cost model");
  baseline->add_option("--model", args->model, "Model-zoo spec or preset (default gpt-2.6b)");
  AddPlanGraphFileOptions(baseline, &args->graph);
  baseline->add_option("--cluster", args->cluster,
                       "PRESET:HOSTS, a preset spec (p3.16xlarge:hosts=8) or a cluster JSON file "
                       "(default p3.16xlarge:2)");
  CLI::Option* dp = baseline->add_option(
      "--dp", args->dp, "Manual plan: data-parallel degree (with --tp, --pp and -B)");
  CLI::Option* tp = baseline->add_option("--tp", args->tp, "Manual plan: tensor-parallel degree");
  CLI::Option* pp = baseline->add_option("--pp", args->pp, "Manual plan: pipeline stages");
  CLI::Option* microbatches = baseline->add_option(
      "--microbatches,-B", args->microbatches,
      "Microbatches (required for a manual plan; default for the search: powers of two)");
  CLI::Option* zero = baseline->add_option(
      "--zero", args->zero,
      "Manual plan: ZeRO stage 0 (default), 1 (optimizer state sharded), 2 (gradients "
      "reduce-scattered per microbatch and held as shards too) or 3 (weights sharded too)");
  CLI::Option* max_zero =
      baseline
          ->add_option("--max-zero", args->max_zero,
                       "Search: the highest ZeRO stage the grid tries, 1 to 3 (default 3; stage 2 "
                       "and 3 points cost the grid their own solves)")
          ->check(CLI::Range(1, 3));
  baseline->add_option("--zero-bubble", args->zero_bubble,
                       "The zero-bubble schedule ZB-H1 for each configuration where it fits and is "
                       "predicted faster than 1F1B: search or off (default)");
  baseline->add_option("--interleave", args->interleave,
                       "Search: interleaved 1F1B with 2-4 stages per device group tried for every "
                       "configuration with --pp >= 2, -B a multiple of pp and pp x v dividing the "
                       "layers: search or off (default)");
  baseline->add_option("--remat", args->remat,
                       "Recomputation: on (full), off or selective (the attention cores); manual "
                       "plan: default off; search: all three");
  baseline->add_flag("--tp-across-hosts", args->tp_across_hosts,
                     "Manual plan: tensor parallelism across hosts, data parallelism inside");
  CLI::Option* virtual_stages = baseline->add_option(
      "--virtual-stages", args->virtual_stages,
      "Manual plan: stages per pipeline device group (Megatron-LM's virtual pipeline stages, "
      "default 1): the layers cut into pp x N stages, stage s on the devices of group s % pp, "
      "run under interleaved 1F1B (alpa run's default for the plan); N >= 2 needs --pp >= 2 and "
      "-B a multiple of --pp");
  AddPlannerOptions(baseline, &args->planner);
  baseline->add_option("--top", args->top, "Grid points listed after a search (default 5)")
      ->check(CLI::NonNegativeNumber);
  baseline->add_option("-o,--output", args->output,
                       "Write the executable plan JSON (docs/planner.md) to this file");
  baseline->add_option("--svg", args->svg,
                       "Write the timeline of the plan's simulated iteration (SVG) to this file");
  baseline->add_flag("--json", args->json,
                     "Print the plan summary (with its \"baseline\" object) as one JSON object "
                     "(last line)");
  baseline->add_option("--launch", args->launch,
                       "Also print the plan's launch configuration: megatron (a torchrun command "
                       "with Megatron-LM's flags) or deepspeed (a ds_config.json); with -q only "
                       "that");
  baseline->add_flag("-q,--quiet", args->quiet, "No progress lines");
  return {baseline, [args, dp, tp, pp, microbatches, zero, max_zero, virtual_stages] {
            args->dp_given = dp->count() > 0;
            args->tp_given = tp->count() > 0;
            args->pp_given = pp->count() > 0;
            args->microbatches_given = microbatches->count() > 0;
            args->zero_given = zero->count() > 0;
            args->max_zero_given = max_zero->count() > 0;
            args->virtual_stages_given = virtual_stages->count() > 0;
            return RunBaseline(*args);
          }};
}

}  // namespace alpa_cli
