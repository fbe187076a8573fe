// PlanFusion: classifies the program's ops (fusible elementwise ops, inlinable broadcasts and
// constants), finds which buffers exist only to feed one group's ops (each elementwise
// producer's group from its readers', in reverse program order), builds one group per root,
// and keeps the groups whose reads stay valid until the root runs. A group that cannot be kept
// (too large, an input overwritten in between, or more bytes held than it saves) runs its ops
// alone, and the plan is made again without them until nothing changes.
#include "exec/cuda/fusion_plan.h"

#include <algorithm>
#include <map>
#include <string>

#include "exec/cuda/env_switch.h"
#include "exec/cuda/group_merge.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/op_rounding.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {
namespace {

enum class Role { kNone, kElementwise, kLeaf, kReduceRoot };

// What the program says about each buffer and instruction, computed once.
struct ProgramFacts {
  std::vector<std::vector<int32_t>> writes;   // per buffer: the instructions writing it, in order
  std::vector<std::vector<int32_t>> readers;  // per buffer: reading instructions (no kFree)
  std::vector<int32_t> free_at;               // per buffer: its kFree, or -1
  std::vector<Role> role;                     // per instruction
  std::vector<OutputRounding> rounding;       // per kRun instruction
};

// A reduction of float-path values over the operand's trailing dims (each output a row).
bool ReducesRows(const DeviceProgram& program, const std::vector<DType>& storage,
                 const Instruction& in, const Op& op) {
  if (in.in.size() != 1) return false;
  if (!FloatPathStorage(storage[static_cast<size_t>(in.in[0])]) ||
      !FloatPathStorage(storage[static_cast<size_t>(in.out)])) {
    return false;
  }
  // A warp per output: enough outputs to fill the GPU, rows short enough for one warp (a full
  // reduction, such as a loss, stays with the reduce kernels, which split it).
  return FusesRowReduction(program.buffers[static_cast<size_t>(in.in[0])].shape, op.attrs.dims);
}

Role ClassifyRun(const DeviceProgram& program, const std::vector<DType>& storage,
                 const Instruction& in, OutputRounding& rounding) {
  const Op& op = LocalOpOf(program, in);
  const DType out_storage = storage[static_cast<size_t>(in.out)];
  rounding = ForStorage(RoundingFor(op, in.round), out_storage);
  if (op.kind == OpKind::kConstant) {
    return FloatPathStorage(out_storage) ? Role::kLeaf : Role::kNone;
  }
  if (op.kind == OpKind::kBroadcastInDim) {
    if (in.in.size() != 1 || op.shape.size() > 8) return Role::kNone;
    const bool floats =
        FloatPathStorage(storage[static_cast<size_t>(in.in[0])]) && FloatPathStorage(out_storage);
    return floats ? Role::kLeaf : Role::kNone;
  }
  if (op.kind == OpKind::kReduceSum || op.kind == OpKind::kReduceMax) {
    return ReducesRows(program, storage, in, op) ? Role::kReduceRoot : Role::kNone;
  }
  if (!IsElementwise(op.kind) || in.in.empty() || in.in.size() > 3) return Role::kNone;
  ElementwiseArgs args;
  args.kind = op.kind;
  args.comparison = op.attrs.comparison;
  args.operand_count = static_cast<int32_t>(in.in.size());
  for (size_t k = 0; k < in.in.size(); ++k)
    args.in_storage[k] = storage[static_cast<size_t>(in.in[k])];
  args.out_storage = out_storage;
  args.rounding = rounding;
  return UsesFloatPath(args) ? Role::kElementwise : Role::kNone;
}

// The lowering's scale (the mean of the microbatches' gradients) between float-path buffers: an
// elementwise op of one operand (a kScale node, computed as the scale kernel computes it).
Role ClassifyScale(const DeviceProgram& program, const std::vector<DType>& storage,
                   const Instruction& in, OutputRounding& rounding) {
  const DType out_storage = storage[static_cast<size_t>(in.out)];
  rounding = ForStorage(
      OutputRounding{in.round, program.buffers[static_cast<size_t>(in.out)].dtype}, out_storage);
  const bool floats =
      FloatPathStorage(storage[static_cast<size_t>(in.in[0])]) && FloatPathStorage(out_storage);
  return floats ? Role::kElementwise : Role::kNone;
}

// `replaced`: per instruction, whether an attention region's kernels replace it (it neither
// reads nor joins a group).
ProgramFacts GatherFacts(const DeviceProgram& program, const std::vector<DType>& storage,
                         const std::vector<char>& replaced) {
  ProgramFacts f;
  const size_t buffers = program.buffers.size(), code = program.code.size();
  f.writes.assign(buffers, {});
  f.readers.assign(buffers, {});
  f.free_at.assign(buffers, -1);
  f.role.assign(code, Role::kNone);
  f.rounding.assign(code, OutputRounding{});
  for (size_t i = 0; i < code; ++i) {
    const Instruction& in = program.code[i];
    if (in.kind == InstructionKind::kFree) {
      f.free_at[static_cast<size_t>(in.in[0])] = static_cast<int32_t>(i);
      continue;
    }
    if (in.out >= 0) f.writes[static_cast<size_t>(in.out)].push_back(static_cast<int32_t>(i));
    if (replaced[i]) continue;
    for (int32_t b : in.in) {
      std::vector<int32_t>& r = f.readers[static_cast<size_t>(b)];
      if (r.empty() || r.back() != static_cast<int32_t>(i)) r.push_back(static_cast<int32_t>(i));
    }
    if (in.kind == InstructionKind::kRun && in.out >= 0) {
      f.role[i] = ClassifyRun(program, storage, in, f.rounding[i]);
    } else if (in.kind == InstructionKind::kScale && in.in.size() == 1 && in.out >= 0) {
      f.role[i] = ClassifyScale(program, storage, in, f.rounding[i]);
    }
  }
  return f;
}

int64_t BufferBytes(const Buffer& b) { return ElementCountOf(b.shape) * DTypeBytes(b.dtype); }

// The root of the group in which instruction r reads an elementwise producer's result, which
// `readers` instructions read; -1 where r takes in no producer: an op that runs alone or is not
// fused, or a reduction whose operand another instruction reads as well (a reduction takes in
// only a chain that nothing else reads).
int32_t ReadingGroup(const ProgramFacts& f, const std::vector<char>& alone,
                     const std::vector<int32_t>& inlined_into, int32_t r, size_t readers) {
  const size_t ur = static_cast<size_t>(r);
  if (alone[ur]) return -1;
  if (f.role[ur] == Role::kElementwise) return inlined_into[ur] >= 0 ? inlined_into[ur] : r;
  return f.role[ur] == Role::kReduceRoot && readers == 1 ? r : -1;
}

// Per instruction: the root of the group whose kernel computes it, where that is not itself: an
// elementwise op whose every reading instruction is in that group (a value read twice there is
// computed once); else -1. One pass in reverse program order: every reader comes after its
// producer, so the readers' groups are known when the producer's is decided.
std::vector<int32_t> InlinedInto(const DeviceProgram& program, const ProgramFacts& f,
                                 const std::vector<char>& alone) {
  std::vector<int32_t> inlined_into(program.code.size(), -1);
  for (size_t w = program.code.size(); w-- > 0;) {
    if (alone[w] || f.role[w] != Role::kElementwise) continue;
    const size_t ub = static_cast<size_t>(program.code[w].out);
    const std::vector<int32_t>& readers = f.readers[ub];
    if (program.buffers[ub].persistent || f.writes[ub].size() != 1 || readers.empty()) continue;
    int32_t root = -1;
    for (int32_t r : readers) {
      const int32_t group = r > static_cast<int32_t>(w)
                                ? ReadingGroup(f, alone, inlined_into, r, readers.size())
                                : -1;
      if (group < 0 || (root >= 0 && group != root)) {
        root = -1;
        break;
      }
      root = group;
    }
    inlined_into[w] = root;
  }
  return inlined_into;
}

// Whether buffer b's value is computed inside its readers' kernels instead of stored: an
// elementwise producer's inside the one group that reads it (`inlined_into`), a broadcast's or
// a constant's inside each elementwise reader's.
bool Inlinable(const DeviceProgram& program, const ProgramFacts& f, const std::vector<char>& alone,
               const std::vector<int32_t>& inlined_into, int32_t b) {
  const size_t ub = static_cast<size_t>(b);
  if (program.buffers[ub].persistent || f.writes[ub].size() != 1 || f.readers[ub].empty()) {
    return false;
  }
  const size_t w = static_cast<size_t>(f.writes[ub].front());
  if (alone[w]) return false;
  if (f.role[w] == Role::kElementwise) return inlined_into[w] >= 0;
  if (f.role[w] != Role::kLeaf) return false;  // a reduction is stored
  for (int32_t r : f.readers[ub]) {
    if (alone[static_cast<size_t>(r)] || f.role[static_cast<size_t>(r)] != Role::kElementwise) {
      return false;
    }
  }
  return true;
}

// The broadcast's result dims and source strides, size-1 dims dropped and neighbours that walk
// the source alike merged.
void BroadcastWalk(const Op& op, const Dims& source_shape, FusedNode& node) {
  const size_t rank = op.shape.size();
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t j = source_shape.size(); j-- > 0;) {
    const size_t d = static_cast<size_t>(op.attrs.dims[j]);
    if (source_shape[j] == op.shape[d]) stride[d] = s;
    s *= source_shape[j];
  }
  for (size_t d = 0; d < rank; ++d) {
    if (op.shape[d] == 1) continue;
    if (!node.sizes.empty() && node.strides.back() == stride[d] * op.shape[d]) {
      node.sizes.back() *= op.shape[d];
      node.strides.back() = stride[d];
    } else {
      node.sizes.push_back(op.shape[d]);
      node.strides.push_back(stride[d]);
    }
  }
}

