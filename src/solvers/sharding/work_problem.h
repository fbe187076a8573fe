// The solver's working form of a sharding problem: followers merged into one node, aliases
// turned into edges with forbidden (+inf) entries, parallel edges merged, forbidden strategies
// removed, and memory as a list of deduplicated, binding rows. Reductions, the ILP and the local
// search all work on this form; src/core knows nothing about it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace alpa {

inline constexpr double kInfCost = std::numeric_limits<double>::infinity();

// Cost matrix between two distinct nodes a < b, row-major: rows = a's strategies.
// kInfCost marks a forbidden pair.
struct WorkEdge {
  int32_t a = 0;
  int32_t b = 0;
  std::vector<double> cost;
};

// A memory contribution: `usage[s]` bytes when node `node` takes strategy s.
struct MemoryItem {
  int32_t node = 0;
  std::vector<int64_t> usage;
};

// sum over items i of items[i].usage[s_node] <= capacity.
struct MemoryRow {
  int64_t capacity = 0;
  std::vector<int32_t> items;  // indices into WorkProblem::memory_items
};

// The memory rows in interval form, when every item sits in consecutive rows (rows built from
// liveness intervals, as in the IOPDDL problems): a row's sum is then a running sum of the
// usages of the items starting and ending at each row, and the memory check takes one step per
// item and per row instead of one per row entry (tens of millions on the largest problems).
// IndexMemoryIntervals (memory_rows.h) sets it; `valid` false means the rows are walked. It
// describes the rows as they were when indexed: the check falls back to the rows when their
// counts no longer match, and code that changes rows in place indexes them again.
struct MemoryIntervals {
  bool valid = false;
  std::vector<int32_t> first, last;  // per item: its first and last row (-1: in no row)
  int64_t rows = 0, entries = 0;     // the rows and row entries indexed
};

struct WorkProblem {
  std::vector<std::vector<double>> cost;  // per node, per strategy; kInfCost = forbidden
  std::vector<WorkEdge> edges;            // at most one per unordered pair, a < b
  std::vector<MemoryItem> memory_items;
  std::vector<MemoryRow> memory_rows;
  MemoryIntervals memory_intervals;
  long double constant = 0;  // cost that every assignment pays (folded nodes and the like)

  int32_t node_count() const { return static_cast<int32_t>(cost.size()); }
  int32_t strategy_count(int32_t node) const {
    return static_cast<int32_t>(cost[static_cast<size_t>(node)].size());
  }
};

// The solver's own bookkeeping (the independent check is src/core/problem/sharding_evaluator.h).
// Objective including `constant`; +inf if any chosen entry is forbidden.
long double WorkObjective(const WorkProblem& problem, const std::vector<int32_t>& assignment);
// True when every memory row holds (through memory_intervals when they describe the rows).
bool WorkMemoryFeasible(const WorkProblem& problem, const std::vector<int32_t>& assignment);
// The same, always walking every row entry (the reference the interval form is tested against).
bool WorkMemoryFeasibleByRows(const WorkProblem& problem, const std::vector<int32_t>& assignment);

// Adjacency of a work problem: for each node, the edges touching it (indices into edges).
std::vector<std::vector<int32_t>> BuildAdjacency(const WorkProblem& problem);

}  // namespace alpa
