// The exact block elimination on layered sharding problems: a layer template repeated L times,
// each layer joined to the next through one node, and a node without a group tying the first
// layer to the last (like a tied embedding). Answers are judged by the independent evaluator
// against brute force (small) and against GLPK (larger).
#include "solvers/sharding/elimination/block_elimination.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <vector>

#include "core/problem/sharding_evaluator.h"
#include "core/problem/sharding_problem.h"
#include "solvers/sharding/normalize.h"
#include "solvers/sharding/sharding_solver.h"
#include "support/brute_force.h"
#include "support/random_problem.h"

namespace alpa {
namespace {

struct Layered {
  ShardingProblem problem;
  std::vector<int32_t> groups;
};

// Per layer i: nodes a, b, c, d with edges a-b, a-c, b-c, b-d, c-d, and d joined to the next
// layer's a and b; a last node g (no group) joined to the first a and the last d. Every layer
// has the same costs (drawn from `seed`), so the middle layers are identical.
Layered MakeLayered(int32_t layers, int32_t strategies, uint64_t seed) {
  testing::SplitMix64 rng(seed);
  auto costs = [&](size_t count) {
    std::vector<double> c(count);
    for (double& x : c) x = static_cast<double>(rng.Between(0, 50));
    return c;
  };
  const size_t k = static_cast<size_t>(strategies);
  std::vector<std::vector<double>> node_costs;
  for (int j = 0; j < 4; ++j) node_costs.push_back(costs(k));
  std::vector<std::vector<double>> edge_costs;
  for (int j = 0; j < 7; ++j) edge_costs.push_back(costs(k * k));

  Layered l;
  auto node = [&](const std::vector<double>& c, int32_t group) {
    ShardingNode n;
    n.costs = c;
    l.problem.nodes.push_back(n);
    l.groups.push_back(group);
    return static_cast<int32_t>(l.problem.nodes.size()) - 1;
  };
  auto edge = [&](int32_t u, int32_t v, const std::vector<double>& c) {
    l.problem.edges.push_back(ShardingEdge{u, v, c});
  };
  int32_t first_a = -1, last_d = -1;
  for (int32_t i = 0; i < layers; ++i) {
    const int32_t a = node(node_costs[0], i);
    const int32_t b = node(node_costs[1], i);
    const int32_t c = node(node_costs[2], i);
    const int32_t d = node(node_costs[3], i);
    edge(a, b, edge_costs[0]);
    edge(a, c, edge_costs[1]);
    edge(b, c, edge_costs[2]);
    edge(b, d, edge_costs[3]);
    edge(c, d, edge_costs[4]);
    if (last_d >= 0) {
      edge(last_d, a, edge_costs[5]);
      edge(last_d, b, edge_costs[6]);
    }
    if (first_a < 0) first_a = a;
    last_d = d;
  }
  const int32_t g = node(costs(k), -1);
  edge(g, first_a, costs(k * k));
  edge(last_d, g, costs(k * k));
  return l;
}

SolveResult Solve(const Layered& l, bool exact_elimination) {
  SolveOptions options;
  options.deterministic = true;
  options.node_groups = l.groups;
  options.exact_elimination = exact_elimination;
  return SolveSharding(l.problem, options);
}

TEST(BlockElimination, LayeredProblemsMatchBruteForce) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Layered l = MakeLayered(4, 2, seed);
    const testing::BruteForceResult truth = testing::BruteForceSolve(l.problem);
    ASSERT_FALSE(truth.too_large);
    const SolveResult r = Solve(l, true);
    ASSERT_EQ(r.status, SolveStatus::kOptimal) << "seed " << seed;
    const Evaluation e = EvaluateAssignment(l.problem, r.assignment);
    EXPECT_TRUE(e.feasible) << e.violation;
    EXPECT_EQ(e.cost, truth.optimum) << "seed " << seed;
    EXPECT_EQ(r.objective, truth.optimum) << "seed " << seed;
  }
}

// GLPK is the reference where it finishes: on random costs it needs about 0.1 s for 6 layers
// and does not finish 12 in 20 s (the elimination: about a millisecond).
TEST(BlockElimination, AgreesWithGlpk) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {  // (seed 5: the reductions solve all of it)
    const Layered l = MakeLayered(6, 3, seed);
    const SolveResult exact = Solve(l, true);
    ASSERT_EQ(exact.status, SolveStatus::kOptimal) << "seed " << seed;
    EXPECT_TRUE(exact.stats.elimination_solved)
        << "seed " << seed << " core " << exact.stats.core_nodes;
    const SolveResult glpk = Solve(l, false);
    ASSERT_EQ(glpk.status, SolveStatus::kOptimal) << "seed " << seed;
    EXPECT_FALSE(glpk.stats.elimination_solved);
    const Evaluation e = EvaluateAssignment(l.problem, exact.assignment);
    EXPECT_TRUE(e.feasible) << e.violation;
    EXPECT_EQ(e.cost, glpk.objective) << "seed " << seed;
  }
}