float StoredConstant(const Op& op, OutputRounding rounding, DType storage) {
  unsigned char element[8] = {};
  StoreElement(element, storage, 0, FinishValue(op.attrs.value, rounding));
  return LoadFloat(element, storage, 0);
}

// Builds the group rooted at instruction `root` (a depth-first walk over inlinable operands).
class GroupBuilder {
 public:
  GroupBuilder(const DeviceProgram& program, const std::vector<DType>& storage,
               const ProgramFacts& facts, const std::vector<char>& alone,
               const std::vector<int32_t>& inlined_into)
      : program_(program),
        storage_(storage),
        facts_(facts),
        alone_(alone),
        inlined_into_(inlined_into) {}

  FusedGroup Build(int32_t root) {
    group_ = FusedGroup{};
    memo_.clear();
    loads_.clear();
    group_.root = root;
    const Instruction& in = program_.code[static_cast<size_t>(root)];
    group_.out = in.out;
    group_.elements = ElementCountOf(program_.buffers[static_cast<size_t>(in.out)].shape);
    if (facts_.role[static_cast<size_t>(root)] == Role::kReduceRoot) {
      const int64_t operand = ElementCountOf(program_.buffers[static_cast<size_t>(in.in[0])].shape);
      group_.row = group_.elements > 0 ? operand / group_.elements : 0;
    }
    NodeOf(root);
    std::sort(group_.members.begin(), group_.members.end());
    group_.members.erase(std::unique(group_.members.begin(), group_.members.end()),
                         group_.members.end());
    return std::move(group_);
  }

