// SingleReaderMaterializedResults (fusion.h): libalpa's CUDA runner's fusion
// (exec/cuda/fusion_plan.cc) replayed on a graph, in op order, as the lowering emits a piece's ops:
// the role of each op, which values stay in registers (each elementwise value's group from its
// readers', in reverse op order), the group of each root, and the groups
// the runner drops because they would keep their inputs alive longer than the buffers they save.
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/ir/float_path.h"
#include "core/ir/fusion.h"
#include "core/util/dtype.h"

namespace alpa {
namespace {

// What the runner does with an op.
enum class KernelRole { kAlone, kLeaf, kElementwise, kRowReduction };

// The elementwise kinds the runner computes in float: exactly, or within one bf16 ulp when the
// result is bf16.
bool OnFloatPath(OpKind kind, DType result) {
  return FloatPathKind(kind) || (ApproximateFloatKind(kind) && result == DType::kBF16);
}

bool OperandsOnFloatPath(const Graph& graph, const Op& op) {
  for (int32_t x : op.operands) {
    if (x < 0 || x >= graph.size() || !FloatPathStorage(graph.op(x).dtype)) return false;
  }
  return FloatPathStorage(op.dtype);
}

bool ReducesRows(const Graph& graph, const Op& op) {
  if (op.operands.size() != 1) return false;
  const int32_t x = op.operands[0];
  return x >= 0 && x < graph.size() && FusesRowReduction(graph.op(x).shape, op.attrs.dims);
}

KernelRole RoleOf(const Graph& graph, const Op& op) {
  switch (op.kind) {
    case OpKind::kConstant:
      return FloatPathStorage(op.dtype) ? KernelRole::kLeaf : KernelRole::kAlone;
    case OpKind::kBroadcastInDim:
      return op.operands.size() == 1 && op.shape.size() <= 8 && OperandsOnFloatPath(graph, op)
                 ? KernelRole::kLeaf
                 : KernelRole::kAlone;
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      return OperandsOnFloatPath(graph, op) && ReducesRows(graph, op) ? KernelRole::kRowReduction
                                                                      : KernelRole::kAlone;
    default:
      break;
  }
  const bool elementwise = IsElementwise(op.kind) && !op.operands.empty() &&
                           op.operands.size() <= 3 && OnFloatPath(op.kind, op.dtype) &&
                           OperandsOnFloatPath(graph, op);
  return elementwise ? KernelRole::kElementwise : KernelRole::kAlone;
}

// What the replay needs of every op, computed once.
struct GraphFacts {
  std::vector<KernelRole> role;
  std::vector<std::vector<int32_t>> readers;  // distinct reading ops, ascending
  // Made from constants alone: the lowering makes it again for each reader (a free value),
  // so each copy has one reader and is freed after it.
  std::vector<bool> from_constants;
  std::vector<bool> kept;  // never freed while the piece runs: parameters and outputs
  std::vector<int64_t> bytes;
};

GraphFacts GatherFacts(const Graph& graph) {
  const size_t n = static_cast<size_t>(graph.size());
  GraphFacts f;
  f.role.assign(n, KernelRole::kAlone);
  f.readers.assign(n, {});
  f.from_constants.assign(n, false);
  f.kept.assign(n, false);
  f.bytes.assign(n, 0);
  for (int32_t id = 0; id < graph.size(); ++id) {
    const size_t u = static_cast<size_t>(id);
    const Op& op = graph.op(id);
    f.role[u] = RoleOf(graph, op);
    bool constant = op.kind == OpKind::kConstant || op.kind == OpKind::kIota;
    if (!constant && op.kind != OpKind::kParameter && !op.operands.empty()) {
      constant = true;
      for (int32_t x : op.operands) {
        constant = constant && x >= 0 && x < id && f.from_constants[static_cast<size_t>(x)];
      }
    }
    f.from_constants[u] = constant;
    f.kept[u] = op.kind == OpKind::kParameter;
    int64_t elements = 1;
    for (int64_t d : op.shape) elements *= d;
    f.bytes[u] = elements * DTypeBytes(op.dtype);
    for (int32_t x : op.operands) {
      if (x < 0 || x >= graph.size()) continue;
      std::vector<int32_t>& r = f.readers[static_cast<size_t>(x)];
      if (r.empty() || r.back() != id) r.push_back(id);
    }
  }
  for (int32_t out : graph.outputs) {
    if (out >= 0 && out < graph.size()) f.kept[static_cast<size_t>(out)] = true;
  }
  return f;
}

// InlinedInto's mark for a value every reader's group makes again: a splat or a broadcast, or
// a value made from constants (each copy has one reader).
constexpr int32_t kInEachReader = -2;

// The root of the group in which op r reads a value (`one_reader`: r alone reads it, or each
// copy of it); -1 where r takes in no value: an op that runs alone or is not fused, or a row
// reduction whose operand another op reads as well.
int32_t ReadingGroup(const GraphFacts& f, const std::vector<char>& alone,
                     const std::vector<int32_t>& inlined_into, int32_t r, bool one_reader) {
  const size_t ur = static_cast<size_t>(r);
  if (alone[ur]) return -1;
  if (f.role[ur] == KernelRole::kElementwise) return inlined_into[ur] >= 0 ? inlined_into[ur] : r;
  return f.role[ur] == KernelRole::kRowReduction && one_reader ? r : -1;
}

// Per op, given the ops that run alone (the ops of dropped groups): the root of the group whose
// kernel computes it, where that is not itself: an elementwise value whose every reader is in
// that group; kInEachReader for a splat, a broadcast or a value made from constants whose every
// reader is an elementwise op (or, for such a value, a row reduction); else -1 (written). The
// runner's InlinedInto and Inlinable, in reverse op order: readers come after their operands.
std::vector<int32_t> InlinedInto(const GraphFacts& f, const std::vector<char>& alone) {
  std::vector<int32_t> inlined_into(f.role.size(), -1);
  for (size_t u = f.role.size(); u-- > 0;) {
    const KernelRole role = f.role[u];
    if (alone[u] || f.kept[u] || f.readers[u].empty()) continue;
    if (role != KernelRole::kLeaf && role != KernelRole::kElementwise) continue;
    const bool copies = role == KernelRole::kLeaf || f.from_constants[u];
    const bool one_reader = f.readers[u].size() == 1 || f.from_constants[u];
    int32_t root = -1;
    for (int32_t r : f.readers[u]) {
      int32_t group =
          r > static_cast<int32_t>(u) ? ReadingGroup(f, alone, inlined_into, r, one_reader) : -1;
      // A splat or a broadcast only into elementwise ops; a chain into a reduction.
      if (role == KernelRole::kLeaf && f.role[static_cast<size_t>(r)] != KernelRole::kElementwise) {
        group = -1;
      }
      if (group < 0 || (!copies && root >= 0 && group != root)) {
        root = -1;
        break;
      }
      root = group;
    }
    inlined_into[u] = root < 0 ? -1 : copies ? kInEachReader : root;
  }
  return inlined_into;
}

// Whether value x is computed inside its readers' kernels instead of written.
bool Inlinable(const std::vector<int32_t>& inlined_into, int32_t x) {
  return inlined_into[static_cast<size_t>(x)] != -1;
}

// The group rooted at `root`: the ops it computes inline and the values it reads, with the
// first op of the group reading each.
struct Group {
  int32_t root = -1;
  std::vector<int32_t> members;
  std::vector<int32_t> inputs, first_reader;
};

// Walks the group of g.root: its inlinable operands (members, each once) and what they read
// (inputs, with the first op of the group reading each). Iterative: a long chain costs no deep
// stack (the group is then too large to keep, and all of it runs alone, as in the runner).
void Collect(const Graph& graph, const std::vector<int32_t>& inlined_into, Group& g) {
  std::unordered_set<int32_t> members;
  std::unordered_map<int32_t, size_t> input_index;
  std::vector<int32_t> pending = {g.root};
  while (!pending.empty()) {
    const int32_t id = pending.back();
    pending.pop_back();
    for (int32_t x : graph.op(id).operands) {
      if (x < 0 || x >= graph.size()) continue;
      if (Inlinable(inlined_into, x)) {
        if (members.insert(x).second) {
          g.members.push_back(x);
          pending.push_back(x);
        }
        continue;
      }
      const auto [at, added] = input_index.emplace(x, g.inputs.size());
      if (added) {
        g.inputs.push_back(x);
        g.first_reader.push_back(id);
      } else if (id < g.first_reader[at->second]) {
        g.first_reader[at->second] = id;
      }
    }
  }
}

// The runner's Keepable: within the size limits, and the bytes of the inputs it keeps alive
// past their last reader (freed between the group's first read and its root) no more than the
// bytes of the members it never writes.
bool Keepable(const GraphFacts& f, const Group& g) {
  if (g.inputs.size() > static_cast<size_t>(kMaxFusedGroupInputs) ||
      g.members.size() + 1 + g.inputs.size() > static_cast<size_t>(kMaxFusedGroupNodes)) {
    return false;
  }
  int64_t deferred = 0, saved = 0;
  for (int32_t m : g.members) saved += f.bytes[static_cast<size_t>(m)];
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const size_t u = static_cast<size_t>(g.inputs[k]);
    if (f.kept[u]) continue;
    // A free value's copy dies after the one op that reads it; another dies after its last
    // reader.
    const int32_t last = f.from_constants[u] ? g.first_reader[k] : f.readers[u].back();
    if (last < g.root) deferred += f.bytes[u];
  }
  return deferred <= saved;
}

// One pass over the roots in op order; marks the ops of groups that cannot be kept as alone.
// Returns whether it marked any.
bool DropUnkeepableGroups(const Graph& graph, const GraphFacts& f, std::vector<char>& alone) {
  const std::vector<int32_t> inlined_into = InlinedInto(f, alone);
  std::vector<int32_t> dropped;
  for (int32_t id = 0; id < graph.size(); ++id) {
    const size_t u = static_cast<size_t>(id);
    if (f.role[u] != KernelRole::kElementwise && f.role[u] != KernelRole::kRowReduction) continue;
    if (alone[u] || Inlinable(inlined_into, id)) continue;
    Group g;
    g.root = id;
    Collect(graph, inlined_into, g);
    if (g.members.empty() || Keepable(f, g)) continue;
    dropped.push_back(id);
    dropped.insert(dropped.end(), g.members.begin(), g.members.end());
  }
  for (int32_t id : dropped) alone[static_cast<size_t>(id)] = 1;
  return !dropped.empty();
}

}  // namespace

