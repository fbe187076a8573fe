#include "core/problem/sharding_evaluator.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/util/wide_int.h"
#include "support/brute_force.h"
#include "support/random_problem.h"

namespace alpa {
namespace {

const long double kInf = std::numeric_limits<long double>::infinity();

// The IOPDDL example (/work/shared/data/iopddl/example.json), built in code so that this test
// does not depend on the reader.
ShardingProblem IopddlExample() {
  ShardingProblem p;
  p.name = "example";
  const std::vector<UsageInterval> intervals = {
      {30, 70}, {40, 70}, {50, 120}, {110, 140}, {110, 150}};
  const std::vector<std::vector<double>> costs = {{15}, {55, 65}, {25, 45, 35}, {85, 75}, {95}};
  const std::vector<std::vector<int64_t>> usages = {{10}, {25, 25}, {15, 20, 15}, {10, 10}, {15}};
  for (size_t i = 0; i < 5; ++i) {
    ShardingNode node;
    node.costs = costs[i];
    node.usages = usages[i];
    node.interval = intervals[i];
    p.nodes.push_back(node);
  }
  p.edges.push_back({0, 1, {30, 40}});
  p.edges.push_back({0, 2, {50, 10, 40}});
  p.edges.push_back({1, 3, {90, 10, 20, 80}});
  p.edges.push_back({2, 4, {60, 20, 30}});
  p.edges.push_back({3, 4, {70, 60}});
  p.usage_limit = 50;
  return p;
}

const std::vector<int32_t> kOptimumWithLimit = {0, 0, 2, 1, 0};
const std::vector<int32_t> kOptimumWithoutLimit = {0, 0, 1, 1, 0};

// The same liveness as explicit sets, one per time step 0..149.
std::vector<std::vector<int32_t>> LiveSetsOf(const ShardingProblem& p) {
  std::vector<std::vector<int32_t>> sets;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const UsageInterval& in = p.nodes[i].interval;
    if (static_cast<int64_t>(sets.size()) < in.hi) sets.resize(static_cast<size_t>(in.hi));
    for (int64_t t = in.lo; t < in.hi; ++t) {
      sets[static_cast<size_t>(t)].push_back(static_cast<int32_t>(i));
    }
  }
  return sets;
}

TEST(EvaluateAssignment, ExampleOptimumIsFeasible) {
  const ShardingProblem p = IopddlExample();
  ASSERT_TRUE(ValidateProblem(p).ok());
  const Evaluation e = EvaluateAssignment(p, kOptimumWithLimit);
  EXPECT_TRUE(e.feasible) << e.violation;
  EXPECT_EQ(e.violation, "");
  EXPECT_EQ(e.cost, 445.0L);
  EXPECT_EQ(e.peak_usage, 50.0L);  // times 50..69: 10 + 25 + 15
}

TEST(EvaluateAssignment, UnlimitedOptimumViolatesMemoryAtTime50) {
  ShardingProblem p = IopddlExample();
  const Evaluation e = EvaluateAssignment(p, kOptimumWithoutLimit);
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.cost, 415.0L);  // the true sum: memory does not make it infinite
  EXPECT_EQ(e.peak_usage, 55.0L);
  EXPECT_EQ(e.violation, "memory at time 50: 55 exceeds limit 50");

  p.usage_limit.reset();
  const Evaluation unlimited = EvaluateAssignment(p, kOptimumWithoutLimit);
  EXPECT_TRUE(unlimited.feasible) << unlimited.violation;
  EXPECT_EQ(unlimited.cost, 415.0L);
  EXPECT_EQ(unlimited.peak_usage, 55.0L);
}

TEST(EvaluateAssignment, WrongLength) {
  const Evaluation e = EvaluateAssignment(IopddlExample(), {0, 0, 2, 1});
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.violation, "assignment has 4 entries, the problem has 5 nodes");
  EXPECT_EQ(e.cost, kInf);
}

TEST(EvaluateAssignment, StrategyOutOfRange) {
  const ShardingProblem p = IopddlExample();
  Evaluation e = EvaluateAssignment(p, {0, 0, 3, 1, 0});
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.violation, "node 2: strategy 3 out of range [0, 3)");
  EXPECT_EQ(e.cost, kInf);
  e = EvaluateAssignment(p, {-1, 0, 2, 1, 0});
  EXPECT_EQ(e.violation, "node 0: strategy -1 out of range [0, 1)");
}

