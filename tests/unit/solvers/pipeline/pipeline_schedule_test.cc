// The microbatches a stage holds activations of under each schedule equal the most forwarded
// and not yet backwarded microbatches in the schedule's own task order; ZB-H1's tasks, their
// order and its pending weight gradients.
#include "solvers/pipeline/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace alpa {
namespace {

// A microbatch is in flight from its forward to its last task (the backward, or under a schedule
// that splits it the weight gradient).
int64_t MostInFlight(const std::vector<PipelineTask>& tasks, bool split) {
  int64_t in_flight = 0, most = 0;
  const PipelineTaskKind last =
      split ? PipelineTaskKind::kWeightGradient : PipelineTaskKind::kBackward;
  for (const PipelineTask& t : tasks) {
    if (t.kind == PipelineTaskKind::kForward) ++in_flight;
    if (t.kind == last) --in_flight;
    most = std::max(most, in_flight);
  }
  return most;
}

// The most microbatches whose backward ran and whose weight gradient has not, before a task that
// is not that weight gradient starts (what they keep besides the running task's).
int64_t MostPending(const std::vector<PipelineTask>& tasks) {
  int64_t pending = 0, most = 0;
  for (const PipelineTask& t : tasks) {
    if (t.kind == PipelineTaskKind::kWeightGradient) --pending;
    most = std::max(most, pending);
    if (t.kind == PipelineTaskKind::kBackward) ++pending;
  }
  return most;
}

TEST(MicrobatchesInFlight, EqualsTheScheduleOwnCount) {
  for (PipelineScheduleKind kind : {PipelineScheduleKind::kGPipe, PipelineScheduleKind::kOneFOneB,
                                    PipelineScheduleKind::kZeroBubbleH1}) {
    for (int32_t stages = 1; stages <= 4; ++stages) {
      for (int32_t stage = 0; stage < stages; ++stage) {
        for (int64_t b = 1; b <= 6; ++b) {
          EXPECT_EQ(MicrobatchesInFlight(kind, stages, stage, b),
                    MostInFlight(StageSchedule(kind, stages, stage, b), SplitsBackward(kind)))
              << "kind " << static_cast<int>(kind) << ", stage " << stage << " of " << stages
              << ", " << b << " microbatches";
        }
      }
    }
  }
  // GPipe holds every microbatch; 1F1B min(stages - stage, B).
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kGPipe, 4, 3, 8), 8);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kOneFOneB, 4, 0, 8), 4);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kOneFOneB, 4, 3, 8), 1);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kOneFOneB, 4, 0, 2), 2);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kGPipe, 4, 4, 8), 0);  // no such stage
  // ZB-H1: min(stages, B) on every stage.
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kZeroBubbleH1, 4, 3, 8), 4);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kZeroBubbleH1, 4, 0, 2), 2);
}

TEST(ZeroBubbleH1, EveryMicrobatchRunsForwardInputGradientThenWeightGradient) {
  for (int32_t stages = 1; stages <= 5; ++stages) {
    for (int32_t stage = 0; stage < stages; ++stage) {
      for (int64_t b = 1; b <= 9; ++b) {
        const std::vector<PipelineTask> tasks =
            StageSchedule(PipelineScheduleKind::kZeroBubbleH1, stages, stage, b);
        ASSERT_EQ(tasks.size(), static_cast<size_t>(3 * b));
        std::vector<int> seen(static_cast<size_t>(b), 0);  // tasks of each microbatch so far
        int64_t next[3] = {0, 0, 0};                       // each kind runs in microbatch order
        for (const PipelineTask& t : tasks) {
          const int kind = static_cast<int>(t.kind);
          EXPECT_EQ(t.microbatch, next[kind]++);
          EXPECT_EQ(seen[static_cast<size_t>(t.microbatch)]++, kind)
              << "stage " << stage << " of " << stages << ", B " << b;
        }
        EXPECT_EQ(MostPending(tasks), std::min<int64_t>(stage, b - 1))
            << "stage " << stage << " of " << stages << ", B " << b;
        EXPECT_EQ(WeightGradientsPending(PipelineScheduleKind::kZeroBubbleH1, stages, stage, b),
                  MostPending(tasks));
      }
    }
  }
}

TEST(ZeroBubbleH1, KeepsOneFOneBOrderOfForwardsAndInputGradients) {
  // Without the weight gradients, ZB-H1 is 1F1B: same warm-up, same alternation.
  for (int32_t stages = 1; stages <= 5; ++stages) {
    for (int32_t stage = 0; stage < stages; ++stage) {
      for (int64_t b = 1; b <= 9; ++b) {
        std::vector<PipelineTask> without;
        for (const PipelineTask& t :
             StageSchedule(PipelineScheduleKind::kZeroBubbleH1, stages, stage, b)) {
          if (t.kind != PipelineTaskKind::kWeightGradient) without.push_back(t);
        }
        EXPECT_EQ(without, StageSchedule(PipelineScheduleKind::kOneFOneB, stages, stage, b));
      }
    }
  }
  // The last of 4 stages keeps 3 weight gradients back; the first none.
  const std::vector<PipelineTask> last =
      StageSchedule(PipelineScheduleKind::kZeroBubbleH1, 4, 3, 4);
  const std::vector<PipelineTask> expected = {
      {PipelineTaskKind::kForward, 0},        {PipelineTaskKind::kBackward, 0},
      {PipelineTaskKind::kForward, 1},        {PipelineTaskKind::kBackward, 1},
      {PipelineTaskKind::kForward, 2},        {PipelineTaskKind::kBackward, 2},
      {PipelineTaskKind::kForward, 3},        {PipelineTaskKind::kBackward, 3},
      {PipelineTaskKind::kWeightGradient, 0}, {PipelineTaskKind::kWeightGradient, 1},
      {PipelineTaskKind::kWeightGradient, 2}, {PipelineTaskKind::kWeightGradient, 3}};
  EXPECT_EQ(last, expected);
  EXPECT_EQ(WeightGradientsPending(PipelineScheduleKind::kOneFOneB, 4, 3, 4), 0);
  EXPECT_TRUE(SplitsBackward(PipelineScheduleKind::kZeroBubbleH1));
  EXPECT_FALSE(SplitsBackward(PipelineScheduleKind::kOneFOneB));
  EXPECT_STREQ(PipelineScheduleName(PipelineScheduleKind::kZeroBubbleH1), "zb-h1");
}

}  // namespace
}  // namespace alpa
