// Cross-mesh resharding: slice moves between two meshes (cross_mesh.h).
#include "core/cluster/cross_mesh.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>

#include "core/util/wide_int.h"

namespace alpa {
namespace {

// Row-major coordinates of logical index `index` on `mesh`.
std::vector<int64_t> MeshCoords(const std::vector<int64_t>& mesh, int64_t index) {
  std::vector<int64_t> c(mesh.size(), 0);
  for (size_t k = mesh.size(); k-- > 0;) {
    c[k] = index % mesh[k];
    index /= mesh[k];
  }
  return c;
}

// The shard of tensor dim `i` a device at `coords` holds (mixed radix, first mesh dim major).
int64_t ShardOfDim(const ShardingSpec& spec, size_t i, const std::vector<int64_t>& mesh,
                   const std::vector<int64_t>& coords) {
  int64_t shard = 0;
  for (int32_t m : spec.dims[i]) {
    shard = shard * mesh[static_cast<size_t>(m)] + coords[static_cast<size_t>(m)];
  }
  return shard;
}

// Checks a mesh and its device list; `side` is "source" or "destination".
Status CheckMeshAndDevices(const char* side, const std::vector<int64_t>& mesh,
                           const std::vector<int64_t>& devices) {
  const std::string what = std::string("cross-mesh transfer: ") + side;
  if (mesh.empty()) return InvalidArgument(what + " mesh has no dimensions");
  // The product saturates at one past the device count, so it cannot overflow.
  const int64_t n = static_cast<int64_t>(devices.size());
  int64_t product = 1;
  for (size_t k = 0; k < mesh.size(); ++k) {
    if (mesh[k] < 1) {
      return InvalidArgument(what + " mesh dim " + std::to_string(k) + " has size " +
                             std::to_string(mesh[k]) + " (must be >= 1)");
    }
    product = product > n / mesh[k] ? n + 1 : product * mesh[k];
  }
  if (product != n) {
    std::string shape;
    for (size_t k = 0; k < mesh.size(); ++k) shape += (k ? ", " : "") + std::to_string(mesh[k]);
    return InvalidArgument(what + " mesh (" + shape + ") has " +
                           (product > n ? std::string("more devices than")
                                        : std::to_string(product) + " devices, not") +
                           " the " + std::to_string(devices.size()) + " device ids given");
  }
  std::set<int64_t> seen;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0) {
      return InvalidArgument(what + " device " + std::to_string(i) + " has a negative id (" +
                             std::to_string(devices[i]) + ")");
    }
    if (!seen.insert(devices[i]).second) {
      return InvalidArgument(what + " device id " + std::to_string(devices[i]) +
                             " is listed twice");
    }
  }
  return Status::Ok();
}

Status CheckSpec(const char* side, const ShardingSpec& spec, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& mesh) {
  Status s = ValidateShardingSpec(spec, shape, mesh);
  if (s.ok()) return s;
  return Status(s.code(), std::string("cross-mesh transfer: ") + side + " spec '" + ToString(spec) +
                              "': " + s.message());
}

}  // namespace

TensorTile TileOfDevice(const ShardingSpec& spec, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& mesh, int64_t logical_index) {
  const std::vector<int64_t> coords = MeshCoords(mesh, logical_index);
  TensorTile tile;
  tile.offsets.resize(shape.size());
  tile.sizes.resize(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t size = shape[i] / TensorDimShards(spec, i, mesh);
    tile.sizes[i] = size;
    tile.offsets[i] = ShardOfDim(spec, i, mesh, coords) * size;
  }
  return tile;
}

