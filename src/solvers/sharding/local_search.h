// Primal heuristics on a WorkProblem: a greedy construction that respects memory rows, then
// local search (single-node moves with exact delta costs, memory-aware) until no move improves
// or the deadline hits. Gives the ILP its incumbent and the caller an anytime answer.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

struct LocalSearchOptions {
  uint64_t seed = 1;
  // Upper bound on work (move evaluations); 0 = until the deadline or a local optimum with no
  // restarts left. Deterministic mode sets this so that results do not depend on timing.
  int64_t max_moves = 0;
  // A starting assignment (may be empty, or infeasible: it is repaired first).
  std::vector<int32_t> start;
  // Called on the calling thread with each new best feasible objective; false stops the search.
  std::function<bool(long double objective)> on_improve;
};

struct LocalSearchResult {
  bool found = false;  // a feasible assignment was found
  std::vector<int32_t> assignment;
  long double objective = 0;  // includes problem.constant
};

LocalSearchResult RunLocalSearch(const WorkProblem& problem, const SolveControl& control,
                                 const LocalSearchOptions& options);

}  // namespace alpa
