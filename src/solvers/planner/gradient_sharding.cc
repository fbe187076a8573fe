// ZeRO-2's gradient chains (gradient_sharding.h).
#include "solvers/planner/gradient_sharding.h"

#include <algorithm>
#include <optional>

namespace alpa {

namespace {

bool IsRootKind(OpKind kind) {
  return kind == OpKind::kDotGeneral || kind == OpKind::kConvolution ||
         kind == OpKind::kReduceSum || kind == OpKind::kScatterAdd;
}

// Whether `op` is linear in its operand `from` (the one computed operand; the others free).
bool LinearIn(const Op& op, size_t from) {
  switch (op.kind) {
    case OpKind::kNeg:
    case OpKind::kConvert:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kBroadcastInDim:
    case OpKind::kReverse:
    case OpKind::kMul:
      return true;
    case OpKind::kDiv:
      return from == 0;
    default:
      return false;
  }
}

// The read slots of every op, (reader, operand index), in one array (no allocation per op: this
// runs after every intra-op solve).
class ReadSlots {
 public:
  explicit ReadSlots(const Graph& graph) : begin_(static_cast<size_t>(graph.size()) + 1, 0) {
    for (const Op& op : graph.ops) {
      for (int32_t o : op.operands) ++begin_[static_cast<size_t>(o) + 1];
    }
    for (size_t i = 1; i < begin_.size(); ++i) begin_[i] += begin_[i - 1];
    slots_.resize(begin_.back());
    std::vector<size_t> next(begin_.begin(), begin_.end() - 1);
    for (int32_t v = 0; v < graph.size(); ++v) {
      const std::vector<int32_t>& operands = graph.op(v).operands;
      for (size_t k = 0; k < operands.size(); ++k) {
        slots_[next[static_cast<size_t>(operands[k])]++] = {v, static_cast<int32_t>(k)};
      }
    }
  }
  size_t count(int32_t v) const {
    return begin_[static_cast<size_t>(v) + 1] - begin_[static_cast<size_t>(v)];
  }
  const std::pair<int32_t, int32_t>& first(int32_t v) const {
    return slots_[begin_[static_cast<size_t>(v)]];
  }