 private:
  int32_t Add(FusedNode node) {
    group_.nodes.push_back(std::move(node));
    return static_cast<int32_t>(group_.nodes.size()) - 1;
  }

  int32_t InputIndex(int32_t b) {
    return FusedInputIndex(group_, b, storage_[static_cast<size_t>(b)]);
  }

  // A kLoad node of buffer b (one per buffer).
  int32_t LoadNode(int32_t b) {
    const auto found = loads_.find(b);
    if (found != loads_.end()) return found->second;
    FusedNode node;
    node.kind = FusedNodeKind::kLoad;
    node.input = InputIndex(b);
    node.storage = storage_[static_cast<size_t>(b)];
    const int32_t id = Add(std::move(node));
    loads_[b] = id;
    return id;
  }

  // The node of instruction `root` and, before it, those of the producers it takes in (each
  // operand's in operand order, a load for one that is not inlined): a depth-first walk on an
  // explicit stack, so that a long chain needs no deep recursion.
  int32_t NodeOf(int32_t root) {
    struct Frame {
      int32_t i;
      size_t next = 0;  // the next operand to resolve
      int32_t operands[3] = {-1, -1, -1};
    };
    std::vector<Frame> stack = {Frame{root}};
    int32_t done = -1;  // the node of the frame just finished, for its parent
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (done >= 0) {
        f.operands[f.next++] = done;
        done = -1;
      }
      const auto found = memo_.find(f.i);
      if (found != memo_.end()) {
        done = found->second;
        stack.pop_back();
        continue;
      }
      const Instruction& in = program_.code[static_cast<size_t>(f.i)];
      const bool takes_operands = in.kind != InstructionKind::kRun ||
                                  (LocalOpOf(program_, in).kind != OpKind::kConstant &&
                                   LocalOpOf(program_, in).kind != OpKind::kBroadcastInDim);
      bool descended = false;
      while (takes_operands && f.next < in.in.size()) {
        const int32_t b = in.in[f.next];
        if (!Inlinable(program_, facts_, alone_, inlined_into_, b)) {
          f.operands[f.next++] = LoadNode(b);
          continue;
        }
        const int32_t w = facts_.writes[static_cast<size_t>(b)].front();
        group_.members.push_back(w);
        const auto made = memo_.find(w);
        if (made != memo_.end()) {
          f.operands[f.next++] = made->second;
          continue;
        }
        stack.push_back(Frame{w});  // f is not used again before this frame ends
        descended = true;
        break;
      }
      if (descended) continue;
      done = Build(f.i, f.operands);
      stack.pop_back();
    }
    return done;
  }

  // Adds the node of instruction i, its operands' nodes given; memoised.
  int32_t Build(int32_t i, const int32_t (&operands)[3]) {
    const Instruction& in = program_.code[static_cast<size_t>(i)];
    FusedNode node;
    node.storage = storage_[static_cast<size_t>(in.out)];
    if (in.kind == InstructionKind::kScale) {
      node.kind = FusedNodeKind::kScale;
      node.scale = in.value;
      node.operand_count = 1;
      node.operands[0] = operands[0];
      node.rounding = facts_.rounding[static_cast<size_t>(i)];
      const int32_t id = Add(std::move(node));
      memo_[i] = id;
      return id;
    }
    const Op& op = LocalOpOf(program_, in);
    if (op.kind == OpKind::kConstant) {
      node.kind = FusedNodeKind::kConstant;
      node.value = StoredConstant(op, facts_.rounding[static_cast<size_t>(i)], node.storage);
    } else if (op.kind == OpKind::kBroadcastInDim) {
      node.kind = FusedNodeKind::kBroadcastLoad;
      node.input = InputIndex(in.in[0]);
      BroadcastWalk(op, program_.buffers[static_cast<size_t>(in.in[0])].shape, node);
    } else {
      node.kind = facts_.role[static_cast<size_t>(i)] == Role::kReduceRoot ? FusedNodeKind::kReduce
                                                                           : FusedNodeKind::kOp;
      node.op = op.kind;
      node.comparison = op.attrs.comparison;
      node.operand_count = static_cast<int32_t>(in.in.size());
      node.rounding = facts_.rounding[static_cast<size_t>(i)];
      for (size_t k = 0; k < in.in.size(); ++k) node.operands[k] = operands[k];
    }
    const int32_t id = Add(std::move(node));
    memo_[i] = id;
    return id;
  }

  const DeviceProgram& program_;
  const std::vector<DType>& storage_;
  const ProgramFacts& facts_;
  const std::vector<char>& alone_;
  const std::vector<int32_t>& inlined_into_;
  FusedGroup group_;
  std::map<int32_t, int32_t> memo_;   // instruction -> node
  std::map<int32_t, int32_t> loads_;  // buffer -> its kLoad node
};

