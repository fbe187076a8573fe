// NIC-aware stage placement (nic_placement.h).
#include "solvers/planner/nic_placement.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "solvers/planner/plan_transfers.h"

namespace alpa {
namespace {

// The stages that sit inside host `host` without filling it, ordered by their first device.
std::vector<size_t> StagesInsideHost(const Cluster& cluster,
                                     const std::vector<std::vector<int64_t>>& devices,
                                     int64_t host) {
  std::vector<size_t> inside;
  for (size_t s = 0; s < devices.size(); ++s) {
    const std::vector<int64_t>& d = devices[s];
    if (d.empty() || static_cast<int64_t>(d.size()) >= cluster.devices_per_host) continue;
    if (d.front() / cluster.devices_per_host == host) inside.push_back(s);
  }
  std::sort(inside.begin(), inside.end(),
            [&](size_t a, size_t b) { return devices[a].front() < devices[b].front(); });
  return inside;
}

// The devices far from the NICs among `size` consecutive local indices from `first`.
int64_t FarDevices(const Cluster& cluster, int64_t first, int64_t size) {
  int64_t far = 0;
  for (int64_t d = first; d < first + size; ++d) far += NearNic(cluster, d) ? 0 : 1;
  return far;
}

// The bytes an order of `stages` (laid out one after another from local index `first`) puts on
// far devices.
double FarBytes(const Cluster& cluster, const std::vector<std::vector<int64_t>>& devices,
                const std::vector<double>& cross_host_bytes, const std::vector<size_t>& stages,
                const std::vector<size_t>& order, int64_t first) {
  double far_bytes = 0;
  int64_t at = first;
  for (size_t k : order) {
    const size_t s = stages[k];
    const int64_t size = static_cast<int64_t>(devices[s].size());
    far_bytes += cross_host_bytes[s] * static_cast<double>(FarDevices(cluster, at, size)) /
                 static_cast<double>(size);
    at += size;
  }
  return far_bytes;
}

// Reorders the stages inside one host (see NicAwareDevices).
void PlaceInsideHost(const Cluster& cluster, int64_t host,
                     const std::vector<double>& cross_host_bytes,
                     std::vector<std::vector<int64_t>>& devices) {
  const std::vector<size_t> stages = StagesInsideHost(cluster, devices, host);
  if (stages.size() < 2 || stages.size() > kMaxNicPlacementStages) return;
  const int64_t first = devices[stages.front()].front() % cluster.devices_per_host;
  int64_t end = first;
  for (size_t s : stages) {
    // Only blocks that follow one another are reordered (PlaceSubmeshes packs them so).
    if (devices[s].front() % cluster.devices_per_host != end) return;
    end += static_cast<int64_t>(devices[s].size());
  }
  std::vector<size_t> order(stages.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::vector<size_t> best = order;
  double best_bytes = FarBytes(cluster, devices, cross_host_bytes, stages, order, first);
  while (std::next_permutation(order.begin(), order.end())) {
    const double bytes = FarBytes(cluster, devices, cross_host_bytes, stages, order, first);
    if (bytes < best_bytes) {
      best_bytes = bytes;
      best = order;
    }
  }
  int64_t at = host * cluster.devices_per_host + first;
  for (size_t k : best) {
    std::vector<int64_t>& d = devices[stages[k]];
    std::iota(d.begin(), d.end(), at);
    at += static_cast<int64_t>(d.size());
  }
}

}  // namespace

std::vector<double> CrossHostBytes(const PipelinePlan& plan, const Cluster& cluster) {
  std::vector<double> bytes(plan.stages.size(), 0.0);
  for (const CrossStageTransfer& t : plan.transfers) {
    const double times = t.once_per_iteration ? 1.0 : static_cast<double>(plan.microbatches);
    for (const SliceMove& mv : t.moves) {
      if (mv.src_device / cluster.devices_per_host == mv.dst_device / cluster.devices_per_host) {
        continue;
      }
      const double b = static_cast<double>(mv.bytes) * times;
      bytes[static_cast<size_t>(t.from_stage)] += b;
      bytes[static_cast<size_t>(t.to_stage)] += b;
    }
  }
  return bytes;
}

std::vector<std::vector<int64_t>> NicAwareDevices(const Cluster& cluster,
                                                  const std::vector<std::vector<int64_t>>& devices,
                                                  const std::vector<double>& cross_host_bytes) {
  std::vector<std::vector<int64_t>> placed = devices;
  if (cluster.nic_locality.empty()) return placed;
  std::vector<int64_t> hosts;
  for (const std::vector<int64_t>& d : devices) {
    if (!d.empty()) hosts.push_back(d.front() / cluster.devices_per_host);
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  for (int64_t host : hosts) PlaceInsideHost(cluster, host, cross_host_bytes, placed);
  return placed;
}

Status PredictWithNicPlacement(PipelinePlan& plan, const Cluster& cluster,
                               const TransferLister& list_transfers) {
  std::vector<std::vector<int64_t>> devices;
  for (const PlannedStage& st : plan.stages) devices.push_back(st.devices);
  const std::vector<std::vector<int64_t>> moved =
      NicAwareDevices(cluster, devices, CrossHostBytes(plan, cluster));
  if (moved == devices) {
    PredictPlanIteration(plan);
    return Status::Ok();
  }
  PipelinePlan near = plan;
  for (size_t s = 0; s < near.stages.size(); ++s) near.stages[s].devices = moved[s];
  Result<std::vector<CrossStageTransfer>> transfers = list_transfers(near.stages);
  if (!transfers.ok()) return transfers.status();
  near.transfers = std::move(transfers).value();
  PredictPlanIteration(plan);
  PredictPlanIteration(near);
  if (near.iteration_seconds < plan.iteration_seconds) plan = std::move(near);
  return Status::Ok();
}

}  // namespace alpa
