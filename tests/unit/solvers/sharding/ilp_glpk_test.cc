#include "solvers/sharding/ilp/ilp_glpk.h"

#include <glpk.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"
#include "support/random_problem.h"

namespace alpa {
namespace {

constexpr double kInf = kInfCost;
constexpr long double kLongInf = std::numeric_limits<long double>::infinity();

struct BruteForce {
  long double optimum = kLongInf;  // +inf: infeasible
  std::vector<int32_t> assignment;
};

// Exhaustive search over a tiny work problem, judged by WorkObjective / WorkMemoryFeasible.
BruteForce Enumerate(const WorkProblem& p) {
  BruteForce best;
  std::vector<int32_t> a(p.cost.size(), 0);
  while (true) {
    const long double objective = WorkObjective(p, a);
    if (objective < best.optimum && WorkMemoryFeasible(p, a)) {
      best.optimum = objective;
      best.assignment = a;
    }
    size_t v = 0;
    while (v < a.size() && ++a[v] == p.strategy_count(static_cast<int32_t>(v))) a[v++] = 0;
    if (v == a.size()) break;
  }
  return best;
}

IlpResult Solve(const WorkProblem& p, const IlpOptions& options = IlpOptions()) {
  SolveControl control;
  return SolveIlpGlpk(p, control, options);
}

// The result's assignment, objective and bound are consistent with the problem.
void ExpectConsistent(const WorkProblem& p, const IlpResult& r) {
  if (r.assignment.empty()) return;
  ASSERT_EQ(r.assignment.size(), p.cost.size());
  EXPECT_EQ(WorkObjective(p, r.assignment), r.objective);
  EXPECT_TRUE(WorkMemoryFeasible(p, r.assignment));
  EXPECT_LE(r.lower_bound, r.objective);
}

// The IOPDDL example (REFERENCE §2) as a work problem: optimum 445 with the limit 50 (at
// [0, 0, 2, 1, 0]), 415 without (at [0, 0, 1, 1, 0]).
WorkProblem IopddlExample(bool with_limit) {
  WorkProblem p;
  p.cost = {{15}, {55, 65}, {25, 45, 35}, {85, 75}, {95}};
  p.edges = {{0, 1, {30, 40}},
             {0, 2, {50, 10, 40}},
             {1, 3, {90, 10, 20, 80}},
             {2, 4, {60, 20, 30}},
             {3, 4, {70, 60}}};
  if (with_limit) {
    p.memory_items = {{0, {10}}, {1, {25, 25}}, {2, {15, 20, 15}}, {3, {10, 10}}, {4, {15}}};
    p.memory_rows = {{50, {2, 3, 4}}, {50, {0, 1, 2}}};
  }
  return p;
}

// A random work problem: `n` nodes with `k` strategies, a spanning tree plus random edges up to
// average degree `degree`, costs in [0, 100], and `rows` memory rows over a quarter of the nodes.
// Instances of this kind with a few rows need hundreds of branch-and-bound nodes.
WorkProblem RandomWork(uint64_t seed, int32_t n, int32_t k, int32_t degree, int32_t rows) {
  testing::SplitMix64 rng(seed);
  WorkProblem p;
  p.cost.resize(static_cast<size_t>(n));
  for (auto& c : p.cost) {
    for (int32_t i = 0; i < k; ++i) c.push_back(static_cast<double>(rng.Between(0, 100)));
  }
  std::vector<std::vector<char>> joined(static_cast<size_t>(n), std::vector<char>(n, 0));
  auto add_edge = [&](int32_t a, int32_t b) {
    if (a == b || joined[static_cast<size_t>(a)][static_cast<size_t>(b)]) return;
    joined[static_cast<size_t>(a)][static_cast<size_t>(b)] = 1;
    joined[static_cast<size_t>(b)][static_cast<size_t>(a)] = 1;
    WorkEdge e{std::min(a, b), std::max(a, b), {}};
    for (int32_t i = 0; i < k * k; ++i) e.cost.push_back(static_cast<double>(rng.Between(0, 100)));
    p.edges.push_back(e);
  };
  for (int32_t v = 1; v < n; ++v) add_edge(static_cast<int32_t>(rng.Below(v)), v);
  const int64_t target = std::min<int64_t>(static_cast<int64_t>(n) * degree / 2,
                                           static_cast<int64_t>(n) * (n - 1) / 2);
  while (static_cast<int64_t>(p.edges.size()) < target) {
    add_edge(static_cast<int32_t>(rng.Below(n)), static_cast<int32_t>(rng.Below(n)));
  }
  if (rows > 0) {
    for (int32_t v = 0; v < n; ++v) {
      MemoryItem item{v, {}};
      for (int32_t i = 0; i < k; ++i) item.usage.push_back(rng.Between(0, 20));
      p.memory_items.push_back(item);
    }
    for (int32_t r = 0; r < rows; ++r) {
      MemoryRow row{static_cast<int64_t>(n / 4) * 5, {}};
      for (int32_t v = 0; v < n; ++v) {
        if (rng.Chance(0.25)) row.items.push_back(v);
      }
      p.memory_rows.push_back(row);
    }
  }
  return p;
}

TEST(IlpGlpkTest, EmptyProblemIsOptimalAtTheConstant) {
  WorkProblem p;
  p.constant = 7.5L;
  const IlpResult r = Solve(p);
  EXPECT_EQ(r.status, IlpStatus::kOptimal);
  EXPECT_EQ(r.objective, 7.5L);
  EXPECT_EQ(r.lower_bound, 7.5L);
  EXPECT_TRUE(r.assignment.empty());
}

TEST(IlpGlpkTest, IopddlExampleWithAndWithoutMemory) {
  const IlpResult limited = Solve(IopddlExample(true));
  EXPECT_EQ(limited.status, IlpStatus::kOptimal);
  EXPECT_EQ(limited.objective, 445);
  EXPECT_EQ(limited.lower_bound, 445);
  EXPECT_EQ(limited.assignment, (std::vector<int32_t>{0, 0, 2, 1, 0}));
  ExpectConsistent(IopddlExample(true), limited);

  const IlpResult free = Solve(IopddlExample(false));
  EXPECT_EQ(free.status, IlpStatus::kOptimal);
  EXPECT_EQ(free.objective, 415);
  EXPECT_EQ(free.assignment, (std::vector<int32_t>{0, 0, 1, 1, 0}));
}

TEST(IlpGlpkTest, ConstantIsAddedToObjectiveAndBound) {
  WorkProblem p = IopddlExample(true);
  p.constant = -1000;
  const IlpResult r = Solve(p);
  EXPECT_EQ(r.status, IlpStatus::kOptimal);
  EXPECT_EQ(r.objective, -555);
  EXPECT_EQ(r.lower_bound, -555);
}

TEST(IlpGlpkTest, ForbiddenEntriesAndSingleStrategyNeighbours) {
  WorkProblem p;
  // Node 0 has one strategy; its edge forbids node 1's cheap strategy 0. Node 2's cheapest
  // strategy is forbidden outright, and the edge (1, 2) forbids (2, 1).
  p.cost = {{3}, {0, 50, 60}, {kInf, 10, 20}};
  p.edges = {{0, 1, {kInf, 5, 1}}, {1, 2, {0, 0, 0, 0, 0, 0, 0, 0, 0}}};
  p.edges[1].cost[2 * 3 + 1] = kInf;
  // Without the forbidden entry (2, 1) the optimum would be [0, 2, 1] = 3 + 61 + 10 = 74.
  const IlpResult r = Solve(p);
  EXPECT_EQ(r.status, IlpStatus::kOptimal);
  EXPECT_EQ(r.assignment, (std::vector<int32_t>{0, 1, 1}));
  EXPECT_EQ(r.objective, 3 + 55 + 10);
  ExpectConsistent(p, r);
}

TEST(IlpGlpkTest, NoCompatibleStrategyIsInfeasibleBeforeSearch) {
  WorkProblem p;
  p.cost = {{0, 0}, {0, 0}};
  p.edges = {{0, 1, {kInf, kInf, kInf, kInf}}};
  const IlpResult r = Solve(p);
  EXPECT_EQ(r.status, IlpStatus::kInfeasible);
  EXPECT_NE(r.message.find("no strategy compatible"), std::string::npos) << r.message;
  EXPECT_TRUE(r.assignment.empty());
}

TEST(IlpGlpkTest, MemoryRowBelowTheSmallestUsagesIsInfeasible) {
  WorkProblem p = IopddlExample(true);
  p.memory_rows[1].capacity = 10 + 25 + 15 - 1;
  const IlpResult r = Solve(p);
  EXPECT_EQ(r.status, IlpStatus::kInfeasible);
  EXPECT_NE(r.message.find("memory row 1"), std::string::npos) << r.message;
}

TEST(IlpGlpkTest, InfeasibilityFoundByTheLp) {
  // Only (0, 1) and (1, 0) are allowed, both use 10 bytes, the capacity is 9; each node alone
  // could stay at 0 bytes, so only the LP sees it.
  WorkProblem p;
  p.cost = {{0, 0}, {0, 0}};
  p.edges = {{0, 1, {kInf, 1, 1, kInf}}};
  p.memory_items = {{0, {0, 10}}, {1, {0, 10}}};
  p.memory_rows = {{9, {0, 1}}};
  const IlpResult r = Solve(p);
  EXPECT_EQ(r.status, IlpStatus::kInfeasible);
  EXPECT_TRUE(r.assignment.empty());
}

TEST(IlpGlpkTest, InfeasibilityFoundByBranching) {
  // A triangle whose edges forbid equal choices: not 2-colourable, but the LP is feasible at 1/2.
  WorkProblem p;
  p.cost = {{0, 0}, {0, 0}, {0, 0}};
  for (auto [a, b] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}}) {
    p.edges.push_back({a, b, {kInf, 0, 0, kInf}});
  }
  const IlpResult r = Solve(p);
  EXPECT_EQ(r.status, IlpStatus::kInfeasible);
  EXPECT_TRUE(r.assignment.empty());
}

