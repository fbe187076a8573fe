// Manual plans and the Megatron-LM baseline search through the C ABI: alpa_model_plan_manual,
// alpa_model_plan_baseline, the configuration and grid-table getters, and the "baseline" object
// that alpa_plan_to_json adds for such plans (added here, over PipelinePlanJson's text, so that the
// planner's JSON writer stays unaware of how a plan was made).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "capi/handles.h"
#include "solvers/planner/plan_json.h"

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

// The ends of the version-1 structs: the smallest sizes a caller may pass; and of version 2 of
// alpa_manual_plan (virtual_stages).
constexpr size_t kManualPlanV1Size =
    offsetof(alpa_manual_plan, tensor_inside_host) + sizeof(int32_t);
constexpr size_t kManualPlanV2Size = sizeof(alpa_manual_plan);
constexpr size_t kBaselinePointV1Size =
    offsetof(alpa_baseline_point, iteration_seconds) + sizeof(double);

// The caller's configuration: the first min(struct_size, sizeof) bytes, checked where the C
// form allows more than ManualPlanSpec (0/1 fields); the degrees are EvaluateManualPlan's to
// check, its messages naming the field.
int32_t ReadSpec(const alpa_manual_plan* in, alpa::ManualPlanSpec* out, alpa_error** err) {
  if (in->struct_size < kManualPlanV1Size) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                "spec->struct_size " + std::to_string(in->struct_size) +
                    " is smaller than version 1 of alpa_manual_plan (" +
                    std::to_string(kManualPlanV1Size) +
                    " bytes): set it to sizeof(alpa_manual_plan) or use ALPA_MANUAL_PLAN_INIT");
  }
  alpa_manual_plan s;
  std::memset(&s, 0, sizeof(s));
  std::memcpy(&s, in, std::min(in->struct_size, sizeof(s)));
  if (s.version < 1) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                "spec->version must be >= 1 (got " + std::to_string(s.version) + ")");
  }
  if (s.remat < 0 || s.remat > 2) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                "manual plan: remat must be 0 (off), 1 (full) or 2 (selective) (got " +
                    std::to_string(s.remat) + ")");
  }
  if (s.tensor_inside_host != 0 && s.tensor_inside_host != 1) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                "manual plan: tensor_inside_host must be 0 or 1 (got " +
                    std::to_string(s.tensor_inside_host) + ")");
  }
  out->data_parallel = s.data_parallel;
  out->tensor_parallel = s.tensor_parallel;
  out->pipeline_parallel = s.pipeline_parallel;
  out->microbatches = s.microbatches;
  out->zero_stage = s.zero_stage;
  out->remat = static_cast<alpa::Recompute>(s.remat);
  out->tensor_inside_host = s.tensor_inside_host == 1;
  // A version-1 caller's struct ends before virtual_stages: one stage per device group.
  const bool v2 = s.version >= 2 && in->struct_size >= kManualPlanV2Size;
  out->virtual_stages = v2 ? s.virtual_stages : 1;
  return ALPA_OK;
}

nlohmann::json SpecJson(const alpa::ManualPlanSpec& spec) {
  return nlohmann::json{
      {"config", alpa::ManualPlanSpecString(spec)}, {"data_parallel", spec.data_parallel},
      {"tensor_parallel", spec.tensor_parallel},    {"pipeline_parallel", spec.pipeline_parallel},
      {"microbatches", spec.microbatches},          {"zero_stage", spec.zero_stage},
      {"remat", alpa::RecomputeJson(spec.remat)},   {"tensor_inside_host", spec.tensor_inside_host},
      {"virtual_stages", spec.virtual_stages}};
}

// The "baseline" object: the configuration; for a search its counts and, at detail >= 1, its
// table (iteration_seconds null where the point does not fit).
nlohmann::json BaselineJson(const alpa_plan& plan, int32_t detail) {
  nlohmann::json j = SpecJson(*plan.manual_spec);
  j["kind"] = plan.baseline ? "search" : "manual";
  if (!plan.baseline) return j;
  const alpa::BaselineSearchResult& b = *plan.baseline;
  j["evaluated"] = b.evaluated;
  j["feasible"] = b.feasible;
  j["pruned"] = b.pruned;
  j["intra_op_solves"] = b.intra_op_solves;
  j["search_seconds"] = b.search_seconds;
  if (detail >= 1) {
    nlohmann::json table = nlohmann::json::array();
    for (const auto& [spec, seconds] : b.table) {
      nlohmann::json row = SpecJson(spec);
      row["iteration_seconds"] = std::isfinite(seconds) ? nlohmann::json(seconds) : nullptr;
      table.push_back(std::move(row));
    }
    j["table"] = std::move(table);
  }
  return j;
}

