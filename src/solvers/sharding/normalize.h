// From the caller's ShardingProblem to the solver's WorkProblem and back.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/problem/sharding_problem.h"
#include "core/util/status.h"
#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

struct NormalizedProblem {
  WorkProblem work;
  std::vector<int32_t> work_node_of;  // per original node: its work node (followers share one)
  // per work node: work strategy index -> strategy index of the original nodes it stands for
  std::vector<std::vector<int32_t>> original_strategy;
};

// Requires a valid problem. Steps:
//   - followers merged into their root (node costs add, edges between members fold into costs,
//     memory items keep each member's own liveness);
//   - aliases become edges with +inf on forbidden pairs; self edges fold into node costs;
//     parallel edges (either direction) add up;
//   - forbidden strategies (+inf node cost) are removed and strategies renumbered;
//   - memory: one row per maximal live set (dominated and duplicate sets dropped), each node's
//     smallest usage moved to the right-hand side, rows that hold for every assignment or are
//     implied by another row dropped; strategies whose own usage cannot fit a row they sit in
//     are removed, alternating with the arc consistency above until nothing changes.
// Returns kInfeasible (message naming the node or time step) when a node has no allowed strategy
// left or a time step cannot fit even with the smallest usages.
Result<NormalizedProblem> Normalize(const ShardingProblem& problem);
// The same, checking `control` between steps and memory rounds: kCancelled or kTimeout once it
// has expired (a normalization cut short is of no use: the solver then has no answer).
Result<NormalizedProblem> Normalize(const ShardingProblem& problem, const SolveControl& control);

// Maps a work assignment back to one strategy per original node.
std::vector<int32_t> ToOriginalAssignment(const NormalizedProblem& normalized,
                                          const std::vector<int32_t>& work_assignment);
// Maps an original assignment (a warm start) to the work problem; nullopt when it is
// inconsistent with followers or uses a removed (forbidden) strategy.
std::optional<std::vector<int32_t>> ToWorkAssignment(const NormalizedProblem& normalized,
                                                     const std::vector<int32_t>& assignment);

}  // namespace alpa