 private:
  std::vector<size_t> begin_;
  std::vector<std::pair<int32_t, int32_t>> slots_;
};

bool Computed(const OpSharding& s) { return !s.free && !s.fused; }

// The chain that ends at t, walking back to its root; nullopt when the walk leaves the rules.
std::optional<GradientChain> WalkBack(const Graph& graph, const AutoShardResult& result, int32_t t,
                                      const ReadSlots& slots, const std::vector<char>& is_output,
                                      const std::vector<char>& has_collective) {
  GradientChain c;
  c.tensor = t;
  int32_t cur = t;
  std::vector<int32_t> after_root;
  for (;;) {
    const Op& op = graph.op(cur);
    if (!Computed(result.ops[static_cast<size_t>(cur)]) || is_output[static_cast<size_t>(cur)]) {
      return std::nullopt;
    }
    if (op.phase == Phase::kBackward && IsRootKind(op.kind)) break;
    // One computed operand, the op linear in it.
    int32_t from = -1;
    size_t from_slot = 0;
    for (size_t k = 0; k < op.operands.size(); ++k) {
      if (!result.ops[static_cast<size_t>(op.operands[k])].free) {
        if (from >= 0) return std::nullopt;
        from = op.operands[k];
        from_slot = k;
      }
    }
    if (from < 0 || !LinearIn(op, from_slot)) return std::nullopt;
    // The operand is read by this op only, and nothing lays it out on the way.
    if (slots.count(from) != 1 || has_collective[static_cast<size_t>(from)]) {
      return std::nullopt;
    }
    after_root.push_back(cur);
    cur = from;
  }
  c.root = cur;
  std::reverse(after_root.begin(), after_root.end());
  c.chain = std::move(after_root);
  return c;
}

// The layout t is summed in and the collectives that lay it out (all gradient synchronisations,
// one a reduce-scatter); false when t is read otherwise.
bool AccumulateLayout(const AutoShardResult& result, const ReadSlots& slots, GradientChain& c) {
  const OpSharding& s = result.ops[static_cast<size_t>(c.tensor)];
  if (s.reader_layout) {
    c.accumulate_spec = *s.reader_layout;
    c.reader_layout = true;
  } else {
    if (slots.count(c.tensor) != 1) return false;
    c.consumer = slots.first(c.tensor).first;
    c.operand = slots.first(c.tensor).second;
    const OpSharding& reader = result.ops[static_cast<size_t>(c.consumer)];
    if (static_cast<size_t>(c.operand) >= reader.operands.size()) return false;
    c.accumulate_spec = reader.operands[static_cast<size_t>(c.operand)];
  }
  bool scatters = false;
  for (size_t i = 0; i < result.collectives.size(); ++i) {
    const PlannedCollective& pc = result.collectives[i];
    if (pc.tensor != c.tensor || pc.inside_op) continue;
    const bool moved =
        c.reader_layout ? pc.consumer < 0 : pc.consumer == c.consumer && pc.operand == c.operand;
    if (!moved) continue;
    if (!pc.gradient_sync) return false;
    scatters = scatters || pc.kind == CollectiveKind::kReduceScatter;
    c.collectives.push_back(static_cast<int32_t>(i));
  }
  return scatters;
}

}  // namespace

GradientSharding FindGradientChains(const Graph& graph, const AutoShardResult& result) {
  GradientSharding out;
  if (result.ops.size() != graph.ops.size()) return out;
  std::vector<int32_t> scattered;  // tensors with a reduce-scatter of the gradient sync
  for (const PlannedCollective& pc : result.collectives) {
    if (pc.tensor >= 0 && pc.tensor < graph.size() && pc.gradient_sync &&
        pc.kind == CollectiveKind::kReduceScatter) {
      scattered.push_back(pc.tensor);
    }
  }
  if (scattered.empty()) return out;
  std::vector<char> has_collective(static_cast<size_t>(graph.size()), 0);
  for (const PlannedCollective& pc : result.collectives) {
    if (pc.tensor >= 0 && pc.tensor < graph.size())
      has_collective[static_cast<size_t>(pc.tensor)] = 1;
  }
  const std::vector<int64_t> mesh_shape(result.mesh_shape.begin(), result.mesh_shape.end());
  const ReadSlots slots(graph);
  std::vector<char> is_output(static_cast<size_t>(graph.size()), 0);
  for (int32_t o : graph.outputs) is_output[static_cast<size_t>(o)] = 1;
  std::sort(scattered.begin(), scattered.end());
  scattered.erase(std::unique(scattered.begin(), scattered.end()), scattered.end());
  for (int32_t t : scattered) {
    std::optional<GradientChain> c = WalkBack(graph, result, t, slots, is_output, has_collective);
    if (!c || !AccumulateLayout(result, slots, *c)) continue;
    // The bytes held over the iteration: the chain's gradients at full size, against t's shard.
    // The other chain values are transient under ZeRO-1 too (the model's working memory).
    int64_t full = 0;
    double update_seconds = 0;
    auto count = [&](int32_t v) {
      const OpSharding& s = result.ops[static_cast<size_t>(v)];
      if (graph.op(v).role == TensorRole::kGradient) full += s.memory_bytes;
      if (graph.op(v).phase == Phase::kUpdate) update_seconds += s.compute_cost;
    };
    count(c->root);
    for (int32_t v : c->chain) count(v);
    if (!ValidateShardingSpec(c->accumulate_spec, graph.op(t).shape, mesh_shape).ok()) continue;
    // t's shard as the auto-sharding model sizes a layout (op_strategies.cc). A plan read from
    // JSON carries no bytes per op: its chains are found, their bytes are 0.
    const int64_t shard = TensorBytes(graph.op(t)) / ShardCount(c->accumulate_spec, mesh_shape);
    out.saved_bytes += std::max<int64_t>(0, full - shard);
    out.transient_bytes = std::max(out.transient_bytes, full);
    out.moved_seconds += update_seconds;
    for (int32_t i : c->collectives) {
      out.moved_seconds += result.collectives[static_cast<size_t>(i)].cost;
    }
    out.chains.push_back(std::move(*c));
  }
  return out;
}

}  // namespace alpa