TEST(IlpGlpkTest, MatchesBruteForceOnRandomSmallProblems) {
  int32_t feasible = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    testing::SplitMix64 rng(seed * 7919);
    const int32_t n = static_cast<int32_t>(rng.Between(2, 7));
    WorkProblem p = RandomWork(seed, n, static_cast<int32_t>(rng.Between(1, 4)), 3,
                               static_cast<int32_t>(rng.Between(0, 3)));
    // Some forbidden and negative entries, and tighter memory.
    for (auto& c : p.cost) {
      for (double& x : c) x = rng.Chance(0.05) ? kInf : x - static_cast<double>(rng.Below(50));
    }
    for (auto& e : p.edges) {
      for (double& x : e.cost) x = rng.Chance(0.05) ? kInf : x;
    }
    for (auto& row : p.memory_rows) row.capacity = rng.Between(10, 60);
    p.constant = static_cast<long double>(rng.Below(10));
    const BruteForce expected = Enumerate(p);
    const IlpResult r = Solve(p);
    SCOPED_TRACE("seed " + std::to_string(seed));
    if (expected.optimum == kLongInf) {
      EXPECT_EQ(r.status, IlpStatus::kInfeasible) << r.message;
      continue;
    }
    ++feasible;
    ASSERT_EQ(r.status, IlpStatus::kOptimal) << r.message;
    EXPECT_EQ(r.objective, expected.optimum);
    EXPECT_EQ(r.lower_bound, expected.optimum);
    ExpectConsistent(p, r);
  }
  EXPECT_GE(feasible, 30);  // the mix exercises both outcomes
}