// The earliest instruction of `g` (a member, or the root) that reads buffer b.
int32_t FirstRead(const DeviceProgram& program, const FusedGroup& g, int32_t b) {
  for (int32_t m : g.members) {
    const std::vector<int32_t>& in = program.code[static_cast<size_t>(m)].in;
    if (std::find(in.begin(), in.end(), b) != in.end()) return m;
  }
  return g.root;
}

// Whether `g` may run as one kernel: within the size limits, no input written again between
// its first reader in the group and the root, and the bytes it keeps alive longer (inputs the
// program frees before the root: g.deferred_frees, which this fills) no more than the bytes it
// never allocates.
bool Keepable(const DeviceProgram& program, const ProgramFacts& f, FusedGroup& g) {
  if (g.nodes.size() > static_cast<size_t>(kMaxFusedGroupNodes) ||
      g.inputs.size() > static_cast<size_t>(kMaxFusedGroupInputs)) {
    return false;
  }
  int64_t deferred = 0, saved = 0;
  for (int32_t m : g.members) {
    saved +=
        BufferBytes(program.buffers[static_cast<size_t>(program.code[static_cast<size_t>(m)].out)]);
  }
  for (int32_t b : g.inputs) {
    const int32_t first = FirstRead(program, g, b);
    const std::vector<int32_t>& writes = f.writes[static_cast<size_t>(b)];
    const auto later = std::upper_bound(writes.begin(), writes.end(), first);
    if (later != writes.end() && *later < g.root) return false;  // written in between
    const int32_t freed = f.free_at[static_cast<size_t>(b)];
    if (freed > first && freed < g.root) {
      deferred += BufferBytes(program.buffers[static_cast<size_t>(b)]);
      g.deferred_frees.push_back(b);
    }
  }
  return deferred <= saved;
}