// 30 layers: the middle ones are one distinct block, and the answer is the one elimination of
// the whole core (no groups) finds.
TEST(BlockElimination, IdenticalLayersAreEliminatedOnce) {
  int32_t solved_in_blocks = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {  // (seed 5: the reductions solve all of it)
    Layered l = MakeLayered(30, 4, seed);
    const SolveResult exact = Solve(l, true);
    ASSERT_EQ(exact.status, SolveStatus::kOptimal) << "seed " << seed;
    EXPECT_TRUE(exact.stats.elimination_solved)
        << "seed " << seed << " core " << exact.stats.core_nodes;
    if (exact.stats.elimination_blocks >= 20) {
      ++solved_in_blocks;
      // The reductions may change the first and last layers.
      EXPECT_LE(exact.stats.elimination_distinct_blocks, 5) << "seed " << seed;
    }
    l.groups.clear();
    const SolveResult whole = Solve(l, true);
    ASSERT_EQ(whole.status, SolveStatus::kOptimal) << "seed " << seed;
    EXPECT_EQ(whole.stats.elimination_blocks, 0);
    const Evaluation e = EvaluateAssignment(l.problem, exact.assignment);
    EXPECT_TRUE(e.feasible) << e.violation;
    EXPECT_EQ(e.cost, EvaluateAssignment(l.problem, whole.assignment).cost) << "seed " << seed;
  }
  EXPECT_GE(solved_in_blocks, 3);  // the reductions leave the layers' structure in most seeds
}

// Without groups the whole core is one elimination: a 40-layer chain of these ladders has
// width 3.
TEST(BlockElimination, WithoutGroupsTheCoreIsOneElimination) {
  Layered l = MakeLayered(40, 3, 7);
  l.groups.clear();
  const SolveResult exact = Solve(l, true);
  ASSERT_EQ(exact.status, SolveStatus::kOptimal);
  EXPECT_TRUE(exact.stats.elimination_solved);
  EXPECT_EQ(exact.stats.elimination_blocks, 0);
  const SolveResult glpk = Solve(l, false);
  ASSERT_EQ(glpk.status, SolveStatus::kOptimal);
  EXPECT_EQ(EvaluateAssignment(l.problem, exact.assignment).cost, glpk.objective);
}

// Beyond the limits nothing is computed and the solver goes on without it (to the same
// optimum, by GLPK).
TEST(BlockElimination, TooLargeIsSkipped) {
  const Layered l = MakeLayered(6, 4, 3);
  Result<NormalizedProblem> normalized = Normalize(l.problem);
  ASSERT_TRUE(normalized.ok());
  EliminationLimits tiny;
  tiny.max_work = 10;
  const BlockEliminationResult r =
      SolveByBlockElimination(normalized.value().work, {}, SolveControl(), 1, tiny);
  EXPECT_EQ(r.status, BlockEliminationStatus::kTooLarge);
  EXPECT_TRUE(r.assignment.empty());
}

// The local search alone (the planner's intra-op solves) tries the elimination first where the
// options give it work: a core it solves within that work ends proven optimal, at GLPK's
// optimum; without the work, or with too little, the local search answers as before (not
// proven).
TEST(BlockElimination, TheLocalSearchAloneTriesItFirstWithinItsWork) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {  // (seed 5: the reductions solve all of it)
    const Layered l = MakeLayered(6, 3, seed);
    const SolveResult glpk = Solve(l, false);
    ASSERT_EQ(glpk.status, SolveStatus::kOptimal) << "seed " << seed;
    SolveOptions options;
    options.deterministic = true;
    options.heuristic_only = true;
    options.node_groups = l.groups;
    options.heuristic_elimination_work = 1e7;
    const SolveResult first = SolveSharding(l.problem, options);
    ASSERT_GT(first.stats.core_nodes, 0) << "seed " << seed;
    EXPECT_EQ(first.status, SolveStatus::kOptimal) << "seed " << seed;
    EXPECT_TRUE(first.stats.elimination_solved) << "seed " << seed;
    EXPECT_EQ(EvaluateAssignment(l.problem, first.assignment).cost, glpk.objective)
        << "seed " << seed;
    for (double work : {0.0, 1.0, std::nan("")}) {
      options.heuristic_elimination_work = work;
      const SolveResult search = SolveSharding(l.problem, options);
      EXPECT_EQ(search.status, SolveStatus::kFeasible) << "seed " << seed << " work " << work;
      EXPECT_FALSE(search.stats.elimination_solved) << "seed " << seed << " work " << work;
      const Evaluation e = EvaluateAssignment(l.problem, search.assignment);
      EXPECT_TRUE(e.feasible) << e.violation;
      EXPECT_GE(e.cost, glpk.objective);
    }
  }
}

TEST(BlockElimination, CancelledBeforeTheEnd) {
  const Layered l = MakeLayered(6, 4, 3);
  Result<NormalizedProblem> normalized = Normalize(l.problem);
  ASSERT_TRUE(normalized.ok());
  std::atomic<bool> cancel{true};
  std::vector<int32_t> groups;
  for (int32_t w = 0; w < normalized.value().work.node_count(); ++w) groups.push_back(w / 4);
  const BlockEliminationResult r = SolveByBlockElimination(
      normalized.value().work, groups, SolveControl::Unlimited(&cancel), 2, EliminationLimits{});
  EXPECT_EQ(r.status, BlockEliminationStatus::kStopped);
  EXPECT_TRUE(r.assignment.empty());
}

}  // namespace
}  // namespace alpa