TEST(EvaluateAssignment, FollowerMismatch) {
  ShardingProblem p = IopddlExample();
  p.nodes[3].follows = 1;  // both have 2 strategies
  ASSERT_TRUE(ValidateProblem(p).ok());
  Evaluation e = EvaluateAssignment(p, kOptimumWithLimit);
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.violation, "node 3 follows node 1 but takes strategy 1, node 1 takes 0");
  EXPECT_EQ(e.cost, 445.0L);
  e = EvaluateAssignment(p, {0, 1, 2, 1, 0});
  EXPECT_TRUE(e.feasible) << e.violation;
  EXPECT_EQ(e.cost, 15 + 65 + 35 + 75 + 95 + 40 + 40 + 80 + 30 + 60);
}

TEST(EvaluateAssignment, ForbiddenNodeCost) {
  ShardingProblem p = IopddlExample();
  p.nodes[2].costs[1] = 1e18;
  const Evaluation e = EvaluateAssignment(p, kOptimumWithoutLimit);
  EXPECT_FALSE(e.feasible);
  // Reported before the memory violation of the same assignment.
  EXPECT_EQ(e.violation, "node 2: strategy 1 is forbidden (cost >= 1e18)");
  EXPECT_EQ(e.cost, kInf);
  EXPECT_EQ(e.peak_usage, 55.0L);
}

TEST(EvaluateAssignment, ForbiddenEdgeEntry) {
  ShardingProblem p = IopddlExample();
  p.edges[3].costs[2] = 5e18;  // edge (2, 4), strategies (2, 0)
  const Evaluation e = EvaluateAssignment(p, kOptimumWithLimit);
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.violation, "edge 3 (2, 4): strategies (2, 0) are forbidden");
  EXPECT_EQ(e.cost, kInf);
}

TEST(EvaluateAssignment, Alias) {
  ShardingProblem p = IopddlExample();
  p.aliases.push_back({1, 3, {0, 0, 0, 1}});  // (1, 1) forbidden: not chosen
  p.aliases.push_back({1, 3, {0, 1, 0, 0}});  // (0, 1) forbidden: chosen
  ASSERT_TRUE(ValidateProblem(p).ok());
  const Evaluation e = EvaluateAssignment(p, kOptimumWithLimit);
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.violation, "alias 1 (1, 3): strategies (0, 1) are forbidden");
  EXPECT_EQ(e.cost, 445.0L);
}

TEST(EvaluateAssignment, ReportsTheFirstViolationInOrder) {
  ShardingProblem p = IopddlExample();
  p.nodes[3].follows = 1;
  p.nodes[2].costs[1] = 1e18;
  p.edges[0].costs[0] = 1e18;
  p.aliases.push_back({0, 4, {1}});
  const std::vector<int32_t> a = kOptimumWithoutLimit;  // node 3 takes 1, node 1 takes 0
  EXPECT_EQ(EvaluateAssignment(p, a).violation,
            "node 3 follows node 1 but takes strategy 1, node 1 takes 0");
  p.nodes[3].follows = -1;
  EXPECT_EQ(EvaluateAssignment(p, a).violation, "node 2: strategy 1 is forbidden (cost >= 1e18)");
  p.nodes[2].costs[1] = 45;
  EXPECT_EQ(EvaluateAssignment(p, a).violation, "edge 0 (0, 1): strategies (0, 0) are forbidden");
  p.edges[0].costs[0] = 30;
  EXPECT_EQ(EvaluateAssignment(p, a).violation, "alias 0 (0, 4): strategies (0, 0) are forbidden");
  p.aliases.clear();
  EXPECT_EQ(EvaluateAssignment(p, a).violation, "memory at time 50: 55 exceeds limit 50");
}

TEST(EvaluateAssignment, ParallelEdgesAdd) {
  ShardingProblem p = IopddlExample();
  p.edges.push_back({2, 0, {1, 2, 3}});        // reversed direction: rows are node 2's strategies
  p.edges.push_back({0, 2, {100, 200, 400}});  // same direction again
  ASSERT_TRUE(ValidateProblem(p).ok());
  const Evaluation e = EvaluateAssignment(p, kOptimumWithLimit);
  EXPECT_TRUE(e.feasible) << e.violation;
  EXPECT_EQ(e.cost, 445.0L + 3 + 400);
}

