// Exact PBQP reductions (REFERENCE §2) on the nodes that no memory row constrains:
//   R0: a node without edges takes its cheapest strategy;
//   R1: a degree-1 node folds into its neighbour (min over its own choices per neighbour choice);
//   R2: a degree-2 node becomes an edge between its neighbours (min-plus product), merged with any
//       edge already joining them (skipped when k_u * k_v * k_w > 5e7: the node stays);
//   single-strategy nodes fold into their neighbours' costs; this includes nodes in memory rows,
//       whose (now constant) usage moves into the capacity of their rows;
//   edges of the form r[i] + c[j] fold into the two node costs;
//   strategies that an edge forbids whatever the neighbour takes become forbidden, and forbidden
//       strategies are removed;
//   dominated strategies are removed (for nodes in memory rows only if they use no less memory
//       in every item); this runs on a bounded budget (nodes with more than 1000 strategies are
//       skipped) and alternates with the rules above until nothing changes.
// The optimum of the core plus `core.constant` equals the optimum of the input, and any core
// assignment expands to an input assignment of exactly that cost. The core's memory rows are the
// input's, re-indexed and simplified (SimplifyMemoryRows) when a memory node changed.
// Everything is deterministic: a FIFO worklist seeded in node order.
#pragma once

#include <cstdint>
#include <vector>

#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

struct ReductionStats {
  int32_t nodes_before = 0;
  int32_t edges_before = 0;
  int32_t nodes_after = 0;
  int32_t edges_after = 0;
  int64_t r0 = 0, r1 = 0, r2 = 0, single_strategy = 0, dominated_strategies = 0;
  int64_t separable_edges = 0;  // edges of the form r[i] + c[j], folded into node costs
};

class ReductionEngine;  // reduction_engine.h (internal)

class ReducedProblem {
 public:
  // Reduces `input` (which must outlive this object only during the constructor).
  explicit ReducedProblem(const WorkProblem& input);
  // The same, stopping when `control` expires: every reduction done so far is exact, so the
  // core is then simply larger (stopped() says so).
  ReducedProblem(const WorkProblem& input, const SolveControl& control);

  const WorkProblem& core() const { return core_; }
  const ReductionStats& stats() const { return stats_; }
  // core node id -> input node id
  const std::vector<int32_t>& input_node_of_core() const { return input_node_of_core_; }

  // Expands a core assignment (one strategy per core node, each in range) to an input
  // assignment: eliminated nodes are back-substituted in reverse elimination order.
  std::vector<int32_t> Expand(const std::vector<int32_t>& core_assignment) const;
  // Restricts an input assignment to the core (a warm start); strategies removed as dominated
  // map to the strategy that dominated them (an optimum stays an optimum); a missing entry or a
  // strategy removed as forbidden maps to the node's cheapest core strategy.
  std::vector<int32_t> Restrict(const std::vector<int32_t>& input_assignment) const;
  // True when the reductions found a node with no finite-cost strategy left: the input has no
  // finite assignment (the core keeps that node with +inf costs, so its optimum is +inf too).
  bool infeasible() const { return infeasible_; }
  // True when the control expired before the reductions ran to the end.
  bool stopped() const { return stopped_; }

 private:
  friend class ReductionEngine;

  // An eliminated node: its strategy once its neighbours' strategies are known. Strategy
  // indices are those current when it was eliminated; the *_strategies lists map them to input
  // strategies (sorted ascending, as strategies are only ever removed).
  struct Elimination {
    int32_t node = 0;    // input node
    int32_t fixed = -1;  // input strategy when the choice does not depend on neighbours
    std::vector<int32_t> strategies;
    std::vector<double> cost;
    int32_t neighbour_count = 0;  // 1 (R1) or 2 (R2)
    int32_t neighbour[2] = {-1, -1};
    std::vector<int32_t> neighbour_strategies[2];
    std::vector<double> edge[2];  // the edge matrices as they were when the node was eliminated
    bool node_is_row[2] = {true, true};
  };

  WorkProblem core_;
  ReductionStats stats_;
  std::vector<int32_t> input_node_of_core_;
  int32_t input_node_count_ = 0;
  bool infeasible_ = false;
  bool stopped_ = false;
  std::vector<std::vector<int32_t>> core_strategies_;  // core node: core strategy -> input
  std::vector<Elimination> eliminations_;              // in elimination order
  // Per input node: removed input strategy -> the input strategy that replaced it (-1: removed
  // as forbidden); identity for strategies never removed. Empty for untouched nodes.
  std::vector<std::vector<int32_t>> redirect_;
};

}  // namespace alpa
