// Without a GPU (or in a build without CUDA) the CUDA backend answers kUnsupported with the
// reason, from the runner's factory and from a plan run that asks for it, and nothing crashes.
// On a machine with a GPU these tests skip (cuda_plan_equivalence_test.cc runs the backend).
#include <gtest/gtest.h>

#include <string>

#include "exec/cuda/cuda_backend.h"
#include "exec/driver/plan_run.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"

namespace alpa {
namespace {

// Empty where a GPU is there to run on; else CudaDeviceCount's reason.
std::string NoGpuReason() {
  std::string why;
  return CudaDeviceCount(&why) > 0 ? std::string() : why;
}

TEST(CudaBackendUnavailableTest, CreatingARunnerAnswersUnsupportedWithTheReason) {
  const std::string why = NoGpuReason();
  if (why.empty()) GTEST_SKIP() << "a GPU is present: the backend is available";
  DeviceProgram program;
  program.device = 0;
  program.stage = 0;
  Result<std::unique_ptr<ProgramRunner>> runner = CreateCudaRunner(program, CudaBackendOptions());
  ASSERT_FALSE(runner.ok());
  EXPECT_EQ(runner.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(runner.status().message().find("CUDA"), std::string::npos) << runner.status().message();
}

TEST(CudaBackendUnavailableTest, ReportsNoDevicesAndAReason) {
  std::string why;
  const int32_t count = CudaDeviceCount(&why);
  if (count > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(count, 0);
  EXPECT_FALSE(why.empty());
}

TEST(CudaBackendUnavailableTest, APlanRunOnTheCudaBackendFailsWithUnsupported) {
  const std::string why = NoGpuReason();
  if (why.empty()) GTEST_SKIP() << "a GPU is present: the backend is available";
  Result<PlannerModel> model = PlannerModelFromSpec("mlp:layers=2,hidden=8,batch=4,dtype=f32");
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster = ParseClusterSpec("p3.16xlarge:hosts=1,devices_per_host=2");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  ManualPlanSpec spec;
  spec.data_parallel = 2;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  PlanRunOptions options;
  options.backend = ExecBackend::kCuda;
  Result<Graph> whole = model.value().build(1);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  Result<PlanRunReport> run = RunPlanOnThreads(plan.value(), whole.value(), options);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kUnsupported) << run.status().message();
}

}  // namespace
}  // namespace alpa
