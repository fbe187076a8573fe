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

bool WorkMemoryFeasible(const WorkProblem& problem, const std::vector<int32_t>& assignment) {
  // Each item's usage under the assignment, looked up once: rows share items, and the rows of
  // large problems hold tens of millions of entries, so the sums below read one flat array.
  std::vector<int64_t> item_usage(problem.memory_items.size());
  for (size_t i = 0; i < item_usage.size(); ++i) {
    const MemoryItem& item = problem.memory_items[i];
    item_usage[i] = item.usage[static_cast<size_t>(assignment[static_cast<size_t>(item.node)])];
  }
  for (const MemoryRow& row : problem.memory_rows) {
    Int128 used = 0;
    for (int32_t item_index : row.items) used += item_usage[static_cast<size_t>(item_index)];
    if (used > row.capacity) return false;
  }
  return true;
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
