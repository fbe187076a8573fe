// Exhaustive search over all assignments, judged by the independent evaluator. Only for tiny
// problems: the reference answer of differential and property tests.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "core/problem/sharding_problem.h"

namespace alpa::testing {

// Search spaces above this many assignments are refused (too_large = true).
inline constexpr int64_t kBruteForceLimit = 2000000;

struct BruteForceResult {
  bool too_large = false;  // the search space exceeds kBruteForceLimit: nothing was searched
  bool feasible = false;
  long double optimum = std::numeric_limits<long double>::infinity();
  // The first optimal assignment in lexicographic order; empty when infeasible.
  std::vector<int32_t> assignment;
};

// Enumerates the strategies of the free nodes (followers copy the node they finally follow), so
// the space is the product of the free nodes' strategy counts. Requires a valid problem.
BruteForceResult BruteForceSolve(const ShardingProblem& problem);

}  // namespace alpa::testing