// The groups of every root, given the instructions that run alone; adds to `alone` the ops of
// groups that cannot be kept. Returns the kept groups.
std::vector<FusedGroup> FormGroups(const DeviceProgram& program, const std::vector<DType>& storage,
                                   const ProgramFacts& f, std::vector<char>& alone, bool& changed) {
  std::vector<FusedGroup> groups;
  const std::vector<int32_t> inlined_into = InlinedInto(program, f, alone);
  GroupBuilder builder(program, storage, f, alone, inlined_into);
  std::vector<int32_t> dropped;
  for (size_t i = 0; i < program.code.size(); ++i) {
    // The ops of a dropped group run alone: each elementwise one as a group of one (every
    // operand loaded: nothing is inlinable into an op that runs alone).
    if (f.role[i] != Role::kElementwise && f.role[i] != Role::kReduceRoot) continue;
    if (alone[i] && f.role[i] != Role::kElementwise) continue;
    const int32_t out = program.code[i].out;
    if (Inlinable(program, f, alone, inlined_into, out)) continue;  // a later root's member
    FusedGroup g = builder.Build(static_cast<int32_t>(i));
    // An elementwise op with no producer to take in is a group of one all the same: its kernel,
    // specialised to its storage types and packed, outruns the generic one. A row reduction
    // alone stays with the reduce kernels.
    if (g.members.empty() && f.role[i] == Role::kReduceRoot) continue;
    if (Keepable(program, f, g)) {
      groups.push_back(std::move(g));
      continue;
    }
    dropped.push_back(g.root);
    dropped.insert(dropped.end(), g.members.begin(), g.members.end());
  }
  changed = !dropped.empty();
  for (int32_t i : dropped) alone[static_cast<size_t>(i)] = 1;
  return groups;
}

}  // namespace

bool FusionEnabled() { return SwitchedOnByDefault("ALPA_CUDA_FUSION"); }

namespace {

// Per instruction: whether an attention region's kernels replace it.
std::vector<char> ReplacedByAttention(size_t code, const std::vector<AttentionRegion>& attention) {
  std::vector<char> replaced(code, 0);
  for (const AttentionRegion& r : attention) {
    for (int32_t m : r.members) replaced[static_cast<size_t>(m)] = 1;
  }
  return replaced;
}

// Marks the groups' roots and members, their skipped kFrees and the reads they defer.
void PlaceGroups(const DeviceProgram& program, const ProgramFacts& facts, FusionPlan& plan,
                 std::vector<int32_t>& needed_until) {
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const FusedGroup& g = plan.groups[gi];
    plan.group_at[static_cast<size_t>(g.root)] = static_cast<int32_t>(gi);
    const std::vector<int32_t> writes = FusedGroupWrites(g);
    for (int32_t m : g.members) {
      plan.skip[static_cast<size_t>(m)] = 1;
      // A member's value is never stored, but for a merged group's stores.
      const int32_t out = program.code[static_cast<size_t>(m)].out;
      if (std::find(writes.begin(), writes.end(), out) != writes.end()) continue;
      const int32_t freed = facts.free_at[static_cast<size_t>(out)];
      if (freed >= 0) plan.skip[static_cast<size_t>(freed)] = 1;
    }
    for (int32_t b : g.deferred_frees) {
      needed_until[static_cast<size_t>(b)] = std::max(needed_until[static_cast<size_t>(b)], g.root);
    }
  }
}

