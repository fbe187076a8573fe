// Sharding specs: how a tensor is laid out over an N-dimensional logical mesh (REFERENCE §3).
//
// For each tensor dim, the ordered list of mesh dims it is split over: empty = replicated along
// every mesh dim not used elsewhere; one entry k = split into mesh.shape[k] pieces along mesh dim
// k; several entries = split into the product, the first listed mesh dim major (so "S01" on a
// 2 x 4 mesh cuts the dim into 8 pieces; mesh coordinate (i, j) holds piece i * 4 + j).
// Separately, the mesh dims over which the tensor is a partial sum (after a contraction was split
// on them): every device holds a full-shaped (per its other splits) addend, and the value is the
// sum over the group. A mesh dim appears at most once in a spec (in one tensor dim's list or in
// the partial set); a mesh dim used nowhere is a replication dim.
//
// Text notation (ToString / ParseShardingSpec): per tensor dim "R" or "S" followed by its mesh
// dims as digits ("S0", "S1", "S01"), space-separated, then " partial(0,1)" when partial, e.g.
// "S0 R S1", "R R partial(1)". A rank-0 tensor prints as "scalar" ("scalar partial(0)").
// Mesh dims are single digits, so the notation covers meshes of up to 10 dims.
//
// Device order assumed by the exports: row-major device ids over the mesh, i.e. mesh coordinate
// (c0, c1, ..., c_{n-1}) is device sum_k c_k * prod_{l>k} shape[l] (logical_mesh.h's order).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace alpa {

struct ShardingSpec {
  // dims[i]: the mesh dims tensor dim i is split over, major to minor; empty = not split.
  std::vector<std::vector<int32_t>> dims;
  // Mesh dims over which the tensor is a partial sum, in increasing order.
  std::vector<int32_t> partial;

  // A fully replicated spec of `rank` tensor dims.
  static ShardingSpec Replicated(size_t rank);
  size_t rank() const { return dims.size(); }
  bool IsReplicated() const;  // no split and no partial

  bool operator==(const ShardingSpec& o) const { return dims == o.dims && partial == o.partial; }
  bool operator!=(const ShardingSpec& o) const { return !(*this == o); }
  // Deterministic total order: lexicographic on (dims, partial).
  bool operator<(const ShardingSpec& o) const;
};

// Checks `spec` against a tensor of `tensor_shape` on a mesh of `mesh_shape` (each >= 1): equal
// rank, mesh dims in range, each mesh dim used at most once, partial listed in increasing order,
// and every tensor dim divisible by its shard count (uneven splits are not allowed).
Status ValidateShardingSpec(const ShardingSpec& spec, const std::vector<int64_t>& tensor_shape,
                            const std::vector<int64_t>& mesh_shape);
// Checks only what does not depend on the tensor's shape (mesh dims in range, used once, partial
// order), for a mesh of `mesh_ndim` dims.
Status ValidateShardingSpecForMesh(const ShardingSpec& spec, int32_t mesh_ndim);

// The shape of one device's piece (validates first).
Result<std::vector<int64_t>> ShardShape(const ShardingSpec& spec,
                                        const std::vector<int64_t>& tensor_shape,
                                        const std::vector<int64_t>& mesh_shape);

// Shard counts, for a spec already valid on `mesh_shape`:
// the number of distinct pieces (product of mesh sizes over split mesh dims),
int64_t ShardCount(const ShardingSpec& spec, const std::vector<int64_t>& mesh_shape);
// the number of devices holding each identical piece (product over mesh dims neither split nor
// partial),
int64_t ReplicationFactor(const ShardingSpec& spec, const std::vector<int64_t>& mesh_shape);
// and the number of addends of each piece (product over partial mesh dims).
// ShardCount * ReplicationFactor * PartialCount = the mesh's device count.
int64_t PartialCount(const ShardingSpec& spec, const std::vector<int64_t>& mesh_shape);
// The number of pieces tensor dim `tensor_dim` is cut into.
int64_t TensorDimShards(const ShardingSpec& spec, size_t tensor_dim,
                        const std::vector<int64_t>& mesh_shape);

// "S0 R S1", "R R partial(1)", "scalar".
std::string ToString(const ShardingSpec& spec);
// The inverse of ToString; whitespace-separated tokens, an error names the offending token. The
// result is checked with ValidateShardingSpecForMesh(spec, 10).
Result<ShardingSpec> ParseShardingSpec(std::string_view text);

// GSPMD / HLO sharding text: "{replicated}" when nothing is split, else
// "{devices=[t0,t1,...]d0,d1,...}" with t_i = TensorDimShards(i) and the device ids listed in
// row-major order of the tile array, plus a trailing tile dim and " last_tile_dim_replicate"
// when ReplicationFactor > 1 (replicated mesh dims in increasing order form that trailing dim).
// Partial sums have no GSPMD form: kUnsupported.
Result<std::string> ToGspmdString(const ShardingSpec& spec, const std::vector<int64_t>& mesh_shape);

// Shardy: "#sdy.sharding<@mesh, [{\"x\"}, {}, {\"y\"}]>" with axis names `axis_names` (one per
// mesh dim; empty = x, y, z, then a3, a4, ...), plus ", unreduced={\"y\"}" for partial sums.
Result<std::string> ToShardyString(const ShardingSpec& spec, const std::vector<int64_t>& mesh_shape,
                                   const std::vector<std::string>& axis_names = {},
                                   const std::string& mesh_name = "mesh");

}  // namespace alpa
