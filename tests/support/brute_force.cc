#include "support/brute_force.h"

#include <cstddef>

#include "core/problem/sharding_evaluator.h"

namespace alpa::testing {

BruteForceResult BruteForceSolve(const ShardingProblem& problem) {
  BruteForceResult result;
  const size_t n = problem.nodes.size();
  std::vector<int32_t> root(n);
  std::vector<size_t> free_nodes;
  int64_t space = 1;
  for (size_t i = 0; i < n; ++i) {
    root[i] = FollowRoot(problem, static_cast<int32_t>(i));
    if (root[i] != static_cast<int32_t>(i)) continue;
    free_nodes.push_back(i);
    space *= problem.nodes[i].strategy_count();
    if (space > kBruteForceLimit) {
      result.too_large = true;
      return result;
    }
  }

  std::vector<int32_t> assignment(n, 0);
  while (true) {
    for (size_t i = 0; i < n; ++i) assignment[i] = assignment[static_cast<size_t>(root[i])];
    const Evaluation evaluation = EvaluateAssignment(problem, assignment);
    // The odometer order is not the lexicographic order of full assignments (a follower may
    // come before its root), so ties compare the assignments themselves.
    if (evaluation.feasible &&
        (!result.feasible || evaluation.cost < result.optimum ||
         (evaluation.cost == result.optimum && assignment < result.assignment))) {
      result.feasible = true;
      result.optimum = evaluation.cost;
      result.assignment = assignment;
    }
    // Advance the odometer over the free nodes, last one fastest.
    size_t digit = free_nodes.size();
    while (digit > 0) {
      const size_t node = free_nodes[digit - 1];
      if (++assignment[node] < problem.nodes[node].strategy_count()) break;
      assignment[node] = 0;
      --digit;
    }
    if (digit == 0) break;
  }
  return result;
}

}  // namespace alpa::testing
