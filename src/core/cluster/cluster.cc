// Validation and comparison of cluster descriptions.
#include "core/cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "core/cluster/nvlink_graph.h"
#include "core/cluster/pcie_tree.h"

namespace alpa {
namespace {

std::string Num(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// A positive finite number (bandwidths, FLOP/s).
Status CheckPositive(double v, const std::string& where) {
  if (!std::isfinite(v) || v <= 0) {
    return InvalidArgument(where + ": must be a positive finite number (got " + Num(v) + ")");
  }
  return Status::Ok();
}

Status CheckNonNegative(double v, const std::string& where) {
  if (!std::isfinite(v) || v < 0) {
    return InvalidArgument(where + ": must be a finite number >= 0 (got " + Num(v) + ")");
  }
  return Status::Ok();
}

Status CheckEfficiency(double v, const std::string& where) {
  if (!std::isfinite(v) || v <= 0 || v > 1) {
    return InvalidArgument(where + ": must be in (0, 1] (got " + Num(v) + ")");
  }
  return Status::Ok();
}

Status CheckLink(const LinkSpec& link, const std::string& where) {
  ALPA_RETURN_IF_ERROR(CheckPositive(link.bandwidth, where + ".bandwidth"));
  return CheckNonNegative(link.latency, where + ".latency");
}

Status ValidateNicLocality(const NicLocality& nic, int64_t devices_per_host,
                           const std::string& where) {
  if (nic.near_devices.empty()) {
    if (nic.far_bandwidth != 0) {
      return InvalidArgument(where + ".far_bandwidth: set (" + Num(nic.far_bandwidth) +
                             ") without near_devices");
    }
    return Status::Ok();
  }
  for (size_t i = 0; i < nic.near_devices.size(); ++i) {
    const int64_t d = nic.near_devices[i];
    const std::string at = where + ".near_devices[" + std::to_string(i) + "]";
    if (d < 0 || d >= devices_per_host) {
      return InvalidArgument(at + ": " + std::to_string(d) + " is not a device of a host (0.." +
                             std::to_string(devices_per_host - 1) + ")");
    }
    if (i > 0 && d <= nic.near_devices[i - 1]) {
      return InvalidArgument(at + ": " + std::to_string(d) +
                             " is not above the one before (the list is ascending, no repeats)");
    }
  }
  return CheckPositive(nic.far_bandwidth, where + ".far_bandwidth");
}

// The fields of one device type's cluster (no pools), every message prefixed by `where`.
Status ValidateOneType(const Cluster& cluster, const std::string& where) {
  if (cluster.hosts < 1 || cluster.hosts > kMaxHosts) {
    return InvalidArgument(where + ": hosts must be >= 1 and <= " + std::to_string(kMaxHosts) +
                           " (got " + std::to_string(cluster.hosts) + ")");
  }
  if (cluster.devices_per_host < 1 || cluster.devices_per_host > kMaxDevicesPerHost) {
    return InvalidArgument(
        where + ": devices_per_host must be >= 1 and <= " + std::to_string(kMaxDevicesPerHost) +
        " (got " + std::to_string(cluster.devices_per_host) + ")");
  }
  if (cluster.hosts * cluster.devices_per_host > kMaxDevices) {
    return InvalidArgument(where + ": hosts * devices_per_host = " +
                           std::to_string(cluster.hosts * cluster.devices_per_host) + " exceeds " +
                           std::to_string(kMaxDevices) + " devices");
  }
  if (cluster.device.memory_bytes < 1) {
    return InvalidArgument(where + ".device.memory_bytes: must be >= 1 (got " +
                           std::to_string(cluster.device.memory_bytes) + ")");
  }
  ALPA_RETURN_IF_ERROR(
      CheckPositive(cluster.device.memory_bandwidth, where + ".device.memory_bandwidth"));
  for (int32_t i = 0; i < kNumDTypes; ++i) {
    ALPA_RETURN_IF_ERROR(
        CheckPositive(cluster.device.peak_flops[static_cast<size_t>(i)],
                      where + ".device.peak_flops." + DTypeName(static_cast<DType>(i))));
  }
  ALPA_RETURN_IF_ERROR(CheckLink(cluster.intra_host_link, where + ".intra_host_link"));
  ALPA_RETURN_IF_ERROR(CheckLink(cluster.inter_host_link, where + ".inter_host_link"));
  if (cluster.nics_per_host < 1 || cluster.nics_per_host > kMaxDevicesPerHost) {
    return InvalidArgument(where + ".nics_per_host: must be in [1, " +
                           std::to_string(kMaxDevicesPerHost) + "] (got " +
                           std::to_string(cluster.nics_per_host) + ")");
  }
  ALPA_RETURN_IF_ERROR(
      ValidateNicLocality(cluster.nic_locality, cluster.devices_per_host, where + ".nic_locality"));
  ALPA_RETURN_IF_ERROR(
      ValidateNvlinkGraph(cluster.nvlink, cluster.devices_per_host, where + ".nvlink"));
  ALPA_RETURN_IF_ERROR(ValidatePcieTree(cluster.pcie, cluster.devices_per_host, where + ".pcie"));
  if (!cluster.nvlink.empty() && !cluster.pcie.empty()) {
    return InvalidArgument(where + ": a host has an NVLink graph or a PCIe tree, not both (an " +
                           "NVLink host's PCIe paths are nvlink.pcie_bandwidth)");
  }
  return ValidateCalibration(cluster.calibration, where + ".calibration");
}

// The rules MakeMixedCluster states for `pools` (the pools of the cluster at `where`).
Status CheckPools(const std::vector<Cluster>& pools, const std::string& where) {
  const int64_t count = static_cast<int64_t>(pools.size());
  if (count < 2 || count > kMaxPools) {
    return InvalidArgument(where + ".pools: a mixed cluster has 2 to " + std::to_string(kMaxPools) +
                           " pools (got " + std::to_string(count) + ")");
  }
  // Each pool has at most kMaxHosts hosts and there are at most kMaxPools pools: no overflow.
  int64_t hosts = 0;
  for (size_t i = 0; i < pools.size(); ++i) {
    const Cluster& pool = pools[i];
    const std::string at = where + ".pools[" + std::to_string(i) + "]";
    // Before validating the pool, so that nested pools are never walked.
    if (pool.mixed()) {
      return InvalidArgument(at + ": a pool cannot have pools of its own (got " +
                             std::to_string(pool.pools.size()) + ")");
    }
    if (!pool.nic_locality.empty()) {
      return InvalidArgument(at + ".nic_locality: not allowed in a pool of a mixed cluster");
    }
    ALPA_RETURN_IF_ERROR(ValidateOneType(pool, at));
    if (pool.devices_per_host != pools[0].devices_per_host) {
      return InvalidArgument(at + ": devices_per_host is " + std::to_string(pool.devices_per_host) +
                             ", pool 0's is " + std::to_string(pools[0].devices_per_host));
    }
    hosts += pool.hosts;
  }
  if (hosts > kMaxHosts) {
    return InvalidArgument(where + ".pools: " + std::to_string(hosts) +
                           " hosts in all, more than " + std::to_string(kMaxHosts));
  }
  if (hosts * pools[0].devices_per_host > kMaxDevices) {
    return InvalidArgument(where + ".pools: " + std::to_string(hosts * pools[0].devices_per_host) +
                           " devices in all, more than " + std::to_string(kMaxDevices));
  }
  return Status::Ok();
}

// The merged view of `pools` (CheckPools holds), without the pools themselves.
Cluster MergedView(const std::vector<Cluster>& pools, const std::string& name) {
  // The first pool's fields (it has no pools or nic_locality), then each pool merged in.
  Cluster merged = pools[0];
  merged.hosts = 0;
  merged.nvlink = NvlinkGraph();  // each pool prices its own hosts' NVLinks and PCIe switches
  merged.pcie = PcieTree();
  const auto merge_link = [](LinkSpec* merged_link, const LinkSpec& pool_link) {
    merged_link->bandwidth = std::min(merged_link->bandwidth, pool_link.bandwidth);
    merged_link->latency = std::max(merged_link->latency, pool_link.latency);
  };
  std::string joined;
  for (const Cluster& pool : pools) {
    merged.hosts += pool.hosts;
    merged.device.memory_bytes = std::min(merged.device.memory_bytes, pool.device.memory_bytes);
    merge_link(&merged.intra_host_link, pool.intra_host_link);
    merge_link(&merged.inter_host_link, pool.inter_host_link);
    merged.nics_per_host = std::min(merged.nics_per_host, pool.nics_per_host);
    if (!joined.empty()) joined += " + ";
    joined += pool.name;
  }
  merged.name = name.empty() ? joined : name;
  return merged;
}

// The first merged field of `cluster` that is not `derived`'s; nullptr when none.
const char* FirstDifferentMergedField(const Cluster& cluster, const Cluster& derived) {
  if (cluster.hosts != derived.hosts) return "hosts";
  if (cluster.devices_per_host != derived.devices_per_host) return "devices_per_host";
  if (!(cluster.device == derived.device)) return "device";
  if (!(cluster.intra_host_link == derived.intra_host_link)) return "intra_host_link";
  if (!(cluster.inter_host_link == derived.inter_host_link)) return "inter_host_link";
  if (cluster.nics_per_host != derived.nics_per_host) return "nics_per_host";
  if (!(cluster.nic_locality == derived.nic_locality)) return "nic_locality";
  if (!(cluster.nvlink == derived.nvlink)) return "nvlink";
  if (!(cluster.pcie == derived.pcie)) return "pcie";
  if (!(cluster.calibration == derived.calibration)) return "calibration";
  return nullptr;
}

}  // namespace

bool Calibration::operator==(const Calibration& o) const {
  return matmul_efficiency == o.matmul_efficiency &&
         convolution_efficiency == o.convolution_efficiency &&
         elementwise_efficiency == o.elementwise_efficiency &&
         other_efficiency == o.other_efficiency && memory_efficiency == o.memory_efficiency &&
         op_overhead_seconds == o.op_overhead_seconds && fuse_elementwise == o.fuse_elementwise &&
         single_reader_fusion == o.single_reader_fusion && fuse_attention == o.fuse_attention &&
         attention_efficiency == o.attention_efficiency;
}

bool operator==(const DeviceSpec& a, const DeviceSpec& b) {
  return a.name == b.name && a.peak_flops == b.peak_flops && a.memory_bytes == b.memory_bytes &&
         a.memory_bandwidth == b.memory_bandwidth;
}

bool operator==(const LinkSpec& a, const LinkSpec& b) {
  return a.bandwidth == b.bandwidth && a.latency == b.latency;
}

bool operator==(const Cluster& a, const Cluster& b) {
  return a.name == b.name && a.hosts == b.hosts && a.devices_per_host == b.devices_per_host &&
         a.device == b.device && a.intra_host_link == b.intra_host_link &&
         a.inter_host_link == b.inter_host_link && a.nics_per_host == b.nics_per_host &&
         a.nic_locality == b.nic_locality && a.nvlink == b.nvlink && a.pcie == b.pcie &&
         a.calibration == b.calibration && a.pools == b.pools;
}

Result<Cluster> MakeMixedCluster(std::vector<Cluster> pools, std::string name) {
  ALPA_RETURN_IF_ERROR(CheckPools(pools, "cluster"));
  Cluster merged = MergedView(pools, name);
  merged.pools = std::move(pools);
  return merged;
}

int32_t PoolOfHost(const Cluster& cluster, int64_t host) {
  int64_t end = 0;
  for (size_t pool = 0; pool < cluster.pools.size(); ++pool) {
    end += cluster.pools[pool].hosts;
    if (host < end) return static_cast<int32_t>(pool);
  }
  return cluster.pools.empty() ? 0 : static_cast<int32_t>(cluster.pools.size() - 1);
}

int64_t PoolFirstHost(const Cluster& cluster, int32_t pool) {
  if (pool <= 0) return 0;
  if (!cluster.mixed()) return cluster.hosts;
  int64_t first = 0;
  const size_t end = std::min(static_cast<size_t>(pool), cluster.pools.size());
  for (size_t p = 0; p < end; ++p) first += cluster.pools[p].hosts;
  return first;
}

const Cluster& HostCluster(const Cluster& cluster, int64_t host) {
  if (!cluster.mixed()) return cluster;
  return cluster.pools[static_cast<size_t>(PoolOfHost(cluster, host))];
}

const Cluster& DevicesCluster(const Cluster& cluster, const std::vector<int64_t>& devices) {
  return HostCluster(cluster, devices.empty() ? 0 : devices.front() / cluster.devices_per_host);
}

bool NearNic(const Cluster& cluster, int64_t device) {
  const std::vector<int64_t>& near = cluster.nic_locality.near_devices;
  if (near.empty()) return true;
  return std::binary_search(near.begin(), near.end(), device % cluster.devices_per_host);
}

int64_t NicGroups(const Cluster& cluster) {
  return std::min(cluster.nics_per_host, cluster.devices_per_host);
}

int64_t NicGroupOf(const Cluster& cluster, int64_t device) {
  return device % cluster.devices_per_host * NicGroups(cluster) / cluster.devices_per_host;
}

double NicGroupBandwidth(const Cluster& cluster) {
  return cluster.inter_host_link.bandwidth / static_cast<double>(NicGroups(cluster));
}

double InterHostMoveBandwidth(const Cluster& cluster, int64_t src_device, int64_t dst_device) {
  if (cluster.mixed()) {
    // Pools have no nic_locality: each end's NIC groups, the slower side.
    const Cluster& src = HostCluster(cluster, src_device / cluster.devices_per_host);
    const Cluster& dst = HostCluster(cluster, dst_device / cluster.devices_per_host);
    return std::min(NicGroupBandwidth(src), NicGroupBandwidth(dst));
  }
  const double bandwidth = NicGroupBandwidth(cluster);
  if (NearNic(cluster, src_device) && NearNic(cluster, dst_device)) return bandwidth;
  return std::min(bandwidth, cluster.nic_locality.far_bandwidth);
}

Status ValidateCalibration(const Calibration& c, const std::string& where) {
  ALPA_RETURN_IF_ERROR(CheckEfficiency(c.matmul_efficiency, where + ".efficiency.matmul"));
  ALPA_RETURN_IF_ERROR(
      CheckEfficiency(c.convolution_efficiency, where + ".efficiency.convolution"));
  ALPA_RETURN_IF_ERROR(
      CheckEfficiency(c.elementwise_efficiency, where + ".efficiency.elementwise"));
  ALPA_RETURN_IF_ERROR(CheckEfficiency(c.other_efficiency, where + ".efficiency.other"));
  ALPA_RETURN_IF_ERROR(CheckEfficiency(c.memory_efficiency, where + ".efficiency.memory"));
  if (c.attention_efficiency != 0) {  // 0: not measured
    ALPA_RETURN_IF_ERROR(CheckEfficiency(c.attention_efficiency, where + ".efficiency.attention"));
  }
  return CheckNonNegative(c.op_overhead_seconds, where + ".op_overhead_seconds");
}

Status ValidateCluster(const Cluster& cluster, const std::string& where) {
  if (!cluster.mixed()) return ValidateOneType(cluster, where);
  ALPA_RETURN_IF_ERROR(CheckPools(cluster.pools, where));
  const char* field = FirstDifferentMergedField(cluster, MergedView(cluster.pools, cluster.name));
  if (field != nullptr) {
    return InvalidArgument(where + "." + field +
                           ": the merged fields of a mixed cluster must be those "
                           "MakeMixedCluster derives from its pools");
  }
  return Status::Ok();
}

}  // namespace alpa
