// Sharding specs: validation, shard shapes, text notation and GSPMD / Shardy export.
#include "core/cluster/sharding_spec.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/cluster/logical_mesh.h"

namespace alpa {
namespace {

std::string JoinInts(const std::vector<int32_t>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += sep;
    out += std::to_string(v[i]);
  }
  return out;
}

std::string DimToken(const std::vector<int32_t>& mesh_dims) {
  if (mesh_dims.empty()) return "R";
  return "S" + JoinInts(mesh_dims, "");
}

// Mesh dims used nowhere in `spec`, increasing.
std::vector<int32_t> ReplicatedMeshDims(const ShardingSpec& spec, size_t mesh_ndim) {
  std::vector<bool> used(mesh_ndim, false);
  for (const auto& d : spec.dims) {
    for (int32_t k : d) used[static_cast<size_t>(k)] = true;
  }
  for (int32_t k : spec.partial) used[static_cast<size_t>(k)] = true;
  std::vector<int32_t> out;
  for (size_t k = 0; k < mesh_ndim; ++k) {
    if (!used[k]) out.push_back(static_cast<int32_t>(k));
  }
  return out;
}

int64_t MeshProduct(const std::vector<int32_t>& mesh_dims, const std::vector<int64_t>& mesh_shape) {
  int64_t p = 1;
  for (int32_t k : mesh_dims) p *= mesh_shape[static_cast<size_t>(k)];
  return p;
}

Status CheckMeshShape(const std::vector<int64_t>& mesh_shape) {
  if (mesh_shape.empty()) return InvalidArgument("sharding spec: the mesh has no dimensions");
  for (size_t k = 0; k < mesh_shape.size(); ++k) {
    if (mesh_shape[k] < 1) {
      return InvalidArgument("sharding spec: mesh dim " + std::to_string(k) + " has size " +
                             std::to_string(mesh_shape[k]) + " (must be >= 1)");
    }
  }
  return Status::Ok();
}

}  // namespace

ShardingSpec ShardingSpec::Replicated(size_t rank) {
  ShardingSpec s;
  s.dims.assign(rank, {});
  return s;
}

bool ShardingSpec::IsReplicated() const {
  if (!partial.empty()) return false;
  for (const auto& d : dims) {
    if (!d.empty()) return false;
  }
  return true;
}

bool ShardingSpec::operator<(const ShardingSpec& o) const {
  if (dims != o.dims) return dims < o.dims;
  return partial < o.partial;
}

Status ValidateShardingSpecForMesh(const ShardingSpec& spec, int32_t mesh_ndim) {
  // seen[k]: where mesh dim k was first used (kUnseen, kSeenPartial or the tensor dim); the
  // texts are written only for an error.
  constexpr int64_t kUnseen = -2, kSeenPartial = -1;
  std::vector<int64_t> seen(static_cast<size_t>(std::max(mesh_ndim, 0)), kUnseen);
  auto place = [](int64_t where) {
    return where == kSeenPartial ? std::string("partial") : "tensor dim " + std::to_string(where);
  };
  auto use = [&](int32_t k, int64_t where) -> Status {
    if (k < 0 || k >= mesh_ndim) {
      return InvalidArgument("sharding spec '" + ToString(spec) + "': " + place(where) +
                             " uses mesh dim " + std::to_string(k) + ", out of range for a " +
                             std::to_string(mesh_ndim) + "-D mesh");
    }
    int64_t& first = seen[static_cast<size_t>(k)];
    if (first != kUnseen) {
      return InvalidArgument("sharding spec '" + ToString(spec) + "': mesh dim " +
                             std::to_string(k) + " is used twice (" + place(first) + " and " +
                             place(where) + ")");
    }
    first = where;
    return Status::Ok();
  };
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    for (int32_t k : spec.dims[i]) ALPA_RETURN_IF_ERROR(use(k, static_cast<int64_t>(i)));
  }
  for (size_t j = 0; j < spec.partial.size(); ++j) {
    if (j > 0 && spec.partial[j] < spec.partial[j - 1]) {
      return InvalidArgument("sharding spec '" + ToString(spec) +
                             "': partial mesh dims must be listed in increasing order");
    }
    ALPA_RETURN_IF_ERROR(use(spec.partial[j], kSeenPartial));
  }
  return Status::Ok();
}

