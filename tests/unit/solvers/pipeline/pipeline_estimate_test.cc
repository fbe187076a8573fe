// The 1F1B prediction with transfers (pipeline_estimate.h): hand-computed cases, the DP's
// formula when nothing crosses, and the independent bisection over the event graph
// (tests/support/pipeline_prediction.h) on random pipelines.
#include "solvers/pipeline/pipeline_estimate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "support/pipeline_prediction.h"

namespace alpa {
namespace {

TEST(PipelineEstimate, NoTransfersIsTheDpFormulaWhenOnlyStageZeroHasOverhead) {
  // t = 3, 5, 2; o = 1, 0, 0; B = 8: T = (3 + 5 + 2) + 1 + 7 * 5 = 46.
  std::vector<PipelineEstimateStage> s(3);
  s[0] = {1, 2, 1, 0, 0};
  s[1] = {2, 3, 0, 0, 0};
  s[2] = {0.5, 1.5, 0, 0, 0};
  const PipelineEstimate e = EstimateOneFOneB(s, 8);
  EXPECT_DOUBLE_EQ(e.period_seconds, 5);
  EXPECT_DOUBLE_EQ(e.iteration_seconds, 46);
  EXPECT_EQ(e.bottleneck_first, 1);
  EXPECT_EQ(e.bottleneck_last, 1);
}

TEST(PipelineEstimate, StagesRunTheirOverheadsInParallel) {
  // Each stage synchronises its own gradients after its own last backward: stage 1's ends
  // b_0 = 2 s before stage 0's, stage 2's b_0 + b_1 = 5 s before. With o = 1, 1, 1 the
  // iteration ends 1 s after stage 0's last backward (not 3 s, as if they ran one after another).
  std::vector<PipelineEstimateStage> s(3);
  s[0] = {1, 2, 1, 0, 0};
  s[1] = {2, 3, 1, 0, 0};
  s[2] = {0.5, 1.5, 1, 0, 0};
  EXPECT_DOUBLE_EQ(EstimateOneFOneB(s, 8).iteration_seconds, 10 + 7 * 5 + 1);
  // A long overhead on the last stage sets the end: 9 s after its last backward, 5 s before
  // stage 0's.
  s[2].iteration_overhead = 9;
  EXPECT_DOUBLE_EQ(EstimateOneFOneB(s, 8).iteration_seconds, 10 + 7 * 5 + 4);
  // A gradient transfer back from stage 1 to stage 0 (d_0 = 0.5) moves stage 1 and 2 earlier.
  s[0].from_next = 0.5;
  EXPECT_DOUBLE_EQ(EstimateOneFOneB(s, 8).iteration_seconds, 10.5 + 7 * 5 + 3.5);
}

TEST(PipelineEstimate, SlowLinkBoundsThePeriod) {
  // Two equal stages, f = 1, b = 2, and 1.5 s each way between them: the loop through both
  // stages takes 3 + 3 + 3 = 9 s for 2 microbatches in flight, P = 4.5 > 3.
  std::vector<PipelineEstimateStage> s(2);
  s[0] = {1, 2, 0, 1.5, 1.5};
  s[1] = {1, 2, 0, 0, 0};
  const PipelineEstimate e = EstimateOneFOneB(s, 4);
  EXPECT_DOUBLE_EQ(e.period_seconds, 4.5);
  EXPECT_DOUBLE_EQ(e.iteration_seconds, 6 + 3 + 3 * 4.5);
  EXPECT_EQ(e.bottleneck_first, 0);
  EXPECT_EQ(e.bottleneck_last, 1);
  // One microbatch: no steady state, the first pass only.
  EXPECT_DOUBLE_EQ(EstimateOneFOneB(s, 1).iteration_seconds, 9);
}

TEST(PipelineEstimate, EmptyOrNoMicrobatches) {
  EXPECT_EQ(EstimateOneFOneB({}, 4).iteration_seconds, 0);
  EXPECT_EQ(EstimateOneFOneB(std::vector<PipelineEstimateStage>(2), 0).iteration_seconds, 0);
}

TEST(PipelineEstimate, AgreesWithBisectionOnRandomPipelines) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 8);
    const long long b = 1 + static_cast<long long>(rng() % 12);
    std::vector<PipelineEstimateStage> s(static_cast<size_t>(n));
    std::vector<testing::PredictionStage> t(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      const bool link = k + 1 < n && rng() % 2 == 0;
      s[static_cast<size_t>(k)] = {u(rng), u(rng), u(rng) * 0.1, link ? u(rng) : 0,
                                   link ? u(rng) : 0};
      const PipelineEstimateStage& x = s[static_cast<size_t>(k)];
      t[static_cast<size_t>(k)] = {x.forward, x.backward, x.iteration_overhead, x.to_next,
                                   x.from_next};
    }
    double period = 0;
    const double expected = testing::PredictIterationByBisection(t, b, &period);
    const PipelineEstimate e = EstimateOneFOneB(s, b);
    EXPECT_NEAR(e.period_seconds, period, 1e-9 * period) << "trial " << trial;
    EXPECT_NEAR(e.iteration_seconds, expected, 1e-9 * expected) << "trial " << trial;
  }
}

