// The CUDA backend equals one device: every case of the shared list
// (support/plan_equivalence_cases.h) lowered to device programs that run on the GPU (each device
// of a plan a runner with its own stream; all of them share this machine's GPU and talk through
// the thread communicator, docs/executor.md) for 2 steps, checked against the one-device
// interpreter and against the plan. Skips, with the reason, where there is no GPU or the build
// has no CUDA (the CPU runtime's test, plan_equivalence_test.cc, runs the same cases exactly).
#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>
#include <string>

#include "exec/cuda/cuda_backend.h"
#include "exec/driver/plan_conformance.h"
#include "exec/driver/plan_executor.h"
#include "exec/driver/plan_run.h"
#include "exec/driver/synthetic_data.h"
#include "support/plan_equivalence_cases.h"
#include "support/small_plans.h"

namespace alpa::testing {

void PrintTo(const EquivalenceCase& c, std::ostream* os) { *os << c.name; }

namespace {

// GPU f32 against the interpreter (exact sums in double, rounded once per op): the GPU sums in
// f32 in its own order (cuBLASLt's K splits, tree reductions), which moves an op's result by a
// few f32 ulps (relative 1e-7 to 1e-6 for the sums here, up to a few hundred terms); two Adam
// steps carry that into the parameters, where Adam's division by sqrt(v) magnifies it for the
// smallest gradients. 1e-4 relative and absolute leaves two orders of magnitude above the
// expected differences and stays far below any real error (a wrong layout or a missing
// addend moves values by 1e-2 and more).
constexpr double kGpuRtol = 1e-4, kGpuAtol = 1e-4;
constexpr int64_t kGpuSteps = 2;

PlanRunOptions CudaRunOptions(const EquivalenceCase& c) {
  PlanRunOptions options = EquivalenceRunOptions(c);
  options.steps = kGpuSteps;
  options.rtol = kGpuRtol;
  options.atol = kGpuAtol;
  options.backend = ExecBackend::kCuda;
  return options;
}

// Every step within tolerance (loss, parameters, and the copies of each parameter equal on
// every device), and the moves that ran are the plan's.
void ExpectEquivalent(const PipelinePlan& plan, const PlanRunReport& run) {
  ASSERT_EQ(static_cast<int64_t>(run.steps.size()), kGpuSteps);
  for (const StepSummary& s : run.steps) {
    EXPECT_LE(s.loss_error, 1.0) << "step " << s.step << ": loss " << s.loss << " vs "
                                 << s.reference_loss;
    EXPECT_LE(s.parameter_error, 1.0)
        << "step " << s.step << ": " << s.worst_parameter << " off by " << s.parameter_error
        << " of the tolerance (relative " << s.parameter_relative << ")";
    EXPECT_TRUE(s.replicas_agree) << "step " << s.step << ": copies of " << s.diverged_parameter
                                  << " disagree";
    EXPECT_TRUE(s.passed) << "step " << s.step;
  }
  Status conforms = CheckExecutedAgainstPlan(plan, run);
  EXPECT_TRUE(conforms.ok()) << conforms.message();
}

// The reason to skip, or empty where a GPU runs the tests.
std::string NoGpuReason() {
  std::string why;
  return CudaDeviceCount(&why) > 0 ? std::string() : "no GPU: " + why;
}

class CudaPlanEquivalenceTest : public ::testing::TestWithParam<EquivalenceCase> {};

TEST_P(CudaPlanEquivalenceTest, ShardedOnTheGpuEqualsOneDevice) {
  const std::string skip = NoGpuReason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const EquivalenceCase& c = GetParam();
  Result<PlannedCase> planned = PlanEquivalenceCase(c);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  Result<PlanRunReport> run =
      RunPlanOnThreads(planned.value().plan, planned.value().whole, CudaRunOptions(c));
  ASSERT_TRUE(run.ok()) << run.status().message();
  ExpectEquivalent(planned.value().plan, run.value());
}

INSTANTIATE_TEST_SUITE_P(Zoo, CudaPlanEquivalenceTest, ::testing::ValuesIn(EquivalenceCases()),
                         [](const ::testing::TestParamInfo<EquivalenceCase>& param) {
                           return param.param.name;
                         });

// A plan of one device (the whole model on one GPU), and the same GPT in bf16 on two
// tensor-parallel devices, where the partial sums of the sharded contractions stay in f32
// storage until the all-reduce rounds them (storage_policy.h).
SmallPlan PlanGpt(const std::string& dtype, int64_t tensor_parallel,
                  const std::string& shape = "layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8") {
  Result<SmallPlan> p =
      PlanSmallModel("gpt:" + shape + ",dtype=" + dtype + ",adam_eps=1e-5", tensor_parallel);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? std::move(p).value() : SmallPlan{};
}

// Both sides round every op to bf16 (8 bits of mantissa, 2^-8 = 0.4 % apart); a GPU sum in
// another order flips a rounding by one ulp now and then, and two steps pass it on: a few ulps
// relative, and an Adam update's size (1e-3) absolute where a gradient near 0 flips sign.
constexpr double kBf16Rtol = 2e-2, kBf16Atol = 5e-3;

// kGpuSteps on the CUDA backend, checked against the interpreter at (rtol, atol).
PlanRunOptions CheckedCudaOptions(double rtol, double atol) {
  PlanRunOptions options;
  options.steps = kGpuSteps;
  options.check = true;
  options.rtol = rtol;
  options.atol = atol;
  options.backend = ExecBackend::kCuda;
  return options;
}

TEST(CudaBackendTest, OneDeviceGptOnTheGpuEqualsTheInterpreter) {
  const std::string skip = NoGpuReason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const SmallPlan p = PlanGpt("f32", 1);
  ASSERT_FALSE(p.plan.stages.empty());
  PlanRunOptions options = CheckedCudaOptions(kGpuRtol, kGpuAtol);
  Result<PlanRunReport> run = RunPlanOnThreads(p.plan, p.whole, options);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ExpectEquivalent(p.plan, run.value());
  // The runner counts live bytes in the buffers' dtypes, as the CPU runtime: the same peak
  // without fusion, and no more with it (fused producers' buffers are never allocated).
  ASSERT_EQ(setenv("ALPA_CUDA_FUSION", "0", 1), 0);
  Result<PlanRunReport> unfused = RunPlanOnThreads(p.plan, p.whole, options);
  ASSERT_EQ(unsetenv("ALPA_CUDA_FUSION"), 0);
  ASSERT_TRUE(unfused.ok()) << unfused.status().message();
  ExpectEquivalent(p.plan, unfused.value());
  options.backend = ExecBackend::kCpu;
  Result<PlanRunReport> cpu = RunPlanOnThreads(p.plan, p.whole, options);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_EQ(unfused.value().steps.back().peak_bytes, cpu.value().steps.back().peak_bytes);
  EXPECT_LE(run.value().steps.back().peak_bytes, cpu.value().steps.back().peak_bytes);
}

TEST(CudaBackendTest, Bf16TensorParallelGptOnTheGpuEqualsTheInterpreterWithinBf16) {
  const std::string skip = NoGpuReason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const SmallPlan p = PlanGpt("bf16", 2);
  ASSERT_FALSE(p.plan.stages.empty());
  Result<PlanRunReport> run =
      RunPlanOnThreads(p.plan, p.whole, CheckedCudaOptions(kBf16Rtol, kBf16Atol));
  ASSERT_TRUE(run.ok()) << run.status().message();
  ExpectEquivalent(p.plan, run.value());
}

// Attention rows enough for the runner to sum them straight from their chains (fusion_plan.h's
// reductions: 2,048 rows per microbatch), in bf16 on one GPU.
TEST(CudaBackendTest, Bf16GptWithFusedRowSumsOnTheGpuEqualsTheInterpreterWithinBf16) {
  const std::string skip = NoGpuReason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const SmallPlan p = PlanGpt("bf16", 1, "layers=1,hidden=32,heads=2,seq=64,vocab=16,batch=32");
  ASSERT_FALSE(p.plan.stages.empty());
  Result<PlanRunReport> run =
      RunPlanOnThreads(p.plan, p.whole, CheckedCudaOptions(kBf16Rtol, kBf16Atol));
  ASSERT_TRUE(run.ok()) << run.status().message();
  ExpectEquivalent(p.plan, run.value());
}

// The fused attention kernels (ALPA_CUDA_FLASH_ATTENTION=1; attention_plan_test.cc shows the
// regions of these programs: every layer's attention with its backward) against the interpreter,
// which rounds the scores and probabilities to bf16 where the kernels keep them in f32: within
// the bf16 tolerance, on one GPU and tensor parallel on two.
TEST(CudaBackendTest, Bf16GptOnTheFusedAttentionKernelsEqualsTheInterpreterWithinBf16) {
  const std::string skip = NoGpuReason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_EQ(setenv("ALPA_CUDA_FLASH_ATTENTION", "1", 1), 0);
  for (int64_t tp : {1, 2}) {
    SCOPED_TRACE("tensor parallel " + std::to_string(tp));
    const SmallPlan p = PlanGpt("bf16", tp, "layers=2,hidden=64,heads=2,seq=40,vocab=16,batch=4");
    ASSERT_FALSE(p.plan.stages.empty());
    Result<PlanRunReport> run =
        RunPlanOnThreads(p.plan, p.whole, CheckedCudaOptions(kBf16Rtol, kBf16Atol));
    ASSERT_TRUE(run.ok()) << run.status().message();
    ExpectEquivalent(p.plan, run.value());
  }
  ASSERT_EQ(unsetenv("ALPA_CUDA_FLASH_ATTENTION"), 0);
}

// The runner encodes the next step's synthetic feeds while the GPU runs this one
// (prepared_feeds.h); inputs fed between steps must replace them. Step 1 runs on fed data (the
// synthetic data of another step), step 2 on the synthetic data again: each equals the
// interpreter on the same data, which it would not if a prepared feed were used for the fed one.
TEST(CudaBackendTest, InputsFedBetweenStepsReplaceTheFeedsPreparedAhead) {
  const std::string skip = NoGpuReason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const SmallPlan p = PlanGpt("f32", 1);
  ASSERT_FALSE(p.plan.stages.empty());
  const PlanRunOptions options = CheckedCudaOptions(kGpuRtol, kGpuAtol);
  Result<std::unique_ptr<PlanExecutor>> ex = PlanExecutor::Create(p.plan, p.whole, options);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  PlanExecutor& executor = *ex.value();
  std::vector<StepSummary> steps;
  for (int64_t step = 0; step < 3; ++step) {
    if (step == 1) {
      for (auto& [id, value] : StepInputs(p.whole, options.seed, 7)) {
        ASSERT_TRUE(executor.SetInput(id, value).ok()) << id;
      }
    }
    Result<StepSummary> s = executor.RunStep();
    ASSERT_TRUE(s.ok()) << s.status().message();
    steps.push_back(s.value());
  }
  for (const StepSummary& s : steps) {
    EXPECT_LE(s.loss_error, 1.0) << "step " << s.step << ": loss " << s.loss << " vs "
                                 << s.reference_loss;
    EXPECT_TRUE(s.passed) << "step " << s.step;
  }
}

}  // namespace
}  // namespace alpa::testing