// Marks the attention regions' kernels, the ops they replace with the kFrees of the values only
// those ops wrote, and the reads a kernel defers past the program's kFree.
void PlaceAttention(const DeviceProgram& program, const ProgramFacts& facts, FusionPlan& plan,
                    std::vector<int32_t>& needed_until) {
  auto defer = [&](const std::vector<int32_t>& reads, int32_t at) {
    for (int32_t b : reads) {
      const int32_t freed = facts.free_at[static_cast<size_t>(b)];
      if (freed >= 0 && freed < at) {
        needed_until[static_cast<size_t>(b)] = std::max(needed_until[static_cast<size_t>(b)], at);
      }
    }
  };
  for (size_t ri = 0; ri < plan.attention.size(); ++ri) {
    const AttentionRegion& r = plan.attention[ri];
    const std::vector<int32_t> fwd = AttentionWrites(r, false);
    const std::vector<int32_t> bwd = r.has_backward() ? AttentionWrites(r, true) : fwd;
    for (int32_t m : r.members) {
      if (m == r.forward_at || m == r.backward_at) {
        plan.attention_at[static_cast<size_t>(m)] = static_cast<int32_t>(ri);
      } else {
        plan.skip[static_cast<size_t>(m)] = 1;
      }
      const int32_t out = program.code[static_cast<size_t>(m)].out;
      const bool output = std::find(fwd.begin(), fwd.end(), out) != fwd.end() ||
                          std::find(bwd.begin(), bwd.end(), out) != bwd.end();
      const int32_t freed = facts.free_at[static_cast<size_t>(out)];
      if (!output && freed >= 0) plan.skip[static_cast<size_t>(freed)] = 1;
    }
    defer(AttentionForwardReads(r), r.forward_at);
    if (r.has_backward()) defer(AttentionBackwardReads(r), r.backward_at);
  }
}

// Marks where each product computed transposed runs, its transpose and the kFree of the result
// the dot no longer writes.
void PlaceProducts(const DeviceProgram& program, const ProgramFacts& facts, FusionPlan& plan) {
  for (size_t pi = 0; pi < plan.products.size(); ++pi) {
    const TransposedProduct& p = plan.products[pi];
    plan.product_at[static_cast<size_t>(p.dot_at)] = static_cast<int32_t>(pi);
    plan.skip[static_cast<size_t>(p.transpose_at)] = 1;
    const int32_t freed =
        facts.free_at[static_cast<size_t>(program.code[static_cast<size_t>(p.dot_at)].out)];
    if (freed >= 0) plan.skip[static_cast<size_t>(freed)] = 1;
  }
}

}  // namespace

FusionPlan PlanFusion(const DeviceProgram& program, const std::vector<DType>& storage,
                      std::vector<AttentionRegion> attention) {
  const size_t code = program.code.size();
  const std::vector<char> replaced = ReplacedByAttention(code, attention);
  const ProgramFacts facts = GatherFacts(program, storage, replaced);
  std::vector<char> alone = replaced;
  FusionPlan plan;
  for (bool changed = true; changed;)
    plan.groups = FormGroups(program, storage, facts, alone, changed);
  if (GroupMergingEnabled()) {
    plan.groups = MergeGroupsIntoTheirReaders(program, storage, std::move(plan.groups), attention);
  }
  plan.attention = std::move(attention);
  if (TransposedProductsEnabled())
    plan.products = PlanTransposedProducts(program, storage, replaced);
  plan.group_at.assign(code, -1);
  plan.attention_at.assign(code, -1);
  plan.product_at.assign(code, -1);
  plan.skip.assign(code, 0);
  plan.free_after.assign(code, {});
  std::vector<int32_t> needed_until(program.buffers.size(), -1);
  PlaceGroups(program, facts, plan, needed_until);
  PlaceAttention(program, facts, plan, needed_until);
  PlaceProducts(program, facts, plan);
  for (size_t b = 0; b < needed_until.size(); ++b) {
    if (needed_until[b] < 0) continue;
    plan.skip[static_cast<size_t>(facts.free_at[b])] = 1;
    plan.free_after[static_cast<size_t>(needed_until[b])].push_back(static_cast<int32_t>(b));
  }
  return plan;
}

