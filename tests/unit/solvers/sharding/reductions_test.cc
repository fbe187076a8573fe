#include "solvers/sharding/reductions/reductions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "solvers/sharding/work_problem.h"

namespace alpa {
namespace {

constexpr long double kInf = std::numeric_limits<long double>::infinity();

// Calls f on every assignment of p (one call with {} when p has no nodes).
template <typename F>
void ForEachAssignment(const WorkProblem& p, F f) {
  const size_t n = p.cost.size();
  std::vector<int32_t> a(n, 0);
  while (true) {
    f(a);
    size_t v = 0;
    while (v < n && ++a[v] == p.strategy_count(static_cast<int32_t>(v))) a[v++] = 0;
    if (v == n) break;
  }
}

// Best objective over all memory-feasible assignments (+inf if none); `best` gets one optimum.
long double BruteForce(const WorkProblem& p, std::vector<int32_t>* best = nullptr) {
  long double optimum = kInf;
  ForEachAssignment(p, [&](const std::vector<int32_t>& a) {
    if (!WorkMemoryFeasible(p, a)) return;
    const long double value = WorkObjective(p, a);
    if (value < optimum) {
      optimum = value;
      if (best != nullptr) *best = a;
    }
  });
  return optimum;
}

void AddEdge(WorkProblem* p, int32_t a, int32_t b, std::vector<double> cost) {
  p->edges.push_back(WorkEdge{a, b, std::move(cost)});
}

// Pins `nodes` with a binding row: strategy 0 uses 1, the others 0, capacity = count - 1. (The
// cheaper strategies using more memory keeps dominance from removing them in these tests.)
void PinNodes(WorkProblem* p, const std::vector<int32_t>& nodes) {
  MemoryRow row;
  for (int32_t v : nodes) {
    MemoryItem item;
    item.node = v;
    for (int32_t s = 0; s < p->strategy_count(v); ++s) item.usage.push_back(s == 0 ? 1 : 0);
    row.items.push_back(static_cast<int32_t>(p->memory_items.size()));
    p->memory_items.push_back(item);
  }
  row.capacity = static_cast<int64_t>(nodes.size()) - 1;
  p->memory_rows.push_back(row);
}

// The reduced problem keeps the optimum, and every core assignment expands to an input
// assignment of exactly its cost that meets the input's rows when it meets the core's.
void ExpectExact(const WorkProblem& input, const ReducedProblem& reduced) {
  const WorkProblem& core = reduced.core();
  std::vector<int32_t> core_best;
  const long double optimum = BruteForce(input);
  ASSERT_EQ(BruteForce(core, &core_best), optimum);
  ForEachAssignment(core, [&](const std::vector<int32_t>& a) {
    const std::vector<int32_t> expanded = reduced.Expand(a);
    ASSERT_EQ(expanded.size(), input.cost.size());
    const long double value = WorkObjective(core, a);
    if (value < kInf) {
      EXPECT_EQ(WorkObjective(input, expanded), value);
    }
    if (WorkMemoryFeasible(core, a)) {
      EXPECT_TRUE(WorkMemoryFeasible(input, expanded));
    }
  });
  if (optimum < kInf) {
    const std::vector<int32_t> expanded = reduced.Expand(core_best);
    EXPECT_EQ(WorkObjective(input, expanded), optimum);
    EXPECT_TRUE(WorkMemoryFeasible(input, expanded));
    // Restricting an input optimum gives a core optimum.
    std::vector<int32_t> input_best;
    BruteForce(input, &input_best);
    const std::vector<int32_t> restricted = reduced.Restrict(input_best);
    ASSERT_EQ(restricted.size(), core.cost.size());
    EXPECT_TRUE(WorkMemoryFeasible(core, restricted));
    EXPECT_EQ(WorkObjective(core, restricted), optimum);
  }
}

TEST(ReductionsTest, ChainVanishes) {
  WorkProblem p;
  p.cost = {{5, 1, 3}, {2, 2, 0}, {1, 7, 4}, {0, 3, 9}, {6, 2, 2}};
  for (int32_t v = 0; v + 1 < 5; ++v) {
    AddEdge(&p, v, v + 1, {0, 4, 1, 3, 0, 6, 2, 5, 0});
  }
  p.constant = 10;
  ReducedProblem r(p);
  EXPECT_EQ(r.core().node_count(), 0);
  EXPECT_EQ(r.stats().nodes_before, 5);
  EXPECT_EQ(r.stats().edges_before, 4);
  EXPECT_EQ(r.stats().nodes_after, 0);
  EXPECT_EQ(r.core().constant, BruteForce(p));
  EXPECT_EQ(WorkObjective(p, r.Expand({})), r.core().constant);
  ExpectExact(p, r);
}

TEST(ReductionsTest, StarFoldsIntoItsPinnedCentre) {
  WorkProblem p;
  p.cost = {{0, 10}, {3, 1}, {0, 5}, {2, 2}};
  AddEdge(&p, 0, 1, {0, 10, 10, 0});  // leaf 1: min(3+0, 1+10) = 3 | min(3+10, 1+0) = 1
  AddEdge(&p, 0, 2, {1, 1, 4, 0});    // leaf 2: min(0+1, 5+1) = 1 | min(0+4, 5+0) = 4
  AddEdge(&p, 0, 3, {7, 8, 0, 9});    // leaf 3: min(2+7, 2+8) = 9 | min(2+0, 2+9) = 2
  PinNodes(&p, {0});
  ReducedProblem r(p);
  ASSERT_EQ(r.core().node_count(), 1);
  EXPECT_EQ(r.input_node_of_core(), (std::vector<int32_t>{0}));
  EXPECT_EQ(r.core().cost[0], (std::vector<double>{13, 17}));
  EXPECT_EQ(r.stats().r1, 3);
  ASSERT_EQ(r.core().memory_rows.size(), 1u);  // capacity 0: strategy 0 of node 0 is out
  EXPECT_EQ(r.Expand({0}), (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(r.Expand({1}), (std::vector<int32_t>{1, 1, 0, 0}));
  ExpectExact(p, r);
}

TEST(ReductionsTest, TriangleBecomesOneMergedEdge) {
  WorkProblem p;
  p.cost = {{0, 0}, {0, 0}, {1, 2}};  // nodes 0 and 1 stay (memory), node 2 has degree 2
  AddEdge(&p, 0, 1, {1, 2, 3, 9});    // not of the form r[i] + c[j]
  AddEdge(&p, 0, 2, {0, 5, 6, 0});
  AddEdge(&p, 1, 2, {0, 3, 4, 1});
  PinNodes(&p, {0, 1});
  ReducedProblem r(p);
  ASSERT_EQ(r.core().node_count(), 2);
  ASSERT_EQ(r.core().edges.size(), 1u);
  EXPECT_EQ(r.stats().r2, 1);
  // M[j][k] = min_i (c2[i] + E02[j][i] + E12[k][i]), added to E01[j][k]:
  // (0,0): min(1+0+0, 2+5+3) = 1; (0,1): min(1+0+4, 2+5+1) = 5;
  // (1,0): min(1+6+0, 2+0+3) = 5; (1,1): min(1+6+4, 2+0+1) = 3.
  EXPECT_EQ(r.core().edges[0].cost, (std::vector<double>{2, 7, 8, 12}));
  EXPECT_EQ(r.Expand({1, 0}), (std::vector<int32_t>{1, 0, 1}));
  ExpectExact(p, r);
}

TEST(ReductionsTest, SingleStrategyMemoryNodeMovesIntoCapacity) {
  WorkProblem p;
  p.cost = {{4}, {0, 1, 2}, {3, 0}};
  AddEdge(&p, 0, 1, {5, 6, 7});
  AddEdge(&p, 1, 2, {0, 1, 1, 0, 2, 2});
  p.memory_items = {MemoryItem{0, {3}}, MemoryItem{1, {5, 2, 0}}, MemoryItem{2, {1, 4}}};
  p.memory_rows = {MemoryRow{8, {0, 1, 2}}};
  ReducedProblem r(p);
  EXPECT_EQ(r.stats().single_strategy, 1);
  ASSERT_EQ(r.core().node_count(), 2);
  // The 0-1 edge (one row) is 5 + (0, 1, 2): 5 goes to node 0, the rest to node 1.
  EXPECT_EQ(r.core().cost[0], (std::vector<double>{0, 2, 4}));
  // Node 0's usage 3 and the smallest usages (0 and 1) move to the capacity: 8 - 3 - 1 = 4.
  ASSERT_EQ(r.core().memory_rows.size(), 1u);
  EXPECT_EQ(r.core().memory_rows[0].capacity, 4);
  EXPECT_EQ(r.core().constant, 9);
  ExpectExact(p, r);
}

TEST(ReductionsTest, DominatedStrategiesGoAndRestrictMapsThem) {
  WorkProblem p;
  // Node 0 strategy 2 costs 1 more than strategy 0 and its edge row is never cheaper.
  p.cost = {{1, 0, 2}, {0, 0}, {0, 0, 0}};
  AddEdge(&p, 0, 1, {0, 3, 5, 0, 0, 3});
  AddEdge(&p, 0, 2, {1, 2, 3, 9, 0, 9, 1, 2, 3});
  AddEdge(&p, 1, 2, {0, 1, 2, 2, 1, 0});
  p.memory_items = {MemoryItem{0, {0, 1, 0}}, MemoryItem{1, {0, 1}}, MemoryItem{2, {0, 1, 0}}};
  p.memory_rows = {MemoryRow{1, {0, 1, 2}}};
  ReducedProblem r(p);
  EXPECT_GE(r.stats().dominated_strategies, 1);
  ASSERT_EQ(r.input_node_of_core().front(), 0);
  EXPECT_EQ(r.core().strategy_count(0), 2);
  EXPECT_EQ(r.Restrict({2, 0, 0}).front(), 0);  // 2 -> its dominator 0
  EXPECT_EQ(r.Restrict({1, 0, 0}).front(), 1);
  ExpectExact(p, r);
}

TEST(ReductionsTest, ForbiddenEverywhereIsReported) {
  WorkProblem p;
  p.cost = {{0, 0}, {0, 0}, {0}};
  AddEdge(&p, 0, 1, {kInfCost, 0, 0, kInfCost});
  AddEdge(&p, 0, 2, {0, kInfCost});
  AddEdge(&p, 1, 2, {0, kInfCost});
  ReducedProblem r(p);
  EXPECT_EQ(BruteForce(r.core()), kInf);
  EXPECT_TRUE(r.infeasible());
}

WorkProblem RandomProblem(std::mt19937& rng) {
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  WorkProblem p;
  // Dense small graphs, or sparse bigger ones (a random tree plus a few edges) where R1/R2
  // chains and merged edges show up.
  const bool sparse = pick(0, 1) == 1;
  const int n = sparse ? pick(3, 10) : pick(1, 7);
  for (int v = 0; v < n; ++v) {
    std::vector<double> c;
    for (int s = pick(1, sparse ? 3 : 4); s > 0; --s) c.push_back(pick(-3, 12));
    p.cost.push_back(c);
  }
  std::vector<std::vector<bool>> joined(static_cast<size_t>(n),
                                        std::vector<bool>(static_cast<size_t>(n)));
  for (int v = 1; v < n; ++v) {
    if (sparse) joined[static_cast<size_t>(pick(0, v - 1))][static_cast<size_t>(v)] = true;
  }
  for (int extra = sparse ? pick(0, 3) : 0; extra > 0; --extra) {
    const int a = pick(0, n - 2);
    joined[static_cast<size_t>(a)][static_cast<size_t>(pick(a + 1, n - 1))] = true;
  }
  const int density = pick(1, 4);
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (sparse ? !joined[static_cast<size_t>(a)][static_cast<size_t>(b)]
                 : pick(0, 4) >= density) {
        continue;
      }
      std::vector<double> m;
      const size_t kk =
          p.cost[static_cast<size_t>(a)].size() * p.cost[static_cast<size_t>(b)].size();
      for (size_t x = 0; x < kk; ++x) m.push_back(pick(0, 15) == 0 ? kInfCost : pick(-4, 10));
      AddEdge(&p, a, b, m);
    }
  }
  for (int rows = pick(0, 2) == 0 ? pick(1, 2) : 0; rows > 0; --rows) {
    MemoryRow row;
    for (int v = 0; v < n; ++v) {
      if (pick(0, 2) != 0) continue;
      MemoryItem item;
      item.node = v;
      for (size_t s = 0; s < p.cost[static_cast<size_t>(v)].size(); ++s) {
        item.usage.push_back(pick(0, 4));
      }
      row.items.push_back(static_cast<int32_t>(p.memory_items.size()));
      p.memory_items.push_back(item);
    }
    row.capacity = pick(0, 8);
    p.memory_rows.push_back(row);
  }
  p.constant = pick(-5, 5);
  return p;
}

TEST(ReductionsTest, RandomProblemsKeepTheirOptimum) {
  std::mt19937 rng(2024);
  for (int round = 0; round < 1500; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const WorkProblem p = RandomProblem(rng);
    ReducedProblem r(p);
    ExpectExact(p, r);
    if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) return;
  }
}

// A chain or a tree (parent[v] < v) of `n` nodes with 4..8 strategies.
WorkProblem RandomTree(int32_t n, bool chain, std::vector<int32_t>* parent) {
  std::mt19937 rng(static_cast<uint32_t>(n) + (chain ? 1 : 2));
  WorkProblem p;
  parent->assign(static_cast<size_t>(n), -1);
  for (int32_t v = 0; v < n; ++v) {
    std::vector<double> c;
    for (uint32_t s = 4 + rng() % 5; s > 0; --s) c.push_back(static_cast<double>(rng() % 100));
    p.cost.push_back(c);
    if (v == 0) continue;
    const int32_t u = chain ? v - 1 : static_cast<int32_t>(rng() % static_cast<uint32_t>(v));
    (*parent)[static_cast<size_t>(v)] = u;
    std::vector<double> m(p.cost[static_cast<size_t>(u)].size() * c.size());
    for (double& x : m) x = static_cast<double>(rng() % 100);
    AddEdge(&p, u, v, m);
  }
  return p;
}

// Independent tree DP: f[v][s] = c[v][s] + sum over children min_t (E[s][t] + f[child][t]).
long double TreeOptimum(const WorkProblem& p, const std::vector<int32_t>& parent) {
  std::vector<std::vector<long double>> f(p.cost.size());
  for (size_t v = 0; v < p.cost.size(); ++v) f[v].assign(p.cost[v].begin(), p.cost[v].end());
  for (size_t v = p.cost.size(); v-- > 1;) {
    const WorkEdge& e = p.edges[v - 1];  // the edge to v's parent
    const size_t u = static_cast<size_t>(parent[v]);
    const size_t kv = f[v].size();
    for (size_t s = 0; s < f[u].size(); ++s) {
      long double best = kInf;
      for (size_t t = 0; t < kv; ++t) best = std::min(best, e.cost[s * kv + t] + f[v][t]);
      f[u][s] += best;
    }
  }
  return *std::min_element(f[0].begin(), f[0].end());
}

TEST(ReductionsTest, LargeChainAndTreeReduceCompletelyAndFast) {
  for (bool chain : {true, false}) {
    std::vector<int32_t> parent;
    const WorkProblem p = RandomTree(100000, chain, &parent);
    const auto start = std::chrono::steady_clock::now();
    ReducedProblem r(p);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("reductions: 100,000-node %s reduced in %.3f s (r0 %lld, r1 %lld, r2 %lld)\n",
                chain ? "chain" : "tree", seconds, static_cast<long long>(r.stats().r0),
                static_cast<long long>(r.stats().r1), static_cast<long long>(r.stats().r2));
    EXPECT_EQ(r.core().node_count(), 0);
    const long double optimum = TreeOptimum(p, parent);
    EXPECT_EQ(r.core().constant, optimum);
    EXPECT_EQ(WorkObjective(p, r.Expand({})), optimum);
    EXPECT_LT(seconds, 30.0);  // generous: sanitizer builds; a quadratic blowup takes minutes
  }
}

}  // namespace
}  // namespace alpa