TEST(ZeroBubbleEstimate, EqualStagesLoseOnlyForwardPlusInputGradientMinusWeightPerStage) {
  // f = b_input = w = 1 (backward 2 of which weight 1): 1F1B's bubble (S - 1)(f + b + w) shrinks
  // to (S - 1)(f + b_input - w) when B >= S: T = B * 3 + (S - 1) * 1.
  for (int32_t n : {2, 4, 8}) {
    for (int64_t b : {int64_t{8}, int64_t{32}}) {
      std::vector<PipelineEstimateStage> s(static_cast<size_t>(n));
      for (PipelineEstimateStage& st : s) st = {1, 2, 0, 0, 0, 1};
      const double zb = EstimateZeroBubbleH1(s, b).iteration_seconds;
      EXPECT_DOUBLE_EQ(zb, static_cast<double>(3 * b + (n - 1))) << n << " stages, B " << b;
      EXPECT_DOUBLE_EQ(EstimateOneFOneB(s, b).iteration_seconds,
                       static_cast<double>(3 * b + 3 * (n - 1)));
      EXPECT_DOUBLE_EQ(
          EstimatePipeline(PipelineScheduleKind::kZeroBubbleH1, s, b).iteration_seconds, zb);
    }
  }
}

TEST(ZeroBubbleEstimate, WithoutWeightGradientsItIsOneFOneBEvaluated) {
  // weight = 0: ZB-H1's order is 1F1B's with empty weight-gradient tasks, whatever the stages,
  // transfers and overheads.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.1, 2.0);
  for (int trial = 0; trial < 50; ++trial) {
    const int32_t n = 1 + trial % 5;
    std::vector<PipelineEstimateStage> s(static_cast<size_t>(n));
    for (PipelineEstimateStage& st : s)
      st = {u(rng), u(rng), u(rng) / 2, u(rng) / 4, u(rng) / 4, 0};
    const int64_t b = 1 + trial % 9;
    EXPECT_DOUBLE_EQ(EvaluateSchedule(PipelineScheduleKind::kZeroBubbleH1, s, b),
                     EvaluateSchedule(PipelineScheduleKind::kOneFOneB, s, b))
        << "trial " << trial;
  }
}

TEST(ZeroBubbleEstimate, EvaluatedOneFOneBMatchesTheClosedFormInSteadyState) {
  // Equal stages, no transfers, B >= S: both give B t + (S - 1) t.
  std::vector<PipelineEstimateStage> s(4, PipelineEstimateStage{1, 2, 0, 0, 0, 0});
  EXPECT_DOUBLE_EQ(EvaluateSchedule(PipelineScheduleKind::kOneFOneB, s, 8),
                   EstimateOneFOneB(s, 8).iteration_seconds);
  EXPECT_DOUBLE_EQ(EvaluateSchedule(PipelineScheduleKind::kOneFOneB, s, 8), 33);
  EXPECT_DOUBLE_EQ(EvaluateSchedule(PipelineScheduleKind::kOneFOneB, {}, 8), 0);
}

}  // namespace
}  // namespace alpa
