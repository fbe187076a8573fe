// Interleaved 1F1B (pipeline_schedule.h): every device group runs each of its stages' forwards
// and backwards once, in an order whose dependencies resolve; its time on equal stages is
// Megatron-LM's B t + (P - 1) t / v; its shape rules and its in-flight counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>
#include <tuple>

#include "solvers/pipeline/pipeline_estimate.h"
#include "solvers/pipeline/pipeline_schedule.h"

namespace alpa {
namespace {

constexpr PipelineScheduleKind kInterleaved = PipelineScheduleKind::kInterleavedOneFOneB;

TEST(InterleavedSchedule, EveryGroupRunsEachOfItsTasksOnce) {
  for (int32_t groups : {2, 3, 4}) {
    for (int32_t v : {2, 3}) {
      for (int64_t b : {int64_t{groups}, int64_t{2} * groups, int64_t{5} * groups}) {
        const int32_t stages = groups * v;
        for (int32_t g = 0; g < groups; ++g) {
          const std::vector<GroupTask> tasks = GroupSchedule(kInterleaved, stages, v, g, b);
          ASSERT_EQ(tasks.size(), static_cast<size_t>(2 * b * v));
          std::set<std::tuple<int32_t, int32_t, int64_t>> seen;
          std::set<std::pair<int32_t, int64_t>> forwarded;
          for (const GroupTask& t : tasks) {
            EXPECT_EQ(StageGroup(stages, v, t.stage), g);
            EXPECT_TRUE(seen.insert({static_cast<int32_t>(t.kind), t.stage, t.microbatch}).second);
            if (t.kind == PipelineTaskKind::kForward) forwarded.insert({t.stage, t.microbatch});
            // A stage's backward of a microbatch comes after its forward.
            if (t.kind == PipelineTaskKind::kBackward) {
              EXPECT_TRUE(forwarded.count({t.stage, t.microbatch}));
            }
          }
        }
      }
    }
  }
}

TEST(InterleavedSchedule, StageScheduleIsItsShareOfTheGroupOrder) {
  const std::vector<PipelineTask> own = StageSchedule(kInterleaved, 6, 4, 6, 2);
  std::vector<PipelineTask> expected;
  for (const GroupTask& t : GroupSchedule(kInterleaved, 6, 2, 1, 6)) {
    if (t.stage == 4) expected.push_back({t.kind, t.microbatch});
  }
  EXPECT_EQ(own, expected);
  EXPECT_EQ(own.size(), 12u);
}

// Megatron-LM's first group (P = 4, v = 2, B = 8): (P - 1) 2 + (v - 1) P = 10 warm-up forwards,
// the chunks in rounds of P microbatches, then one forward and one backward.
TEST(InterleavedSchedule, FirstGroupOrderFollowsMegatron) {
  const std::vector<GroupTask> tasks = GroupSchedule(kInterleaved, 8, 2, 0, 8);
  // The first 10 tasks are forwards: microbatches 0-3 of stage 0, 0-3 of stage 4, 4-5 of stage 0.
  const std::vector<GroupTask> head(tasks.begin(), tasks.begin() + 11);
  const std::vector<GroupTask> expected = {
      {PipelineTaskKind::kForward, 0, 0}, {PipelineTaskKind::kForward, 1, 0},
      {PipelineTaskKind::kForward, 2, 0}, {PipelineTaskKind::kForward, 3, 0},
      {PipelineTaskKind::kForward, 0, 4}, {PipelineTaskKind::kForward, 1, 4},
      {PipelineTaskKind::kForward, 2, 4}, {PipelineTaskKind::kForward, 3, 4},
      {PipelineTaskKind::kForward, 4, 0}, {PipelineTaskKind::kForward, 5, 0},
      {PipelineTaskKind::kForward, 6, 0}};
  EXPECT_EQ(head, expected);
  // Then the first backward: the last chunk's (stage 4) of microbatch 0.
  EXPECT_EQ(tasks[11], (GroupTask{PipelineTaskKind::kBackward, 0, 4}));
}

// On equal stages without transfers the iteration is B t + (P - 1) t / v, t the group's work per
// microbatch (Narayanan et al., SC'21, section 2.2.2), against 1F1B's B t + (P - 1) t.
TEST(InterleavedSchedule, EqualStagesTakeMegatronsTime) {
  for (int32_t groups : {2, 4}) {
    for (int32_t v : {2, 4}) {
      for (int64_t b : {int64_t{2} * groups, int64_t{4} * groups}) {
        std::vector<PipelineEstimateStage> chunks(static_cast<size_t>(groups * v));
        for (auto& c : chunks) c = {1.0, 2.0, 0, 0, 0, 0};
        const double t = 3.0 * v;
        EXPECT_DOUBLE_EQ(EvaluateSchedule(kInterleaved, chunks, b, v),
                         static_cast<double>(b) * t + (groups - 1) * t / v)
            << groups << " groups, v " << v << ", B " << b;
        std::vector<PipelineEstimateStage> whole(static_cast<size_t>(groups));
        for (auto& w : whole) w = {1.0 * v, 2.0 * v, 0, 0, 0, 0};
        EXPECT_DOUBLE_EQ(EvaluateSchedule(PipelineScheduleKind::kOneFOneB, whole, b),
                         static_cast<double>(b) * t + (groups - 1) * t);
      }
    }
  }
}

// An independent discrete-event run of the group orders: repeatedly start the ready task that
// can start earliest. Equal to EvaluateSchedule's sweeps, with transfers and unequal stages.
double EventOrderTime(const std::vector<PipelineEstimateStage>& st, int64_t b, int32_t v) {
  const int32_t n = static_cast<int32_t>(st.size());
  const int32_t groups = n / v;
  std::vector<std::vector<GroupTask>> order;
  for (int32_t g = 0; g < groups; ++g) order.push_back(GroupSchedule(kInterleaved, n, v, g, b));
  const double none = -1;
  std::vector<std::vector<double>> fwd(st.size(),
                                       std::vector<double>(static_cast<size_t>(b), none));
  std::vector<std::vector<double>> bwd = fwd;
  std::vector<size_t> next(order.size(), 0);
  std::vector<double> clock(order.size(), 0);
  for (;;) {
    int32_t pick = -1;
    double start = std::numeric_limits<double>::infinity();
    for (int32_t g = 0; g < groups; ++g) {
      if (next[g] == order[g].size()) continue;
      const GroupTask& t = order[g][next[g]];
      double ready = clock[g];
      const size_t s = static_cast<size_t>(t.stage), m = static_cast<size_t>(t.microbatch);
      if (t.kind == PipelineTaskKind::kForward && t.stage > 0) {
        if (fwd[s - 1][m] == none) continue;
        ready = std::max(ready, fwd[s - 1][m] + st[s - 1].to_next);
      }
      if (t.kind == PipelineTaskKind::kBackward && t.stage + 1 < n) {
        if (bwd[s + 1][m] == none) continue;
        ready = std::max(ready, bwd[s + 1][m] + st[s].from_next);
      }
      if (ready < start) {
        start = ready;
        pick = g;
      }
    }
    if (pick < 0) break;
    const GroupTask& t = order[pick][next[pick]++];
    const size_t s = static_cast<size_t>(t.stage), m = static_cast<size_t>(t.microbatch);
    clock[pick] = start + (t.kind == PipelineTaskKind::kForward ? st[s].forward : st[s].backward);
    (t.kind == PipelineTaskKind::kForward ? fwd : bwd)[s][m] = clock[pick];
  }
  for (int32_t g = 0; g < groups; ++g) EXPECT_EQ(next[g], order[g].size()) << "deadlock";
  std::vector<double> finish = clock;
  for (int32_t s = 0; s < n; ++s) finish[s % groups] += st[s].iteration_overhead;
  return *std::max_element(finish.begin(), finish.end());
}

TEST(InterleavedSchedule, EvaluationMatchesAnEventRunOnRandomPipelines) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.1, 2.0), c(0.0, 0.5);
  for (int trial = 0; trial < 100; ++trial) {
    const int32_t groups = 2 + trial % 3, v = 2 + trial % 2;
    const int64_t b = groups * (1 + trial % 4);
    std::vector<PipelineEstimateStage> st(static_cast<size_t>(groups * v));
    for (auto& s : st) s = {u(rng), u(rng), c(rng), c(rng), c(rng), 0};
    EXPECT_NEAR(EvaluateSchedule(kInterleaved, st, b, v), EventOrderTime(st, b, v), 1e-9)
        << "trial " << trial;
  }
}

