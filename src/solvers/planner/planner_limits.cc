// The planner's work limits (planner_limits.h).
#include "solvers/planner/planner_limits.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace alpa {
namespace {

// "planner: FACT, more than the limit of LIMIT; raise the limit with the plan option NAME (CLI
// --FLAG; 0: no limit)".
Status OverLimit(const std::string& fact, int64_t limit, const std::string& name) {
  std::string flag = name;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return InvalidArgument("planner: " + fact + ", more than the limit of " + std::to_string(limit) +
                         "; raise the limit with the plan option " + name + " (CLI --" + flag +
                         "; 0: no limit)");
}

bool Exceeds(int64_t value, int64_t limit) { return limit > 0 && value > limit; }

}  // namespace

int64_t SaturatingProduct(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  if (a > std::numeric_limits<int64_t>::max() / b) return std::numeric_limits<int64_t>::max();
  return a * b;
}

Status CheckClusterLimits(const Cluster& cluster, const PlannerLimits& limits) {
  if (Exceeds(cluster.hosts, limits.max_hosts)) {
    return OverLimit("the cluster has " + std::to_string(cluster.hosts) + " hosts",
                     limits.max_hosts, "max_hosts");
  }
  const int64_t devices = SaturatingProduct(cluster.hosts, cluster.devices_per_host);
  if (Exceeds(devices, limits.max_devices)) {
    return OverLimit("the cluster has " + std::to_string(devices) + " devices", limits.max_devices,
                     "max_devices");
  }
  return Status::Ok();
}

Status CheckModelLayerLimit(int64_t layers, const PlannerLimits& limits) {
  if (Exceeds(layers, limits.max_layers)) {
    return OverLimit("the model has " + std::to_string(layers) + " layers", limits.max_layers,
                     "max_layers");
  }
  return Status::Ok();
}

Status CheckGraphLimits(const Graph& graph, const PlannerLimits& limits) {
  if (Exceeds(graph.size(), limits.max_graph_ops)) {
    return OverLimit("the graph has " + std::to_string(graph.size()) + " ops", limits.max_graph_ops,
                     "max_graph_ops");
  }
  if (limits.max_layers <= 0) return Status::Ok();
  std::vector<int32_t> markers;
  for (const Op& op : graph.ops) {
    if (op.layer >= 0) markers.push_back(op.layer);
  }
  std::sort(markers.begin(), markers.end());
  const int64_t layers = std::unique(markers.begin(), markers.end()) - markers.begin();
  if (Exceeds(layers, limits.max_layers)) {
    return OverLimit("the graph has " + std::to_string(layers) + " layers (distinct layer markers)",
                     limits.max_layers, "max_layers");
  }
  return Status::Ok();
}

Status CheckWorkEstimate(const PlannerWorkEstimate& estimate, const PlannerLimits& limits) {
  if (Exceeds(estimate.solves, limits.max_intra_op_solves)) {
    return OverLimit("planning needs an estimated " + std::to_string(estimate.solves) +
                         " intra-op solves (" + std::to_string(estimate.piece_types) +
                         " layer piece types x " + std::to_string(estimate.logical_meshes) +
                         " logical meshes x " + std::to_string(estimate.microbatch_counts) +
                         " microbatch counts)",
                     limits.max_intra_op_solves, "max_intra_op_solves");
  }
  return Status::Ok();
}

}  // namespace alpa
