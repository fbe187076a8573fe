// Interleaved 1F1B as a searched option of the planner: taken where the bubble is large and the
// groups fit, left where it does not fit or cannot apply, its stages on their groups' devices,
// its prediction the schedule's evaluation, and the plan JSON that carries it.
#include <gtest/gtest.h>

#include <string>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/pipeline/pipeline_estimate.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/baseline_search.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/plan_json.h"
#include "solvers/planner/plan_json_read.h"
#include "solvers/planner/plan_transfers.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/schedule_choice.h"
#include "support/clusters.h"

namespace alpa {
namespace {

constexpr const char* kGpt =
    "gpt:layers=8,hidden=128,heads=4,seq=8,vocab=64,batch=8,dtype=f32,adam_eps=1e-5";

PlannerModel Model() {
  Result<PlannerModel> model = PlannerModelFromSpec(kGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : PlannerModel{};
}

// Four one-device stages and four microbatches: 1F1B idles (S - 1)(f + b) per stage.
PlannerOptions DeepPipeline(bool interleave) {
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 4;
  options.pipeline_stages = 4;
  options.search_interleaving = interleave;
  return options;
}

TEST(Interleave, PlannerTakesItWhereItPays) {
  Result<PipelinePlan> off = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(false));
  Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(true));
  ASSERT_TRUE(off.ok()) << off.status().message();
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_EQ(off.value().schedule, PipelineScheduleKind::kOneFOneB);
  const PipelinePlan& plan = on.value();
  ASSERT_EQ(plan.schedule, PipelineScheduleKind::kInterleavedOneFOneB);
  const int32_t v = plan.virtual_stages;
  ASSERT_GE(v, 2);
  ASSERT_EQ(plan.stages.size(), static_cast<size_t>(4 * v));
  EXPECT_LT(plan.iteration_seconds, off.value().iteration_seconds);
  // The layers in order, each stage on its group's devices, the groups on disjoint devices.
  int32_t next_layer = 0;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlannedStage& st = plan.stages[s];
    EXPECT_EQ(st.first_layer, next_layer) << "stage " << s;
    next_layer = st.last_layer + 1;
    EXPECT_EQ(st.devices, plan.stages[s % 4].devices) << "stage " << s;
    EXPECT_EQ(st.in_flight,
              MicrobatchesInFlight(plan.schedule, 4 * v, static_cast<int32_t>(s), 4, v));
  }
  for (size_t g = 0; g < 4; ++g) {
    for (size_t h = g + 1; h < 4; ++h) EXPECT_NE(plan.stages[g].devices, plan.stages[h].devices);
  }
  // No transfer joins two stages of one group.
  for (const CrossStageTransfer& t : plan.transfers) {
    EXPECT_NE(t.from_stage % 4, t.to_stage % 4) << t.from_stage << " -> " << t.to_stage;
  }
  // The prediction is the schedule evaluated on the plan's stages; the peak the largest group's.
  EXPECT_DOUBLE_EQ(plan.iteration_seconds,
                   EvaluateSchedule(plan.schedule, PlanEstimateStages(plan), 4, v));
  EXPECT_EQ(plan.peak_memory_bytes, PlanPeakMemory(plan));
  int64_t group0 = 0;
  for (size_t s = 0; s < plan.stages.size(); s += 4) group0 += plan.stages[s].memory_bytes;
  EXPECT_EQ(GroupMemoryBytes(plan)[0], group0);
}

TEST(Interleave, PlannerLeavesItWhereItDoesNotFit) {
  // The 1F1B plan's peak as the device memory: the groups would hold more microbatches.
  Result<PipelinePlan> off = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(false));
  ASSERT_TRUE(off.ok()) << off.status().message();
  PlannerOptions options = DeepPipeline(true);
  options.device_memory_bytes = off.value().peak_memory_bytes;
  Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), options);
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_EQ(on.value().schedule, PipelineScheduleKind::kOneFOneB);
  EXPECT_EQ(on.value().virtual_stages, 1);
  EXPECT_LE(on.value().peak_memory_bytes, off.value().peak_memory_bytes);
}

