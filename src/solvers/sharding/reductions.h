// Exact PBQP reductions (REFERENCE §2) on the nodes that no memory row constrains:
//   R0: a node without edges takes its cheapest strategy;
//   R1: a degree-1 node folds into its neighbour (min over its own choices per neighbour choice);
//   R2: a degree-2 node becomes an edge between its neighbours (min-plus product), merged with any
//       edge already joining them;
//   single-strategy nodes fold into their neighbours' costs;
//   dominated strategies are removed (for nodes in memory rows only if no row gets worse).
// The optimum of the core plus `core.constant` equals the optimum of the input, and any core
// assignment expands to an input assignment of exactly that cost.
#pragma once

#include <cstdint>
#include <vector>

#include "solvers/sharding/work_problem.h"

namespace alpa {

struct ReductionStats {
  int32_t nodes_before = 0;
  int32_t edges_before = 0;
  int32_t nodes_after = 0;
  int32_t edges_after = 0;
  int64_t r0 = 0, r1 = 0, r2 = 0, single_strategy = 0, dominated_strategies = 0;
};

class ReducedProblem {
 public:
  // Reduces `input` (which must outlive this object only during the constructor).
  explicit ReducedProblem(const WorkProblem& input);

  const WorkProblem& core() const { return core_; }
  const ReductionStats& stats() const { return stats_; }
  // core node id -> input node id
  const std::vector<int32_t>& input_node_of_core() const { return input_node_of_core_; }

  // Expands a core assignment (one strategy per core node) to an input assignment.
  std::vector<int32_t> Expand(const std::vector<int32_t>& core_assignment) const;
  // Restricts an input assignment to the core (a warm start); strategies removed as dominated
  // map to the strategy that dominated them.
  std::vector<int32_t> Restrict(const std::vector<int32_t>& input_assignment) const;

 private:
  WorkProblem core_;
  ReductionStats stats_;
  std::vector<int32_t> input_node_of_core_;
  // How to recover eliminated nodes and removed strategies: private to reductions.cc.
};

}  // namespace alpa
