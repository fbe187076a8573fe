// `alpa plan`: Alpa's two-level search on a model and a cluster, printed as a readable summary
// (stages, submeshes, logical meshes, how each stage shards, predicted iteration time,
// throughput, memory, compile time) or as JSON.
#include <string>

#include "alpa.h"
#include "cli_output.h"
#include "commands.h"
#include "plan_output.h"

namespace alpa_cli {

int RunPlan(const PlanArgs& args) {
  PlanHandles h;
  alpa_error* err = nullptr;
  const std::string model =
      args.file.empty() && args.model.empty() ? kDefaultPlanModel : args.model;
  const std::string cluster_text = args.cluster.empty() ? kDefaultPlanCluster : args.cluster;
  if (int rc = MakePlanCluster(cluster_text, &h.cluster)) return rc;

  if (alpa_plan_options_create(&h.options, &err) != ALPA_OK) return ReportError(err);
  auto set_int = [&](int32_t key, int64_t value, const char* option) {
    return alpa_plan_options_set_int(h.options, key, value, &err) == ALPA_OK
               ? 0
               : ReportError(err, option);
  };
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
  if (!args.remat.empty() &&
      alpa_plan_options_set_by_name(h.options, "remat", args.remat.c_str(), &err) != ALPA_OK) {
    return ReportError(err, "--remat");
  }
  if (int rc = SetPlannerOptions(h.options, args.planner)) return rc;
  if (!args.quiet && !args.json) {
    alpa_plan_options_set_progress(h.options, PrintPlanProgress, nullptr, nullptr);
  }

  const std::string what = args.file.empty() ? model : args.file;
  if (!args.json && !args.quiet) PrintPlanHeader("planning", what, h.cluster);
  int32_t rc;
  if (args.file.empty()) {
    rc = alpa_model_plan(&h.plan, model.c_str(), h.cluster, h.options, &err);
  } else {
    if (alpa_graph_read_file(&h.graph, args.file.c_str(), &err) != ALPA_OK) {
      return ReportError(err, "--file");
    }
    rc = alpa_graph_plan(&h.plan, h.graph, h.cluster, h.options, &err);
  }
  if (rc != ALPA_OK) return ReportPlanFailure(rc, err);

  if (int code = WritePlanFiles(h.plan, args.output, args.svg)) return code;
  if (args.json) return PrintPlanJson(h.plan);
  PrintPlanSummary(h.plan, h.cluster, "compile time");
  PrintWrote(args.output, args.svg);
  return 0;
}

}  // namespace alpa_cli
