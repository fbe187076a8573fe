// The sharding problem (REFERENCE §2): pick one strategy per node so that the sum of node
// costs and edge (resharding) costs is minimal and, at every time step, the memory used by the
// nodes live then stays within the limit.
//
// This is the plain data every reader produces and every solver consumes. It is a value type:
// no pointers between elements, node ids are indices into `nodes`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace alpa {

// Costs at or above this value mean "this choice is forbidden" (the IOPDDL convention; Alpa uses
// 1e13 and XLA 1e20, callers translate).
inline constexpr double kForbiddenCost = 1e18;
inline bool IsForbidden(double cost) { return !(cost < kForbiddenCost); }  // NaN counts too

// Half-open interval of time steps [lo, hi): the node's usage counts at lo..hi-1.
// lo == hi means the node is never live.
struct UsageInterval {
  int64_t lo = 0;
  int64_t hi = 0;
};

struct ShardingNode {
  std::vector<double> costs;    // per strategy: compute + communication cost; size = strategies
  std::vector<int64_t> usages;  // per strategy: memory bytes; empty means all zero
  UsageInterval interval;       // liveness, used unless the problem has explicit live sets
  int32_t follows = -1;         // -1: free; else the node whose choice this node shares

  int32_t strategy_count() const { return static_cast<int32_t>(costs.size()); }
  int64_t usage(int32_t s) const { return usages.empty() ? 0 : usages[static_cast<size_t>(s)]; }
};

// A resharding edge: costs is row-major, rows = u's strategies, columns = v's strategies.
// Several edges may join the same pair (in either direction): their costs add.
struct ShardingEdge {
  int32_t u = 0;
  int32_t v = 0;
  std::vector<double> costs;
};

// An alias pair: forbidden[i * k_v + j] != 0 means u taking i and v taking j is not allowed.
struct ShardingAlias {
  int32_t u = 0;
  int32_t v = 0;
  std::vector<uint8_t> forbidden;
};

struct ShardingProblem {
  std::string name;
  std::vector<ShardingNode> nodes;
  std::vector<ShardingEdge> edges;
  std::vector<ShardingAlias> aliases;
  // Liveness as explicit sets: live_sets[t] lists the nodes live at time t. When non-empty it
  // replaces the nodes' intervals.
  std::vector<std::vector<int32_t>> live_sets;
  std::optional<int64_t> usage_limit;  // no value: no memory constraint

  bool uses_live_sets() const { return !live_sets.empty(); }
};

// Checks every structural rule and returns kInvalidProblem with a message that names the
// offending element (node 12, edge 3, alias 0, time step 7, ...):
//   - every node has >= 1 strategy, and at least one strategy whose cost is not forbidden;
//   - usages are empty or one per strategy, and never negative;
//   - intervals have 0 <= lo <= hi;
//   - edge / alias endpoints exist and matrix sizes equal k_u * k_v (u == v is allowed: only
//     the diagonal entries can then apply);
//   - follows points at an existing node, follower chains have no cycle, and a follower has as
//     many strategies as the node it follows;
//   - live set entries exist;
//   - no cost is NaN.
// Infeasibility that needs search (a limit no assignment can meet) is not checked here.
Status ValidateProblem(const ShardingProblem& problem);

// The node whose choice `node` finally shares (follows chains resolved). Requires a valid problem.
int32_t FollowRoot(const ShardingProblem& problem, int32_t node);

}  // namespace alpa
