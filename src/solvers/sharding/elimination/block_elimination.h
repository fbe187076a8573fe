// Exact solve of a sharding core by variable elimination, block by block, solving identical
// blocks once. A network's layers repeat: the core of a 48-layer GPT is 48 copies of one
// layer's nodes, joined through a few nodes (the residual stream and its gradient).
//
// With a group per node (a layer, -1 for none), the nodes that touch another group are covered
// greedily by a small set of separator nodes (a vertex cover of the edges between groups, fewest
// joint values first). The other nodes fall into connected blocks that meet only separators.
// Each block's interior is eliminated on its own, leaving a table over its separators; blocks
// with bit-identical costs, edges and layout are eliminated once. The separators are then
// eliminated over those tables, and the choices are substituted back, block by block. Without
// groups the whole core is one elimination.
//
// Memory rows are ignored: the answer is the optimum of the costs alone (the caller checks it
// against the rows). The orders are planned before any table is built; when the planned work or
// table size is beyond the limits nothing is computed.
#pragma once

#include <cstdint>
#include <vector>

#include "solvers/sharding/elimination/variable_elimination.h"
#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

enum class BlockEliminationStatus {
  kSolved,    // assignment is an optimum of the costs
  kTooLarge,  // the planned work or a table exceeds the limits (nothing was computed)
  kStopped    // the control expired or was cancelled
};

struct BlockEliminationStats {
  int32_t blocks = 0;
  int32_t distinct_blocks = 0;
  int32_t separator_nodes = 0;
  double work = 0;  // table entries visited, as planned
};

struct BlockEliminationResult {
  BlockEliminationStatus status = BlockEliminationStatus::kTooLarge;
  std::vector<int32_t> assignment;  // one strategy per core node when solved
  BlockEliminationStats stats;
};

// `groups`: one per core node (-1: none), or empty. `threads`: distinct blocks eliminated side
// by side (at least 1).
BlockEliminationResult SolveByBlockElimination(const WorkProblem& core,
                                               const std::vector<int32_t>& groups,
                                               const SolveControl& control, int32_t threads,
                                               const EliminationLimits& limits);

}  // namespace alpa