int32_t FusedInputIndex(FusedGroup& g, int32_t b, DType storage) {
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    if (g.inputs[k] == b) return static_cast<int32_t>(k);
  }
  g.inputs.push_back(b);
  g.input_storage.push_back(storage);
  return static_cast<int32_t>(g.inputs.size()) - 1;
}

std::vector<int32_t> FusedGroupWrites(const FusedGroup& g) {
  std::vector<int32_t> writes = {g.out};
  for (const FusedStore& s : g.stores) writes.push_back(s.buffer);
  return writes;
}

int64_t BroadcastSourceIndex(const FusedNode& node, int64_t i) {
  int64_t source = 0;
  for (size_t d = node.sizes.size(); d-- > 0;) {
    source += (i % node.sizes[d]) * node.strides[d];
    i /= node.sizes[d];
  }
  return source;
}

namespace {

// The values of nodes [0, count) of g at element i of the operand's index space.
float NodeValuesAt(const FusedGroup& g, const std::vector<const void*>& inputs,
                   const std::vector<DType>& input_storage, int64_t i, size_t count,
                   std::vector<float>& v) {
  for (size_t k = 0; k < count; ++k) {
    const FusedNode& n = g.nodes[k];
    const size_t input = static_cast<size_t>(n.input);
    switch (n.kind) {
      case FusedNodeKind::kLoad:
        v[k] = LoadFloat(inputs[input], input_storage[input], i);
        break;
      case FusedNodeKind::kBroadcastLoad:
        v[k] = RoundFloatTo(
            LoadFloat(inputs[input], input_storage[input], BroadcastSourceIndex(n, i)), n.storage);
        break;
      case FusedNodeKind::kConstant:
        v[k] = n.value;
        break;
      case FusedNodeKind::kOp: {
        float x[3] = {0.0f, 0.0f, 0.0f};
        for (int32_t j = 0; j < n.operand_count; ++j) x[j] = v[static_cast<size_t>(n.operands[j])];
        v[k] = RoundFloatTo(
            FloatOpValue(n.op, n.comparison, n.operand_count, n.rounding, x[0], x[1], x[2]),
            n.storage);
        break;
      }
      case FusedNodeKind::kScale:
        v[k] = ScaledFloat(v[static_cast<size_t>(n.operands[0])], n.scale, n.rounding, n.storage);
        break;
      case FusedNodeKind::kReduce:
        break;  // the caller reduces
    }
  }
  return count > 0 ? v[count - 1] : 0.0f;
}

}  // namespace

float FusedValueAt(const FusedGroup& g, const std::vector<const void*>& inputs,
                   const std::vector<DType>& input_storage, int64_t i, int32_t node) {
  std::vector<float> v(g.nodes.size(), 0.0f);
  const FusedNode& root = g.nodes.back();
  if (root.kind != FusedNodeKind::kReduce) {
    const size_t count = node < 0 ? g.nodes.size() : static_cast<size_t>(node) + 1;
    return NodeValuesAt(g, inputs, input_storage, i, count, v);
  }
  const bool is_max = root.op == OpKind::kReduceMax;
  double acc = ReduceIdentity(is_max);
  for (int64_t c = 0; c < g.row; ++c) {
    const float x = NodeValuesAt(g, inputs, input_storage, i * g.row + c, g.nodes.size() - 1, v);
    acc = CombineReduce(is_max, acc, static_cast<double>(x));
  }
  unsigned char stored[8] = {};
  StoreElement(stored, root.storage, 0, FinishValue(acc, root.rounding));
  return LoadFloat(stored, root.storage, 0);
}

}  // namespace cuda
}  // namespace alpa
