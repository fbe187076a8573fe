#include "solvers/sharding/normalize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "core/problem/problem_io.h"
#include "core/problem/sharding_evaluator.h"
#include "solvers/sharding/work_problem.h"
#include "support/test_data.h"

namespace alpa {
namespace {

constexpr long double kInf = std::numeric_limits<long double>::infinity();

ShardingNode Node(std::vector<double> costs, std::vector<int64_t> usages = {},
                  UsageInterval interval = {}, int32_t follows = -1) {
  ShardingNode n;
  n.costs = std::move(costs);
  n.usages = std::move(usages);
  n.interval = interval;
  n.follows = follows;
  return n;
}

// Best objective over all feasible work assignments (+inf if none); `best` gets one optimum.
long double BruteForce(const WorkProblem& p, std::vector<int32_t>* best = nullptr) {
  const size_t n = p.cost.size();
  std::vector<int32_t> a(n, 0);
  long double optimum = kInf;
  while (true) {
    if (WorkMemoryFeasible(p, a)) {
      const long double value = WorkObjective(p, a);
      if (value < optimum) {
        optimum = value;
        if (best != nullptr) *best = a;
      }
    }
    size_t v = 0;
    while (v < n && ++a[v] == p.strategy_count(static_cast<int32_t>(v))) a[v++] = 0;
    if (v == n) break;
  }
  return optimum;
}

TEST(NormalizeTest, IopddlExampleKeepsItsOptimum) {
  Result<ShardingProblem> read = ReadProblemFile(testing::GoldenPath("iopddl_example.json"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  ShardingProblem problem = read.value();
  Result<NormalizedProblem> norm = Normalize(problem);
  ASSERT_TRUE(norm.ok()) << norm.status().message();
  const WorkProblem& work = norm.value().work;
  EXPECT_EQ(work.node_count(), 5);
  EXPECT_EQ(work.edges.size(), 5u);
  std::vector<int32_t> best;
  EXPECT_EQ(BruteForce(work, &best), 445);
  EXPECT_EQ(ToOriginalAssignment(norm.value(), best), (std::vector<int32_t>{0, 0, 2, 1, 0}));

  problem.usage_limit.reset();
  norm = Normalize(problem);
  ASSERT_TRUE(norm.ok());
  EXPECT_TRUE(norm.value().work.memory_rows.empty());
  EXPECT_EQ(BruteForce(norm.value().work, &best), 415);
  EXPECT_EQ(ToOriginalAssignment(norm.value(), best), (std::vector<int32_t>{0, 0, 1, 1, 0}));
}

TEST(NormalizeTest, ParallelEdgesInBothDirectionsAdd) {
  ShardingProblem p;
  p.nodes = {Node({0, 0}), Node({0, 0, 0})};
  p.edges.push_back({0, 1, {1, 2, 3, 4, 5, 6}});
  p.edges.push_back({1, 0, {10, 20, 30, 40, 50, 60}});  // rows = node 1
  p.edges.push_back({0, 0, {100, 7, 7, 200}});          // self edge: diagonal only
  Result<NormalizedProblem> norm = Normalize(p);
  ASSERT_TRUE(norm.ok()) << norm.status().message();
  const WorkProblem& w = norm.value().work;
  ASSERT_EQ(w.edges.size(), 1u);
  EXPECT_EQ(w.edges[0].a, 0);
  EXPECT_EQ(w.edges[0].b, 1);
  EXPECT_EQ(w.edges[0].cost, (std::vector<double>{11, 32, 53, 24, 45, 66}));
  EXPECT_EQ(w.cost[0], (std::vector<double>{100, 200}));
}

TEST(NormalizeTest, FollowerGroupsMergeCostsEdgesAndAliases) {
  ShardingProblem p;
  // Nodes 1 -> 0 and 2 -> 1 -> 0 form one group; node 3 is free.
  p.nodes = {Node({1, 2, 3}), Node({10, 20, 30}, {}, {}, 0), Node({100, 200, 300}, {}, {}, 1),
             Node({0, 5})};
  p.edges.push_back({2, 0, {1, 9, 9, 9, 2, 9, 9, 9, 3}});    // inside the group: diagonal
  p.edges.push_back({3, 2, {1, 2, 3, 4, 5, 6}});             // group <-> node 3, transposed
  p.aliases.push_back({1, 2, {0, 0, 0, 0, 0, 0, 0, 0, 1}});  // forbids strategy 2 of the group
  p.aliases.push_back({0, 3, {0, 1, 0, 0, 0, 0}});           // forbids (0, 1)
  Result<NormalizedProblem> norm = Normalize(p);
  ASSERT_TRUE(norm.ok()) << norm.status().message();
  const NormalizedProblem& n = norm.value();
  EXPECT_EQ(n.work_node_of, (std::vector<int32_t>{0, 0, 0, 1}));
  EXPECT_EQ(n.original_strategy[0], (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(n.work.cost[0], (std::vector<double>{112, 224}));
  ASSERT_EQ(n.work.edges.size(), 1u);
  EXPECT_EQ(n.work.edges[0].cost, (std::vector<double>{1, kInfCost, 2, 5}));
  // Followers must agree, and removed strategies have no work counterpart.
  EXPECT_EQ(ToWorkAssignment(n, {1, 1, 1, 0}), (std::vector<int32_t>{1, 0}));
  EXPECT_FALSE(ToWorkAssignment(n, {1, 0, 1, 0}).has_value());
  EXPECT_FALSE(ToWorkAssignment(n, {2, 2, 2, 0}).has_value());
  EXPECT_FALSE(ToWorkAssignment(n, {1, 1, 1}).has_value());
  EXPECT_EQ(ToOriginalAssignment(n, {1, 1}), (std::vector<int32_t>{1, 1, 1, 1}));
}

TEST(NormalizeTest, ForbiddenStrategiesPropagateAlongEdges) {
  ShardingProblem p;
  p.nodes = {Node({1e18, 1}), Node({0, 0}), Node({0, 0, 0})};
  p.edges.push_back({0, 1, {0, 0, 0, 2e18}});           // node 0 is 1, so node 1 must be 0
  p.edges.push_back({1, 2, {1e19, 3, 1e18, 0, 0, 0}});  // node 1 at 0: node 2 must be 1
  Result<NormalizedProblem> norm = Normalize(p);
  ASSERT_TRUE(norm.ok()) << norm.status().message();
  const NormalizedProblem& n = norm.value();
  EXPECT_EQ(n.original_strategy, (std::vector<std::vector<int32_t>>{{1}, {0}, {1}}));
  EXPECT_EQ(n.work.cost[2], (std::vector<double>{0}));
  ASSERT_EQ(n.work.edges.size(), 1u);  // the 0-1 edge is all zero after the shrink
  EXPECT_EQ(n.work.edges[0].cost, (std::vector<double>{3}));
}

TEST(NormalizeTest, NodeWithoutAllowedStrategyIsInfeasible) {
  ShardingProblem p;
  p.nodes = {Node({0}), Node({0, 0}), Node({1, 2})};
  p.edges.push_back({1, 2, {1, 2, 3, 4}});
  p.aliases.push_back({0, 1, {1, 1}});
  Result<NormalizedProblem> norm = Normalize(p);
  ASSERT_FALSE(norm.ok());
  EXPECT_EQ(norm.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(norm.status().message().find("node 1 has no strategy left"), std::string::npos)
      << norm.status().message();

  // A follower group whose members allow disjoint strategies.
  ShardingProblem q;
  q.nodes = {Node({0, 1e18}), Node({1e18, 0}, {}, {}, 0)};
  norm = Normalize(q);
  ASSERT_FALSE(norm.ok());
  EXPECT_EQ(norm.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(norm.status().message().find("node 0"), std::string::npos);
}

// Intervals A [0,3), B [1,2), C [2,5), D [3,4): live sets {A}, {A,B}, {A,C}, {C,D}, {C}.
// Usages A {1,5}, B {3,6}, C {2,7}, D {3,5}, limit 10. Shifted spreads 4, 3, 5, 2. Rows:
// {A,B} capacity 10-4 = 6 < 7, {A,C} 10-3 = 7 < 9, {C,D} 10-5 = 5 < 7 (none implies another);
// {A} (9 >= 4) and {C} (8 >= 5) never bind. No single usage exceeds a capacity.
ShardingProblem MemoryProblem(bool live_sets) {
  ShardingProblem p;
  p.nodes = {Node({0, 0}, {1, 5}, {0, 3}), Node({0, 0}, {3, 6}, {1, 2}),
             Node({0, 0}, {2, 7}, {2, 5}), Node({0, 0}, {3, 5}, {3, 4})};
  p.usage_limit = 10;
  if (live_sets) p.live_sets = {{0}, {0, 1}, {1, 0}, {0, 2}, {2, 3}, {2}, {0}, {0, 2}};
  return p;
}

TEST(NormalizeTest, MemoryRowsFromIntervalsAndLiveSetsAgree) {
  for (bool live_sets : {false, true}) {
    SCOPED_TRACE(live_sets ? "live sets" : "intervals");
    Result<NormalizedProblem> norm = Normalize(MemoryProblem(live_sets));
    ASSERT_TRUE(norm.ok()) << norm.status().message();
    const WorkProblem& w = norm.value().work;
    ASSERT_EQ(w.memory_items.size(), 4u);
    EXPECT_EQ(w.memory_items[0].usage, (std::vector<int64_t>{0, 4}));
    EXPECT_EQ(w.memory_items[1].usage, (std::vector<int64_t>{0, 3}));
    EXPECT_EQ(w.memory_items[2].usage, (std::vector<int64_t>{0, 5}));
    EXPECT_EQ(w.memory_items[3].usage, (std::vector<int64_t>{0, 2}));
    ASSERT_EQ(w.memory_rows.size(), 3u);
    EXPECT_EQ(w.memory_rows[0].items, (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(w.memory_rows[0].capacity, 6);
    EXPECT_EQ(w.memory_rows[1].items, (std::vector<int32_t>{0, 2}));
    EXPECT_EQ(w.memory_rows[1].capacity, 7);
    EXPECT_EQ(w.memory_rows[2].items, (std::vector<int32_t>{2, 3}));
    EXPECT_EQ(w.memory_rows[2].capacity, 5);
  }
}

TEST(NormalizeTest, MemoryRowsDropImpliedAndNeverBindingRows) {
  ShardingProblem p = MemoryProblem(false);
  p.usage_limit = 100;
  Result<NormalizedProblem> norm = Normalize(p);
  ASSERT_TRUE(norm.ok());
  EXPECT_TRUE(norm.value().work.memory_rows.empty());
  EXPECT_TRUE(norm.value().work.memory_items.empty());
  // A and E on [0,10) with usages {0,2}, B {1,3} on [5,6), a constant C {1} on [0,10), limit 4:
  // {A,E} binds on [0,5) and [6,10) with capacity 3 (spread 4), but {A,E,B} on [5,6) has
  // capacity 2 and implies both.
  ShardingProblem q;
  q.nodes = {Node({0, 0}, {0, 2}, {0, 10}), Node({0, 0}, {0, 2}, {0, 10}),
             Node({0, 0}, {1, 3}, {5, 6}), Node({0}, {1}, {0, 10})};
  q.usage_limit = 4;
  for (bool live_sets : {false, true}) {
    SCOPED_TRACE(live_sets ? "live sets" : "intervals");
    // The same as explicit live sets, with a duplicate and a subset.
    if (live_sets) q.live_sets = {{0, 1, 3}, {3, 1, 0}, {0, 1, 2, 3}, {0, 3}, {0, 1, 3}};
    norm = Normalize(q);
    ASSERT_TRUE(norm.ok());
    ASSERT_EQ(norm.value().work.memory_rows.size(), 1u);
    EXPECT_EQ(norm.value().work.memory_rows[0].items, (std::vector<int32_t>{0, 1, 2}));
    EXPECT_EQ(norm.value().work.memory_rows[0].capacity, 2);
  }
}

// A [0,1) usages {0,10}, B [0,2) {1,4}, C [1,2) {0,4}, limit 7; the alias forbids A = B.
// Round 1: at time 0 the capacity is 7 - 1 = 6, so A's strategy 1 (10) goes; A = 0 then forbids
// B = 0, so B = 1 (usage 4). Round 2: at time 1 the capacity drops to 7 - 4 = 3 and C's
// strategy 1 (4) no longer fits.
TEST(NormalizeTest, StrategiesThatCannotFitARowAreRemovedToAFixedPoint) {
  ShardingProblem p;
  p.nodes = {Node({0, 0}, {0, 10}, {0, 1}), Node({0, 0}, {1, 4}, {0, 2}),
             Node({0, 0}, {0, 4}, {1, 2})};
  p.aliases.push_back({0, 1, {1, 0, 0, 1}});
  p.usage_limit = 7;
  Result<NormalizedProblem> norm = Normalize(p);
  ASSERT_TRUE(norm.ok()) << norm.status().message();
  EXPECT_EQ(norm.value().original_strategy, (std::vector<std::vector<int32_t>>{{0}, {1}, {0}}));
  EXPECT_TRUE(norm.value().work.memory_rows.empty());
}

TEST(NormalizeTest, MemoryThatCannotFitIsInfeasible) {
  for (bool live_sets : {false, true}) {
    ShardingProblem p = MemoryProblem(live_sets);
    p.usage_limit = 3;
    Result<NormalizedProblem> norm = Normalize(p);
    ASSERT_FALSE(norm.ok());
    EXPECT_EQ(norm.status().code(), StatusCode::kInfeasible);
    EXPECT_EQ(norm.status().message(),
              "memory at time 1: even the smallest usages need 4 > limit 3");
  }
  // Node 1 follows node 0; each fits alone at its smallest usage, but not on the same strategy.
  ShardingProblem q;
  q.nodes = {Node({0, 0}, {0, 5}, {0, 1}), Node({0, 0}, {5, 0}, {0, 1}, 0)};
  q.usage_limit = 4;
  Result<NormalizedProblem> norm = Normalize(q);
  ASSERT_FALSE(norm.ok());
  EXPECT_EQ(norm.status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(norm.status().message(),
            "node 0 has no strategy left whose memory usage fits the limit");
}

// Random problems with followers, aliases, parallel edges and memory: every original
// assignment the independent evaluator accepts maps to a work assignment of the same cost that
// meets the rows, and every work assignment maps back to a feasible one of the same cost.
TEST(NormalizeTest, RandomProblemsMatchTheEvaluator) {
  std::mt19937 rng(7);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 2000; ++round) {
    ShardingProblem p;
    const int n = pick(1, 5);
    for (int v = 0; v < n; ++v) {
      int32_t follows = v > 0 && pick(0, 3) == 0 ? pick(0, v - 1) : -1;
      const int k =
          follows >= 0 ? p.nodes[static_cast<size_t>(follows)].strategy_count() : pick(1, 3);
      ShardingNode node;
      for (int s = 0; s < k; ++s) {
        node.costs.push_back(pick(0, 9) == 0 ? 1e18 : pick(-5, 20));
        node.usages.push_back(pick(0, 6));
      }
      if (std::all_of(node.costs.begin(), node.costs.end(), IsForbidden)) node.costs[0] = 1;
      node.interval.lo = pick(0, 5);
      node.interval.hi = node.interval.lo + pick(0, 4);
      node.follows = follows;
      p.nodes.push_back(node);
    }
    for (int e = pick(0, 6); e > 0; --e) {
      ShardingEdge edge;
      edge.u = pick(0, n - 1);
      edge.v = pick(0, n - 1);
      const int kk = p.nodes[static_cast<size_t>(edge.u)].strategy_count() *
                     p.nodes[static_cast<size_t>(edge.v)].strategy_count();
      for (int x = 0; x < kk; ++x) edge.costs.push_back(pick(0, 12) == 0 ? 1e18 : pick(-3, 15));
      p.edges.push_back(edge);
    }
    for (int a = pick(0, 2); a > 0; --a) {
      ShardingAlias alias;
      alias.u = pick(0, n - 1);
      alias.v = pick(0, n - 1);
      const int kk = p.nodes[static_cast<size_t>(alias.u)].strategy_count() *
                     p.nodes[static_cast<size_t>(alias.v)].strategy_count();
      for (int x = 0; x < kk; ++x) alias.forbidden.push_back(pick(0, 3) == 0 ? 1 : 0);
      p.aliases.push_back(alias);
    }
    if (pick(0, 2) > 0) p.usage_limit = pick(0, 16);
    if (pick(0, 2) == 0) {
      for (int t = pick(1, 5); t > 0; --t) {
        std::vector<int32_t> set;
        for (int x = pick(0, 4); x > 0; --x) set.push_back(pick(0, n - 1));
        p.live_sets.push_back(set);
      }
    }
    ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p).message();
    SCOPED_TRACE("round " + std::to_string(round));

    long double optimum = kInf;
    std::vector<int32_t> a(static_cast<size_t>(n), 0);
    Result<NormalizedProblem> norm = Normalize(p);
    while (true) {
      const Evaluation ev = EvaluateAssignment(p, a);
      if (ev.feasible) {
        optimum = std::min(optimum, ev.cost);
        ASSERT_TRUE(norm.ok()) << norm.status().message();
        const auto work = ToWorkAssignment(norm.value(), a);
        ASSERT_TRUE(work.has_value());
        EXPECT_EQ(WorkObjective(norm.value().work, *work), ev.cost);
        EXPECT_TRUE(WorkMemoryFeasible(norm.value().work, *work));
        EXPECT_EQ(ToOriginalAssignment(norm.value(), *work), a);
      }
      size_t v = 0;
      while (v < a.size() && ++a[v] == p.nodes[v].strategy_count()) a[v++] = 0;
      if (v == a.size()) break;
    }
    if (!norm.ok()) {
      EXPECT_EQ(norm.status().code(), StatusCode::kInfeasible);
      EXPECT_EQ(optimum, kInf);
      continue;
    }
    std::vector<int32_t> best;
    EXPECT_EQ(BruteForce(norm.value().work, &best), optimum);
    if (optimum < kInf) {
      const Evaluation ev = EvaluateAssignment(p, ToOriginalAssignment(norm.value(), best));
      EXPECT_TRUE(ev.feasible) << ev.violation;
      EXPECT_EQ(ev.cost, optimum);
    }
  }
}

// A generated problem of the IOPDDL size: 30,000 nodes, 30,000 time steps.
TEST(NormalizeTest, BigProblemIsFast) {
  std::mt19937 rng(11);
  ShardingProblem p;
  const int n = 30000;
  for (int v = 0; v < n; ++v) {
    ShardingNode node;
    const int k = 2 + static_cast<int>(rng() % 8);
    for (int s = 0; s < k; ++s) {
      node.costs.push_back(static_cast<double>(rng() % 1000));
      node.usages.push_back(static_cast<int64_t>(rng() % 4 == 0 ? 1000 : 1000 + rng() % 5000));
    }
    node.interval.lo = static_cast<int64_t>(rng() % 30000);
    node.interval.hi = node.interval.lo + 1 + static_cast<int64_t>(rng() % 2000);
    p.nodes.push_back(node);
    if (v > 0) {
      ShardingEdge e;
      e.u = static_cast<int32_t>(rng() % static_cast<uint32_t>(v));
      e.v = v;
      const size_t kk = p.nodes[static_cast<size_t>(e.u)].costs.size() * node.costs.size();
      for (size_t x = 0; x < kk; ++x) e.costs.push_back(static_cast<double>(rng() % 100));
      p.edges.push_back(e);
    }
  }
  p.usage_limit = 2800000;
  const auto start = std::chrono::steady_clock::now();
  Result<NormalizedProblem> norm = Normalize(p);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(norm.ok()) << norm.status().message();
  size_t entries = 0;
  for (const MemoryRow& row : norm.value().work.memory_rows) entries += row.items.size();
  std::printf("normalize: %d nodes -> %zu memory rows (%zu entries) in %.3f s\n", n,
              norm.value().work.memory_rows.size(), entries, seconds);
  EXPECT_GT(norm.value().work.memory_rows.size(), 100u);
  EXPECT_LT(seconds, 30.0);  // generous: sanitizer builds; a quadratic blowup takes minutes
}

TEST(NormalizeTest, IopddlGRowsMatchAnIndependentCount) {
  const std::string path = testing::SharedDataPath("asplos-2025-iopddl-G.json.gz");
  if (path.empty()) GTEST_SKIP() << "shared IOPDDL data not present";
  Result<ShardingProblem> read = ReadProblemFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  Result<NormalizedProblem> norm = Normalize(read.value());
  ASSERT_TRUE(norm.ok()) << norm.status().message();
  size_t entries = 0, strategies = 0;
  for (const MemoryRow& row : norm.value().work.memory_rows) entries += row.items.size();
  for (const std::vector<double>& c : norm.value().work.cost) strategies += c.size();
  // Counted by a separate Python program following the same rules (forbidden strategies, arc
  // consistency, rows by sweep, strategies over a capacity removed, repeated).
  EXPECT_EQ(norm.value().work.memory_rows.size(), 71u);
  EXPECT_EQ(entries, 2593u);
  EXPECT_EQ(strategies, 7501u);
}

}  // namespace
}  // namespace alpa
