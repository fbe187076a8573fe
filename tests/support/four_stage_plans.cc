// The topology tests' four-stage plan (four_stage_plans.h).
#include "support/four_stage_plans.h"

#include "models/planner_model.h"

namespace alpa::testing {

Result<PipelinePlan> PlanFourStages(const Cluster& cluster, bool place_near_nics) {
  Result<PlannerModel> model =
      PlannerModelFromSpec("gpt:layers=8,hidden=1024,heads=16,seq=2048,batch=32,vocab=1024");
  if (!model.ok()) return model.status();
  PlannerOptions options;
  options.threads = 2;
  options.pipeline_stages = 4;
  options.microbatches = 8;
  options.place_near_nics = place_near_nics;
  return PlanPipeline(model.value(), cluster, options);
}

}  // namespace alpa::testing
