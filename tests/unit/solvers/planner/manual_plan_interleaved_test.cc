// Manual plans with virtual pipeline stages (Megatron-LM's interleaving, manual_plan.h): the
// layers cut into pp x v stages as for pp x v pipeline stages, stage s on device group s % pp,
// the plan made for interleaved 1F1B with its in-flight counts and per-device memory, its
// prediction the interleaved schedule's; bad specs name their field.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/planner_model.h"
#include "solvers/pipeline/pipeline_estimate.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/plan_transfers.h"
#include "support/clusters.h"

namespace alpa {
namespace {

using testing::P3;

constexpr PipelineScheduleKind kInterleaved = PipelineScheduleKind::kInterleavedOneFOneB;
constexpr const char* kTinyGpt = "gpt:layers=4,hidden=64,heads=4,seq=16,vocab=64,batch=8";

PlannerModel TinyGpt() {
  Result<PlannerModel> model = PlannerModelFromSpec(kTinyGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : PlannerModel{};
}

PlannerOptions Options() {
  PlannerOptions options;
  options.threads = 2;
  return options;
}

ManualPlanSpec Spec(int64_t tp, int64_t pp, int32_t virtual_stages, int64_t microbatches) {
  ManualPlanSpec spec;
  spec.tensor_parallel = tp;
  spec.pipeline_parallel = pp;
  spec.virtual_stages = virtual_stages;
  spec.microbatches = microbatches;
  return spec;
}

TEST(ManualPlanInterleaved, StageSRunsOnGroupSModPpWithTheLayersOfPpTimesVStages) {
  const ManualPlanSpec spec = Spec(2, 2, 2, 4);
  EXPECT_EQ(ManualPlanSpecString(spec), "dp=1 tp=2 pp=2 B=4 zero=0 remat=off vp=2");
  Result<PipelinePlan> got = EvaluateManualPlan(TinyGpt(), P3(1, 4), spec, Options());
  ASSERT_TRUE(got.ok()) << got.status().message();
  const PipelinePlan& plan = got.value();
  // The same layers, meshes and stage costs as 4 pipeline stages of their own.
  Result<PipelinePlan> flat = EvaluateManualPlan(TinyGpt(), P3(1, 8), Spec(2, 4, 1, 4), Options());
  ASSERT_TRUE(flat.ok()) << flat.status().message();
  EXPECT_EQ(plan.schedule, kInterleaved);
  EXPECT_EQ(plan.virtual_stages, 2);
  ASSERT_EQ(plan.stages.size(), 4u);
  ASSERT_EQ(flat.value().stages.size(), 4u);
  std::vector<int64_t> group_bytes(2, 0);
  for (int32_t s = 0; s < 4; ++s) {
    const PlannedStage& st = plan.stages[static_cast<size_t>(s)];
    const PlannedStage& alone = flat.value().stages[static_cast<size_t>(s)];
    EXPECT_EQ(st.first_layer, alone.first_layer) << "stage " << s;
    EXPECT_EQ(st.last_layer, alone.last_layer) << "stage " << s;
    EXPECT_EQ(st.logical_mesh, alone.logical_mesh) << "stage " << s;
    EXPECT_DOUBLE_EQ(st.latency, alone.latency) << "stage " << s;
    const int64_t group = s % 2;
    EXPECT_EQ(st.devices, (std::vector<int64_t>{2 * group, 2 * group + 1})) << "stage " << s;
    EXPECT_EQ(st.in_flight, MicrobatchesInFlight(kInterleaved, 4, s, 4, 2)) << "stage " << s;
    EXPECT_EQ(st.memory_bytes,
              alone.memory_bytes + (st.in_flight - alone.in_flight) * st.activation_bytes)
        << "stage " << s;
    group_bytes[static_cast<size_t>(group)] += st.memory_bytes;
  }
  EXPECT_EQ(plan.stages.back().last_layer, plan.clustering.num_layers - 1);
  // A device holds its group's stages.
  EXPECT_EQ(plan.peak_memory_bytes, *std::max_element(group_bytes.begin(), group_bytes.end()));
  // The prediction is the interleaved schedule's over the stages and their transfers.
  const double predicted =
      EvaluateSchedule(kInterleaved, PlanEstimateStages(plan), plan.microbatches, 2);
  EXPECT_GT(predicted, 0);
  EXPECT_NEAR(plan.iteration_seconds, predicted, 1e-9 * predicted);
}

TEST(ManualPlanInterleaved, CostRanksBySchedulingTheGroups) {
  ManualPlanEvaluator evaluator(TinyGpt(), P3(1, 4), Options());
  Result<ManualPlanCost> cost = evaluator.Cost(Spec(2, 2, 2, 4));
  ASSERT_TRUE(cost.ok()) << cost.status().message();
  EXPECT_TRUE(cost.value().feasible);
  Result<PipelinePlan> plan = evaluator.Plan(Spec(2, 2, 2, 4));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  // Without transfers, no slower than with them; per device, the plan's peak.
  EXPECT_LE(cost.value().iteration_seconds, plan.value().iteration_seconds * (1 + 1e-12));
  EXPECT_GT(cost.value().iteration_seconds, 0);
  EXPECT_EQ(cost.value().peak_memory_bytes, plan.value().peak_memory_bytes);
}

TEST(ManualPlanInterleaved, BadSpecsNameTheField) {
  struct Case {
    ManualPlanSpec spec;
    const char* message;
  };
  const std::vector<Case> cases = {
      {Spec(2, 2, 0, 4), "virtual_stages must be >= 1"},
      {Spec(4, 1, 2, 4), "needs pipeline_parallel >= 2"},
      {Spec(2, 2, 2, 1), "1 microbatches are not a multiple"},  // rounds of 2 groups
      {Spec(2, 2, 4, 4),
       "pipeline_parallel x virtual_stages = 2 x 4 = 8 stages exceed the "
       "model's 4 layers"},
  };
  for (const Case& c : cases) {
    Result<PipelinePlan> plan = EvaluateManualPlan(TinyGpt(), P3(1, 4), c.spec, Options());
    ASSERT_FALSE(plan.ok()) << ManualPlanSpecString(c.spec);
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument) << plan.status().message();
    EXPECT_NE(plan.status().message().find(c.message), std::string::npos)
        << c.message << " not in: " << plan.status().message();
  }
}

TEST(ManualPlanInterleaved, TinyMemoryNamesTheDeviceGroup) {
  PlannerOptions options = Options();
  options.device_memory_bytes = 64 << 10;
  options.memory_levels = 0;
  Result<PipelinePlan> plan = EvaluateManualPlan(TinyGpt(), P3(1, 4), Spec(2, 2, 2, 4), options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInfeasible);
  const std::string& m = plan.status().message();
  const bool named = m.find("device group 0 (stages 0, 2)") != std::string::npos ||
                     m.find("device group 1 (stages 1, 3)") != std::string::npos;
  EXPECT_TRUE(named) << m;
  EXPECT_NE(m.find("microbatches in flight"), std::string::npos) << m;
}

}  // namespace
}  // namespace alpa
