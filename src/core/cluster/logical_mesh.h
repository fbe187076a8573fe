// The logical mesh: a submesh of the cluster (n hosts x m devices each, or a 1 x k slice of one
// host) viewed as a 1-D or 2-D array of devices, with a latency alpha (seconds) and an inverse
// bandwidth beta (seconds per byte) per dimension. The collective cost model (cost_model.h) reads
// only this view.
//
// Device order. Submesh device (host h, local index l) has flat id h * m + l; logical index
// (i, j) of shape (d0, d1) is flat id i * d1 + j (row-major). So dimension 1 groups are runs of
// d1 consecutive ids and stay inside one host when d1 divides m; dimension 0 groups stride by d1
// and cross hosts as soon as the submesh has more than one host (Alpa's convention: dim 0 spans
// hosts, dim 1 stays in a host).
//
// Bandwidth model (DeriveLogicalMesh). A collective on dimension k runs on every group of that
// dimension at once (SPMD). A group inside one host runs a ring over NVLink: alpha = intra
// latency, bandwidth = intra_host_link.bandwidth, or with an NVLink graph (Cluster::nvlink) the
// rings its members' links carry, on the least connected aligned block of the submesh's width
// (nvlink_graph.h; in the rules below, "intra_host_link.bandwidth" then reads as that). A group
// that spans hosts is limited by the host's NICs, which it shares with the other spanning groups
// that have members on the same host: with g such groups per host (the maximum over hosts),
//     bandwidth = min(intra_host_link.bandwidth, inter_host_link.bandwidth / g),
//     alpha = inter_host_link.latency.
// This matches what NCCL achieves: one ring over all devices of several DGX hosts uses every NIC
// (one channel per NIC), so its bus bandwidth approaches the host's aggregate NIC bandwidth
// (g = 1), while the data-parallel dim of a (hosts, 8) mesh runs 8 rings that split it (g = 8).
// beta = 1 / bandwidth. With NIC groups (Cluster::nics_per_host > 1) a spanning group gets, on
// each host, the NIC groups of its devices there, each shared evenly with the other spanning
// groups using it; its bandwidth is the least such sum over its hosts (the dimension's, the
// least over its groups), capped by intra_host_link.bandwidth: one device per host reaches the
// others through its own NICs only (one DGX NIC, not the host's eight).
// One NIC group gives the rule above exactly.
//
// The flattened mesh (a collective over all d0 * d1 devices at once, for 1-D strategies on a 2-D
// mesh): derived meshes treat it as one group of all devices under the same rule; abstract meshes
// use Alpa's rule, the slowest dimension: alpha = max(alpha), beta = max(beta).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/util/status.h"

namespace alpa {

// A block of the physical mesh: `hosts` hosts using `devices_per_host` devices each.
struct SubmeshShape {
  int64_t hosts = 1;
  int64_t devices_per_host = 1;

  int64_t num_devices() const { return hosts * devices_per_host; }
  bool operator==(const SubmeshShape& o) const {
    return hosts == o.hosts && devices_per_host == o.devices_per_host;
  }
};

struct LogicalMesh {
  std::vector<int64_t> shape;  // 1 or 2 entries, each >= 1
  std::vector<double> alpha;   // seconds (or Alpa's abstract units), one per dimension
  std::vector<double> beta;    // seconds per byte (or abstract units), one per dimension
  double flat_alpha = 0;       // the flattened mesh, see the top of this file
  double flat_beta = 0;
  // Per dimension: whether its groups span hosts (false for abstract meshes).
  std::vector<bool> crosses_hosts;

  int32_t ndim() const { return static_cast<int32_t>(shape.size()); }
  int64_t num_devices() const;
};

// Alpa's abstract defaults (REFERENCE §3): alpha = (1, 1), beta = (1, 0.1).
inline const std::vector<double> kAlpaDefaultAlpha = {1.0, 1.0};
inline const std::vector<double> kAlpaDefaultBeta = {1.0, 0.1};

// Checks that `submesh` fits in the cluster (1 <= hosts <= cluster.hosts,
// 1 <= devices_per_host <= cluster.devices_per_host).
Status ValidateSubmesh(const Cluster& cluster, const SubmeshShape& submesh);

// The logical mesh of `submesh` reshaped to `logical_shape` (1 or 2 dims whose product is the
// submesh's device count), alpha and beta derived from the cluster's links (see above). A mixed
// cluster (cluster.h's pools) is refused: a mesh lies on one pool, derived from its cluster.
Result<LogicalMesh> DeriveLogicalMesh(const Cluster& cluster, const SubmeshShape& submesh,
                                      const std::vector<int64_t>& logical_shape);

// A mesh given in Alpa's abstract units (or any units): alpha and beta per dimension, same
// length as shape; empty alpha / beta take Alpa's defaults (the first `shape.size()` entries).
Result<LogicalMesh> AbstractLogicalMesh(const std::vector<int64_t>& shape,
                                        std::vector<double> alpha = {},
                                        std::vector<double> beta = {});

// The logical shapes the planner tries for a submesh with D devices (REFERENCE §4):
// (D / mp, mp) for every mp dividing submesh.devices_per_host, in increasing mp, so (D, 1)
// comes first and (hosts, devices_per_host) last; on one host (1, D) is left out for D > 1: it
// is (D, 1) transposed, the same 1-D mesh, which would cost every piece a second solve.
std::vector<std::vector<int64_t>> EnumerateLogicalShapes(const SubmeshShape& submesh);

// "(2, 8)" / "(16)".
std::string MeshShapeString(const std::vector<int64_t>& shape);

}  // namespace alpa
