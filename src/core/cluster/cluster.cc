// Validation and comparison of cluster descriptions.
#include "core/cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <sstream>

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

Status ValidateNicLocality(const NicLocality& nic, int64_t devices_per_host) {
  const std::string where = "cluster.nic_locality";
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

}  // namespace

bool Calibration::operator==(const Calibration& o) const {
  return matmul_efficiency == o.matmul_efficiency &&
         convolution_efficiency == o.convolution_efficiency &&
         elementwise_efficiency == o.elementwise_efficiency &&
         other_efficiency == o.other_efficiency && memory_efficiency == o.memory_efficiency &&
         op_overhead_seconds == o.op_overhead_seconds && fuse_elementwise == o.fuse_elementwise &&
         fuse_attention == o.fuse_attention;
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
         a.nic_locality == b.nic_locality && a.calibration == b.calibration;
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
  return CheckNonNegative(c.op_overhead_seconds, where + ".op_overhead_seconds");
}

Status ValidateCluster(const Cluster& cluster) {
  if (cluster.hosts < 1 || cluster.hosts > kMaxHosts) {
    return InvalidArgument("cluster: hosts must be >= 1 and <= " + std::to_string(kMaxHosts) +
                           " (got " + std::to_string(cluster.hosts) + ")");
  }
  if (cluster.devices_per_host < 1 || cluster.devices_per_host > kMaxDevicesPerHost) {
    return InvalidArgument(
        "cluster: devices_per_host must be >= 1 and <= " + std::to_string(kMaxDevicesPerHost) +
        " (got " + std::to_string(cluster.devices_per_host) + ")");
  }
  if (cluster.hosts * cluster.devices_per_host > kMaxDevices) {
    return InvalidArgument("cluster: hosts * devices_per_host = " +
                           std::to_string(cluster.hosts * cluster.devices_per_host) + " exceeds " +
                           std::to_string(kMaxDevices) + " devices");
  }
  if (cluster.device.memory_bytes < 1) {
    return InvalidArgument("cluster.device.memory_bytes: must be >= 1 (got " +
                           std::to_string(cluster.device.memory_bytes) + ")");
  }
  ALPA_RETURN_IF_ERROR(
      CheckPositive(cluster.device.memory_bandwidth, "cluster.device.memory_bandwidth"));
  for (int32_t i = 0; i < kNumDTypes; ++i) {
    ALPA_RETURN_IF_ERROR(CheckPositive(
        cluster.device.peak_flops[static_cast<size_t>(i)],
        std::string("cluster.device.peak_flops.") + DTypeName(static_cast<DType>(i))));
  }
  ALPA_RETURN_IF_ERROR(CheckLink(cluster.intra_host_link, "cluster.intra_host_link"));
  ALPA_RETURN_IF_ERROR(CheckLink(cluster.inter_host_link, "cluster.inter_host_link"));
  if (cluster.nics_per_host < 1 || cluster.nics_per_host > kMaxDevicesPerHost) {
    return InvalidArgument("cluster.nics_per_host: must be in [1, " +
                           std::to_string(kMaxDevicesPerHost) + "] (got " +
                           std::to_string(cluster.nics_per_host) + ")");
  }
  ALPA_RETURN_IF_ERROR(ValidateNicLocality(cluster.nic_locality, cluster.devices_per_host));
  return ValidateCalibration(cluster.calibration, "cluster.calibration");
}

}  // namespace alpa
