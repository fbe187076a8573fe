// The Megatron-LM baseline grid's ZeRO stages (baseline_search.h): 0 to 3 by default, and the
// planner's ZeRO-2 / ZeRO-3 options each leaving out their own stage only.
#include <gtest/gtest.h>

#include <set>

#include "models/planner_model.h"
#include "solvers/planner/baseline_search.h"
#include "solvers/planner/manual_plan.h"
#include "support/clusters.h"

namespace alpa {
namespace {

std::set<int32_t> GridZeroStages(bool zero2, bool zero3) {
  Result<PlannerModel> model =
      PlannerModelFromSpec("gpt:layers=4,hidden=256,heads=4,seq=64,batch=16,vocab=1024");
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return {};
  PlannerOptions options;
  options.search_zero2 = zero2;
  options.search_zero3 = zero3;
  const Cluster cluster = testing::P3(1, 4);
  ManualPlanEvaluator evaluator(model.value(), cluster, options);
  Result<std::vector<ManualPlanSpec>> grid =
      MegatronBaselineGrid(evaluator, model.value(), cluster, options);
  EXPECT_TRUE(grid.ok()) << grid.status().message();
  std::set<int32_t> stages;
  if (!grid.ok()) return stages;
  for (const ManualPlanSpec& spec : grid.value()) {
    stages.insert(spec.zero_stage);
    if (spec.data_parallel == 1) {
      EXPECT_EQ(spec.zero_stage, 0);  // nothing to shard over
    }
  }
  return stages;
}

TEST(BaselineGrid, TriesEveryZeroStageTheOptionsAllow) {
  EXPECT_EQ(GridZeroStages(true, true), (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(GridZeroStages(true, false), (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(GridZeroStages(false, true), (std::set<int32_t>{0, 1, 3}));
  EXPECT_EQ(GridZeroStages(false, false), (std::set<int32_t>{0, 1}));
}

}  // namespace
}  // namespace alpa