Result<std::vector<SliceMove>> PlanCrossMeshTransfer(const std::vector<int64_t>& shape,
                                                     int64_t element_bytes, const ShardingSpec& src,
                                                     const std::vector<int64_t>& src_mesh,
                                                     const std::vector<int64_t>& src_devices,
                                                     const ShardingSpec& dst,
                                                     const std::vector<int64_t>& dst_mesh,
                                                     const std::vector<int64_t>& dst_devices) {
  if (element_bytes < 1) {
    return InvalidArgument("cross-mesh transfer: element_bytes must be >= 1 (got " +
                           std::to_string(element_bytes) + ")");
  }
  Int128 total_bytes = element_bytes;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return InvalidArgument("cross-mesh transfer: tensor dim " + std::to_string(i) + " has size " +
                             std::to_string(shape[i]) + " (must be >= 0)");
    }
    total_bytes *= shape[i];
    if (total_bytes > std::numeric_limits<int64_t>::max()) {
      return InvalidArgument("cross-mesh transfer: the tensor's bytes overflow int64");
    }
  }
  ALPA_RETURN_IF_ERROR(CheckMeshAndDevices("source", src_mesh, src_devices));
  ALPA_RETURN_IF_ERROR(CheckMeshAndDevices("destination", dst_mesh, dst_devices));
  ALPA_RETURN_IF_ERROR(CheckSpec("source", src, shape, src_mesh));
  ALPA_RETURN_IF_ERROR(CheckSpec("destination", dst, shape, dst_mesh));

  std::vector<SliceMove> moves;
  if (total_bytes == 0) return moves;  // a zero-sized dim: nothing to send

  const size_t rank = shape.size();
  // Source pieces in row-major order of their per-dim shard numbers; holders[p]: the logical
  // indices of the source devices holding piece p (replicas and, after the reduction, the
  // members of a partial group), increasing.
  std::vector<int64_t> src_shards(rank), src_size(rank), piece_stride(rank);
  int64_t pieces = 1;
  for (size_t i = rank; i-- > 0;) {
    src_shards[i] = TensorDimShards(src, i, src_mesh);
    src_size[i] = shape[i] / src_shards[i];
    piece_stride[i] = pieces;
    pieces *= src_shards[i];
  }
  std::vector<std::vector<int64_t>> holders(static_cast<size_t>(pieces));
  for (int64_t l = 0; l < static_cast<int64_t>(src_devices.size()); ++l) {
    const std::vector<int64_t> c = MeshCoords(src_mesh, l);
    int64_t p = 0;
    for (size_t i = 0; i < rank; ++i) p += ShardOfDim(src, i, src_mesh, c) * piece_stride[i];
    holders[static_cast<size_t>(p)].push_back(l);
  }

  std::vector<Int128> sent(src_devices.size(), 0);  // bytes over the network, per source device
  std::vector<int64_t> lo(rank), hi(rank), k(rank);
  for (int64_t d = 0; d < static_cast<int64_t>(dst_devices.size()); ++d) {
    const std::vector<int64_t> dc = MeshCoords(dst_mesh, d);
    bool zero_filled = false;
    for (int32_t m : dst.partial) zero_filled = zero_filled || dc[static_cast<size_t>(m)] != 0;
    if (zero_filled) continue;
    const int64_t dst_id = dst_devices[static_cast<size_t>(d)];
    const TensorTile tile = TileOfDevice(dst, shape, dst_mesh, d);
    // The source shards overlapping the tile, per dim (tiles are non-empty here).
    for (size_t i = 0; i < rank; ++i) {
      lo[i] = tile.offsets[i] / src_size[i];
      hi[i] = (tile.offsets[i] + tile.sizes[i] - 1) / src_size[i];
      k[i] = lo[i];
    }
    while (true) {
      SliceMove move;
      move.dst_device = dst_id;
      move.offsets.resize(rank);
      move.sizes.resize(rank);
      int64_t p = 0, elements = 1;
      for (size_t i = 0; i < rank; ++i) {
        const int64_t begin = std::max(tile.offsets[i], k[i] * src_size[i]);
        const int64_t end = std::min(tile.offsets[i] + tile.sizes[i], (k[i] + 1) * src_size[i]);
        move.offsets[i] = begin;
        move.sizes[i] = end - begin;
        elements *= end - begin;
        p += k[i] * piece_stride[i];
      }
      move.bytes = elements * element_bytes;  // <= the tensor's bytes
      const std::vector<int64_t>& h = holders[static_cast<size_t>(p)];
      int64_t chosen = -1;
      for (int64_t l : h) {
        if (src_devices[static_cast<size_t>(l)] == dst_id) chosen = l;
      }
      if (chosen < 0) {
        for (int64_t l : h) {
          const size_t a = static_cast<size_t>(l);
          if (chosen < 0 || sent[a] < sent[static_cast<size_t>(chosen)] ||
              (sent[a] == sent[static_cast<size_t>(chosen)] &&
               src_devices[a] < src_devices[static_cast<size_t>(chosen)])) {
            chosen = l;
          }
        }
        sent[static_cast<size_t>(chosen)] += move.bytes;
      }
      move.src_device = src_devices[static_cast<size_t>(chosen)];
      moves.push_back(std::move(move));
      // Next source piece, last dim fastest.
      size_t i = rank;
      while (i > 0 && k[i - 1] == hi[i - 1]) {
        k[i - 1] = lo[i - 1];
        --i;
      }
      if (i == 0) break;
      ++k[i - 1];
    }
  }
  return moves;
}

