// MergeGroupsIntoTheirReaders: the groups in program order; each one's results are followed to
// the kernels that read them (through a copy into a persistent buffer, to the kernels reading
// that buffer after the copy), and where that is one later group, TryMerge builds the merged
// kernel in that group's place (so that it may merge on into its own reader).
#include "exec/cuda/group_merge.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/util/sole_reader_merge.h"
#include "exec/cuda/env_switch.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {
namespace {

struct MergeFacts {
  std::vector<int32_t> root_of;                // per instruction: the group rooted there, or -1
  std::vector<std::vector<int32_t>> read_at;   // per buffer: where the kernels reading it run
  std::vector<std::vector<int32_t>> write_at;  // per buffer: the instructions writing it
  std::vector<int32_t> free_at;                // per buffer: its kFree, or -1
};

void AddRead(MergeFacts& f, int32_t buffer, int32_t at) {
  std::vector<int32_t>& r = f.read_at[static_cast<size_t>(buffer)];
  if (r.empty() || r.back() != at) r.push_back(at);
}

MergeFacts GatherMergeFacts(const DeviceProgram& program, const std::vector<FusedGroup>& groups,
                            const std::vector<AttentionRegion>& attention) {
  MergeFacts f;
  const size_t code = program.code.size();
  f.root_of.assign(code, -1);
  f.read_at.assign(program.buffers.size(), {});
  f.write_at.assign(program.buffers.size(), {});
  f.free_at.assign(program.buffers.size(), -1);
  std::vector<char> quiet(code, 0);  // the kernel that computes it runs elsewhere
  for (size_t g = 0; g < groups.size(); ++g) {
    f.root_of[static_cast<size_t>(groups[g].root)] = static_cast<int32_t>(g);
    for (int32_t m : groups[g].members) quiet[static_cast<size_t>(m)] = 1;
  }
  std::map<int32_t, std::vector<int32_t>> attention_reads;  // anchor -> buffers its kernel reads
  for (const AttentionRegion& r : attention) {
    for (int32_t m : r.members) quiet[static_cast<size_t>(m)] = 1;
    attention_reads[r.forward_at] = AttentionForwardReads(r);
    if (r.has_backward()) attention_reads[r.backward_at] = AttentionBackwardReads(r);
  }
  for (size_t i = 0; i < code; ++i) {
    const Instruction& in = program.code[i];
    const int32_t at = static_cast<int32_t>(i);
    if (in.kind == InstructionKind::kFree) {
      f.free_at[static_cast<size_t>(in.in[0])] = at;
      continue;
    }
    if (in.out >= 0) f.write_at[static_cast<size_t>(in.out)].push_back(at);
    const int32_t g = f.root_of[i];
    const auto region = attention_reads.find(at);
    if (g >= 0) {
      for (int32_t b : groups[static_cast<size_t>(g)].inputs) AddRead(f, b, at);
    } else if (region != attention_reads.end()) {
      for (int32_t b : region->second) AddRead(f, b, at);
    } else if (!quiet[i]) {
      for (int32_t b : in.in) AddRead(f, b, at);
    }
  }
  return f;
}

int64_t BytesOf(const DeviceProgram& program, int32_t b) {
  const Buffer& buffer = program.buffers[static_cast<size_t>(b)];
  return ElementCountOf(buffer.shape) * DTypeBytes(buffer.dtype);
}

// A group as the merging has made it: for each store into a persistent buffer, the copy it
// replaces (reads after that copy are of the value it stores).
struct MergeState {
  std::map<int32_t, int32_t> copy_of;  // stored persistent buffer -> the copy it replaces
};

// Whether instruction c copies buffer src, which nothing else reads, into a buffer of the same
// dtype, storage and size (the optimizer's new state into its persistent buffer).
bool MovesAway(const DeviceProgram& program, const std::vector<DType>& storage, const MergeFacts& f,
               int32_t src, int32_t c) {
  const Instruction& in = program.code[static_cast<size_t>(c)];
  if (in.kind != InstructionKind::kCopy || in.in.size() != 1 || in.in[0] != src) return false;
  const int32_t dst = in.out;
  if (dst < 0 || dst == src) return false;
  const Buffer& s = program.buffers[static_cast<size_t>(src)];
  const Buffer& d = program.buffers[static_cast<size_t>(dst)];
  if (s.persistent || s.dtype != d.dtype || ElementCountOf(s.shape) != ElementCountOf(d.shape) ||
      storage[static_cast<size_t>(src)] != storage[static_cast<size_t>(dst)]) {
    return false;
  }
  const std::vector<int32_t>& writes = f.write_at[static_cast<size_t>(dst)];
  return writes.size() == 1 && writes[0] == c;
}

// The one group that reads what group g computes (its results, and where a copy moves one, the
// buffer it moves it to after the copy), with the copies; -1 where another instruction reads one
// of them, or none does.
int32_t SoleReader(const DeviceProgram& program, const std::vector<DType>& storage,
                   const MergeFacts& f, const std::vector<FusedGroup>& groups,
                   const MergeOwners& owners, int32_t gi, const MergeState& state,
                   std::vector<int32_t>& copies) {
  const FusedGroup& g = groups[static_cast<size_t>(gi)];
  std::set<int32_t> readers;  // groups, or -1 - instruction for other instructions
  auto read_after = [&](int32_t b, int32_t after) {
    for (int32_t at : f.read_at[static_cast<size_t>(b)]) {
      if (at <= after) continue;
      const int32_t root = f.root_of[static_cast<size_t>(at)];
      const int32_t reader = root >= 0 ? owners.Holder(root) : -1 - at;
      if (reader != gi) readers.insert(reader);
    }
  };
  copies.clear();
  for (int32_t b : FusedGroupWrites(g)) {
    const auto copied = state.copy_of.find(b);
    if (copied != state.copy_of.end()) {
      read_after(b, copied->second);
      continue;
    }
    const std::vector<int32_t>& reads = f.read_at[static_cast<size_t>(b)];
    if (reads.size() == 1 && MovesAway(program, storage, f, b, reads[0])) {
      copies.push_back(reads[0]);
      read_after(program.code[static_cast<size_t>(reads[0])].out, reads[0]);
      continue;
    }
    if (reads.empty() || program.buffers[static_cast<size_t>(b)].persistent) return -1;
    read_after(b, g.root);
  }
  if (readers.size() != 1 || *readers.begin() < 0) return -1;
  const int32_t reader = *readers.begin();
  return groups[static_cast<size_t>(reader)].root > g.root ? reader : -1;
}

// The values of group a by the buffer they are in when its reader runs (a's results, and where
// `copies` move them): buffer -> a's node.
using Made = std::map<int32_t, int32_t>;

Made ValuesMade(const DeviceProgram& program, const FusedGroup& a,
                const std::vector<int32_t>& copies) {
  Made made;
  made[a.out] = static_cast<int32_t>(a.nodes.size()) - 1;
  for (const FusedStore& s : a.stores) made[s.buffer] = s.node;
  for (int32_t c : copies) {
    const Instruction& in = program.code[static_cast<size_t>(c)];
    made[in.out] = made.at(in.in[0]);
  }
  return made;
}

// Whether an op of b reads a copy's target before the copy (the old value, which the merged
// kernel would replace by the new one).
bool ReadsAnOldValue(const DeviceProgram& program, const FusedGroup& b,
                     const std::map<int32_t, int32_t>& copy_of) {
  std::vector<int32_t> ops = b.members;
  ops.push_back(b.root);
  for (const auto& [target, c] : copy_of) {
    for (int32_t r : ops) {
      const std::vector<int32_t>& in = program.code[static_cast<size_t>(r)].in;
      if (r < c && std::find(in.begin(), in.end(), target) != in.end()) return true;
    }
  }
  return false;
}

// Appends b's nodes to m (a's), each load of a value a makes replaced by a's node. False where b
// reads such a value through a broadcast.
bool AppendNodes(const FusedGroup& b, const Made& made, FusedGroup& m,
                 std::vector<int32_t>& node_of) {
  node_of.assign(b.nodes.size(), -1);
  for (size_t k = 0; k < b.nodes.size(); ++k) {
    FusedNode n = b.nodes[k];
    if (n.kind == FusedNodeKind::kLoad || n.kind == FusedNodeKind::kBroadcastLoad) {
      const int32_t buffer = b.inputs[static_cast<size_t>(n.input)];
      const auto found = made.find(buffer);
      if (found != made.end()) {
        if (n.kind == FusedNodeKind::kBroadcastLoad) return false;
        node_of[k] = found->second;
        continue;
      }
      n.input = FusedInputIndex(m, buffer, b.input_storage[static_cast<size_t>(n.input)]);
    } else if (n.kind == FusedNodeKind::kOp || n.kind == FusedNodeKind::kScale) {
      for (int32_t j = 0; j < n.operand_count; ++j) n.operands[j] = node_of[n.operands[j]];
    } else if (n.kind == FusedNodeKind::kReduce) {
      return false;
    }
    m.nodes.push_back(std::move(n));
    node_of[k] = static_cast<int32_t>(m.nodes.size()) - 1;
  }
  return node_of.back() == static_cast<int32_t>(m.nodes.size()) - 1;
}

// Whether every read of a buffer the kernel also stores is of the element it stores (a kLoad),
// so that each thread reads its elements' old values before it writes the new ones.
bool StoresInPlaceSafely(const FusedGroup& m) {
  for (const FusedStore& s : m.stores) {
    for (const FusedNode& n : m.nodes) {
      if (n.kind != FusedNodeKind::kBroadcastLoad) continue;
      if (m.inputs[static_cast<size_t>(n.input)] == s.buffer) return false;
    }
  }
  return true;
}

// Whether an instruction between a's root and b's writes what a reads, but the copies the
// merged kernel replaces.
bool InputsOverwritten(const MergeFacts& f, const FusedGroup& a, int32_t until,
                       const std::vector<int32_t>& copies) {
  for (int32_t x : a.inputs) {
    for (int32_t w : f.write_at[static_cast<size_t>(x)]) {
      if (w <= a.root || w >= until) continue;
      if (std::find(copies.begin(), copies.end(), w) == copies.end()) return true;
    }
  }
  return false;
}

// The merge of group a into its sole reader b, with the copies of a's results it replaces;
// nullopt where a rule of group_merge.h forbids it. `state` is a's, and becomes the merge's.
std::optional<FusedGroup> TryMerge(const DeviceProgram& program, const MergeFacts& f,
                                   const FusedGroup& a, const FusedGroup& b,
                                   const std::vector<int32_t>& copies, MergeState& state) {
  if (a.row != 0 || b.row != 0 || a.elements != b.elements) return std::nullopt;
  if (InputsOverwritten(f, a, b.root, copies)) return std::nullopt;
  std::map<int32_t, int32_t> copy_of = state.copy_of;
  for (int32_t c : copies) copy_of[program.code[static_cast<size_t>(c)].out] = c;
  if (ReadsAnOldValue(program, b, copy_of)) return std::nullopt;
  const Made made = ValuesMade(program, a, copies);
  FusedGroup m;
  m.root = b.root;
  m.out = b.out;
  m.elements = b.elements;
  m.nodes = a.nodes;
  m.inputs = a.inputs;
  m.input_storage = a.input_storage;
  std::vector<int32_t> node_of;
  if (!AppendNodes(b, made, m, node_of)) return std::nullopt;
  // a's results in persistent buffers stay stored; the others only b read, and the ones the
  // copies move, are never allocated.
  std::set<int32_t> internal;
  int64_t saved = 0;
  for (const auto& [buffer, node] : made) {
    if (program.buffers[static_cast<size_t>(buffer)].persistent) {
      m.stores.push_back({node, buffer});
    } else {
      internal.insert(buffer);
      saved += BytesOf(program, buffer);
    }
  }
  for (const FusedStore& s : b.stores) {
    m.stores.push_back({node_of[static_cast<size_t>(s.node)], s.buffer});
  }
  if (m.inputs.size() > static_cast<size_t>(kMaxFusedGroupInputs) ||
      m.nodes.size() > static_cast<size_t>(kMaxFusedGroupNodes) ||
      m.stores.size() > static_cast<size_t>(kMaxFusedGroupStores) || !StoresInPlaceSafely(m)) {
    return std::nullopt;
  }
  // The inputs of a that the program frees before b now live until b.
  int64_t deferred = 0;
  m.deferred_frees = a.deferred_frees;
  for (int32_t x : a.inputs) {
    const int32_t freed = f.free_at[static_cast<size_t>(x)];
    if (freed <= a.root || freed >= b.root) continue;
    m.deferred_frees.push_back(x);
    deferred += BytesOf(program, x);
  }
  if (deferred > saved) return std::nullopt;
  m.deferred_frees.insert(m.deferred_frees.end(), b.deferred_frees.begin(), b.deferred_frees.end());
  std::sort(m.deferred_frees.begin(), m.deferred_frees.end());
  m.deferred_frees.erase(std::unique(m.deferred_frees.begin(), m.deferred_frees.end()),
                         m.deferred_frees.end());
  m.deferred_frees.erase(std::remove_if(m.deferred_frees.begin(), m.deferred_frees.end(),
                                        [&](int32_t x) { return internal.count(x) != 0; }),
                         m.deferred_frees.end());
  m.members = a.members;
  m.members.push_back(a.root);
  m.members.insert(m.members.end(), copies.begin(), copies.end());
  m.members.insert(m.members.end(), b.members.begin(), b.members.end());
  std::sort(m.members.begin(), m.members.end());
  state.copy_of = std::move(copy_of);
  return m;
}

}  // namespace

