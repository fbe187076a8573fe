// The device order of a host with an NVLink graph decides which GPUs a small submesh gets: on one
// p3.16xlarge (hybrid cube mesh), gpt-2.6b pinned to 4 stages on 8 GiB devices needs a stage of
// tensor parallelism 2, and with the preset's order its two GPUs share two NVLinks (50 GB/s)
// where the identity order gives it GPUs 4 and 5, one NVLink apart (25 GB/s): the planner's
// prediction is lower with the preset's order. Both plans pass the independent checker.
#include <gtest/gtest.h>

#include <numeric>

#include "core/cluster/cluster.h"
#include "core/cluster/nvlink_graph.h"
#include "models/planner_model.h"
#include "solvers/planner/planner.h"
#include "support/plan_checks.h"

namespace alpa {
namespace {

PipelinePlan PlanWithOrder(const Cluster& cluster) {
  Result<PlannerModel> model = PlannerModelFromSpec("gpt-2.6b");
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return {};
  PlannerOptions options;
  options.threads = 2;
  options.pipeline_stages = 4;
  options.device_memory_bytes = int64_t{8} << 30;
  Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return {};
  testing::ExpectPiecesCheck(plan.value());
  return std::move(plan).value();
}

TEST(NvlinkOrder, ThePresetsOrderPlansFasterThanTheIdentity) {
  Result<Cluster> preset = MakePresetCluster("p3.16xlarge", 1);
  ASSERT_TRUE(preset.ok()) << preset.status().message();
  ASSERT_EQ(preset.value().nvlink.device_order, BestDeviceOrder(preset.value()));
  Cluster identity = preset.value();
  identity.nvlink.device_order.resize(8);
  std::iota(identity.nvlink.device_order.begin(), identity.nvlink.device_order.end(), 0);
  ASSERT_TRUE(ValidateCluster(identity).ok());

  const PipelinePlan best = PlanWithOrder(preset.value());
  const PipelinePlan plain = PlanWithOrder(identity);
  ASSERT_EQ(best.stages.size(), 4u);
  ASSERT_EQ(plain.stages.size(), 4u);
  // Some stage runs tensor parallelism on two GPUs, and the plan is predicted faster on the
  // double-linked pairs.
  bool pair_tp = false;
  for (const PlannedStage& st : best.stages) {
    pair_tp = pair_tp || (st.devices.size() == 2 && st.tensor_parallel == 2);
  }
  EXPECT_TRUE(pair_tp);
  EXPECT_LT(best.iteration_seconds, plain.iteration_seconds);
}

}  // namespace
}  // namespace alpa