// The plan of a call as a handle with its configuration.
std::unique_ptr<alpa_plan> PlanHandle(alpa::PipelinePlan plan, const alpa_cluster* cluster,
                                      const char* model_spec, const alpa::ManualPlanSpec& spec) {
  std::unique_ptr<alpa_plan> handle =
      alpa::capi::MakePlan(std::move(plan), cluster->cluster, model_spec);
  handle->manual_spec = spec;
  return handle;
}

// alpa_model_plan_manual / alpa_graph_plan_manual once the model is made.
int32_t PlanManual(alpa_plan** out, const alpa::PlannerModel& model, const char* name,
                   const alpa_cluster* cluster, const alpa::ManualPlanSpec& manual,
                   const alpa_plan_options* options, alpa_error** err) {
  alpa::Result<alpa::PipelinePlan> plan = alpa::EvaluateManualPlan(
      model, cluster->cluster, manual, alpa::capi::ToPlannerOptions(options));
  if (!plan.ok()) return Fail(err, plan.status());
  *out = PlanHandle(std::move(plan).value(), cluster, name, manual).release();
  return ALPA_OK;
}

// alpa_model_plan_baseline / alpa_graph_plan_baseline once the model is made.
int32_t PlanBaseline(alpa_plan** out, const alpa::PlannerModel& model, const char* name,
                     const alpa_cluster* cluster, const alpa_plan_options* options,
                     alpa_error** err) {
  alpa::Result<alpa::BaselineSearchResult> searched =
      alpa::SearchMegatronBaseline(model, cluster->cluster, alpa::capi::ToPlannerOptions(options));
  if (!searched.ok()) return Fail(err, searched.status());
  alpa::BaselineSearchResult& result = searched.value();
  std::unique_ptr<alpa_plan> handle =
      PlanHandle(std::move(result.best), cluster, name, result.spec);
  result.best = alpa::PipelinePlan();
  handle->baseline = std::move(result);
  *out = handle.release();
  return ALPA_OK;
}

}  // namespace

namespace alpa::capi {

alpa::Result<std::string> PlanJson(const alpa_plan& plan, int32_t detail) {
  alpa::Result<std::string> text = PipelinePlanJson(plan.plan, plan.cluster, plan.model, detail);
  if (!text.ok() || !plan.manual_spec) return text;
  // PipelinePlanJson dumps an nlohmann object (sorted keys, shortest round-trip doubles), so
  // parsing and dumping it again changes nothing but the added key.
  nlohmann::json j = nlohmann::json::parse(text.value());
  j["baseline"] = BaselineJson(plan, detail);
  return j.dump();
}

}  // namespace alpa::capi

extern "C" {

ALPA_API int32_t alpa_model_plan_manual(alpa_plan** out, const char* model_spec,
                                        const alpa_cluster* cluster, const alpa_manual_plan* spec,
                                        const alpa_plan_options* options, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (model_spec == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "model_spec is NULL");
    if (cluster == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "cluster is NULL");
    if (spec == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "spec is NULL");
    alpa::ManualPlanSpec manual;
    if (int32_t rc = ReadSpec(spec, &manual, err)) return rc;
    alpa::PlannerModel model;
    if (int32_t rc = alpa::capi::PlannerModelOf(model_spec, &model, err)) return rc;
    return PlanManual(out, model, model_spec, cluster, manual, options, err);
  });
}

ALPA_API int32_t alpa_graph_plan_manual(alpa_plan** out, const alpa_graph* graph,
                                        const alpa_cluster* cluster, const alpa_manual_plan* spec,
                                        const alpa_plan_options* options, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (cluster == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "cluster is NULL");
    if (spec == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "spec is NULL");
    alpa::ManualPlanSpec manual;
    if (int32_t rc = ReadSpec(spec, &manual, err)) return rc;
    alpa::PlannerModel model;
    if (int32_t rc = alpa::capi::PlannerModelOfGraph(graph, options, &model, err)) return rc;
    return PlanManual(out, model, "", cluster, manual, options, err);
  });
}

ALPA_API int32_t alpa_model_plan_baseline(alpa_plan** out, const char* model_spec,
                                          const alpa_cluster* cluster,
                                          const alpa_plan_options* options, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (model_spec == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "model_spec is NULL");
    if (cluster == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "cluster is NULL");
    alpa::PlannerModel model;
    if (int32_t rc = alpa::capi::PlannerModelOf(model_spec, &model, err)) return rc;
    return PlanBaseline(out, model, model_spec, cluster, options, err);
  });
}

