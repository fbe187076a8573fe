// Collective costs, the roofline compute model and tensor memory (formulas in cost_model.h).
#include "core/cluster/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace alpa {
namespace {

double NonNegative(double x) { return x > 0 ? x : 0.0; }  // NaN -> 0 too

}  // namespace

const char* CollectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kSendRecv:
      return "send/recv";
  }
  return "?";
}

double CollectiveCost(CollectiveKind kind, int64_t n, double alpha, double beta, double bytes,
                      CostMode mode) {
  if (n <= 1 || !(bytes > 0)) return 0.0;
  const double nd = static_cast<double>(n);
  const bool alpa = mode == CostMode::kAlpaCompatible;
  switch (kind) {
    case CollectiveKind::kAllGather:
      return alpha + beta * (nd - 1) / nd * bytes + (alpa ? 0.1 : 0.0);
    case CollectiveKind::kAllReduce:
      return alpha + beta * 2 * (nd - 1) / nd * bytes + (alpa ? 0.01 : 0.0);
    case CollectiveKind::kReduceScatter:
      return alpha + beta * (nd - 1) / nd * bytes + (alpa ? 0.001 : 0.0);
    case CollectiveKind::kAllToAll:
      // Each device keeps 1/n of its b/n-byte shard and sends the rest: (n-1)/n^2 * b; Alpa
      // multiplies by n/2 to match what it measured on V100 + NVLink.
      return alpha + beta * (nd - 1) / (nd * nd) * bytes * (nd / 2) + (alpa ? 0.001 : 0.0);
    case CollectiveKind::kSendRecv:
      return alpha + beta * bytes;
  }
  return std::numeric_limits<double>::infinity();
}

Result<double> MeshCollectiveCost(const LogicalMesh& mesh, CollectiveKind kind, int32_t mesh_dim,
                                  double bytes, CostMode mode) {
  if (mesh_dim == kFlattenedMeshDim) {
    return CollectiveCost(kind, mesh.num_devices(), mesh.flat_alpha, mesh.flat_beta, bytes, mode);
  }
  if (mesh_dim < 0 || mesh_dim >= mesh.ndim() || mesh.alpha.size() != mesh.shape.size() ||
      mesh.beta.size() != mesh.shape.size()) {
    return InvalidArgument(std::string(CollectiveName(kind)) + ": mesh dimension " +
                           std::to_string(mesh_dim) + " does not exist in a mesh of shape " +
                           MeshShapeString(mesh.shape));
  }
  const size_t k = static_cast<size_t>(mesh_dim);
  return CollectiveCost(kind, mesh.shape[k], mesh.alpha[k], mesh.beta[k], bytes, mode);
}

double CollectiveCostModel::Cost(CollectiveKind kind, int32_t mesh_dim, double bytes) const {
  Result<double> r = MeshCollectiveCost(*mesh_, kind, mesh_dim, bytes, mode_);
  return r.ok() ? r.value() : std::numeric_limits<double>::infinity();
}

double CollectiveCostModel::AllGather(int32_t mesh_dim, double bytes) const {
  return Cost(CollectiveKind::kAllGather, mesh_dim, bytes);
}
double CollectiveCostModel::AllReduce(int32_t mesh_dim, double bytes) const {
  return Cost(CollectiveKind::kAllReduce, mesh_dim, bytes);
}
double CollectiveCostModel::ReduceScatter(int32_t mesh_dim, double bytes) const {
  return Cost(CollectiveKind::kReduceScatter, mesh_dim, bytes);
}
double CollectiveCostModel::AllToAll(int32_t mesh_dim, double bytes) const {
  return Cost(CollectiveKind::kAllToAll, mesh_dim, bytes);
}
double CollectiveCostModel::SendRecv(int32_t mesh_dim, double bytes) const {
  return Cost(CollectiveKind::kSendRecv, mesh_dim, bytes);
}

double SendRecvSeconds(const LinkSpec& link, double bytes) {
  if (!(bytes > 0)) return 0.0;
  return link.latency + bytes / link.bandwidth;
}

double ComputeEfficiency(ComputeClass cls, const Calibration& c) {
  switch (cls) {
    case ComputeClass::kMatmul:
      return c.matmul_efficiency;
    case ComputeClass::kConvolution:
      return c.convolution_efficiency;
    case ComputeClass::kElementwise:
      return c.elementwise_efficiency;
    case ComputeClass::kOther:
      return c.other_efficiency;
    case ComputeClass::kAttention:
      return c.attention_efficiency > 0 ? c.attention_efficiency : c.matmul_efficiency;
  }
  return c.other_efficiency;
}

double OpComputeSeconds(double flops, double bytes_accessed, DType dtype, ComputeClass cls,
                        const DeviceSpec& device, const Calibration& calibration) {
  flops = NonNegative(flops);
  bytes_accessed = NonNegative(bytes_accessed);
  double seconds = 0.0;
  if (flops > 0) {
    const double rate = device.PeakFlops(dtype) * ComputeEfficiency(cls, calibration);
    seconds = flops / rate;
  }
  if (bytes_accessed > 0) {
    const double bw = device.memory_bandwidth * calibration.memory_efficiency;
    seconds = std::max(seconds, bytes_accessed / bw);
  }
  return seconds + calibration.op_overhead_seconds;
}

double OpComputeSeconds(double flops, double bytes_accessed, DType dtype, ComputeClass cls,
                        const Cluster& cluster) {
  return OpComputeSeconds(flops, bytes_accessed, dtype, cls, cluster.device, cluster.calibration);
}

Result<int64_t> TensorBytes(const std::vector<int64_t>& dims, DType dtype) {
  if (!IsValidDType(static_cast<int32_t>(dtype))) {
    return InvalidArgument("tensor bytes: invalid dtype " +
                           std::to_string(static_cast<int32_t>(dtype)));
  }
  int64_t total = DTypeBytes(dtype);
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] < 0) {
      return InvalidArgument("tensor bytes: dims[" + std::to_string(k) +
                             "] = " + std::to_string(dims[k]) + " is negative");
    }
  }
  // A zero dim makes the tensor empty whatever the other dims are (no overflow to report).
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return int64_t{0};
  for (size_t k = 0; k < dims.size(); ++k) {
    if (total > std::numeric_limits<int64_t>::max() / dims[k]) {
      return InvalidArgument("tensor bytes: the size overflows int64 at dims[" + std::to_string(k) +
                             "] = " + std::to_string(dims[k]));
    }
    total *= dims[k];
  }
  return total;
}

Result<int64_t> ShardedBytes(int64_t bytes, int64_t shards) {
  if (bytes < 0) return InvalidArgument("sharded bytes: bytes " + std::to_string(bytes) + " < 0");
  if (shards < 1) {
    return InvalidArgument("sharded bytes: shard count " + std::to_string(shards) + " < 1");
  }
  return bytes / shards + (bytes % shards != 0 ? 1 : 0);
}

}  // namespace alpa
