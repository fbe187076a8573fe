// The sharding-problem solver: normalize, reduce, heuristic incumbent, GLPK on the core,
// expand. Anytime: when the time limit hits it returns the best feasible assignment found.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/problem/sharding_problem.h"

namespace alpa {

// Values pinned to ALPA_SOLVE_* in include/alpa.h.
enum class SolveStatus : int32_t {
  kOptimal = 1,       // proven optimal (within relative_gap)
  kFeasible = 2,      // stopped at the time limit with a feasible assignment
  kInfeasible = 3,    // proven infeasible
  kInvalidInput = 4,  // the problem failed validation; message names the element
  kCancelled = 5,     // cancelled by the caller (assignment holds the best found, if any)
  kNoSolution = 6     // time limit hit before any feasible assignment was found
};
const char* SolveStatusName(SolveStatus status);

struct SolveProgress {
  double seconds = 0;
  long double objective = std::numeric_limits<long double>::infinity();  // best feasible so far
  long double lower_bound = -std::numeric_limits<long double>::infinity();
  const char* phase = "";  // "reduce", "elimination", "heuristic", "ilp", "warm_start"
};

struct SolveOptions {
  double time_limit_seconds = std::numeric_limits<double>::infinity();
  bool deterministic = false;
  // Deterministic mode: the local searches of a large core, whatever the thread count (the
  // threads share them). More searches explore more at equal work; the planner, which runs many
  // one-thread solves side by side, uses 1.
  int32_t deterministic_searches = 2;
  int32_t threads = 0;  // 0: all hardware threads
  double relative_gap = 0.0;
  // The local search alone, without GLPK's proof: much faster on cores of a few dozen nodes
  // with wide edges (the LP is the cost), never proven optimal (status kFeasible) unless the
  // block elimination it may run first (heuristic_elimination_work) solves it.
  bool heuristic_only = false;
  std::vector<int32_t> warm_start;  // one strategy per node, or empty
  // With a feasible warm_start, the share (0, 1] of the local search's work it gets (its
  // deterministic move budget and the idle moves it waits before stopping): a start known to
  // be near the optimum (the same problem at another size) needs less search. 1: as cold.
  double warm_start_effort = 1.0;
  // One group per node (a network layer; -1: none), or empty. Nodes of a group that repeats
  // bit for bit (the same costs, edges and layout) are eliminated once by the exact
  // block elimination (block_elimination.h), which then proves optimality without GLPK.
  std::vector<int32_t> node_groups;
  // false: skip the exact block elimination (GLPK and the local search only), for comparisons.
  bool exact_elimination = true;
  // With heuristic_only: the exact block elimination still runs first where its planned work is
  // at most this many table entries, and a proven optimum ends the solve without the local
  // search (the planner's many small solves; a convolution block's core of a few hundred nodes
  // takes a few milliseconds). 0 (or NaN): never; capped at the elimination's own limit.
  double heuristic_elimination_work = 0;
  const std::atomic<bool>* cancel = nullptr;
  // Runs on the calling thread when the best objective or bound improves; false cancels.
  std::function<bool(const SolveProgress&)> on_progress;
};

struct SolveStats {
  int32_t nodes = 0, edges = 0;            // input
  int32_t work_nodes = 0, work_edges = 0;  // after normalization
  int32_t core_nodes = 0, core_edges = 0;  // after reductions
  int32_t memory_rows = 0;
  // The exact block elimination: blocks of the core, how many distinct, and whether it ran to
  // the end (it is skipped when its planned work is too large).
  int32_t elimination_blocks = 0, elimination_distinct_blocks = 0;
  bool elimination_solved = false;
};

struct SolveResult {
  SolveStatus status = SolveStatus::kNoSolution;
  std::vector<int32_t> assignment;  // one strategy per node; empty if none was found
  long double objective = std::numeric_limits<long double>::infinity();
  long double lower_bound = -std::numeric_limits<long double>::infinity();
  double seconds = 0;
  std::string message;  // why, for kInvalidInput / kInfeasible / kNoSolution
  SolveStats stats;
};

SolveResult SolveSharding(const ShardingProblem& problem, const SolveOptions& options);

}  // namespace alpa
