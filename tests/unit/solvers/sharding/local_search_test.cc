#include "solvers/sharding/local_search/local_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "solvers/sharding/local_search/local_search_contract.h"
#include "solvers/sharding/local_search/local_search_graph.h"
#include "solvers/sharding/local_search/local_search_memory.h"
#include "solvers/sharding/local_search/local_search_trws.h"
#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {
namespace {

constexpr double kInf = kInfCost;

struct BruteForce {
  bool found = false;
  long double objective = std::numeric_limits<long double>::infinity();
};

// Every assignment, checked with the work problem's own objective and memory rows.
BruteForce Solve(const WorkProblem& p) {
  BruteForce best;
  const int32_t n = p.node_count();
  std::vector<int32_t> x(static_cast<size_t>(n), 0);
  while (true) {
    const long double objective = WorkObjective(p, x);
    if (std::isfinite(static_cast<double>(objective)) && WorkMemoryFeasible(p, x) &&
        objective < best.objective) {
      best.found = true;
      best.objective = objective;
    }
    int32_t i = 0;
    while (i < n && ++x[static_cast<size_t>(i)] == p.strategy_count(i)) {
      x[static_cast<size_t>(i)] = 0;
      ++i;
    }
    if (i == n) break;
  }
  return best;
}

LocalSearchResult RunDeterministic(const WorkProblem& p, uint64_t seed, int64_t max_moves) {
  const SolveControl control;
  LocalSearchOptions options;
  options.seed = seed;
  options.max_moves = max_moves;
  return RunLocalSearch(p, control, options);
}

// Checks the answer independently of the search's own bookkeeping.
void ExpectValid(const WorkProblem& p, const LocalSearchResult& r) {
  ASSERT_TRUE(r.found);
  ASSERT_EQ(r.assignment.size(), static_cast<size_t>(p.node_count()));
  for (int32_t v = 0; v < p.node_count(); ++v) {
    ASSERT_GE(r.assignment[static_cast<size_t>(v)], 0);
    ASSERT_LT(r.assignment[static_cast<size_t>(v)], p.strategy_count(v));
  }
  const long double objective = WorkObjective(p, r.assignment);
  EXPECT_TRUE(std::isfinite(static_cast<double>(objective)));
  EXPECT_EQ(objective, r.objective);
  EXPECT_TRUE(WorkMemoryFeasible(p, r.assignment));
}

// A chain a - b - c with two strategies each: 0 (replicated: costly, no extra memory) and
// 1 (sharded: cheap, 5 bytes more). Neighbours that disagree pay 15, and the row over all three
// has room for two sharded nodes. From the smallest-memory start (all 0, cost 30) every single
// move costs more; the optimum shards a and b together: 0 + 0 + 10 + 15 = 25.
WorkProblem ChainProblem(int64_t capacity) {
  WorkProblem p;
  p.cost = {{10, 0}, {10, 0}, {10, 1}};
  const std::vector<double> disagree = {0, 15, 15, 0};
  p.edges = {WorkEdge{0, 1, disagree}, WorkEdge{1, 2, disagree}};
  p.memory_items = {MemoryItem{0, {0, 5}}, MemoryItem{1, {0, 5}}, MemoryItem{2, {0, 5}}};
  p.memory_rows = {MemoryRow{capacity, {0, 1, 2}}};
  return p;
}

TEST(LocalSearch, FindsTheCoordinatedMoveThatSingleMovesMiss) {
  const WorkProblem p = ChainProblem(10);
  const LocalSearchResult r = RunDeterministic(p, 1, 10'000);
  ExpectValid(p, r);
  EXPECT_EQ(r.objective, 25);
  EXPECT_EQ(r.assignment, (std::vector<int32_t>{1, 1, 0}));
}

TEST(LocalSearch, IopddlExampleOptimum) {
  // The IOPDDL example as a work problem: nodes 0 and 4 have one strategy; the limit 50 binds
  // at times 50..69 (nodes 0, 1, 2) where usages are 10 + 25 + {15, 20, 15}.
  WorkProblem p;
  p.cost = {{15}, {55, 65}, {25, 45, 35}, {85, 75}, {95}};
  p.edges = {WorkEdge{0, 1, {30, 40}}, WorkEdge{0, 2, {50, 10, 40}},
             WorkEdge{1, 3, {90, 10, 20, 80}}, WorkEdge{2, 4, {60, 20, 30}},
             WorkEdge{3, 4, {70, 60}}};
  p.memory_items = {MemoryItem{2, {0, 5, 0}}};
  p.memory_rows = {MemoryRow{50 - 10 - 25 - 15, {0}}};
  const LocalSearchResult r = RunDeterministic(p, 7, 10'000);
  ExpectValid(p, r);
  EXPECT_EQ(r.objective, 445);
  EXPECT_EQ(r.assignment, (std::vector<int32_t>{0, 0, 2, 1, 0}));
  // Without the limit the optimum is 415 at [0, 0, 1, 1, 0].
  p.memory_rows.clear();
  const LocalSearchResult free = RunDeterministic(p, 7, 10'000);
  ExpectValid(p, free);
  EXPECT_EQ(free.objective, 415);
  EXPECT_EQ(free.assignment, (std::vector<int32_t>{0, 0, 1, 1, 0}));
}

TEST(LocalSearch, InfeasibleMemoryIsNotFound) {
  // Even all-replicated needs 0 bytes above the base, so a negative capacity cannot hold.
  const LocalSearchResult r = RunDeterministic(ChainProblem(-1), 1, 10'000);
  EXPECT_FALSE(r.found);
  EXPECT_TRUE(r.assignment.empty());
}

TEST(LocalSearch, NoFiniteAssignmentIsNotFound) {
  // Every pair of strategies across the edge is forbidden for a's only allowed strategy.
  WorkProblem p;
  p.cost = {{1, kInf}, {2, 3}};
  p.edges = {WorkEdge{0, 1, {kInf, kInf, 0, 0}}};
  EXPECT_FALSE(RunDeterministic(p, 1, 1000).found);
}

TEST(LocalSearch, EmptyProblemKeepsTheConstant) {
  WorkProblem p;
  p.constant = 12.5L;
  const LocalSearchResult r = RunDeterministic(p, 1, 100);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.objective, 12.5L);
  p.memory_rows = {MemoryRow{-3, {}}};  // a row no assignment can satisfy
  EXPECT_FALSE(RunDeterministic(p, 1, 100).found);
}

TEST(LocalSearch, ForbiddenPairsAreNeverChosen) {
  // b and c are tied to a by permutations (alias-like +inf everywhere else), and d may not take
  // strategy 2 next to c's strategy 0. The smallest-memory start violates both ties.
  WorkProblem p;
  p.cost = {{5, 1, 9}, {0, 0, 0}, {2, 2, 0}, {1, 3, 0}};
  p.edges = {WorkEdge{0, 1, {kInf, 0, kInf, kInf, kInf, 0, 0, kInf, kInf}},
             WorkEdge{0, 2, {0, kInf, kInf, kInf, 0, kInf, kInf, kInf, 0}},
             WorkEdge{2, 3, {0, 4, kInf, 1, 0, 2, 3, 1, 0}}};
  p.memory_items = {MemoryItem{0, {0, 0, 0}}, MemoryItem{1, {3, 0, 1}}, MemoryItem{2, {0, 4, 4}},
                    MemoryItem{3, {0, 0, 6}}};
  p.memory_rows = {MemoryRow{6, {0, 1, 2, 3}}};
  const BruteForce best = Solve(p);
  ASSERT_TRUE(best.found);
  const LocalSearchResult r = RunDeterministic(p, 3, 10'000);
  ExpectValid(p, r);
  EXPECT_EQ(r.objective, best.objective);
}

// Random problems small enough for brute force: a tree plus extra edges, integer costs, some
// forbidden node strategies, forbidden pairs and permutation ties, and memory rows from random
// live intervals with a capacity between the smallest and the largest possible usage.
WorkProblem RandomProblem(uint32_t seed, int32_t n, int32_t max_k) {
  std::mt19937 rng(seed);
  auto below = [&rng](int32_t m) { return static_cast<int32_t>(rng() % static_cast<uint32_t>(m)); };
  WorkProblem p;
  p.cost.resize(static_cast<size_t>(n));
  for (auto& c : p.cost) {
    const int32_t k = 1 + below(max_k);
    for (int32_t s = 0; s < k; ++s) c.push_back(below(10) == 0 && s > 0 ? kInf : below(20));
  }
  auto add_edge = [&](int32_t a, int32_t b) {
    for (const WorkEdge& e : p.edges) {
      if (e.a == a && e.b == b) return;
    }
    const size_t ka = p.cost[static_cast<size_t>(a)].size();
    const size_t kb = p.cost[static_cast<size_t>(b)].size();
    WorkEdge e{a, b, std::vector<double>(ka * kb)};
    const bool tie = ka == kb && below(4) == 0;
    for (size_t s = 0; s < ka; ++s) {
      for (size_t t = 0; t < kb; ++t) {
        double c = below(30);
        if (tie) c = t == (s + 1) % kb ? below(5) : kInf;
        if (!tie && below(12) == 0) c = kInf;
        e.cost[s * kb + t] = c;
      }
    }
    p.edges.push_back(e);
  };
  for (int32_t v = 1; v < n; ++v) add_edge(below(v), v);
  for (int32_t extra = 0; extra < n / 3; ++extra) {
    const int32_t a = below(n);
    const int32_t b = below(n);
    if (a != b) add_edge(std::min(a, b), std::max(a, b));
  }
  std::vector<int32_t> lo(static_cast<size_t>(n));
  std::vector<int32_t> hi(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) {
    MemoryItem item{v, {}};
    for (size_t s = 0; s < p.cost[static_cast<size_t>(v)].size(); ++s) {
      item.usage.push_back(below(8));
    }
    p.memory_items.push_back(item);
    lo[static_cast<size_t>(v)] = below(6);
    hi[static_cast<size_t>(v)] = lo[static_cast<size_t>(v)] + 1 + below(4);
  }
  for (int32_t t = 0; t < 10; ++t) {
    MemoryRow row;
    int64_t low = 0;
    int64_t high = 0;
    for (int32_t v = 0; v < n; ++v) {
      if (lo[static_cast<size_t>(v)] > t || t >= hi[static_cast<size_t>(v)]) continue;
      row.items.push_back(v);
      const std::vector<int64_t>& u = p.memory_items[static_cast<size_t>(v)].usage;
      low += *std::min_element(u.begin(), u.end());
      high += *std::max_element(u.begin(), u.end());
    }
    if (row.items.empty()) continue;
    row.capacity = low + (high - low) * 2 / 5;
    p.memory_rows.push_back(row);
  }
  return p;
}

TEST(LocalSearch, MatchesBruteForceOnRandomProblems) {
  int32_t feasible = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const WorkProblem p = RandomProblem(seed, 3 + static_cast<int32_t>(seed % 6), 4);
    const BruteForce best = Solve(p);
    const LocalSearchResult r = RunDeterministic(p, seed, 20'000);
    ASSERT_EQ(r.found, best.found) << "seed " << seed;
    if (!best.found) continue;
    ++feasible;
    ExpectValid(p, r);
    EXPECT_EQ(r.objective, best.objective) << "seed " << seed;
  }
  EXPECT_GE(feasible, 40);  // the generator mostly makes feasible problems
}

TEST(LocalSearch, HandlesNodesWithSeveralItemsAndUnorderedRows) {
  // Merged followers give a node several items, and rows need not follow time: node 0 gets a
  // second item in the first and third rows but not the second (after swapping the first row
  // with the last), so its rows form several runs.
  int32_t feasible = 0;
  for (uint32_t seed = 100; seed < 160; ++seed) {
    WorkProblem p = RandomProblem(seed, 7, 3);
    if (p.memory_rows.size() < 3) continue;
    p.memory_items.push_back(MemoryItem{0, std::vector<int64_t>(p.cost[0].size(), 0)});
    p.memory_items.back().usage.back() = 3;
    const int32_t extra = static_cast<int32_t>(p.memory_items.size()) - 1;
    std::swap(p.memory_rows[0], p.memory_rows[p.memory_rows.size() - 1]);
    p.memory_rows[0].items.push_back(extra);
    p.memory_rows[2].items.push_back(extra);
    const BruteForce best = Solve(p);
    const LocalSearchResult r = RunDeterministic(p, seed, 20'000);
    ASSERT_EQ(r.found, best.found) << "seed " << seed;
    if (!best.found) continue;
    ++feasible;
    ExpectValid(p, r);
    EXPECT_EQ(r.objective, best.objective) << "seed " << seed;
  }
  EXPECT_GE(feasible, 15);
}

// A larger problem for the behaviour tests: a long chain of layers with skip edges and rows
// from live intervals.
WorkProblem LargeProblem(int32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  auto below = [&rng](int32_t m) { return static_cast<int32_t>(rng() % static_cast<uint32_t>(m)); };
  WorkProblem p;
  p.cost.resize(static_cast<size_t>(n));
  for (auto& c : p.cost) {
    const int32_t k = 2 + below(5);
    for (int32_t s = 0; s < k; ++s) c.push_back(below(100));
  }
  for (int32_t v = 1; v < n; ++v) {
    for (int32_t back : {1, 2 + below(6)}) {
      const int32_t u = v - back;
      if (u < 0 || (back > 1 && below(3) != 0)) continue;
      const size_t ka = p.cost[static_cast<size_t>(u)].size();
      const size_t kb = p.cost[static_cast<size_t>(v)].size();
      WorkEdge e{u, v, std::vector<double>(ka * kb)};
      for (size_t s = 0; s < ka; ++s) {
        for (size_t t = 0; t < kb; ++t) e.cost[s * kb + t] = s == t ? 0 : 20 + below(60);
      }
      p.edges.push_back(e);
    }
  }
  for (int32_t v = 0; v < n; ++v) {
    MemoryItem item{v, {}};
    for (size_t s = 0; s < p.cost[static_cast<size_t>(v)].size(); ++s) {
      item.usage.push_back(below(10));
    }
    p.memory_items.push_back(item);
  }
  for (int32_t t = 0; t + 8 <= n; t += 4) {
    MemoryRow row{0, {}};
    int64_t low = 0;
    int64_t high = 0;
    for (int32_t v = t; v < t + 8; ++v) {
      row.items.push_back(v);
      const std::vector<int64_t>& u = p.memory_items[static_cast<size_t>(v)].usage;
      low += *std::min_element(u.begin(), u.end());
      high += *std::max_element(u.begin(), u.end());
    }
    row.capacity = low + (high - low) / 3;
    p.memory_rows.push_back(row);
  }
  return p;
}

TEST(LocalSearch, SameSeedAndMoveBudgetGiveTheSameAnswer) {
  const WorkProblem p = LargeProblem(400, 11);
  const LocalSearchResult first = RunDeterministic(p, 42, 200'000);
  const LocalSearchResult second = RunDeterministic(p, 42, 200'000);
  ExpectValid(p, first);
  EXPECT_EQ(first.assignment, second.assignment);
  EXPECT_EQ(first.objective, second.objective);
}

TEST(LocalSearch, RespectsTheDeadline) {
  const WorkProblem p = LargeProblem(20'000, 5);
  const auto begin = std::chrono::steady_clock::now();
  const SolveControl control = SolveControl::WithTimeLimit(0.3, nullptr);
  LocalSearchOptions options;
  const LocalSearchResult r = RunLocalSearch(p, control, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  // On a slow machine (a sanitizer build on 2 busy cores) the deadline may come before the
  // first assignment is complete: then nothing is found, which is an answer, not a failure.
  if (r.found) ExpectValid(p, r);
  EXPECT_LT(seconds, 1.5);  // setup is not interruptible; the search stops within its checks
}

TEST(LocalSearch, StopsWhenCancelled) {
  const WorkProblem p = LargeProblem(2000, 6);
  std::atomic<bool> cancel{true};
  const SolveControl control = SolveControl::Unlimited(&cancel);
  LocalSearchOptions options;
  const auto begin = std::chrono::steady_clock::now();
  const LocalSearchResult r = RunLocalSearch(p, control, options);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count(), 1.0);
  if (r.found) ExpectValid(p, r);
}

TEST(LocalSearch, ReportsImprovementsAndStopsWhenAsked) {
  const WorkProblem p = LargeProblem(300, 8);
  const SolveControl control;
  LocalSearchOptions options;
  options.max_moves = 100'000;
  std::vector<long double> reports;
  options.on_improve = [&reports](long double objective) {
    reports.push_back(objective);
    return true;
  };
  const LocalSearchResult r = RunLocalSearch(p, control, options);
  ExpectValid(p, r);
  ASSERT_FALSE(reports.empty());
  for (size_t i = 1; i < reports.size(); ++i) EXPECT_LT(reports[i], reports[i - 1]);
  EXPECT_EQ(reports.back(), r.objective);

  // Returning false stops the search at the first feasible answer, which is still returned.
  std::vector<long double> first_only;
  options.on_improve = [&first_only](long double objective) {
    first_only.push_back(objective);
    return false;
  };
  const LocalSearchResult stopped = RunLocalSearch(p, control, options);
  ExpectValid(p, stopped);
  ASSERT_EQ(first_only.size(), 1u);
  EXPECT_EQ(first_only[0], stopped.objective);
  EXPECT_GE(stopped.objective, r.objective);
}

TEST(LocalSearch, UsesTheStartAssignment) {
  const WorkProblem p = ChainProblem(10);
  LocalSearchOptions options;
  options.max_moves = 1;  // no room to search: the answer is the start itself
  options.start = {0, 1, 1};
  const SolveControl control;
  const LocalSearchResult r = RunLocalSearch(p, control, options);
  ExpectValid(p, r);
  EXPECT_EQ(r.assignment, (std::vector<int32_t>{0, 1, 1}));
  // An infeasible start (three sharded nodes) is repaired.
  options.start = {1, 1, 1};
  options.max_moves = 10'000;
  const LocalSearchResult repaired = RunLocalSearch(p, control, options);
  ExpectValid(p, repaired);
  EXPECT_EQ(repaired.objective, 25);
}

TEST(MemoryTracker, KeepsRunsAndSlacksAcrossMoves) {
  // Node 0 has two items (as a merged follower would): item 0 in rows 0 and 2, item 2 in row 2
  // only; node 1's item sits in every row. Row 1 interrupts node 0's rows, so it has two runs.
  const std::vector<MemoryItem> items = {MemoryItem{0, {0, 4}}, MemoryItem{1, {1, 2, 6}},
                                         MemoryItem{0, {3, 0}}};
  const std::vector<MemoryRow> rows = {MemoryRow{6, {0, 1}}, MemoryRow{5, {1}},
                                       MemoryRow{7, {0, 1, 2}}};
  MemoryTracker tracker(items, rows, 2);
  ASSERT_EQ(tracker.runs_end(0) - tracker.runs_begin(0), 2);
  EXPECT_EQ(tracker.runs_end(1) - tracker.runs_begin(1), 1);
  tracker.Reset({0, 0});
  std::vector<Int128> slacks;
  tracker.RowSlacks(&slacks);
  EXPECT_EQ(slacks, (std::vector<Int128>{5, 4, 3}));  // 6-1, 5-1, 7-(0+1+3)
  EXPECT_TRUE(tracker.Feasible());
  // Node 0 to strategy 1: +4 in row 0, +4-3 = +1 in row 2.
  EXPECT_TRUE(tracker.Fits(0, 0, 1));
  // Node 1 to strategy 2: +5 everywhere; row 1 would need 6 > 5.
  EXPECT_FALSE(tracker.Fits(1, 0, 2));
  tracker.Apply(0, 0, 1);
  tracker.RowSlacks(&slacks);
  EXPECT_EQ(slacks, (std::vector<Int128>{1, 4, 2}));
  tracker.Apply(1, 0, 2);  // applied anyway: rows 0 and 2 go negative
  EXPECT_FALSE(tracker.Feasible());
  EXPECT_EQ(tracker.MinSlack(), -4);
  EXPECT_EQ(tracker.TightestRow(), 0);
  EXPECT_EQ(tracker.RowSlack(2), -3);
}

TEST(Contract, MergesNodesTiedByPermutations) {
  // a - b and b - c are permutations (c tied to a through b); c - d is an ordinary edge.
  WorkProblem p;
  p.cost = {{1, 2, 3}, {10, 20, 30}, {0, 0, 5}, {7, 8}};
  p.edges = {WorkEdge{0, 1, {kInf, 1, kInf, kInf, kInf, 2, 3, kInf, kInf}},
             WorkEdge{1, 2, {0, kInf, kInf, kInf, 0, kInf, kInf, kInf, 0}},
             WorkEdge{2, 3, {1, 2, 3, 4, 5, 6}}};
  p.memory_items = {MemoryItem{2, {0, 1, 2}}};
  const SearchGraph graph(p);
  const ContractedProblem c = Contract(p, graph);
  ASSERT_EQ(c.problem.node_count(), 2);
  EXPECT_EQ(c.group_of, (std::vector<int32_t>{0, 0, 0, 1}));
  ASSERT_EQ(c.problem.edges.size(), 1u);
  // Group strategy g: a = g, b = (g + 1) % 3, c = b. Costs: a + b + c + tie edges.
  EXPECT_EQ(c.problem.cost[0],
            (std::vector<double>{1 + 20 + 0 + 1, 2 + 30 + 5 + 2, 3 + 10 + 0 + 3}));
  EXPECT_EQ(c.problem.memory_items[0].usage, (std::vector<int64_t>{1, 2, 0}));
  for (int32_t g = 0; g < 3; ++g) {
    for (int32_t d = 0; d < 2; ++d) {
      const std::vector<int32_t> x = c.Expand({g, d});
      EXPECT_EQ(WorkObjective(p, x), WorkObjective(c.problem, {g, d}) + 0.0L);
      EXPECT_EQ(c.Restrict(x), (std::vector<int32_t>{g, d}));
    }
  }
}

TEST(MessagePassing, IsExactOnTrees) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    WorkProblem p = RandomProblem(seed, 7, 4);
    // Keep the spanning tree only (the first n - 1 edges), without forbidden entries.
    p.edges.resize(static_cast<size_t>(p.node_count() - 1));
    for (auto& c : p.cost) std::replace(c.begin(), c.end(), kInf, 50.0);
    for (WorkEdge& e : p.edges) std::replace(e.cost.begin(), e.cost.end(), kInf, 60.0);
    p.memory_rows.clear();
    const SearchGraph graph(p);
    MessagePassing mp(graph);
    std::vector<double> unary(mp.unary_size());
    for (int32_t v = 0; v < p.node_count(); ++v) {
      std::copy(p.cost[static_cast<size_t>(v)].begin(), p.cost[static_cast<size_t>(v)].end(),
                unary.begin() + static_cast<std::ptrdiff_t>(mp.unary_offset(v)));
    }
    mp.Iterate(unary, 3);
    std::vector<int32_t> x;
    mp.Decode(unary, &x);
    EXPECT_EQ(WorkObjective(p, x), Solve(p).objective) << "seed " << seed;
  }
}

}  // namespace
}  // namespace alpa
