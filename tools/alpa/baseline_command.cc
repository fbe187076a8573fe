// `alpa baseline`: the Megatron-LM baseline (alpa_model_plan_baseline: the grid search over manual
// data / tensor / pipeline parallel configurations) or one manual plan (alpa_model_plan_manual with
// --dp/--tp/--pp), printed as `alpa plan` prints a plan, plus the configuration and, for the
// search, its grid counts and fastest points.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "alpa_experimental.h"
#include "cli_output.h"
#include "commands.h"
#include "plan_output.h"

namespace alpa_cli {
namespace {

// "dp=2 tp=4 pp=2 B=256 zero=1 remat=off" (plus " tp-across-hosts"), as the library's messages
// write a configuration; T is alpa_manual_plan or alpa_baseline_point.
template <typename T>
std::string ConfigString(const T& c) {
  std::string s =
      "dp=" + std::to_string(c.data_parallel) + " tp=" + std::to_string(c.tensor_parallel) +
      " pp=" + std::to_string(c.pipeline_parallel) + " B=" + std::to_string(c.microbatches) +
      " zero=" + std::to_string(c.zero_stage) + " remat=" + (c.remat != 0 ? "on" : "off");
  if (c.tensor_inside_host == 0) s += " tp-across-hosts";
  return s;
}

// The search's grid counts and its `top` fastest points.
void PrintGrid(const alpa_plan* plan, int64_t top) {
  const int64_t evaluated = alpa_plan_baseline_evaluated(plan);
  std::printf(
      "grid                      %lld points evaluated, %lld fit the device memory, %lld "
      "pruned\n",
      static_cast<long long>(evaluated), static_cast<long long>(alpa_plan_baseline_feasible(plan)),
      static_cast<long long>(alpa_plan_baseline_pruned(plan)));
  const int64_t n = alpa_plan_baseline_table(plan, nullptr, 0, sizeof(alpa_baseline_point));
  if (top <= 0 || n <= 0) return;
  std::vector<alpa_baseline_point> table(static_cast<size_t>(n));
  if (alpa_plan_baseline_table(plan, table.data(), n, sizeof(alpa_baseline_point)) != n) return;
  const int64_t shown = std::min(top, n);
  std::printf("\nFastest %lld of %lld grid points:\n", static_cast<long long>(shown),
              static_cast<long long>(n));
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

}  // namespace

int RunBaseline(const BaselineArgs& args) {
  PlanHandles h;
  alpa_error* err = nullptr;
  const std::string model = args.model.empty() ? kDefaultPlanModel : args.model;
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
        "--zero: applies to a manual plan (--dp/--tp/--pp); the search tries ZeRO 0 and 1");
  }
  if (!manual && args.tp_across_hosts) {
    return ReportBadInput(
        "--tp-across-hosts: applies to a manual plan (--dp/--tp/--pp); the "
        "search keeps tensor parallelism inside a host");
  }
  if (!args.remat.empty() && args.remat != "on" && args.remat != "off") {
    return ReportBadInput("--remat: must be on or off (got \"" + args.remat + "\")");
  }

  if (int rc = MakePlanCluster(cluster_text, &h.cluster)) return rc;
  if (alpa_plan_options_create(&h.options, &err) != ALPA_OK) return ReportError(err);
  if (int rc = SetPlannerOptions(h.options, args.planner)) return rc;
  if (!manual) {
    if (args.microbatches_given && alpa_plan_options_set_int(h.options, ALPA_PLAN_OPT_MICROBATCHES,
                                                             args.microbatches, &err) != ALPA_OK) {
      return ReportError(err, "--microbatches");
    }
    if (!args.remat.empty() &&
        alpa_plan_options_set_by_name(h.options, "remat", args.remat.c_str(), &err) != ALPA_OK) {
      return ReportError(err, "--remat");
    }
  }
  if (!args.quiet && !args.json) {
    alpa_plan_options_set_progress(h.options, PrintPlanProgress, nullptr, nullptr);
  }

  alpa_manual_plan spec = ALPA_MANUAL_PLAN_INIT;
  int32_t rc;
  if (manual) {
    spec.data_parallel = args.dp;
    spec.tensor_parallel = args.tp;
    spec.pipeline_parallel = args.pp;
    spec.microbatches = args.microbatches;
    spec.zero_stage = args.zero;
    spec.remat = args.remat == "on" ? 1 : 0;
    spec.tensor_inside_host = args.tp_across_hosts ? 0 : 1;
    if (!args.json && !args.quiet) {
      PrintPlanHeader("evaluating the manual plan " + ConfigString(spec) + " of", model, h.cluster);
    }
    rc = alpa_model_plan_manual(&h.plan, model.c_str(), h.cluster, &spec, h.options, &err);
  } else {
    if (!args.json && !args.quiet) {
      PrintPlanHeader("searching the Megatron-LM baseline of", model, h.cluster);
    }
    rc = alpa_model_plan_baseline(&h.plan, model.c_str(), h.cluster, h.options, &err);
  }
  if (rc != ALPA_OK) return ReportPlanFailure(rc, err);

  if (int code = WritePlanFiles(h.plan, args.output, args.svg)) return code;
  if (args.json) return PrintPlanJson(h.plan);
  if (alpa_plan_manual_spec(&spec, sizeof spec, h.plan, &err) != ALPA_OK) return ReportError(err);
  std::printf("\n%s configuration: %s\n", manual ? "Manual" : "Best", ConfigString(spec).c_str());
  PrintPlanSummary(h.plan, h.cluster, manual ? "evaluation time" : "search time");
  if (!manual) PrintGrid(h.plan, args.top);
  PrintWrote(args.output, args.svg);
  return 0;
}

}  // namespace alpa_cli
