// Stage costs and placement on a mixed cluster (pool_stage_costs.h).
#include "solvers/planner/pool_stage_costs.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

namespace alpa {

StageCostTable MergePoolStageCosts(std::vector<StageCostTable> pools) {
  if (pools.empty()) return {};
  StageCostTable merged = std::move(pools.front());
  for (StageCandidate& c : merged.candidates) c.pool = 0;
  for (size_t p = 1; p < pools.size(); ++p) {
    StageCostTable& t = pools[p];
    const auto submesh_offset = static_cast<int32_t>(merged.submeshes.size());
    const auto config_offset = static_cast<int32_t>(merged.configs.size());
    const auto mesh_offset =
        static_cast<int32_t>(merged.solutions.empty() ? 0 : merged.solutions.front().size());
    merged.device_memory = std::min(merged.device_memory, t.device_memory);
    merged.submeshes.insert(merged.submeshes.end(), t.submeshes.begin(), t.submeshes.end());
    for (StageMeshConfig& config : t.configs) {
      config.submesh += submesh_offset;
      merged.configs.push_back(std::move(config));
    }
    if (merged.solutions.size() < t.solutions.size()) merged.solutions.resize(t.solutions.size());
    for (size_t type = 0; type < t.solutions.size(); ++type) {
      auto& meshes = merged.solutions[type];
      meshes.resize(static_cast<size_t>(mesh_offset));
      for (auto& levels : t.solutions[type]) meshes.push_back(std::move(levels));
    }
    for (int32_t mesh : t.mesh_of_config) merged.mesh_of_config.push_back(mesh + mesh_offset);
    for (int32_t copy : t.zero2_config) {
      merged.zero2_config.push_back(copy < 0 ? copy : copy + config_offset);
    }
    for (StageCandidate c : t.candidates) {
      c.submesh += submesh_offset;
      c.config += config_offset;
      c.pool = static_cast<int32_t>(p);
      merged.candidates.push_back(c);
    }
    merged.pruned += t.pruned;
    merged.candidate_memory.insert(merged.candidate_memory.end(), t.candidate_memory.begin(),
                                   t.candidate_memory.end());
    merged.candidate_forward_latency.insert(merged.candidate_forward_latency.end(),
                                            t.candidate_forward_latency.begin(),
                                            t.candidate_forward_latency.end());
    merged.candidate_weight_gradient_latency.insert(merged.candidate_weight_gradient_latency.end(),
                                                    t.candidate_weight_gradient_latency.begin(),
                                                    t.candidate_weight_gradient_latency.end());
    merged.solves += t.solves;
    merged.proven += t.proven;
    merged.time_limit_reached = merged.time_limit_reached || t.time_limit_reached;
    merged.pinned_out = merged.pinned_out && t.pinned_out;
  }
  return merged;
}

std::vector<std::vector<int32_t>> PlannerPoolOrders(int32_t pools) {
  std::vector<std::vector<int32_t>> orders;
  for (int32_t p = 0; p < pools; ++p) orders.push_back({p});
  if (pools < 2) return orders;
  if (pools > kAllPoolOrders) {
    std::vector<int32_t> order(static_cast<size_t>(pools));
    std::iota(order.begin(), order.end(), 0);
    orders.push_back(order);
    std::reverse(order.begin(), order.end());
    orders.push_back(order);
    return orders;
  }
  // Every subset of two or more pools, each in every order (subsets by mask, orders by
  // next_permutation from ascending).
  for (uint32_t mask = 1; mask < (1u << pools); ++mask) {
    std::vector<int32_t> subset;
    for (int32_t p = 0; p < pools; ++p) {
      if ((mask >> p) & 1u) subset.push_back(p);
    }
    if (subset.size() < 2) continue;
    do {
      orders.push_back(subset);
    } while (std::next_permutation(subset.begin(), subset.end()));
  }
  return orders;
}

std::vector<int64_t> PoolDevices(const Cluster& cluster) {
  std::vector<int64_t> devices;
  for (const Cluster& pool : cluster.pools) devices.push_back(pool.num_devices());
  return devices;
}

Result<std::vector<std::vector<int64_t>>> PlaceStagesOnPools(
    const Cluster& cluster, const std::vector<SubmeshShape>& shapes,
    const std::vector<int32_t>& pools) {
  if (!cluster.mixed()) return PlaceSubmeshes(cluster.hosts, cluster.devices_per_host, shapes);
  for (size_t s = 0; s < shapes.size(); ++s) {
    if (pools[s] < 0 || static_cast<size_t>(pools[s]) >= cluster.pools.size()) {
      return InvalidArgument("stage " + std::to_string(s) + ": pool " + std::to_string(pools[s]) +
                             " is not in the cluster");
    }
  }
  std::vector<std::vector<int64_t>> placed(shapes.size());
  for (size_t p = 0; p < cluster.pools.size(); ++p) {
    std::vector<SubmeshShape> mine;
    std::vector<size_t> index;
    for (size_t s = 0; s < shapes.size(); ++s) {
      if (static_cast<size_t>(pools[s]) != p) continue;
      mine.push_back(shapes[s]);
      index.push_back(s);
    }
    if (mine.empty()) continue;
    const Cluster& pool = cluster.pools[p];
    Result<std::vector<std::vector<int64_t>>> local =
        PlaceSubmeshes(pool.hosts, pool.devices_per_host, mine);
    if (!local.ok()) return local.status();
    const int64_t first =
        PoolFirstHost(cluster, static_cast<int32_t>(p)) * cluster.devices_per_host;
    for (size_t k = 0; k < index.size(); ++k) {
      std::vector<int64_t>& devices = placed[index[k]];
      devices = std::move(local.value()[k]);
      for (int64_t& d : devices) d += first;
    }
  }
  return placed;
}

}  // namespace alpa