TEST(Interleave, PlannerLeavesItWhereItCannotApply) {
  // One stage: no bubble to fill. Two microbatches over four groups: interleaving runs
  // microbatches in rounds of the groups.
  for (const auto& [stages, microbatches] : {std::pair<int32_t, int64_t>{1, 4}, {4, 2}}) {
    PlannerOptions options = DeepPipeline(true);
    options.pipeline_stages = stages;
    options.microbatches = microbatches;
    Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), options);
    options.search_interleaving = false;
    Result<PipelinePlan> off = PlanPipeline(Model(), testing::P3(1, 4), options);
    ASSERT_TRUE(on.ok()) << on.status().message();
    ASSERT_TRUE(off.ok()) << off.status().message();
    EXPECT_EQ(on.value().schedule, PipelineScheduleKind::kOneFOneB) << stages;
    EXPECT_EQ(on.value().iteration_seconds, off.value().iteration_seconds) << stages;
  }
}

// Megatron-style groups of one submesh are tried too (the stage DP's 1F1B answers need not
// contain them): with both searching interleaving, the planner is at least as fast as the best
// grid point, and with the grid's own degrees (4 groups of one device, B 4) it finds an
// interleaved plan at least as fast as the grid's interleaved manual plan.
TEST(Interleave, PlannerIsAtLeastAsFastAsTheInterleavedGrid) {
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 4;
  options.search_interleaving = true;
  Result<BaselineSearchResult> grid = SearchMegatronBaseline(Model(), testing::P3(1, 4), options);
  ASSERT_TRUE(grid.ok()) << grid.status().message();
  Result<PipelinePlan> planned = PlanPipeline(Model(), testing::P3(1, 4), options);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_LE(planned.value().iteration_seconds, grid.value().best.iteration_seconds * (1 + 1e-9));

  ManualPlanSpec spec;
  spec.pipeline_parallel = 4;
  spec.microbatches = 4;
  spec.virtual_stages = 2;
  Result<PipelinePlan> manual = EvaluateManualPlan(Model(), testing::P3(1, 4), spec, options);
  ASSERT_TRUE(manual.ok()) << manual.status().message();
  ASSERT_EQ(manual.value().schedule, PipelineScheduleKind::kInterleavedOneFOneB);
  options.pipeline_stages = 4;
  Result<PipelinePlan> pinned = PlanPipeline(Model(), testing::P3(1, 4), options);
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  EXPECT_EQ(pinned.value().schedule, PipelineScheduleKind::kInterleavedOneFOneB);
  EXPECT_LE(pinned.value().iteration_seconds, manual.value().iteration_seconds * (1 + 1e-9));
}

TEST(Interleave, PlanJsonCarriesTheGroups) {
  Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(true));
  ASSERT_TRUE(on.ok()) << on.status().message();
  ASSERT_EQ(on.value().schedule, PipelineScheduleKind::kInterleavedOneFOneB);
  Result<std::string> text = PipelinePlanJson(on.value(), testing::P3(1, 4), kGpt, 2);
  ASSERT_TRUE(text.ok()) << text.status().message();
  Result<PipelinePlan> back = ReadPipelinePlanJson(text.value(), nullptr);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().schedule, PipelineScheduleKind::kInterleavedOneFOneB);
  EXPECT_EQ(back.value().virtual_stages, on.value().virtual_stages);
  EXPECT_DOUBLE_EQ(back.value().iteration_seconds, on.value().iteration_seconds);

  // A stage off its group's devices, and a 1F1B plan with virtual stages, are refused by name.
  PipelinePlan moved = on.value();
  std::swap(moved.stages[4].devices, moved.stages[5].devices);
  Result<std::string> moved_text = PipelinePlanJson(moved, testing::P3(1, 4), kGpt, 2);
  ASSERT_TRUE(moved_text.ok());
  Result<PipelinePlan> refused = ReadPipelinePlanJson(moved_text.value(), nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("stages[4].devices"), std::string::npos)
      << refused.status().message();
  std::string bad = text.value();
  const size_t at = bad.find("\"interleaved-1f1b\"");
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, 18, "\"1f1b\"");
  refused = ReadPipelinePlanJson(bad, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("virtual_stages"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace alpa
