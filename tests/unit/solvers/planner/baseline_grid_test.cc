// The Megatron-LM baseline grid's ZeRO stages (baseline_search.h): 0 to 3 by default, and the
// planner's ZeRO-2 / ZeRO-3 options each leaving out their own stage only; its virtual stages
// where interleaving is searched.
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

// Interleaving adds, for every point with pp >= 2, B a multiple of pp and pp v dividing the
// layers, the same point with v = 2..4; without the option every point has one stage per group.
TEST(BaselineGrid, TriesVirtualStagesWhereInterleavingIsSearched) {
  Result<PlannerModel> model =
      PlannerModelFromSpec("gpt:layers=8,hidden=256,heads=4,seq=64,batch=16,vocab=1024");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Cluster cluster = testing::P3(1, 4);
  for (bool interleave : {false, true}) {
    PlannerOptions options;
    options.search_interleaving = interleave;
    ManualPlanEvaluator evaluator(model.value(), cluster, options);
    Result<std::vector<ManualPlanSpec>> grid =
        MegatronBaselineGrid(evaluator, model.value(), cluster, options);
    ASSERT_TRUE(grid.ok()) << grid.status().message();
    std::set<int32_t> seen;
    for (const ManualPlanSpec& spec : grid.value()) {
      seen.insert(spec.virtual_stages);
      if (spec.virtual_stages > 1) {
        EXPECT_GE(spec.pipeline_parallel, 2);
        EXPECT_EQ(spec.microbatches % spec.pipeline_parallel, 0);
        EXPECT_EQ(8 % (spec.pipeline_parallel * spec.virtual_stages), 0);
      }
    }
    // pp 2 with v = 2 and 4, pp 4 with v = 2.
    EXPECT_EQ(seen, interleave ? (std::set<int32_t>{1, 2, 4}) : (std::set<int32_t>{1}));
  }
}

}  // namespace
}  // namespace alpa
