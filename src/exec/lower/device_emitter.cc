#include "exec/lower/device_emitter.h"

#include <algorithm>
#include <utility>

#include "core/cluster/cross_mesh.h"

namespace alpa {
namespace {

bool Contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

int64_t ElementsOf(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Where `want` puts mesh dim m: {tensor dim, position in its list}, or {-1, -1}.
std::pair<int32_t, int32_t> FindInSpec(const ShardingSpec& want, int32_t m) {
  for (size_t d = 0; d < want.dims.size(); ++d) {
    for (size_t i = 0; i < want.dims[d].size(); ++i) {
      if (want.dims[d][i] == m) return {static_cast<int32_t>(d), static_cast<int32_t>(i)};
    }
  }
  return {-1, -1};
}

bool IsPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

ShardingSpec CanonicalSpec(const ShardingSpec& spec, const std::vector<int64_t>& mesh) {
  ShardingSpec out;
  out.dims.resize(spec.dims.size());
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    for (int32_t m : spec.dims[d]) {
      if (mesh[static_cast<size_t>(m)] > 1) out.dims[d].push_back(m);
    }
  }
  for (int32_t m : spec.partial) {
    if (mesh[static_cast<size_t>(m)] > 1) out.partial.push_back(m);
  }
  return out;
}

DeviceEmitter::DeviceEmitter(DeviceProgram& program, const MeshView& mesh, int64_t logical_index,
                             int32_t stage)
    : program_(program), mesh_(mesh), logical_(logical_index), stage_(stage) {
  coords_.assign(mesh.shape.size(), 0);
  int64_t rest = logical_index;
  for (size_t k = mesh.shape.size(); k-- > 0;) {
    coords_[k] = rest % mesh.shape[k];
    rest /= mesh.shape[k];
  }
}

int32_t DeviceEmitter::NewBuffer(const std::string& name, const Dims& shape, DType dtype,
                                 int32_t tensor, bool persistent) {
  Buffer b;
  b.name = name;
  b.shape = shape;
  b.dtype = dtype;
  b.tensor = tensor;
  b.persistent = persistent;
  program_.buffers.push_back(std::move(b));
  return static_cast<int32_t>(program_.buffers.size() - 1);
}

void DeviceEmitter::Emit(Instruction in, const EmitTag& tag) {
  in.stage = stage_;
  if (in.tensor < 0) in.tensor = tag.tensor;
  if (in.microbatch < 0) in.microbatch = tag.microbatch;
  in.origin = tag.origin;
  if (in.collective < 0) in.collective = tag.collective;
  switch (in.kind) {
    case InstructionKind::kAllReduce:
    case InstructionKind::kAllGather:
    case InstructionKind::kReduceScatter:
    case InstructionKind::kAllToAll: {
      const Buffer& b = program_.buffers[static_cast<size_t>(in.in[0])];
      in.bytes = ElementsOf(b.shape) * DTypeBytes(b.dtype);
      break;
    }
    case InstructionKind::kSend:
    case InstructionKind::kRecv: {
      const Buffer& b =
          program_
              .buffers[static_cast<size_t>(in.kind == InstructionKind::kSend ? in.in[0] : in.out)];
      in.bytes = ElementsOf(in.sizes) * DTypeBytes(b.dtype);
      break;
    }
    default:
      break;
  }
  program_.code.push_back(std::move(in));
}

Result<Dims> DeviceEmitter::LocalShape(const ShardingSpec& spec, const Dims& shape) const {
  return ShardShape(spec, shape, mesh_.shape);
}

void DeviceEmitter::TileBox(const ShardingSpec& spec, const Dims& shape,
                            std::vector<int64_t>& offsets, std::vector<int64_t>& sizes) const {
  TensorTile tile = TileOfDevice(spec, shape, mesh_.shape, logical_);
  offsets = std::move(tile.offsets);
  sizes = std::move(tile.sizes);
}

std::vector<int32_t> DeviceEmitter::GroupOver(const std::vector<int32_t>& mesh_dims) const {
  int64_t count = 1;
  for (int32_t m : mesh_dims) count *= mesh_.shape[static_cast<size_t>(m)];
  std::vector<int32_t> group;
  group.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> c = coords_;
    int64_t rest = i;
    for (size_t j = mesh_dims.size(); j-- > 0;) {
      const size_t m = static_cast<size_t>(mesh_dims[j]);
      c[m] = rest % mesh_.shape[m];
      rest /= mesh_.shape[m];
    }
    int64_t logical = 0;
    for (size_t k = 0; k < c.size(); ++k) logical = logical * mesh_.shape[k] + c[k];
    group.push_back(static_cast<int32_t>(mesh_.devices[static_cast<size_t>(logical)]));
  }
  return group;
}

Result<Value> DeviceEmitter::ApplyCollective(const Value& value, const Dims& shape, DType dtype,
                                             CollectiveKind kind, std::vector<int32_t> mesh_dims,
                                             const ShardingSpec& want, CollectiveReduce reduce,
                                             const EmitTag& tag, const std::string& name) {
  mesh_dims.erase(
      std::remove_if(mesh_dims.begin(), mesh_dims.end(),
                     [&](int32_t m) { return mesh_.shape[static_cast<size_t>(m)] <= 1; }),
      mesh_dims.end());
  if (mesh_dims.empty()) return value;
  const ShardingSpec canonical_want = CanonicalSpec(want, mesh_.shape);
  // Slices toward `want` are free and shrink what the collective moves, so they come first
  // where the mesh dim is not in use (the cheapest resharding plan does the same).
  ShardingSpec early = value.spec;
  for (size_t d = 0; d < early.dims.size() && d < canonical_want.dims.size(); ++d) {
    const std::vector<int32_t>& wanted = canonical_want.dims[d];
    while (early.dims[d].size() < wanted.size() && IsPrefix(early.dims[d], wanted)) {
      const int32_t k = wanted[early.dims[d].size()];
      bool used = Contains(early.partial, k) || Contains(mesh_dims, k);
      for (const std::vector<int32_t>& list : early.dims) used = used || Contains(list, k);
      if (used) break;
      early.dims[d].push_back(k);
    }
  }
  if (early != value.spec) {
    Result<Value> sliced = LocalTo(value, shape, dtype, early, tag, name);
    if (!sliced.ok()) return sliced.status();
    return ApplyCollective(sliced.value(), shape, dtype, kind, mesh_dims, want, reduce, tag, name);
  }
  switch (kind) {
    case CollectiveKind::kAllReduce: {
      Value out;
      out.spec = value.spec;
      for (int32_t m : mesh_dims) {
        if (Contains(out.spec.partial, m)) {
          out.spec.partial.erase(std::find(out.spec.partial.begin(), out.spec.partial.end(), m));
        } else if (reduce != CollectiveReduce::kMax) {
          return InternalError(name + ": all-reduce over mesh dim " + std::to_string(m) +
                               " of a value that is not a partial sum there (" +
                               ToString(value.spec) + ")");
        }
      }
      const Buffer& src = program_.buffers[static_cast<size_t>(value.buffer)];
      out.buffer = NewBuffer(name, src.shape, dtype, src.tensor, false);
      Instruction in;
      in.kind = InstructionKind::kAllReduce;
      in.in = {value.buffer};
      in.out = out.buffer;
      in.group = GroupOver(mesh_dims);
      in.reduce = reduce;
      in.round = out.spec.partial.empty() && !tag.exact;
      Emit(std::move(in), tag);
      return out;
    }
    case CollectiveKind::kAllGather:
      return AllGather(value, shape, dtype, mesh_dims, tag, name);
    case CollectiveKind::kReduceScatter:
      return ReduceScatter(value, shape, dtype, mesh_dims, canonical_want, reduce, tag, name);
    case CollectiveKind::kAllToAll:
      return AllToAll(value, shape, dtype, mesh_dims, canonical_want, tag, name);
    case CollectiveKind::kSendRecv:
      break;
  }
  return InternalError(name + ": a send/recv is not a mesh collective");
}

Result<Value> DeviceEmitter::AllGather(const Value& value, const Dims& shape, DType dtype,
                                       const std::vector<int32_t>& mesh_dims, const EmitTag& tag,
                                       const std::string& name) {
  // Remove the mesh dims from the minor ends of the tensor dims holding them (any order), then
  // gather each tensor dim over its removed mesh dims at once (major first).
  ShardingSpec spec = value.spec;
  std::vector<int32_t> todo = mesh_dims;
  std::vector<std::pair<int32_t, std::vector<int32_t>>> per_dim;  // tensor dim, mesh dims
  while (!todo.empty()) {
    bool progress = false;
    for (size_t i = 0; i < todo.size() && !progress; ++i) {
      for (size_t d = 0; d < spec.dims.size(); ++d) {
        if (spec.dims[d].empty() || spec.dims[d].back() != todo[i]) continue;
        spec.dims[d].pop_back();
        auto it = std::find_if(per_dim.begin(), per_dim.end(),
                               [&](const auto& p) { return p.first == static_cast<int32_t>(d); });
        if (it == per_dim.end()) {
          per_dim.push_back({static_cast<int32_t>(d), {}});
          it = per_dim.end() - 1;
        }
        it->second.insert(it->second.begin(), todo[i]);
        todo.erase(todo.begin() + static_cast<std::ptrdiff_t>(i));
        progress = true;
        break;
      }
    }
    if (!progress) {
      return InternalError(name + ": all-gather over mesh dim " + std::to_string(todo[0]) +
                           ", but no tensor dim of " + ToString(value.spec) +
                           " is split over it at its minor end");
    }
  }
  Value cur = value;
  for (const auto& [d, ms] : per_dim) {
    ShardingSpec next = cur.spec;
    for (size_t k = 0; k < ms.size(); ++k) next.dims[static_cast<size_t>(d)].pop_back();
    Result<Dims> local = LocalShape(next, shape);
    if (!local.ok()) return local.status();
    const int32_t src_tensor = program_.buffers[static_cast<size_t>(cur.buffer)].tensor;
    Value out{NewBuffer(name, local.value(), dtype, src_tensor, false), next};
    Instruction in;
    in.kind = InstructionKind::kAllGather;
    in.in = {cur.buffer};
    in.out = out.buffer;
    in.group = GroupOver(ms);
    in.dim = d;
    Emit(std::move(in), tag);
    cur = out;
  }
  return cur;
}

Result<Value> DeviceEmitter::ReduceScatter(const Value& value, const Dims& shape, DType dtype,
                                           const std::vector<int32_t>& mesh_dims,
                                           const ShardingSpec& want, CollectiveReduce reduce,
                                           const EmitTag& tag, const std::string& name) {
  for (int32_t m : mesh_dims) {
    if (!Contains(value.spec.partial, m)) {
      return InternalError(name + ": reduce-scatter over mesh dim " + std::to_string(m) +
                           " of a value that is not a partial sum there (" + ToString(value.spec) +
                           ")");
    }
  }
  // Group the mesh dims by the tensor dim `want` puts them on, in wanted order.
  std::vector<int32_t> ms = mesh_dims;
  std::stable_sort(ms.begin(), ms.end(), [&](int32_t a, int32_t b) {
    auto pa = FindInSpec(want, a), pb = FindInSpec(want, b);
    return pa < pb;
  });
  Value cur = value;
  size_t i = 0;
  while (i < ms.size()) {
    const auto [d, pos] = FindInSpec(want, ms[i]);
    if (d < 0) {
      return InternalError(name + ": reduce-scatter over mesh dim " + std::to_string(ms[i]) +
                           ", which " + ToString(want) + " splits no tensor dim over");
    }
    std::vector<int32_t> group_dims = {ms[i]};
    size_t j = i + 1;
    while (j < ms.size() && FindInSpec(want, ms[j]) ==
                                std::make_pair(d, pos + static_cast<int32_t>(group_dims.size()))) {
      group_dims.push_back(ms[j]);
      ++j;
    }
    const std::vector<int32_t>& wanted = want.dims[static_cast<size_t>(d)];
    // Mesh dims `want` lists before these on the tensor dim: sliced locally first.
    ShardingSpec sliced = cur.spec;
    std::vector<int32_t>& list = sliced.dims[static_cast<size_t>(d)];
    if (!IsPrefix(list, wanted) || list.size() > static_cast<size_t>(pos)) {
      return InternalError(name + ": tensor dim " + std::to_string(d) + " of " +
                           ToString(cur.spec) + " cannot take the reduce-scatter's mesh dims " +
                           "where " + ToString(want) + " has them");
    }
    for (size_t k = list.size(); k < static_cast<size_t>(pos); ++k) list.push_back(wanted[k]);
    if (sliced != cur.spec) {
      Result<Value> s = LocalTo(cur, shape, dtype, sliced, tag, name);
      if (!s.ok()) return s.status();
      cur = s.value();
    }
    ShardingSpec next = cur.spec;
    for (int32_t m : group_dims) {
      next.partial.erase(std::find(next.partial.begin(), next.partial.end(), m));
      next.dims[static_cast<size_t>(d)].push_back(m);
    }
    Result<Dims> local = LocalShape(next, shape);
    if (!local.ok()) return local.status();
    const int32_t src_tensor = program_.buffers[static_cast<size_t>(cur.buffer)].tensor;
    Value out{NewBuffer(name, local.value(), dtype, src_tensor, false), next};
    Instruction in;
    in.kind = InstructionKind::kReduceScatter;
    in.in = {cur.buffer};
    in.out = out.buffer;
    in.group = GroupOver(group_dims);
    in.dim = d;
    in.reduce = reduce;
    in.round = next.partial.empty() && !tag.exact;
    Emit(std::move(in), tag);
    cur = out;
    i = j;
  }
  return cur;
}

Result<Value> DeviceEmitter::AllToAll(const Value& value, const Dims& shape, DType dtype,
                                      const std::vector<int32_t>& mesh_dims,
                                      const ShardingSpec& want, const EmitTag& tag,
                                      const std::string& name) {
  Value cur = value;
  for (int32_t m : mesh_dims) {
    int32_t from = -1;
    for (size_t d = 0; d < cur.spec.dims.size(); ++d) {
      if (!cur.spec.dims[d].empty() && cur.spec.dims[d].back() == m) from = static_cast<int32_t>(d);
    }
    const auto [to, pos] = FindInSpec(want, m);
    if (from < 0 || to < 0 || to == from) {
      return InternalError(name + ": all-to-all over mesh dim " + std::to_string(m) + " from " +
                           ToString(cur.spec) + " towards " + ToString(want) +
                           " has no source or destination tensor dim");
    }
    ShardingSpec next = cur.spec;
    next.dims[static_cast<size_t>(from)].pop_back();
    std::vector<int32_t>& list = next.dims[static_cast<size_t>(to)];
    if (list.size() != static_cast<size_t>(pos) ||
        !IsPrefix(list, want.dims[static_cast<size_t>(to)])) {
      return InternalError(name + ": all-to-all over mesh dim " + std::to_string(m) +
                           " cannot append it to tensor dim " + std::to_string(to) + " of " +
                           ToString(cur.spec) + " where " + ToString(want) + " has it");
    }
    list.push_back(m);
    Result<Dims> local = LocalShape(next, shape);
    if (!local.ok()) return local.status();
    const int32_t src_tensor = program_.buffers[static_cast<size_t>(cur.buffer)].tensor;
    Value out{NewBuffer(name, local.value(), dtype, src_tensor, false), next};
    Instruction in;
    in.kind = InstructionKind::kAllToAll;
    in.in = {cur.buffer};
    in.out = out.buffer;
    in.group = GroupOver({m});
    in.dim = from;
    in.split_dim = to;
    Emit(std::move(in), tag);
    cur = out;
  }
  return cur;
}

Result<Value> DeviceEmitter::LocalTo(const Value& value, const Dims& shape, DType dtype,
                                     const ShardingSpec& want_spec, const EmitTag& tag,
                                     const std::string& name) {
  const ShardingSpec want = CanonicalSpec(want_spec, mesh_.shape);
  const ShardingSpec& have = value.spec;
  if (have == want) return value;
  if (have.rank() != want.rank()) {
    return InternalError(name + ": layout " + ToString(have) + " and " + ToString(want) +
                         " have different ranks");
  }
  bool slice = false;
  for (size_t d = 0; d < have.dims.size(); ++d) {
    if (!IsPrefix(have.dims[d], want.dims[d])) {
      return InternalError(name + ": " + ToString(have) + " -> " + ToString(want) +
                           " needs more than local slices on tensor dim " + std::to_string(d));
    }
    slice = slice || have.dims[d].size() < want.dims[d].size();
  }
  std::vector<int32_t> zero_dims;
  for (int32_t m : want.partial) {
    if (!Contains(have.partial, m)) zero_dims.push_back(m);
  }
  for (int32_t m : have.partial) {
    if (!Contains(want.partial, m)) {
      return InternalError(name + ": " + ToString(have) + " -> " + ToString(want) +
                           " drops a partial sum over mesh dim " + std::to_string(m) +
                           " without a collective");
    }
  }
  Value cur = value;
  const int32_t src_tensor = program_.buffers[static_cast<size_t>(value.buffer)].tensor;
  if (slice) {
    ShardingSpec sliced = want;
    sliced.partial = have.partial;
    std::vector<int64_t> have_off, have_size, want_off, want_size;
    TileBox(have, shape, have_off, have_size);
    TileBox(sliced, shape, want_off, want_size);
    Instruction in;
    in.kind = InstructionKind::kSlice;
    in.in = {cur.buffer};
    in.sizes = want_size;
    for (size_t d = 0; d < want_off.size(); ++d) in.offsets.push_back(want_off[d] - have_off[d]);
    cur = Value{NewBuffer(name, want_size, dtype, src_tensor, false), sliced};
    in.out = cur.buffer;
    Emit(std::move(in), tag);
  }
  if (!zero_dims.empty()) {
    bool keep = true;
    for (int32_t m : zero_dims) keep = keep && coord(m) == 0;
    if (!keep) {
      const Dims local = program_.buffers[static_cast<size_t>(cur.buffer)].shape;
      Instruction in;
      in.kind = InstructionKind::kZero;
      in.out = NewBuffer(name, local, dtype, src_tensor, false);
      Emit(in, tag);
      cur.buffer = in.out;
    }
    cur.spec.partial = want.partial;
  }
  cur.spec = want;
  return cur;
}

}  // namespace alpa
