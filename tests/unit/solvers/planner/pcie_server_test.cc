// The link between the GPUs of a host decides how much tensor parallelism pays: on an 8-GPU
// server without NVLink (PCIe Gen4, 32 GB/s a direction against NVSwitch's 300) the planner
// splits gpt-39b into a longer pipeline with less tensor parallelism per device than on a DGX
// A100 (two stages of tp 4 there, one with selective recomputation; one stage of tp 8 without
// recomputation); both plans pass the independent checker.
#include <gtest/gtest.h>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/planner/planner.h"
#include "support/plan_checks.h"

namespace alpa {
namespace {

PipelinePlan PlanGpt39b(const char* preset) {
  Result<Cluster> cluster = MakePresetCluster(preset, 1);
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  Result<PlannerModel> model = PlannerModelFromSpec("gpt-39b");
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!cluster.ok() || !model.ok()) return {};
  PlannerOptions options;
  options.threads = 2;
  Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster.value(), options);
  EXPECT_TRUE(plan.ok()) << preset << ": " << plan.status().message();
  if (!plan.ok()) return {};
  SCOPED_TRACE(preset);
  testing::ExpectPiecesCheck(plan.value());
  return std::move(plan).value();
}

// The tensor-parallel degree of the average device.
double MeanTensorParallel(const PipelinePlan& plan) {
  double sum = 0, devices = 0;
  for (const PlannedStage& st : plan.stages) {
    const double n = static_cast<double>(st.devices.size());
    sum += n * static_cast<double>(st.tensor_parallel);
    devices += n;
  }
  return devices > 0 ? sum / devices : 0;
}

TEST(PcieServer, LessTensorParallelismThanOnNvlink) {
  const PipelinePlan nvlink = PlanGpt39b("dgx-a100-80g");
  const PipelinePlan pcie = PlanGpt39b("pcie-a100-80g");
  ASSERT_FALSE(nvlink.stages.empty());
  ASSERT_FALSE(pcie.stages.empty());
  EXPECT_GE(MeanTensorParallel(nvlink), 4);
  EXPECT_LT(MeanTensorParallel(pcie), MeanTensorParallel(nvlink));
  EXPECT_GT(pcie.stages.size(), nvlink.stages.size());
  // The slower links cost time: the PCIe server's plan is slower than the DGX's.
  EXPECT_GT(pcie.iteration_seconds, nvlink.iteration_seconds);
}

}  // namespace
}  // namespace alpa
