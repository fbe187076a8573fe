// Groups of nodes that must switch together, contracted into single search variables.
//
// An edge whose finite entries, restricted to the two allowed domains, form a bijection (every
// allowed strategy of one end has exactly one finite partner on the other, as alias pairs and
// "same layout" constraints produce) ties its two ends: changing one alone always lands on +inf.
// Single-node moves cannot cross such ties, so the search runs on a contracted problem where each
// connected group of tied nodes is one node whose strategies are its first member's allowed
// strategies; members follow through the bijections. Edges inside a group fold into the group's
// node costs, edges touching a group with a single strategy fold into the other end's costs (or
// the constant), parallel edges between groups add up, and memory items keep their rows but
// index group strategies.
#pragma once

#include <cstdint>
#include <vector>

#include "solvers/sharding/local_search/local_search_graph.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

struct ContractedProblem {
  // Groups as nodes. memory_items has one item per input item (same order, so the input's rows
  // apply unchanged); memory_rows is left empty.
  WorkProblem problem;
  std::vector<int32_t> group_of;  // per input node
  // Per input node v: strategy_of[offset[v] + g] = v's strategy when its group takes g.
  std::vector<size_t> offset;
  std::vector<int32_t> strategy_of;

  // Group assignment -> input assignment.
  std::vector<int32_t> Expand(const std::vector<int32_t>& group_assignment) const;
  // Input assignment -> group assignment: each group takes the strategy that matches the most
  // members (an inconsistent start is then repaired by the search).
  std::vector<int32_t> Restrict(const std::vector<int32_t>& assignment) const;
};

// `graph` is the SearchGraph of `problem` (its arc-consistent domains decide the bijections).
// Once `control` has expired it stops, and the result must not be used.
ContractedProblem Contract(const WorkProblem& problem, const SearchGraph& graph,
                           const SolveControl& control = SolveControl());

}  // namespace alpa