Status ValidateShardingSpec(const ShardingSpec& spec, const std::vector<int64_t>& tensor_shape,
                            const std::vector<int64_t>& mesh_shape) {
  ALPA_RETURN_IF_ERROR(CheckMeshShape(mesh_shape));
  if (spec.rank() != tensor_shape.size()) {
    return InvalidArgument("sharding spec '" + ToString(spec) + "' has " +
                           std::to_string(spec.rank()) + " tensor dims but the tensor has rank " +
                           std::to_string(tensor_shape.size()));
  }
  ALPA_RETURN_IF_ERROR(ValidateShardingSpecForMesh(spec, static_cast<int32_t>(mesh_shape.size())));
  for (size_t i = 0; i < tensor_shape.size(); ++i) {
    if (tensor_shape[i] < 0) {
      return InvalidArgument("sharding spec '" + ToString(spec) + "': tensor dim " +
                             std::to_string(i) + " has negative size " +
                             std::to_string(tensor_shape[i]));
    }
    const int64_t shards = MeshProduct(spec.dims[i], mesh_shape);
    if (tensor_shape[i] % shards != 0) {
      return InvalidArgument("sharding spec '" + ToString(spec) + "': tensor dim " +
                             std::to_string(i) + " (size " + std::to_string(tensor_shape[i]) +
                             ") is not divisible by its " + std::to_string(shards) +
                             " shards (mesh dims " + JoinInts(spec.dims[i], ",") + " of mesh " +
                             MeshShapeString(mesh_shape) + "); uneven splits are not allowed");
    }
  }
  return Status::Ok();
}

Result<std::vector<int64_t>> ShardShape(const ShardingSpec& spec,
                                        const std::vector<int64_t>& tensor_shape,
                                        const std::vector<int64_t>& mesh_shape) {
  ALPA_RETURN_IF_ERROR(ValidateShardingSpec(spec, tensor_shape, mesh_shape));
  std::vector<int64_t> out(tensor_shape.size());
  for (size_t i = 0; i < tensor_shape.size(); ++i) {
    out[i] = tensor_shape[i] / MeshProduct(spec.dims[i], mesh_shape);
  }
  return out;
}

int64_t TensorDimShards(const ShardingSpec& spec, size_t tensor_dim,
                        const std::vector<int64_t>& mesh_shape) {
  return MeshProduct(spec.dims[tensor_dim], mesh_shape);
}

int64_t ShardCount(const ShardingSpec& spec, const std::vector<int64_t>& mesh_shape) {
  int64_t p = 1;
  for (const auto& d : spec.dims) p *= MeshProduct(d, mesh_shape);
  return p;
}

int64_t ReplicationFactor(const ShardingSpec& spec, const std::vector<int64_t>& mesh_shape) {
  return MeshProduct(ReplicatedMeshDims(spec, mesh_shape.size()), mesh_shape);
}

int64_t PartialCount(const ShardingSpec& spec, const std::vector<int64_t>& mesh_shape) {
  return MeshProduct(spec.partial, mesh_shape);
}

std::string ToString(const ShardingSpec& spec) {
  std::string out;
  if (spec.dims.empty()) out = "scalar";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    if (i > 0) out += ' ';
    out += DimToken(spec.dims[i]);
  }
  if (!spec.partial.empty()) out += " partial(" + JoinInts(spec.partial, ",") + ")";
  return out;
}

Result<ShardingSpec> ParseShardingSpec(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) tokens.push_back(t);
  auto bad = [&](const std::string& token, const std::string& why) {
    return ParseError("sharding spec '" + std::string(text) + "': token '" + token + "' " + why);
  };
  if (tokens.empty()) return ParseError("sharding spec: empty text (a rank-0 tensor is 'scalar')");
  ShardingSpec spec;
  bool scalar = false, seen_partial = false;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& tok = tokens[t];
    if (seen_partial) return bad(tok, "follows partial(...), which must come last");
    if (tok == "scalar") {
      if (t != 0) return bad(tok, "must be the only tensor-dim token");
      scalar = true;
    } else if (tok == "R") {
      if (scalar) return bad(tok, "follows 'scalar'");
      spec.dims.emplace_back();
    } else if (tok[0] == 'S') {
      if (scalar) return bad(tok, "follows 'scalar'");
      if (tok.size() == 1) return bad(tok, "names no mesh dim (expected e.g. S0 or S01)");
      std::vector<int32_t> d;
      for (size_t c = 1; c < tok.size(); ++c) {
        if (!std::isdigit(static_cast<unsigned char>(tok[c]))) {
          return bad(tok, "has a non-digit mesh dim");
        }
        d.push_back(tok[c] - '0');
      }
      spec.dims.push_back(std::move(d));
    } else if (tok.rfind("partial(", 0) == 0) {
      if (tok.back() != ')' || tok.size() < 10) {
        return bad(tok, "is not of the form partial(0,1)");
      }
      std::string body = tok.substr(8, tok.size() - 9);
      std::istringstream parts(body);
      for (std::string p; std::getline(parts, p, ',');) {
        if (p.size() != 1 || !std::isdigit(static_cast<unsigned char>(p[0]))) {
          return bad(tok, "has a mesh dim that is not one digit");
        }
        spec.partial.push_back(p[0] - '0');
      }
      if (spec.partial.empty() || body.back() == ',') return bad(tok, "has an empty mesh dim");
      seen_partial = true;
    } else {
      return bad(tok, "is not R, S<mesh dims>, scalar or partial(...)");
    }
  }
  if (!scalar && spec.dims.empty()) {
    return ParseError("sharding spec '" + std::string(text) + "': no tensor dims (use 'scalar')");
  }
  Status s = ValidateShardingSpecForMesh(spec, 10);
  if (!s.ok()) return ParseError(s.message());
  return spec;
}