ALPA_API int32_t alpa_graph_plan_baseline(alpa_plan** out, const alpa_graph* graph,
                                          const alpa_cluster* cluster,
                                          const alpa_plan_options* options, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (cluster == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "cluster is NULL");
    alpa::PlannerModel model;
    if (int32_t rc = alpa::capi::PlannerModelOfGraph(graph, options, &model, err)) return rc;
    return PlanBaseline(out, model, "", cluster, options, err);
  });
}

ALPA_API int32_t alpa_plan_manual_spec(alpa_manual_plan* out, size_t size, const alpa_plan* plan,
                                       alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    if (size < kManualPlanV1Size) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "size " + std::to_string(size) +
                      " is smaller than version 1 of alpa_manual_plan (" +
                      std::to_string(kManualPlanV1Size) + " bytes)");
    }
    if (!plan->manual_spec) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "the plan has no manual configuration: only plans of alpa_model_plan_manual and "
                  "alpa_model_plan_baseline have one (this one was planned by alpa_model_plan or "
                  "alpa_graph_plan)");
    }
    const alpa::ManualPlanSpec& m = *plan->manual_spec;
    alpa_manual_plan s;
    std::memset(&s, 0, sizeof(s));
    s.version = size >= kManualPlanV2Size ? 2 : 1;
    s.zero_stage = m.zero_stage;
    s.data_parallel = m.data_parallel;
    s.tensor_parallel = m.tensor_parallel;
    s.pipeline_parallel = m.pipeline_parallel;
    s.microbatches = m.microbatches;
    s.remat = static_cast<int32_t>(m.remat);
    s.tensor_inside_host = m.tensor_inside_host ? 1 : 0;
    s.virtual_stages = m.virtual_stages;
    alpa::capi::WriteElement(out, size, 0, s);
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_manual_plan_init(alpa_manual_plan* spec, size_t size, alpa_error** err) {
  return Guard(err, [&] {
    if (spec == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "spec is NULL");
    if (size < kManualPlanV1Size) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "size " + std::to_string(size) +
                      " is smaller than version 1 of alpa_manual_plan (" +
                      std::to_string(kManualPlanV1Size) + " bytes)");
    }
    alpa_manual_plan defaults = ALPA_MANUAL_PLAN_INIT;
    // A caller built against version 1's header gets version 1's fields, and says so.
    if (size < kManualPlanV2Size) defaults.version = 1;
    alpa::capi::WriteElement(spec, size, 0, defaults);
    return ALPA_OK;
  });
}

ALPA_API int64_t alpa_plan_baseline_table(const alpa_plan* plan, alpa_baseline_point* out,
                                          int64_t capacity, size_t element_size) {
  if (plan == nullptr) return alpa::capi::kFillMisuse;
  if (!plan->baseline) {
    return alpa::capi::BadFillTarget(out, capacity) ? alpa::capi::kFillMisuse : 0;
  }
  const auto& table = plan->baseline->table;
  const int64_t n = static_cast<int64_t>(table.size());
  return alpa::capi::FillStructs<alpa_baseline_point>(
      out, capacity, element_size, kBaselinePointV1Size, n, [&](int64_t i) {
        const auto& [m, seconds] = table[static_cast<size_t>(i)];
        alpa_baseline_point p;
        std::memset(&p, 0, sizeof(p));
        p.version = 1;
        p.zero_stage = m.zero_stage;
        p.data_parallel = m.data_parallel;
        p.tensor_parallel = m.tensor_parallel;
        p.pipeline_parallel = m.pipeline_parallel;
        p.microbatches = m.microbatches;
        p.remat = static_cast<int32_t>(m.remat);
        p.tensor_inside_host = m.tensor_inside_host ? 1 : 0;
        p.feasible = std::isfinite(seconds) ? 1 : 0;
        p.iteration_seconds = seconds;
        return p;
      });
}

ALPA_API int64_t alpa_plan_baseline_evaluated(const alpa_plan* plan) {
  return plan == nullptr || !plan->baseline ? 0 : plan->baseline->evaluated;
}

ALPA_API int64_t alpa_plan_baseline_feasible(const alpa_plan* plan) {
  return plan == nullptr || !plan->baseline ? 0 : plan->baseline->feasible;
}

ALPA_API int64_t alpa_plan_baseline_pruned(const alpa_plan* plan) {
  return plan == nullptr || !plan->baseline ? 0 : plan->baseline->pruned;
}

}  // extern "C"
