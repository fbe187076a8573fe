// Primal heuristics on a WorkProblem. Gives the ILP its incumbent and the caller an anytime
// answer. Phases:
//   1. nodes tied by permutation edges (aliases) are merged into groups that move together;
//   2. a feasible start: the given one or every node's smallest-memory strategy, with +inf
//      terms and memory rows repaired, then single-node descent (exact deltas, memory checked
//      incrementally on a segment tree of row slacks);
//   3. about 30% of the budget: Lagrangian prices on the memory rows, message passing (TRW-S)
//      on the priced problem, each labelling repaired into the rows and polished: global
//      restarts that local moves cannot reach;
//   4. the rest: iterated local search from the best answer with exact tree-neighbourhood
//      moves (some priced so that a region can trade memory) and random kicks.
// Every answer is re-checked against the input (WorkObjective, WorkMemoryFeasible).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

struct LocalSearchOptions {
  uint64_t seed = 1;
  // Upper bound on work (move evaluations; a message-passing sweep counts two per node, a tree
  // move one per region node); 0 = until the deadline or until the search stagnates.
  // Deterministic mode sets this so that results do not depend on timing: the clock then only
  // decides the hard stop. Roughly 1e6 units per second on the IOPDDL benchmarks.
  int64_t max_moves = 0;
  // Scales the idle moves the iterated search waits for an improvement before it stops
  // (max(2000, 100 per movable node) at 1).
  double patience_scale = 1.0;
  // A starting assignment (may be empty, or infeasible: it is repaired first).
  std::vector<int32_t> start;
  // Called on the calling thread with each new best feasible objective; false stops the search.
  std::function<bool(long double objective)> on_improve;
};

struct LocalSearchResult {
  bool found = false;  // a feasible assignment was found
  std::vector<int32_t> assignment;
  long double objective = 0;  // includes problem.constant
  // Whether `assignment` was checked against the input problem (WorkObjective,
  // WorkMemoryFeasible). A search stopped by a cancel skips the check, which walks every memory
  // row, and hands over its best as found: the caller checks the best of several searches once
  // instead of every search checking its own while the cancel waits.
  bool checked = true;
};

LocalSearchResult RunLocalSearch(const WorkProblem& problem, const SolveControl& control,
                                 const LocalSearchOptions& options);

}  // namespace alpa
