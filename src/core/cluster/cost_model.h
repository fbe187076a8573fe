// The analytic cost model: collective communication per logical mesh dimension, op compute time
// as a roofline, and tensor memory.
//
// Collectives (REFERENCE §3; n devices on the dimension, b bytes = the full tensor's size, i.e.
// the all-gather output / all-reduce operand / reduce-scatter input):
//   all-gather      alpha + beta * (n-1)/n * b
//   all-reduce      alpha + beta * 2(n-1)/n * b
//   reduce-scatter  alpha + beta * (n-1)/n * b
//   all-to-all      alpha + beta * (n-1)/n^2 * b * n/2      (Alpa's penalty factor n/2)
//   send/recv       alpha + beta * b                        (point to point, b bytes moved)
// n == 1 costs 0 (nothing moves). kAlpaCompatible adds Alpa's tie-breakers (+0.1 all-gather,
// +0.01 all-reduce, +0.001 reduce-scatter, +0.001 all-to-all; none on send/recv) so that its
// solver sees the same costs as Alpa's; kRealUnits leaves them out (seconds stay seconds).
// kFlattenedMeshDim runs the collective over all devices of the mesh at once with
// n = d0 * d1 and the mesh's flat_alpha / flat_beta (see logical_mesh.h).
//
// Roofline: seconds = max(flops / (peak(dtype) * compute_efficiency(class)),
//                         bytes / (memory_bandwidth * memory_efficiency)) + op_overhead_seconds.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "core/util/dtype.h"
#include "core/util/status.h"

namespace alpa {

enum class CollectiveKind : int32_t {
  kAllGather = 0,
  kAllReduce = 1,
  kReduceScatter = 2,
  kAllToAll = 3,
  kSendRecv = 4,
};

enum class CostMode : int32_t {
  kAlpaCompatible = 0,  // with Alpa's tie-breaking constants
  kRealUnits = 1,       // pure formula
};

// The mesh_dim value meaning "all dimensions at once".
inline constexpr int32_t kFlattenedMeshDim = -1;

const char* CollectiveName(CollectiveKind kind);  // "all-gather", ...

// The formula for n devices joined by a link (alpha, beta). n <= 1 or bytes <= 0 (or NaN)
// costs 0.
double CollectiveCost(CollectiveKind kind, int64_t n, double alpha, double beta, double bytes,
                      CostMode mode);

// The formula on one dimension of a mesh (or kFlattenedMeshDim). An out-of-range dimension is an
// error.
Result<double> MeshCollectiveCost(const LogicalMesh& mesh, CollectiveKind kind, int32_t mesh_dim,
                                  double bytes, CostMode mode);

// Convenience wrappers for strategy enumeration, where mesh_dim is known to be valid; an invalid
// dimension gives +infinity (a forbidden choice rather than a silent zero).
// The model refers to the mesh (built once per strategy, it copies nothing): the mesh must
// outlive it.
class CollectiveCostModel {
 public:
  CollectiveCostModel(const LogicalMesh& mesh, CostMode mode) : mesh_(&mesh), mode_(mode) {}
  CollectiveCostModel(LogicalMesh&& mesh, CostMode mode) = delete;  // would dangle
  const LogicalMesh& mesh() const { return *mesh_; }
  CostMode mode() const { return mode_; }

  double AllGather(int32_t mesh_dim, double bytes) const;
  double AllReduce(int32_t mesh_dim, double bytes) const;
  double ReduceScatter(int32_t mesh_dim, double bytes) const;
  double AllToAll(int32_t mesh_dim, double bytes) const;
  double SendRecv(int32_t mesh_dim, double bytes) const;
  double Cost(CollectiveKind kind, int32_t mesh_dim, double bytes) const;

 private:
  const LogicalMesh* mesh_;
  CostMode mode_;
};

// Point-to-point transfer over one physical link (e.g. between stages on different hosts).
double SendRecvSeconds(const LinkSpec& link, double bytes);

// ---- Compute --------------------------------------------------------------------------------
enum class ComputeClass : int32_t {
  kMatmul = 0,       // dot / batched matmul: tensor cores
  kConvolution = 1,  // convolutions: tensor cores
  kElementwise = 2,  // elementwise arithmetic, activations: vector units, usually memory-bound
  kOther = 3,        // reductions, data movement, everything else
  // The products of an attention core run by the CUDA runner's fused attention kernels
  // (Calibration::attention_efficiency; matmul_efficiency where that is not measured)
  kAttention = 4,
};

// The compute efficiency of a class under `calibration`.
double ComputeEfficiency(ComputeClass cls, const Calibration& calibration);

// Roofline seconds of one op on one device. Negative or NaN flops / bytes count as 0.
double OpComputeSeconds(double flops, double bytes_accessed, DType dtype, ComputeClass cls,
                        const DeviceSpec& device, const Calibration& calibration);
// Same with the cluster's own device and calibration.
double OpComputeSeconds(double flops, double bytes_accessed, DType dtype, ComputeClass cls,
                        const Cluster& cluster);

// ---- Memory ---------------------------------------------------------------------------------
// Bytes of a dense tensor: product of dims times the element size. Negative dims, an invalid
// dtype or a product beyond int64 are errors (naming the dim).
Result<int64_t> TensorBytes(const std::vector<int64_t>& dims, DType dtype);
// Bytes per device of a tensor split into `shards` pieces: ceil(bytes / shards). shards >= 1,
// bytes >= 0.
Result<int64_t> ShardedBytes(int64_t bytes, int64_t shards);

}  // namespace alpa