TEST(IlpGlpkTest, IncumbentIsAcceptedAndImprovedOn) {
  const WorkProblem p = RandomWork(11, 30, 5, 4, 3);
  const IlpResult plain = Solve(p);
  ASSERT_EQ(plain.status, IlpStatus::kOptimal);

  IlpOptions options;
  options.incumbent = plain.assignment;  // optimal already
  const IlpResult warm = Solve(p, options);
  EXPECT_EQ(warm.status, IlpStatus::kOptimal);
  EXPECT_EQ(warm.objective, plain.objective);
  ExpectConsistent(p, warm);

  // A worse feasible incumbent: the result is at least as good, and optimal.
  std::vector<int32_t> worse = plain.assignment;
  for (size_t v = 0; v < worse.size(); ++v) {
    std::vector<int32_t> trial = worse;
    trial[v] = (trial[v] + 1) % p.strategy_count(static_cast<int32_t>(v));
    if (WorkMemoryFeasible(p, trial) && WorkObjective(p, trial) > plain.objective) {
      worse = trial;
      break;
    }
  }
  ASSERT_GT(WorkObjective(p, worse), plain.objective);
  options.incumbent = worse;
  const IlpResult improved = Solve(p, options);
  EXPECT_EQ(improved.status, IlpStatus::kOptimal);
  EXPECT_EQ(improved.objective, plain.objective);

  // Invalid incumbents (wrong size, strategy out of range) are ignored.
  options.incumbent = {0, 1};
  EXPECT_EQ(Solve(p, options).objective, plain.objective);
  options.incumbent = std::vector<int32_t>(p.cost.size(), 99);
  EXPECT_EQ(Solve(p, options).objective, plain.objective);
}

TEST(IlpGlpkTest, OptimalIncumbentIsProvenByTheRootLp) {
  // The example's LP relaxation is integral: with the optimum as incumbent no branching starts.
  IlpOptions options;
  options.incumbent = {0, 0, 2, 1, 0};
  int calls = 0;
  options.on_progress = [&](long double, long double) { return ++calls > 0; };
  const IlpResult r = Solve(IopddlExample(true), options);
  EXPECT_EQ(r.status, IlpStatus::kOptimal);
  EXPECT_EQ(r.objective, 445);
  EXPECT_EQ(r.lower_bound, 445);
  EXPECT_EQ(r.nodes, 0);
  EXPECT_EQ(calls, 0);
}