Result<std::string> ToGspmdString(const ShardingSpec& spec,
                                  const std::vector<int64_t>& mesh_shape) {
  ALPA_RETURN_IF_ERROR(CheckMeshShape(mesh_shape));
  ALPA_RETURN_IF_ERROR(ValidateShardingSpecForMesh(spec, static_cast<int32_t>(mesh_shape.size())));
  if (!spec.partial.empty()) {
    return Status(StatusCode::kUnsupported, "sharding spec '" + ToString(spec) +
                                                "': GSPMD shardings cannot express partial sums");
  }
  if (ShardCount(spec, mesh_shape) == 1) return std::string("{replicated}");
  // Tile array: one axis per tensor dim (its mesh dims, major to minor), then the replicated
  // mesh dims as a trailing axis when they hold more than one device.
  std::vector<std::vector<int32_t>> axes = spec.dims;
  const std::vector<int32_t> rep = ReplicatedMeshDims(spec, mesh_shape.size());
  const bool replicate = MeshProduct(rep, mesh_shape) > 1;
  if (replicate) axes.push_back(rep);
  std::vector<int32_t> order;  // mesh dims in tile-array row-major order (major first)
  for (const auto& a : axes) order.insert(order.end(), a.begin(), a.end());
  // Mesh strides for row-major device ids; the tile array is a permutation of the mesh dims
  // (unused size-1 dims contribute nothing), so walk `order` as a mixed-radix counter.
  std::vector<int64_t> stride(mesh_shape.size(), 1);
  for (size_t k = mesh_shape.size(); k-- > 1;) stride[k - 1] = stride[k] * mesh_shape[k];
  std::vector<int64_t> coord(order.size(), 0);
  int64_t total = 1;
  for (int32_t k : order) total *= mesh_shape[static_cast<size_t>(k)];
  std::string out = "{devices=[";
  for (size_t a = 0; a < axes.size(); ++a) {
    if (a > 0) out += ',';
    out += std::to_string(MeshProduct(axes[a], mesh_shape));
  }
  out += ']';
  for (int64_t t = 0; t < total; ++t) {
    int64_t id = 0;
    for (size_t p = 0; p < order.size(); ++p) {
      id += coord[p] * stride[static_cast<size_t>(order[p])];
    }
    if (t > 0) out += ',';
    out += std::to_string(id);
    for (size_t p = order.size(); p-- > 0;) {  // increment, minor-most first
      if (++coord[p] < mesh_shape[static_cast<size_t>(order[p])]) break;
      coord[p] = 0;
    }
  }
  if (replicate) out += " last_tile_dim_replicate";
  out += '}';
  return out;
}

Result<std::string> ToShardyString(const ShardingSpec& spec, const std::vector<int64_t>& mesh_shape,
                                   const std::vector<std::string>& axis_names,
                                   const std::string& mesh_name) {
  ALPA_RETURN_IF_ERROR(CheckMeshShape(mesh_shape));
  ALPA_RETURN_IF_ERROR(ValidateShardingSpecForMesh(spec, static_cast<int32_t>(mesh_shape.size())));
  std::vector<std::string> names = axis_names;
  if (names.empty()) {
    for (size_t k = 0; k < mesh_shape.size(); ++k) {
      names.push_back(k < 3 ? std::string(1, static_cast<char>('x' + k)) : "a" + std::to_string(k));
    }
  }
  if (names.size() != mesh_shape.size()) {
    return InvalidArgument("Shardy export: " + std::to_string(names.size()) +
                           " axis names for a mesh of " + std::to_string(mesh_shape.size()) +
                           " dims");
  }
  auto axis_list = [&](const std::vector<int32_t>& mesh_dims) {
    std::string s = "{";
    for (size_t j = 0; j < mesh_dims.size(); ++j) {
      if (j > 0) s += ", ";
      s += '"' + names[static_cast<size_t>(mesh_dims[j])] + '"';
    }
    return s + "}";
  };
  std::string out = "#sdy.sharding<@" + mesh_name + ", [";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += axis_list(spec.dims[i]);
  }
  out += "]";
  if (!spec.partial.empty()) out += ", unreduced=" + axis_list(spec.partial);
  return out + ">";
}

}  // namespace alpa