TEST(InterleavedSchedule, ShapeProblemsAreNamed) {
  EXPECT_EQ(PipelineShapeProblem(kInterleaved, 8, 2, 8), "");
  EXPECT_NE(PipelineShapeProblem(kInterleaved, 8, 1, 8).find("at least 2 stages"),
            std::string::npos);
  EXPECT_NE(PipelineShapeProblem(kInterleaved, 8, 3, 8).find("do not split"), std::string::npos);
  EXPECT_NE(PipelineShapeProblem(kInterleaved, 8, 2, 6).find("not a multiple"), std::string::npos);
  EXPECT_NE(PipelineShapeProblem(kInterleaved, 4, 4, 4).find("at least 2 device groups"),
            std::string::npos);
  EXPECT_NE(PipelineShapeProblem(PipelineScheduleKind::kOneFOneB, 4, 2, 4).find("one stage"),
            std::string::npos);
  EXPECT_TRUE(GroupSchedule(kInterleaved, 8, 2, 0, 6).empty());
  EXPECT_TRUE(StageSchedule(kInterleaved, 8, 0, 8).empty());  // v = 1 does not fit
  EXPECT_EQ(EvaluateSchedule(kInterleaved, std::vector<PipelineEstimateStage>(8), 6, 2), 0);
}

// Each stage holds the most of its microbatches forwarded and not yet backwarded in the group
// order; the first group's first chunk more than 1F1B's first stage (the warm-up runs further).
TEST(InterleavedSchedule, InFlightCountsFollowTheOrder) {
  for (int32_t s = 0; s < 8; ++s) {
    int64_t held = 0, most = 0;
    for (const PipelineTask& t : StageSchedule(kInterleaved, 8, s, 8, 2)) {
      held += t.kind == PipelineTaskKind::kForward ? 1 : -1;
      most = std::max(most, held);
    }
    EXPECT_EQ(MicrobatchesInFlight(kInterleaved, 8, s, 8, 2), most);
    EXPECT_EQ(WeightGradientsPending(kInterleaved, 8, s, 8, 2), 0);
  }
  // Stage 0 runs all 8 forwards before its first backward (the 4 backwards of stage 4 come
  // first); 1F1B's first stage, of twice the layers, holds 4.
  EXPECT_EQ(MicrobatchesInFlight(kInterleaved, 8, 0, 8, 2), 8);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kOneFOneB, 4, 0, 8), 4);
}

}  // namespace
}  // namespace alpa
