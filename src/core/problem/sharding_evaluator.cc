// Independent evaluation of an assignment (see the header). Deliberately simple and separate
// from the solvers' WorkProblem bookkeeping so that it can judge them.
//
// Violations are checked in a fixed order and the FIRST one found is reported:
//   assignment length, strategy range, followers, forbidden node costs, forbidden edge entries,
//   aliases, memory (earliest violating time step).
//
// The cost is reported for every assignment, feasible or not:
//   - +infinity when the assignment is malformed (wrong length, strategy out of range) or picks a
//     forbidden node cost or edge entry (cost >= 1e18);
//   - otherwise the true sum of node and edge costs, even when a follower, alias or memory
//     constraint is violated (useful to see what a constraint costs).
// peak_usage is the largest memory total over all time steps whenever the assignment is
// well-formed (0 when it is not); a time step where nothing is live uses 0.
#include "core/problem/sharding_evaluator.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/util/wide_int.h"

namespace alpa {
namespace {

std::string Int128ToString(Int128 value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  std::string digits;
  while (value != 0) {
    const int digit = static_cast<int>(value % 10);
    digits.push_back(static_cast<char>('0' + (negative ? -digit : digit)));
    value /= 10;
  }
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

std::string Pair(int64_t a, int64_t b) {
  return "(" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

// Length and range; returns the violation or "".
std::string CheckShape(const ShardingProblem& problem, const std::vector<int32_t>& assignment) {
  if (assignment.size() != problem.nodes.size()) {
    return "assignment has " + std::to_string(assignment.size()) + " entries, the problem has " +
           std::to_string(problem.nodes.size()) + " nodes";
  }
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const int32_t k = problem.nodes[i].strategy_count();
    if (assignment[i] < 0 || assignment[i] >= k) {
      return "node " + std::to_string(i) + ": strategy " + std::to_string(assignment[i]) +
             " out of range [0, " + std::to_string(k) + ")";
    }
  }
  return "";
}

std::string CheckFollowers(const ShardingProblem& problem, const std::vector<int32_t>& assignment) {
  // Comparing each node with the node it directly follows covers whole chains.
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const int32_t leader = problem.nodes[i].follows;
    if (leader < 0) continue;
    const int32_t leader_choice = assignment[static_cast<size_t>(leader)];
    if (assignment[i] != leader_choice) {
      return "node " + std::to_string(i) + " follows node " + std::to_string(leader) +
             " but takes strategy " + std::to_string(assignment[i]) + ", node " +
             std::to_string(leader) + " takes " + std::to_string(leader_choice);
    }
  }
  return "";
}

// Sums node and edge costs; records the first forbidden node cost and the first forbidden edge
// entry separately so that node violations are reported before edge violations.
struct CostSum {
  long double total = 0;
  std::string forbidden_node;
  std::string forbidden_edge;
};

CostSum SumCosts(const ShardingProblem& problem, const std::vector<int32_t>& assignment) {
  CostSum sum;
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const double c = problem.nodes[i].costs[static_cast<size_t>(assignment[i])];
    if (IsForbidden(c)) {
      if (sum.forbidden_node.empty()) {
        sum.forbidden_node = "node " + std::to_string(i) + ": strategy " +
                             std::to_string(assignment[i]) + " is forbidden (cost >= 1e18)";
      }
      continue;
    }
    sum.total += static_cast<long double>(c);
  }
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    const ShardingEdge& edge = problem.edges[e];
    const int32_t su = assignment[static_cast<size_t>(edge.u)];
    const int32_t sv = assignment[static_cast<size_t>(edge.v)];
    // A self edge (u == v) has su == sv, so this index lands on the diagonal.
    const size_t kv = problem.nodes[static_cast<size_t>(edge.v)].costs.size();
    const double c = edge.costs[static_cast<size_t>(su) * kv + static_cast<size_t>(sv)];
    if (IsForbidden(c)) {
      if (sum.forbidden_edge.empty()) {
        sum.forbidden_edge = "edge " + std::to_string(e) + " " + Pair(edge.u, edge.v) +
                             ": strategies " + Pair(su, sv) + " are forbidden";
      }
      continue;
    }
    sum.total += static_cast<long double>(c);
  }
  return sum;
}

