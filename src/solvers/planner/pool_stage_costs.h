// Stage costs on a mixed cluster (cluster.h's pools): each pool's table is built on its own
// device type (BuildStageCosts on the pool), then merged into one table whose candidates carry
// their pool (StageCandidate::pool), so that one stage DP (stage_dp.h's pool_order) chooses
// among them and the planner ranks the plans of every pool order alike.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster/cluster.h"
#include "solvers/pipeline/stage_dp.h"
#include "solvers/planner/stage_costs.h"

namespace alpa {

// Tables of one graph, clustering and microbatch count, one per pool in pool order, merged:
// submeshes, configs, solutions and candidates concatenated (indices shifted), each candidate
// tagged with its pool; the pieces are the first table's (every table cuts the same ones);
// device_memory the least; solves, proven and pruned summed; time_limit_reached when any is;
// pinned_out when every one is.
StageCostTable MergePoolStageCosts(std::vector<StageCostTable> pools);

// The pool orders the planner tries on a mixed cluster (StageDpInput::pool_order), in this
// order: every pool alone, then, with up to kAllPoolOrders pools, every ordered choice of two or
// more pools; with more, every pool in id order and in reverse.
inline constexpr int32_t kAllPoolOrders = 3;
std::vector<std::vector<int32_t>> PlannerPoolOrders(int32_t pools);

// The devices of every pool of `cluster` (StageDpInput::pool_devices); empty without pools.
std::vector<int64_t> PoolDevices(const Cluster& cluster);

// Places stages on a cluster: PlaceSubmeshes on each pool for the stages of that pool (`pools`,
// aligned with `shapes`; every pool used is filled), device ids shifted to the pool's first host.
// Without pools, PlaceSubmeshes itself. Errors: PlaceSubmeshes', a pool out of range.
Result<std::vector<std::vector<int64_t>>> PlaceStagesOnPools(
    const Cluster& cluster, const std::vector<SubmeshShape>& shapes,
    const std::vector<int32_t>& pools);

}  // namespace alpa