std::optional<LocalAllGather> PlanLocalAllGather(const ShardingSpec& dst,
                                                 const std::vector<int64_t>& shape,
                                                 const std::vector<int64_t>& dst_mesh) {
  if (dst.rank() != shape.size()) return std::nullopt;
  std::vector<bool> used(dst_mesh.size(), false);
  for (const std::vector<int32_t>& ms : dst.dims) {
    for (int32_t m : ms) used[static_cast<size_t>(m)] = true;
  }
  for (int32_t m : dst.partial) used[static_cast<size_t>(m)] = true;
  LocalAllGather out;
  int64_t replicas = 1;
  for (size_t m = 0; m < dst_mesh.size(); ++m) {
    if (used[m] || dst_mesh[m] <= 1) continue;
    out.mesh_dims.push_back(static_cast<int32_t>(m));
    replicas *= dst_mesh[m];
  }
  if (out.mesh_dims.empty()) return std::nullopt;
  int64_t best_tile = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t tile = shape[i] / TensorDimShards(dst, i, dst_mesh);
    if (tile % replicas == 0 && tile > best_tile) {
      best_tile = tile;
      out.tensor_dim = static_cast<int32_t>(i);
    }
  }
  if (out.tensor_dim < 0) return std::nullopt;
  out.landing = dst;
  std::vector<int32_t>& split = out.landing.dims[static_cast<size_t>(out.tensor_dim)];
  split.insert(split.end(), out.mesh_dims.begin(), out.mesh_dims.end());
  return out;
}

Result<std::vector<int32_t>> LandingGatherDims(const ShardingSpec& landing,
                                               const ShardingSpec& dst) {
  if (landing.rank() != dst.rank()) {
    return InvalidArgument("landing spec " + ToString(landing) + " has rank " +
                           std::to_string(landing.rank()) + ", the destination spec " +
                           ToString(dst) + " " + std::to_string(dst.rank()));
  }
  if (landing.partial != dst.partial) {
    return InvalidArgument("landing spec " + ToString(landing) +
                           " sums over other mesh dims than the destination spec " + ToString(dst));
  }
  std::vector<int32_t> gather;
  for (size_t i = 0; i < dst.rank(); ++i) {
    const std::vector<int32_t>& a = landing.dims[i];
    const std::vector<int32_t>& b = dst.dims[i];
    if (a.size() < b.size() || !std::equal(b.begin(), b.end(), a.begin())) {
      return InvalidArgument("landing spec " + ToString(landing) + " does not extend tensor dim " +
                             std::to_string(i) + " of the destination spec " + ToString(dst));
    }
    gather.insert(gather.end(), a.begin() + static_cast<std::ptrdiff_t>(b.size()), a.end());
  }
  for (int32_t m : gather) {
    const bool in_dst = std::any_of(dst.dims.begin(), dst.dims.end(), [m](const auto& ms) {
      return std::find(ms.begin(), ms.end(), m) != ms.end();
    });
    if (in_dst || std::find(dst.partial.begin(), dst.partial.end(), m) != dst.partial.end()) {
      return InvalidArgument("landing spec " + ToString(landing) + " splits over mesh dim " +
                             std::to_string(m) + ", which the destination spec " + ToString(dst) +
                             " already uses");
    }
  }
  if (gather.empty()) {
    return InvalidArgument("landing spec " + ToString(landing) +
                           " equals the destination spec: no all-gather to run");
  }
  std::sort(gather.begin(), gather.end());
  return gather;
}

}  // namespace alpa