TEST(EvaluateAssignment, SelfEdgeUsesDiagonal) {
  ShardingProblem p = IopddlExample();
  // Off-diagonal entries are forbidden but can never apply.
  p.edges.push_back({2, 2, {100, 1e18, 1e18, 1e18, 200, 1e18, 1e18, 1e18, 300}});
  ASSERT_TRUE(ValidateProblem(p).ok());
  Evaluation e = EvaluateAssignment(p, kOptimumWithLimit);
  EXPECT_TRUE(e.feasible) << e.violation;
  EXPECT_EQ(e.cost, 445.0L + 300);
  p.aliases.push_back({2, 2, {0, 1, 1, 1, 0, 1, 1, 1, 1}});  // only (2, 2) applies
  e = EvaluateAssignment(p, kOptimumWithLimit);
  EXPECT_EQ(e.violation, "alias 0 (2, 2): strategies (2, 2) are forbidden");
  EXPECT_TRUE(EvaluateAssignment(p, {0, 0, 0, 1, 0}).feasible);
}

TEST(EvaluateAssignment, NegativeCosts) {
  ShardingProblem p;
  p.nodes.resize(2);
  p.nodes[0].costs = {-10, 5};
  p.nodes[1].costs = {-3};
  p.edges.push_back({0, 1, {-7, 2}});
  Evaluation e = EvaluateAssignment(p, {0, 0});
  EXPECT_TRUE(e.feasible);
  EXPECT_EQ(e.cost, -20.0L);
  EXPECT_EQ(e.peak_usage, 0.0L);
  e = EvaluateAssignment(p, {1, 0});
  EXPECT_EQ(e.cost, 4.0L);
}

TEST(EvaluateAssignment, LiveSetsMatchIntervals) {
  ShardingProblem intervals = IopddlExample();
  ShardingProblem sets = intervals;
  sets.live_sets = LiveSetsOf(intervals);
  for (ShardingNode& n : sets.nodes) n.interval = {0, 0};  // ignored with live sets
  ASSERT_TRUE(ValidateProblem(sets).ok());
  for (const auto& a : {kOptimumWithLimit, kOptimumWithoutLimit}) {
    const Evaluation ei = EvaluateAssignment(intervals, a);
    const Evaluation es = EvaluateAssignment(sets, a);
    EXPECT_EQ(ei.feasible, es.feasible);
    EXPECT_EQ(ei.cost, es.cost);
    EXPECT_EQ(ei.peak_usage, es.peak_usage);
    EXPECT_EQ(ei.violation, es.violation);
  }
  // A node listed twice in one set still counts once.
  sets.live_sets[50].push_back(2);
  EXPECT_EQ(EvaluateAssignment(sets, kOptimumWithLimit).peak_usage, 50.0L);
}

TEST(EvaluateAssignment, TimesWithNothingLiveUseZero) {
  ShardingProblem p;
  p.nodes.resize(2);
  p.nodes[0].costs = {1};
  p.nodes[0].usages = {100};
  p.nodes[0].interval = {5, 5};  // never live
  p.nodes[1].costs = {1};
  p.nodes[1].usages = {0};
  p.nodes[1].interval = {0, 10};
  p.usage_limit = 0;
  Evaluation e = EvaluateAssignment(p, {0, 0});
  EXPECT_TRUE(e.feasible) << e.violation;
  EXPECT_EQ(e.peak_usage, 0.0L);
  p.live_sets = {{}, {1}, {}};
  e = EvaluateAssignment(p, {0, 0});
  EXPECT_TRUE(e.feasible) << e.violation;
  p.live_sets[2] = {0};
  e = EvaluateAssignment(p, {0, 0});
  EXPECT_EQ(e.violation, "memory at time 2: 100 exceeds limit 0");
}

TEST(EvaluateAssignment, MemoryTotalsBeyondInt64) {
  ShardingProblem p;
  p.nodes.resize(3);
  for (ShardingNode& n : p.nodes) {
    n.costs = {0};
    n.usages = {4000000000000000000};
    n.interval = {0, 2};
  }
  p.nodes[2].interval = {1, 3};
  p.usage_limit = std::numeric_limits<int64_t>::max();
  const Evaluation e = EvaluateAssignment(p, {0, 0, 0});
  // Time 0 holds 8e18 (fits); time 1 holds 12e18, more than int64 can represent.
  EXPECT_EQ(e.violation,
            "memory at time 1: 12000000000000000000 exceeds limit 9223372036854775807");
  EXPECT_EQ(e.peak_usage, 12e18L);
}

