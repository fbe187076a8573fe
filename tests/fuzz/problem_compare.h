// Comparing sharding problems after a write/read round trip: used by the fuzz targets and by
// tests/unit/core/problem/problem_io_test.cc. Header-only so that both can use it without another
// library.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/problem/sharding_problem.h"

namespace alpa::testing {

// The memory constraints a problem's liveness implies, in a canonical form: the distinct
// non-empty live sets (sorted, duplicates removed) that are not contained in another one.
// Intervals are expanded at every start time, which is where maximal sets occur. O(T^2 * N):
// meant for small problems.
inline std::vector<std::vector<int32_t>> MaximalLiveSets(const ShardingProblem& p) {
  std::vector<std::vector<int32_t>> sets;
  if (p.uses_live_sets()) {
    sets = p.live_sets;
  } else {
    for (const ShardingNode& start : p.nodes) {
      if (start.interval.hi <= start.interval.lo) continue;
      const int64_t t = start.interval.lo;
      std::vector<int32_t> set;
      for (size_t i = 0; i < p.nodes.size(); ++i) {
        if (p.nodes[i].interval.lo <= t && t < p.nodes[i].interval.hi) {
          set.push_back(static_cast<int32_t>(i));
        }
      }
      sets.push_back(std::move(set));
    }
  }
  for (auto& set : sets) {
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
  }
  sets.erase(std::remove_if(sets.begin(), sets.end(), [](const auto& s) { return s.empty(); }),
             sets.end());
  std::sort(sets.begin(), sets.end());
  sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
  std::vector<std::vector<int32_t>> maximal;
  for (size_t i = 0; i < sets.size(); ++i) {
    bool contained = false;
    for (size_t j = 0; j < sets.size() && !contained; ++j) {
      contained = j != i && sets[j].size() > sets[i].size() &&
                  std::includes(sets[j].begin(), sets[j].end(), sets[i].begin(), sets[i].end());
    }
    if (!contained) maximal.push_back(sets[i]);
  }
  return maximal;
}

// "" when a and b describe the same problem, else the first difference. Empty usages equal
// all-zero usages. With exact_liveness, intervals and live sets must match one for one;
// without, only the implied constraints (MaximalLiveSets) must.
inline std::string DiffProblems(const ShardingProblem& a, const ShardingProblem& b,
                                bool exact_liveness) {
  auto str = [](auto x) { return std::to_string(x); };
  if (a.name != b.name) return "name differs: '" + a.name + "' vs '" + b.name + "'";
  if (a.nodes.size() != b.nodes.size()) {
    return "node count " + str(a.nodes.size()) + " vs " + str(b.nodes.size());
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ShardingNode& x = a.nodes[i];
    const ShardingNode& y = b.nodes[i];
    const std::string where = "node " + str(i) + ": ";
    if (x.costs != y.costs) return where + "costs differ";
    for (int32_t s = 0; s < x.strategy_count(); ++s) {
      if (x.usage(s) != y.usage(s)) return where + "usage of strategy " + str(s) + " differs";
    }
    if (x.follows != y.follows) return where + "follows differs";
    if (exact_liveness && (x.interval.lo != y.interval.lo || x.interval.hi != y.interval.hi)) {
      return where + "interval differs";
    }
  }
  if (a.edges.size() != b.edges.size()) {
    return "edge count " + str(a.edges.size()) + " vs " + str(b.edges.size());
  }
  for (size_t e = 0; e < a.edges.size(); ++e) {
    const ShardingEdge& x = a.edges[e];
    const ShardingEdge& y = b.edges[e];
    if (x.u != y.u || x.v != y.v || x.costs != y.costs) return "edge " + str(e) + " differs";
  }
  if (a.aliases.size() != b.aliases.size()) {
    return "alias count " + str(a.aliases.size()) + " vs " + str(b.aliases.size());
  }
  for (size_t k = 0; k < a.aliases.size(); ++k) {
    const ShardingAlias& x = a.aliases[k];
    const ShardingAlias& y = b.aliases[k];
    if (x.u != y.u || x.v != y.v || x.forbidden.size() != y.forbidden.size()) {
      return "alias " + str(k) + " differs";
    }
    for (size_t j = 0; j < x.forbidden.size(); ++j) {
      if ((x.forbidden[j] != 0) != (y.forbidden[j] != 0)) return "alias " + str(k) + " differs";
    }
  }
  if (exact_liveness ? a.live_sets != b.live_sets : MaximalLiveSets(a) != MaximalLiveSets(b)) {
    return "liveness differs";
  }
  if (a.usage_limit != b.usage_limit) return "usage limit differs";
  return "";
}

}  // namespace alpa::testing