TEST(IlpGlpkTest, NodeLimitStopsWithTheIncumbent) {
  const WorkProblem p = RandomWork(2, 40, 6, 4, 5);  // needs hundreds of nodes
  IlpOptions options;
  options.incumbent.assign(p.cost.size(), 0);
  // Make the all-zero assignment feasible by giving it no memory use.
  WorkProblem q = p;
  for (auto& item : q.memory_items) item.usage[0] = 0;
  options.node_limit = 3;
  const IlpResult r = Solve(q, options);
  EXPECT_EQ(r.status, IlpStatus::kFeasible) << r.message;
  EXPECT_NE(r.message.find("node limit"), std::string::npos) << r.message;
  EXPECT_LE(r.objective, WorkObjective(q, options.incumbent));
  EXPECT_LT(r.lower_bound, r.objective);
  EXPECT_GT(r.lower_bound, -kLongInf);
  ExpectConsistent(q, r);
}

TEST(IlpGlpkTest, TimeLimitIsRespected) {
  // Unsolved after a minute on a development machine.
  const WorkProblem p = RandomWork(4, 60, 8, 4, 0);
  const auto start = std::chrono::steady_clock::now();
  const SolveControl control = SolveControl::WithTimeLimit(1.0, nullptr);
  const IlpResult r = SolveIlpGlpk(p, control, IlpOptions());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("seconds_for_1s_limit", std::to_string(seconds));
  EXPECT_LT(seconds, 5.0);
  EXPECT_TRUE(r.status == IlpStatus::kFeasible || r.status == IlpStatus::kNoSolution);
  EXPECT_NE(r.message.find("time limit"), std::string::npos) << r.message;
  ExpectConsistent(p, r);
}

TEST(IlpGlpkTest, CancelledBeforeStartKeepsTheIncumbent) {
  const WorkProblem p = IopddlExample(true);
  std::atomic<bool> cancel{true};
  const SolveControl control = SolveControl::Unlimited(&cancel);
  IlpOptions options;
  options.incumbent = {0, 1, 2, 0, 0};  // feasible (uses 50 and 50), cost 15+65+35+85+95+...
  const IlpResult r = SolveIlpGlpk(p, control, options);
  EXPECT_EQ(r.status, IlpStatus::kFeasible);
  EXPECT_EQ(r.message, "cancelled");
  EXPECT_EQ(r.assignment, options.incumbent);
  EXPECT_EQ(r.objective, WorkObjective(p, options.incumbent));
}

TEST(IlpGlpkTest, ProgressCallbackCanStopTheSearch) {
  const WorkProblem p = RandomWork(2, 40, 6, 4, 5);
  IlpOptions options;
  int calls = 0;
  bool ordered = true;
  options.on_progress = [&](long double objective, long double bound) {
    ++calls;
    ordered = ordered && bound <= objective;
    return false;
  };
  const IlpResult r = Solve(p, options);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(ordered);
  EXPECT_TRUE(r.status == IlpStatus::kFeasible || r.status == IlpStatus::kNoSolution);
  EXPECT_NE(r.message.find("on_progress"), std::string::npos) << r.message;
  ExpectConsistent(p, r);
}

TEST(IlpGlpkTest, GlpkErrorBecomesAnErrorStatusAndTheThreadRecovers) {
  // A 1 MB allocation limit on this thread's GLPK environment makes GLPK fail inside the solve.
  const WorkProblem p = RandomWork(4, 60, 8, 4, 0);
  glp_mem_limit(1);
  const IlpResult r = Solve(p);
  EXPECT_EQ(r.status, IlpStatus::kError);
  EXPECT_NE(r.message.find("GLPK error"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("memory"), std::string::npos) << r.message;
  // The environment was freed (and with it the limit): the next solve works.
  const IlpResult again = Solve(IopddlExample(true));
  EXPECT_EQ(again.status, IlpStatus::kOptimal);
  EXPECT_EQ(again.objective, 445);
}

TEST(IlpGlpkTest, TerminalOutputSettingIsRestored) {
  glp_term_out(GLP_OFF);
  EXPECT_EQ(Solve(IopddlExample(true)).objective, 445);
  EXPECT_EQ(glp_term_out(GLP_ON), GLP_OFF);
  EXPECT_EQ(Solve(IopddlExample(true)).objective, 445);
  EXPECT_EQ(glp_term_out(GLP_ON), GLP_ON);
  glp_free_env();
}

TEST(IlpGlpkTest, ConcurrentSolvesOnSeveralThreads) {
  const WorkProblem p = RandomWork(11, 30, 5, 4, 3);
  const long double expected = Solve(p).objective;
  std::vector<long double> got(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      got[t] = t % 2 == 0 ? Solve(p).objective : Solve(IopddlExample(true)).objective;
    });
  }
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < got.size(); ++t) EXPECT_EQ(got[t], t % 2 == 0 ? expected : 445);
}

}  // namespace
}  // namespace alpa