std::string CheckAliases(const ShardingProblem& problem, const std::vector<int32_t>& assignment) {
  for (size_t a = 0; a < problem.aliases.size(); ++a) {
    const ShardingAlias& alias = problem.aliases[a];
    const int32_t su = assignment[static_cast<size_t>(alias.u)];
    const int32_t sv = assignment[static_cast<size_t>(alias.v)];
    const size_t kv = problem.nodes[static_cast<size_t>(alias.v)].costs.size();
    if (alias.forbidden[static_cast<size_t>(su) * kv + static_cast<size_t>(sv)] != 0) {
      return "alias " + std::to_string(a) + " " + Pair(alias.u, alias.v) + ": strategies " +
             Pair(su, sv) + " are forbidden";
    }
  }
  return "";
}

// Memory over time: the peak and the earliest time step above the limit (-1 if none).
struct MemoryScan {
  Int128 peak = 0;
  int64_t first_violation_time = -1;
  Int128 first_violation_total = 0;
};

void Observe(MemoryScan& scan, int64_t time, Int128 total, const std::optional<int64_t>& limit) {
  if (total > scan.peak) scan.peak = total;
  if (limit && scan.first_violation_time < 0 && total > *limit) {
    scan.first_violation_time = time;
    scan.first_violation_total = total;
  }
}

// Intervals: a sweep over sorted endpoints, O(n log n) however long the intervals are.
MemoryScan ScanIntervals(const ShardingProblem& problem, const std::vector<int32_t>& assignment) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (time, usage delta)
  events.reserve(2 * problem.nodes.size());
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const ShardingNode& node = problem.nodes[i];
    const int64_t usage = node.usage(assignment[i]);
    if (usage == 0 || node.interval.lo >= node.interval.hi) continue;
    events.emplace_back(node.interval.lo, usage);
    events.emplace_back(node.interval.hi, -usage);
  }
  std::sort(events.begin(), events.end());
  MemoryScan scan;
  Int128 total = 0;
  for (size_t e = 0; e < events.size();) {
    const int64_t time = events[e].first;
    for (; e < events.size() && events[e].first == time; ++e) total += events[e].second;
    // `total` now holds for [time, next event time): its first step is the earliest violation.
    Observe(scan, time, total, problem.usage_limit);
  }
  return scan;
}

// Explicit live sets: a node listed twice at the same time step counts once (it is a set).
MemoryScan ScanLiveSets(const ShardingProblem& problem, const std::vector<int32_t>& assignment) {
  MemoryScan scan;
  std::vector<int64_t> seen_at(problem.nodes.size(), -1);
  for (size_t t = 0; t < problem.live_sets.size(); ++t) {
    Int128 total = 0;
    for (int32_t node : problem.live_sets[t]) {
      const size_t i = static_cast<size_t>(node);
      if (seen_at[i] == static_cast<int64_t>(t)) continue;
      seen_at[i] = static_cast<int64_t>(t);
      total += problem.nodes[i].usage(assignment[i]);
    }
    Observe(scan, static_cast<int64_t>(t), total, problem.usage_limit);
  }
  return scan;
}

}  // namespace

Evaluation EvaluateAssignment(const ShardingProblem& problem,
                              const std::vector<int32_t>& assignment) {
  Evaluation result;
  result.violation = CheckShape(problem, assignment);
  if (!result.violation.empty()) {
    result.cost = std::numeric_limits<long double>::infinity();
    return result;
  }

  const CostSum sum = SumCosts(problem, assignment);
  const bool forbidden_chosen = !sum.forbidden_node.empty() || !sum.forbidden_edge.empty();
  result.cost = forbidden_chosen ? std::numeric_limits<long double>::infinity() : sum.total;

  const MemoryScan memory = problem.uses_live_sets() ? ScanLiveSets(problem, assignment)
                                                     : ScanIntervals(problem, assignment);
  result.peak_usage = static_cast<long double>(memory.peak);

  result.violation = CheckFollowers(problem, assignment);
  if (result.violation.empty()) result.violation = sum.forbidden_node;
  if (result.violation.empty()) result.violation = sum.forbidden_edge;
  if (result.violation.empty()) result.violation = CheckAliases(problem, assignment);
  if (result.violation.empty() && memory.first_violation_time >= 0) {
    result.violation = "memory at time " + std::to_string(memory.first_violation_time) + ": " +
                       Int128ToString(memory.first_violation_total) + " exceeds limit " +
                       std::to_string(*problem.usage_limit);
  }
  result.feasible = result.violation.empty();
  return result;
}

}  // namespace alpa
