#include "support/small_plans.h"

#include <utility>

#include "exec/lower/lower_plan.h"
#include "models/planner_model.h"

namespace alpa::testing {

Result<SmallPlan> PlanSmallModel(const std::string& model, int64_t tensor_parallel,
                                 int64_t microbatches) {
  Result<PlannerModel> m = PlannerModelFromSpec(model);
  if (!m.ok()) return m.status();
  Result<Cluster> cluster =
      ParseClusterSpec("p3.16xlarge:hosts=1,devices_per_host=" + std::to_string(tensor_parallel));
  if (!cluster.ok()) return cluster.status();
  ManualPlanSpec spec;
  spec.tensor_parallel = tensor_parallel;
  spec.microbatches = microbatches;
  Result<PipelinePlan> plan = EvaluateManualPlan(m.value(), cluster.value(), spec);
  if (!plan.ok()) return plan.status();
  Result<Graph> whole = m.value().build(1);
  if (!whole.ok()) return whole.status();
  SmallPlan p;
  p.plan = std::move(plan).value();
  p.whole = std::move(whole).value();
  return p;
}

Result<ProgramSet> LowerSmallModel(const std::string& model, int64_t tensor_parallel,
                                   int64_t microbatches) {
  Result<SmallPlan> p = PlanSmallModel(model, tensor_parallel, microbatches);
  if (!p.ok()) return p.status();
  LowerOptions options;
  options.whole_batch = &p.value().whole;
  return LowerPlan(p.value().plan, options);
}

}  // namespace alpa::testing