// The sweep agrees with a plain per-time-step count (difference array) on random intervals.
TEST(EvaluateAssignment, SweepMatchesPerStepCount) {
  testing::RandomProblemSpec spec;
  spec.nodes = 300;
  spec.shape = testing::GraphShape::kChain;
  spec.memory = testing::MemoryMode::kIntervals;
  spec.time_steps = 200;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    spec.limit_tightness = 0.05 * static_cast<double>(seed);
    const ShardingProblem p = testing::RandomProblem(spec, seed);
    std::vector<int32_t> a(p.nodes.size());
    testing::SplitMix64 rng(seed);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<int32_t>(rng.Below(p.nodes[i].strategy_count()));
    }
    std::vector<Int128> per_step(static_cast<size_t>(spec.time_steps) + 1, 0);
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      for (int64_t t = p.nodes[i].interval.lo; t < p.nodes[i].interval.hi; ++t) {
        per_step[static_cast<size_t>(t)] += p.nodes[i].usage(a[i]);
      }
    }
    Int128 peak = 0;
    int64_t first = -1;
    for (size_t t = 0; t < per_step.size(); ++t) {
      if (per_step[t] > peak) peak = per_step[t];
      if (first < 0 && per_step[t] > *p.usage_limit) first = static_cast<int64_t>(t);
    }
    const Evaluation e = EvaluateAssignment(p, a);
    EXPECT_EQ(e.peak_usage, static_cast<long double>(peak)) << "seed " << seed;
    if (first < 0) {
      EXPECT_TRUE(e.feasible) << "seed " << seed << ": " << e.violation;
    } else {
      EXPECT_EQ(e.violation.rfind("memory at time " + std::to_string(first) + ": ", 0), 0u)
          << "seed " << seed << ": " << e.violation;
    }
  }
}

TEST(BruteForce, ExampleWithAndWithoutLimit) {
  ShardingProblem p = IopddlExample();
  testing::BruteForceResult r = testing::BruteForceSolve(p);
  ASSERT_FALSE(r.too_large);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.optimum, 445.0L);
  EXPECT_EQ(r.assignment, kOptimumWithLimit);
  p.usage_limit.reset();
  r = testing::BruteForceSolve(p);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.optimum, 415.0L);
  EXPECT_EQ(r.assignment, kOptimumWithoutLimit);
  p.usage_limit = 44;  // times 50..69 need at least 10 + 25 + 15
  r = testing::BruteForceSolve(p);
  EXPECT_FALSE(r.feasible);
  EXPECT_TRUE(r.assignment.empty());
}

TEST(BruteForce, FollowersCopyTheirRootAndLargeSpacesAreRefused) {
  ShardingProblem p = IopddlExample();
  p.usage_limit.reset();
  p.nodes[3].follows = 1;  // the unlimited optimum has node 1 at 0 and node 3 at 1
  const testing::BruteForceResult r = testing::BruteForceSolve(p);
  ASSERT_TRUE(r.feasible);
  // s1 = s3 = 1 gives 65 + 75 + 40 + 80 + 60 = 320 against 330 for 0; node 2 best takes 1.
  EXPECT_EQ(r.optimum, 505.0L);
  EXPECT_EQ(r.assignment, (std::vector<int32_t>{0, 1, 1, 1, 0}));

  ShardingProblem big;
  big.nodes.resize(21);
  for (ShardingNode& n : big.nodes) n.costs = {0, 1};  // 2^21 > 2e6
  EXPECT_TRUE(testing::BruteForceSolve(big).too_large);
  big.nodes[20].follows = 0;  // 2^20 free assignments: searched
  const testing::BruteForceResult small = testing::BruteForceSolve(big);
  EXPECT_FALSE(small.too_large);
  EXPECT_EQ(small.optimum, 0.0L);
}

TEST(EvaluateAssignment, LargeProblemIsFast) {
  testing::RandomProblemSpec spec;
  spec.nodes = 30000;
  spec.max_strategies = 8;
  spec.shape = testing::GraphShape::kRandom;
  spec.edge_density = 2e-4;  // ~90k edges
  spec.memory = testing::MemoryMode::kIntervals;
  spec.time_steps = 30000;
  spec.max_usage = 1000000000000;
  const ShardingProblem p = testing::RandomProblem(spec, 42);
  ASSERT_TRUE(ValidateProblem(p).ok());
  std::vector<int32_t> a(p.nodes.size(), 0);
  const auto start = std::chrono::steady_clock::now();
  const Evaluation e = EvaluateAssignment(p, a);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(e.peak_usage, 0.0L);
  EXPECT_LT(seconds, 0.5) << "evaluating 30k nodes took " << seconds << " s";
}

}  // namespace
}  // namespace alpa
