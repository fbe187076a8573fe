// A cluster of mixed GPU types (cluster.h's pools): the planner keeps every stage on one pool,
// gives the faster devices more layers, and beats the best plan of the faster pool alone where
// the slower devices add throughput; the plan's prediction agrees with the simulator, which
// prices each host's links by its pool.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/auto_sharding/plan_check.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/pool_stage_costs.h"
#include "support/pipeline_sim_runs.h"

namespace alpa {
namespace {

constexpr const char* kMixed =
    "dgx-a100-80g:hosts=1,devices_per_host=4+p3.16xlarge:hosts=1,devices_per_host=4";

Result<PipelinePlan> PlanGpt13b(const Cluster& cluster) {
  Result<PlannerModel> model = PlannerModelFromSpec("gpt-1.3b");
  if (!model.ok()) return model.status();
  PlannerOptions options;
  options.threads = 2;
  return PlanPipeline(model.value(), cluster, options);
}

// Layer groups per device of the stages on `pool`.
double LayersPerDevice(const PipelinePlan& plan, const Cluster& cluster, int32_t pool) {
  double layers = 0, devices = 0;
  for (const PlannedStage& st : plan.stages) {
    if (PoolOfHost(cluster, st.devices.front() / cluster.devices_per_host) != pool) continue;
    layers += st.last_layer - st.first_layer + 1;
    devices += static_cast<double>(st.devices.size());
  }
  return devices > 0 ? layers / devices : 0;
}

TEST(MixedClusterPlanner, StagesSizedBySpeedBeatTheFasterPoolAlone) {
  Result<Cluster> mixed = ParseClusterSpec(kMixed);
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  const Cluster& cluster = mixed.value();
  ASSERT_EQ(cluster.pools.size(), 2u);
  Result<PipelinePlan> planned = PlanGpt13b(cluster);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const PipelinePlan& plan = planned.value();

  // Every stage on one pool, within its devices' memory, its shardings valid.
  std::vector<int32_t> stages_on(2, 0);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlannedStage& st = plan.stages[s];
    const int32_t pool = PoolOfHost(cluster, st.devices.front() / cluster.devices_per_host);
    for (int64_t d : st.devices) {
      EXPECT_EQ(PoolOfHost(cluster, d / cluster.devices_per_host), pool) << "stage " << s;
    }
    ++stages_on[static_cast<size_t>(pool)];
    EXPECT_LE(st.memory_bytes, cluster.pools[static_cast<size_t>(pool)].device.memory_bytes)
        << "stage " << s;
    for (const StagePiece& p : st.pieces) {
      const Status check =
          CheckShardingPlan(p.subgraph->graph, st.logical_mesh, *p.sharding, std::nullopt);
      EXPECT_TRUE(check.ok()) << "stage " << s << ": " << check.message();
    }
  }
  EXPECT_GE(stages_on[0], 1);  // the A100s
  EXPECT_GE(stages_on[1], 1);  // the V100s
  // The A100s (2.5x the V100's bf16/f16 peak, 2.3x its memory bandwidth) get more layers per
  // device.
  EXPECT_GT(LayersPerDevice(plan, cluster, 0), 1.2 * LayersPerDevice(plan, cluster, 1));

  // Faster than the best plan of the A100 pool alone (which the search also tried).
  Result<PipelinePlan> a100 = PlanGpt13b(cluster.pools[0]);
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  EXPECT_LT(plan.iteration_seconds, 0.9 * a100.value().iteration_seconds);

  // The simulator, pricing each host's links by its pool, agrees with the prediction.
  const double simulated = testing::SimulatedIterationSeconds(plan, cluster);
  EXPECT_NEAR(simulated, plan.iteration_seconds, 0.02 * plan.iteration_seconds);
}

// A model too small to pay for a second pool behind a 25 Gbps link: the plan stays on the A100s,
// as fast as their own best plan.
TEST(MixedClusterPlanner, ASlowerPoolThatDoesNotPayStaysUnused) {
  Result<Cluster> mixed = ParseClusterSpec(
      "dgx-a100-80g:hosts=1,devices_per_host=2+p3.16xlarge:hosts=1,devices_per_host=2");
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  Result<PlannerModel> model =
      PlannerModelFromSpec("gpt:hidden=64,layers=4,heads=4,seq=32,vocab=256,batch=8");
  ASSERT_TRUE(model.ok()) << model.status().message();
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 2;
  Result<PipelinePlan> plan = PlanPipeline(model.value(), mixed.value(), options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  for (const PlannedStage& st : plan.value().stages) {
    for (int64_t d : st.devices) EXPECT_LT(d, 2) << "a stage on the V100s";
  }
  Result<PipelinePlan> a100 = PlanPipeline(model.value(), mixed.value().pools[0], options);
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  EXPECT_LE(plan.value().iteration_seconds, a100.value().iteration_seconds * (1 + 1e-12));
}

// Twice the usual layer groups by default: unequal devices balance only as finely as the cut.
TEST(MixedClusterPlanner, DefaultLayerGroupsAreTwiceTheUsual) {
  Result<Cluster> mixed = ParseClusterSpec(kMixed);
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  EXPECT_EQ(DefaultLayerGroupCap(mixed.value()), 32);
  Result<Cluster> large = ParseClusterSpec("dgx-a100-80g:hosts=200+p3.16xlarge:hosts=40");
  ASSERT_TRUE(large.ok()) << large.status().message();
  EXPECT_EQ(DefaultLayerGroupCap(large.value()), 80);  // 240 hosts / 6 = 40, doubled
}

TEST(MixedClusterPlanner, PoolOrdersAndPlacement) {
  // Every pool alone first, then every ordered choice of two or more (three pools: 3 + 6 + 6).
  const std::vector<std::vector<int32_t>> two = PlannerPoolOrders(2);
  EXPECT_EQ(two, (std::vector<std::vector<int32_t>>{{0}, {1}, {0, 1}, {1, 0}}));
  EXPECT_EQ(PlannerPoolOrders(3).size(), 15u);
  EXPECT_EQ(PlannerPoolOrders(5).size(), 7u);  // beyond kAllPoolOrders: id order and reverse

  Result<Cluster> mixed = ParseClusterSpec(kMixed);
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  // Pool 1's stages land on its host (devices 4..7), pool 0's on host 0.
  Result<std::vector<std::vector<int64_t>>> placed =
      PlaceStagesOnPools(mixed.value(), {{1, 2}, {1, 4}, {1, 2}}, {1, 0, 1});
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  for (int64_t d : placed.value()[0]) EXPECT_GE(d, 4);
  EXPECT_EQ(placed.value()[1], (std::vector<int64_t>{0, 1, 2, 3}));
  for (int64_t d : placed.value()[2]) EXPECT_GE(d, 4);
  Result<std::vector<std::vector<int64_t>>> bad = PlaceStagesOnPools(mixed.value(), {{1, 4}}, {2});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stage 0: pool 2 is not in the cluster"),
            std::string::npos);
}

TEST(MixedClusterPlanner, ManualPlansAreRefusedWithAReason) {
  Result<Cluster> mixed = ParseClusterSpec(kMixed);
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  Result<PlannerModel> model = PlannerModelFromSpec("gpt-1.3b");
  ASSERT_TRUE(model.ok());
  ManualPlanSpec spec;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), mixed.value(), spec, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("mixes GPU types"), std::string::npos)
      << plan.status().message();
}

}  // namespace
}  // namespace alpa
