// Cross-mesh resharding (Alpa's inter-stage communication): which device of one mesh sends which
// slice of a tensor to which device of another mesh, when a tensor laid out as `src` on one
// logical mesh is needed as `dst` on another (pipeline stages on disjoint devices).
//
// Tiles. A device at logical coordinates (c_0, ..., c_{n-1}) of a mesh (row-major: logical
// index sum_k c_k * prod_{l>k} mesh[l], the position in the device list) holds, of a tensor dim
// split over mesh dims [m_1, m_2, ...], shard number sum mixed-radix of c_{m_1}, c_{m_2}, ...
// (m_1 most significant), of size dim / prod mesh[m_k]; dims not split are whole
// (sharding_spec.h's layout). sharding_spec.h only gives shard shapes, not a device's position,
// so TileOfDevice below is that missing helper.
//
// The plan (PlanCrossMeshTransfer): every destination device receives its whole tile, cut along
// the source tiles it overlaps: one SliceMove per overlapping source piece, so every element of
// every destination tile arrives exactly once (Alpa's send/recv mode; no all-gather within the
// destination mesh afterwards). A piece held by several source devices (replication) is sent by
// one of them, chosen greedily in destination order (logical index, then source pieces in
// row-major order) to balance the bytes each device sends: the destination device itself when
// it holds the piece (a local copy, not counted as sent), else the holder that has sent the fewest
// bytes so far, ties to the lowest device id. The result is deterministic.
//
// Local all-gather (Alpa's cross-mesh resharding optimisation, PlanLocalAllGather): where `dst`
// holds each tile on several devices (mesh dims it neither splits nor sums over), the transfer can
// instead deliver a `landing` layout that splits the tile further over those mesh dims, each
// replica receiving 1/k of it, and an all-gather over them on the destination mesh rebuilds
// `dst`: the sending side's links carry each element once per tile instead of once per replica,
// and the replicas exchange the rest over the destination's own (faster) links.
//
// Partial sums. Source `partial` mesh dims: the transfer needs the reduced value, so a reduction
// on the source mesh (an all-reduce over the partial dims, which this plan does not include or
// price) precedes it; afterwards every device of a partial group holds the value, and they are
// treated as replicas when choosing senders. Destination `partial` mesh dims: only the devices
// at partial coordinate 0 on every partial dim receive the tile; the others hold zeros (a
// local zero-fill, as resharding.h's zero-fill move), so the group's sum is the value.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/cluster/sharding_spec.h"
#include "core/util/status.h"

namespace alpa {

// A box of a tensor sent from one device to another: offsets and sizes per tensor dim, in
// elements (empty for a scalar); bytes = the box's elements * element bytes. Device ids are the
// ones given to PlanCrossMeshTransfer (physical ids in the planner).
struct SliceMove {
  int64_t src_device = 0, dst_device = 0;
  std::vector<int64_t> offsets, sizes;
  int64_t bytes = 0;

  bool operator==(const SliceMove& o) const {
    return src_device == o.src_device && dst_device == o.dst_device && offsets == o.offsets &&
           sizes == o.sizes && bytes == o.bytes;
  }
  bool operator!=(const SliceMove& o) const { return !(*this == o); }
};

// The box one device holds: offsets and sizes per tensor dim, in elements.
struct TensorTile {
  std::vector<int64_t> offsets, sizes;
};

// The tile held by the device at `logical_index` (0 .. prod(mesh) - 1, row-major) under `spec`,
// which must be valid for `shape` on `mesh` (ValidateShardingSpec). Partial dims do not move
// the tile (every addend is full-shaped).
TensorTile TileOfDevice(const ShardingSpec& spec, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& mesh, int64_t logical_index);

// The moves taking a tensor of `shape` (`element_bytes` per element) from layout `src` on the
// mesh `src_mesh` whose devices, in logical row-major order, are `src_devices`, to layout `dst`
// on `dst_mesh` / `dst_devices` (see the top of this file). Moves are listed by destination
// (logical order), then source piece (row-major); boxes of zero elements are left out (a tensor
// with a zero-sized dim needs no moves). The two device lists may overlap (then the holder on
// the destination device itself is preferred).
//
// kInvalidArgument, naming the argument: element_bytes < 1; a negative dim, or a tensor whose
// bytes overflow int64; a spec invalid for the shape and its mesh (rank, mesh dims, a dim not
// divisible by its shard count: uneven splits are not supported); a mesh dim < 1; a device list
// whose length is not the mesh's device count; a negative or repeated device id in a list.
Result<std::vector<SliceMove>> PlanCrossMeshTransfer(const std::vector<int64_t>& shape,
                                                     int64_t element_bytes, const ShardingSpec& src,
                                                     const std::vector<int64_t>& src_mesh,
                                                     const std::vector<int64_t>& src_devices,
                                                     const ShardingSpec& dst,
                                                     const std::vector<int64_t>& dst_mesh,
                                                     const std::vector<int64_t>& dst_devices);

// The local all-gather of a transfer into `dst` (see the top of this file).
struct LocalAllGather {
  ShardingSpec landing;            // dst with `tensor_dim` split further over `mesh_dims`
  std::vector<int32_t> mesh_dims;  // the all-gather's mesh dims, increasing
  int32_t tensor_dim = -1;
};

// Landing layout for `dst` (valid for `shape` on `dst_mesh`): the mesh dims of size > 1 that
// `dst` neither splits nor sums over, appended at the minor end of the tensor dim whose tile
// their product divides (the largest such tile; ties: the lowest dim). nullopt when there is no
// such mesh dim or no tensor dim divides.
std::optional<LocalAllGather> PlanLocalAllGather(const ShardingSpec& dst,
                                                 const std::vector<int64_t>& shape,
                                                 const std::vector<int64_t>& dst_mesh);

// The mesh dims an all-gather runs over to take `landing` to `dst`: `landing` must equal `dst`
// but for mesh dims appended at the minor end of tensor dims, which `dst` does not use (and
// does not sum over). kInvalidArgument saying what differs otherwise (a plan read from a file).
Result<std::vector<int32_t>> LandingGatherDims(const ShardingSpec& landing,
                                               const ShardingSpec& dst);

}  // namespace alpa
