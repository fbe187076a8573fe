#include "solvers/sharding/work_problem.h"

#include <cstddef>

#include "core/util/wide_int.h"

namespace alpa {

long double WorkObjective(const WorkProblem& problem, const std::vector<int32_t>& assignment) {
  long double total = problem.constant;
  for (size_t v = 0; v < problem.cost.size(); ++v) {
    total += problem.cost[v][static_cast<size_t>(assignment[v])];
  }
  for (const WorkEdge& e : problem.edges) {
    const size_t kb = problem.cost[static_cast<size_t>(e.b)].size();
    total += e.cost[static_cast<size_t>(assignment[static_cast<size_t>(e.a)]) * kb +
                    static_cast<size_t>(assignment[static_cast<size_t>(e.b)])];
  }
  return total;
}

namespace {

// Each item's usage under the assignment, looked up once: rows share items, and the rows of
// large problems hold tens of millions of entries, so the sums read one flat array.
std::vector<int64_t> ItemUsages(const WorkProblem& problem,
                                const std::vector<int32_t>& assignment) {
  std::vector<int64_t> item_usage(problem.memory_items.size());
  for (size_t i = 0; i < item_usage.size(); ++i) {
    const MemoryItem& item = problem.memory_items[i];
    item_usage[i] = item.usage[static_cast<size_t>(assignment[static_cast<size_t>(item.node)])];
  }
  return item_usage;
}

// Whether memory_intervals still describe the rows (their counts match).
bool IntervalsDescribeRows(const WorkProblem& problem) {
  const MemoryIntervals& m = problem.memory_intervals;
  if (!m.valid || m.first.size() != problem.memory_items.size() ||
      m.last.size() != problem.memory_items.size() ||
      m.rows != static_cast<int64_t>(problem.memory_rows.size())) {
    return false;
  }
  int64_t entries = 0;
  for (const MemoryRow& row : problem.memory_rows)
    entries += static_cast<int64_t>(row.items.size());
  return entries == m.entries;
}

// Row r's sum is the running sum over rows 0..r of the usages of items whose first row is that
// row, less those whose last row came before.
bool FeasibleByIntervals(const WorkProblem& problem, const std::vector<int64_t>& item_usage) {
  const MemoryIntervals& m = problem.memory_intervals;
  std::vector<Int128> change(problem.memory_rows.size() + 1, 0);
  for (size_t i = 0; i < item_usage.size(); ++i) {
    if (m.first[i] < 0) continue;
    change[static_cast<size_t>(m.first[i])] += item_usage[i];
    change[static_cast<size_t>(m.last[i]) + 1] -= item_usage[i];
  }
  Int128 used = 0;
  for (size_t r = 0; r < problem.memory_rows.size(); ++r) {
    used += change[r];
    if (used > problem.memory_rows[r].capacity) return false;
  }
  return true;
}

bool FeasibleByRows(const WorkProblem& problem, const std::vector<int64_t>& item_usage) {
  for (const MemoryRow& row : problem.memory_rows) {
    Int128 used = 0;
    for (int32_t item_index : row.items) used += item_usage[static_cast<size_t>(item_index)];
    if (used > row.capacity) return false;
  }
  return true;
}

}  // namespace

bool WorkMemoryFeasible(const WorkProblem& problem, const std::vector<int32_t>& assignment) {
  const std::vector<int64_t> item_usage = ItemUsages(problem, assignment);
  return IntervalsDescribeRows(problem) ? FeasibleByIntervals(problem, item_usage)
                                        : FeasibleByRows(problem, item_usage);
}

bool WorkMemoryFeasibleByRows(const WorkProblem& problem, const std::vector<int32_t>& assignment) {
  return FeasibleByRows(problem, ItemUsages(problem, assignment));
}

std::vector<std::vector<int32_t>> BuildAdjacency(const WorkProblem& problem) {
  std::vector<std::vector<int32_t>> adjacency(problem.cost.size());
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    adjacency[static_cast<size_t>(problem.edges[e].a)].push_back(static_cast<int32_t>(e));
    adjacency[static_cast<size_t>(problem.edges[e].b)].push_back(static_cast<int32_t>(e));
  }
  return adjacency;
}

}  // namespace alpa