bool FusesRowReduction(const std::vector<int64_t>& operand_shape,
                       const std::vector<int64_t>& dims) {
  const size_t rank = operand_shape.size(), reduced = dims.size();
  if (reduced == 0 || reduced > rank) return false;
  int64_t row = 1, outputs = 1;
  for (size_t k = 0; k < reduced; ++k) {
    if (dims[k] != static_cast<int64_t>(rank - reduced + k)) return false;
    row *= operand_shape[rank - reduced + k];
  }
  for (size_t k = 0; k + reduced < rank; ++k) outputs *= operand_shape[k];
  return outputs >= kMinFusedRowReductions && row <= kMaxFusedRowLength;
}

std::vector<bool> SingleReaderMaterializedResults(const Graph& graph) {
  const GraphFacts f = GatherFacts(graph);
  std::vector<char> alone(static_cast<size_t>(graph.size()), 0);
  while (DropUnkeepableGroups(graph, f, alone)) {
  }
  const std::vector<int32_t> inlined_into = InlinedInto(f, alone);
  std::vector<bool> materialized(static_cast<size_t>(graph.size()), true);
  for (int32_t id = 0; id < graph.size(); ++id) {
    materialized[static_cast<size_t>(id)] = !Inlinable(inlined_into, id);
  }
  return materialized;
}

}  // namespace alpa
