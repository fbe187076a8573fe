// Memory rows of a WorkProblem: building them from a ShardingProblem's liveness (intervals or
// explicit live sets) and simplifying them (shifted usages, never-binding and dominated rows
// dropped, identical rows merged). Normalize and the reductions' core both use these.
#pragma once

#include <cstdint>
#include <vector>

#include "core/problem/sharding_problem.h"
#include "core/util/status.h"
#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

// Builds the memory items and rows of a normalized problem. `work_node_of` and
// `original_strategy` are NormalizedProblem's maps (work strategies already renumbered).
// One item per original node whose usage varies over its work strategies (usages shifted so
// that the smallest is 0; the smallest moves into each row's capacity). A row is kept only when
// it can bind and no other row implies it: with intervals, a row is dropped when a row of another
// time step holds a superset of its items with no larger capacity; with live sets the same test
// runs on a bounded budget. Rows are sorted lists of item indices, no two identical.
// Returns kInfeasible when some time step cannot fit even with the smallest usages.
// Requires problem.usage_limit. Checks `control` every few dozen rows (rows of large problems
// hold thousands of items each): kCancelled or kTimeout once it has expired.
Status BuildMemoryRows(const ShardingProblem& problem, const std::vector<int32_t>& work_node_of,
                       const std::vector<std::vector<int32_t>>& original_strategy,
                       const SolveControl& control, std::vector<MemoryItem>* items,
                       std::vector<MemoryRow>* rows);

// Simplifies arbitrary items and rows without changing which assignments are feasible:
//   - each item's smallest usage moves into the capacity of every row using it;
//   - items whose usage is then all zero leave their rows;
//   - rows that hold for every assignment (sum of largest usages <= capacity) are dropped;
//   - identical rows (same multiset of items) keep the smallest capacity;
//   - with subset_budget > 0, rows whose items are contained in a row of no larger capacity are
//     dropped, checking pairs until about subset_budget item comparisons are spent;
//   - items no row uses are removed and the rest renumbered in their original order.
// Rows come out with sorted items, in their original relative order. Reads `control` as it
// goes: once it has expired, returns its StopStatus and leaves the rows half done (not to be
// used).
Status SimplifyMemoryRows(std::vector<MemoryItem>* items, std::vector<MemoryRow>* rows,
                          int64_t subset_budget, const SolveControl& control);

// Sets problem->memory_intervals when every item's rows are consecutive (each item in rows
// first..last and no other), else leaves it not valid. One pass over the row entries; stops
// (not valid) once `control` has expired.
void IndexMemoryIntervals(WorkProblem* problem, const SolveControl& control);

}  // namespace alpa