bool GroupMergingEnabled() { return SwitchedOnByDefault("ALPA_CUDA_MULTI_OUTPUT"); }

std::vector<FusedGroup> MergeGroupsIntoTheirReaders(const DeviceProgram& program,
                                                    const std::vector<DType>& storage,
                                                    std::vector<FusedGroup> groups,
                                                    const std::vector<AttentionRegion>& attention) {
  const MergeFacts f = GatherMergeFacts(program, groups, attention);
  std::vector<MergeState> state(groups.size());
  std::vector<int32_t> copies;  // SoleReader's, for the merge of the same group that follows
  const MergeOwners owners = MergeIntoSoleReaders(
      groups.size(),
      [&](int32_t g, const MergeOwners& now) {
        return SoleReader(program, storage, f, groups, now, g, state[static_cast<size_t>(g)],
                          copies);
      },
      [&](int32_t g, int32_t reader) {
        const size_t ug = static_cast<size_t>(g), r = static_cast<size_t>(reader);
        MergeState merged_state = state[ug];
        std::optional<FusedGroup> m =
            TryMerge(program, f, groups[ug], groups[r], copies, merged_state);
        if (!m) return false;
        groups[r] = std::move(*m);
        // The reader's own stores' copies (from groups merged into it before) stay known.
        merged_state.copy_of.insert(state[r].copy_of.begin(), state[r].copy_of.end());
        state[r] = std::move(merged_state);
        return true;
      });
  std::vector<FusedGroup> kept;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (owners.Holds(g)) kept.push_back(std::move(groups[g]));
  }
  return kept;
}

}  // namespace cuda
}  // namespace alpa
