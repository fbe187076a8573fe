// SingleReaderMaterializedResults (fusion.h): libalpa's CUDA runner's fusion
// (exec/cuda/fusion_plan.cc) replayed on a graph, in op order, as the lowering emits a piece's ops:
// the role of each op, which values stay in registers (each elementwise value's group from its
// readers', in reverse op order), the group of each root, and the groups
// the runner drops because they would keep their inputs alive longer than the buffers they save.
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/ir/float_path.h"
#include "core/ir/fusion.h"
#include "core/util/dtype.h"
#include "core/util/sole_reader_merge.h"

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
  std::vector<int64_t> elements;
};

GraphFacts GatherFacts(const Graph& graph) {
  const size_t n = static_cast<size_t>(graph.size());
  GraphFacts f;
  f.role.assign(n, KernelRole::kAlone);
  f.readers.assign(n, {});
  f.from_constants.assign(n, false);
  f.kept.assign(n, false);
  f.bytes.assign(n, 0);
  f.elements.assign(n, 0);
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
    f.elements[u] = elements;
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

// A kernel of merged groups (the runner's group_merge.h).
struct MergedKernel {
  std::vector<int32_t> roots;    // its groups' roots, in the order they merged
  std::vector<int32_t> members;  // their members
  std::vector<int32_t> inputs;   // values it reads
  std::vector<int32_t> outs;     // values it computes and writes (the last root's last)
  int64_t nodes = 0;             // its values, as Keepable counts them
};

bool Contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The root of the group in which op r runs: itself for a root, its group's for a member; -1 for
// an op outside the elementwise kernels (or made again in each reader's).
int32_t KernelRootOf(const GraphFacts& f, const std::vector<int32_t>& inlined_into, int32_t r) {
  const int32_t into = inlined_into[static_cast<size_t>(r)];
  if (into >= 0) return into;
  return into == -1 && f.role[static_cast<size_t>(r)] == KernelRole::kElementwise ? r : -1;
}

// The elementwise kernels of the groups (every elementwise root's, a group of one for an op that
// runs alone), in op order, with per op the kernel that is the root of (-1).
std::vector<MergedKernel> ElementwiseKernels(const Graph& graph, const GraphFacts& f,
                                             const std::vector<char>& alone,
                                             const std::vector<int32_t>& inlined_into,
                                             std::vector<int32_t>& kernel_at) {
  std::vector<MergedKernel> kernels;
  kernel_at.assign(f.role.size(), -1);
  for (int32_t id = 0; id < graph.size(); ++id) {
    const size_t u = static_cast<size_t>(id);
    if (f.role[u] != KernelRole::kElementwise || Inlinable(inlined_into, id)) continue;
    Group g;
    g.root = id;
    if (alone[u]) {  // a group of one: every operand loaded
      for (int32_t x : graph.op(id).operands) {
        if (x >= 0 && x < graph.size() && !Contains(g.inputs, x)) g.inputs.push_back(x);
      }
    } else {
      Collect(graph, inlined_into, g);
    }
    MergedKernel k;
    k.roots = {id};
    k.members = g.members;
    k.inputs = g.inputs;
    k.outs = {id};
    k.nodes = static_cast<int64_t>(g.members.size() + 1 + g.inputs.size());
    kernel_at[u] = static_cast<int32_t>(kernels.size());
    kernels.push_back(std::move(k));
  }
  return kernels;
}

// The one kernel that reads what kernel k writes (a new parameter value is read as such after
// the step writes it back); -1 where an op outside the elementwise kernels reads one of its
// values, where a value other than a parameter's new value is the graph's output or is read by
// nothing, or where two kernels read them.
int32_t SoleReader(const GraphFacts& f, const Graph& graph,
                   const std::vector<int32_t>& inlined_into, const std::vector<int32_t>& kernel_at,
                   const MergeOwners& owners, int32_t k, const MergedKernel& kernel) {
  int32_t reader = -1;
  for (int32_t v : kernel.outs) {
    const size_t u = static_cast<size_t>(v);
    const bool update = graph.op(v).alias_of >= 0;
    if (!update && (f.kept[u] || f.readers[u].empty())) return -1;
    for (int32_t r : f.readers[u]) {
      const int32_t root = KernelRootOf(f, inlined_into, r);
      // Read outside the elementwise kernels, or by a row reduction's.
      if (root < 0 || kernel_at[static_cast<size_t>(root)] < 0) return -1;
      const int32_t into = owners.Holder(kernel_at[static_cast<size_t>(root)]);
      if (into == k) continue;
      if (reader >= 0 && reader != into) return -1;
      reader = into;
    }
  }
  return reader;
}

// The runner's TryMerge of kernel a into its sole reader b, replayed on the graph: the merged
// kernel, or false.
bool MergeInto(const Graph& graph, const GraphFacts& f, const std::vector<int32_t>& inlined_into,
               const MergedKernel& a, const MergedKernel& b, MergedKernel& m) {
  if (f.elements[static_cast<size_t>(a.roots.back())] !=
      f.elements[static_cast<size_t>(b.roots.back())]) {
    return false;
  }
  for (int32_t u : a.outs) {  // b reads the old value of a parameter a updates
    const int32_t old = graph.op(u).alias_of;
    if (old >= 0 && Contains(b.inputs, old)) return false;
  }
  for (int32_t x : b.members) {
    const Op& op = graph.op(x);
    if (op.kind == OpKind::kBroadcastInDim && Contains(a.outs, op.operands[0])) return false;
  }
  m = MergedKernel{};
  m.roots = a.roots;
  m.roots.insert(m.roots.end(), b.roots.begin(), b.roots.end());
  m.members = a.members;
  m.members.insert(m.members.end(), a.roots.begin(), a.roots.end());
  m.members.insert(m.members.end(), b.members.begin(), b.members.end());
  m.inputs = a.inputs;
  int64_t replaced = 0;
  for (int32_t x : b.inputs) {
    if (Contains(a.outs, x)) {
      ++replaced;
    } else if (!Contains(m.inputs, x)) {
      m.inputs.push_back(x);
    }
  }
  m.nodes = a.nodes + b.nodes - replaced;
  // New parameter values stay written (into the parameters' buffers); a's other values only b
  // read. Neither is written to a temporary any more.
  int64_t saved = 0;
  for (int32_t v : a.outs) {
    saved += f.bytes[static_cast<size_t>(v)];
    if (graph.op(v).alias_of >= 0) m.outs.push_back(v);
  }
  m.outs.insert(m.outs.end(), b.outs.begin(), b.outs.end());
  if (m.outs.size() > static_cast<size_t>(kMaxFusedGroupStores) + 1 ||
      m.inputs.size() > static_cast<size_t>(kMaxFusedGroupInputs) ||
      m.nodes > kMaxFusedGroupNodes) {
    return false;
  }
  // a's inputs read last by a (in op order) are freed after b instead of after a.
  int64_t deferred = 0;
  for (int32_t x : a.inputs) {
    const size_t u = static_cast<size_t>(x);
    if (f.kept[u] || Contains(b.inputs, x)) continue;
    bool last_in_a = false;
    for (int32_t r : f.readers[u]) {  // a free value's copy dies after the one op reading it
      const bool in_a = Contains(a.roots, KernelRootOf(f, inlined_into, r));
      last_in_a = f.from_constants[u] ? last_in_a || in_a : in_a;
    }
    if (last_in_a) deferred += f.bytes[u];
  }
  return deferred <= saved;
}

// The runner's MergeGroupsIntoTheirReaders replayed on the graph: each kernel, in op order,
// merged into its sole reader where MergeInto allows. Returns the kernels left.
std::vector<MergedKernel> MergeKernelsIntoTheirReaders(const Graph& graph, const GraphFacts& f,
                                                       const std::vector<char>& alone,
                                                       const std::vector<int32_t>& inlined_into) {
  std::vector<int32_t> kernel_at;
  std::vector<MergedKernel> kernels = ElementwiseKernels(graph, f, alone, inlined_into, kernel_at);
  const MergeOwners owners = MergeIntoSoleReaders(
      kernels.size(),
      [&](int32_t k, const MergeOwners& now) {
        return SoleReader(f, graph, inlined_into, kernel_at, now, k,
                          kernels[static_cast<size_t>(k)]);
      },
      [&](int32_t k, int32_t reader) {
        MergedKernel merged;
        if (!MergeInto(graph, f, inlined_into, kernels[static_cast<size_t>(k)],
                       kernels[static_cast<size_t>(reader)], merged)) {
          return false;
        }
        kernels[static_cast<size_t>(reader)] = std::move(merged);
        return true;
      });
  std::vector<MergedKernel> left;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (owners.Holds(k)) left.push_back(std::move(kernels[k]));
  }
  return left;
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

SingleReaderFusion PlanSingleReaderFusion(const Graph& graph) {
  const GraphFacts f = GatherFacts(graph);
  const size_t n = static_cast<size_t>(graph.size());
  std::vector<char> alone(n, 0);
  while (DropUnkeepableGroups(graph, f, alone)) {
  }
  const std::vector<int32_t> inlined_into = InlinedInto(f, alone);
  SingleReaderFusion fusion;
  fusion.materialized.assign(n, true);
  fusion.kernel_of.resize(n);
  for (int32_t id = 0; id < graph.size(); ++id) {
    const size_t u = static_cast<size_t>(id);
    fusion.materialized[u] = !Inlinable(inlined_into, id);
    const int32_t root = KernelRootOf(f, inlined_into, id);
    fusion.kernel_of[u] = root >= 0 ? root : id;
  }
  std::vector<int32_t> merged_into(n, -1);  // per group root: the last root of its kernel
  for (const MergedKernel& k : MergeKernelsIntoTheirReaders(graph, f, alone, inlined_into)) {
    for (int32_t r : k.roots) {
      merged_into[static_cast<size_t>(r)] = k.roots.back();
      if (!Contains(k.outs, r)) fusion.materialized[static_cast<size_t>(r)] = false;
    }
  }
  for (int32_t& k : fusion.kernel_of) {
    const int32_t into = merged_into[static_cast<size_t>(k)];
    if (into >= 0) k = into;
  }
  return fusion;
}

std::vector<bool> SingleReaderMaterializedResults(const Graph& graph) {
  return PlanSingleReaderFusion(graph).materialized;
}

}  // namespace alpa
