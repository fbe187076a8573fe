// Resharding plans: a shortest-path search over sharding specs (rules in resharding.h).
#include "core/cluster/resharding.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>

namespace alpa {
namespace {

// A spec inside the search, as bytes: per mesh dim its place (two bytes: kUnused, kPartial or
// the tensor dim + 1 whose list holds it) and its position in that list (one byte). Meshes of
// up to 5 dims fit the string's inline buffer, so moving between layouts allocates nothing.
using Code = std::string;
constexpr uint32_t kUnused = 0;
constexpr uint32_t kPartial = 0xffff;
constexpr int32_t kMaxMeshDims = 255;     // positions fit one byte
constexpr size_t kMaxTensorDims = 65533;  // places fit two bytes

uint32_t PlaceOf(const Code& c, int32_t k) {
  const size_t at = 3 * static_cast<size_t>(k);
  return static_cast<uint32_t>(static_cast<uint8_t>(c[at])) |
         static_cast<uint32_t>(static_cast<uint8_t>(c[at + 1])) << 8;
}

void SetPlace(Code& c, int32_t k, uint32_t place, int32_t position) {
  const size_t at = 3 * static_cast<size_t>(k);
  c[at] = static_cast<char>(place & 0xff);
  c[at + 1] = static_cast<char>(place >> 8);
  c[at + 2] = static_cast<char>(position);
}

int32_t PositionOf(const Code& c, int32_t k) {
  return static_cast<uint8_t>(c[3 * static_cast<size_t>(k) + 2]);
}

Code Encode(const ShardingSpec& spec, int32_t ndim) {
  Code c(3 * static_cast<size_t>(ndim), '\0');
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    for (size_t p = 0; p < spec.dims[i].size(); ++p) {
      SetPlace(c, spec.dims[i][p], static_cast<uint32_t>(i) + 1, static_cast<int32_t>(p));
    }
  }
  for (int32_t k : spec.partial) SetPlace(c, k, kPartial, 0);
  return c;
}

ShardingSpec Decode(const Code& c, size_t rank) {
  ShardingSpec spec = ShardingSpec::Replicated(rank);
  const int32_t ndim = static_cast<int32_t>(c.size() / 3);
  for (int32_t k = 0; k < ndim; ++k) {
    const uint32_t place = PlaceOf(c, k);
    if (place == kPartial) {
      spec.partial.push_back(k);  // increasing, as specs keep it
    } else if (place != kUnused) {
      std::vector<int32_t>& list = spec.dims[place - 1];
      const size_t p = static_cast<size_t>(PositionOf(c, k));
      if (list.size() <= p) list.resize(p + 1);
      list[p] = k;
    }
  }
  return spec;
}

// The collective a step kind runs; nullopt for the local steps (slice, zero-fill).
std::optional<CollectiveKind> CollectiveOf(ReshardStepKind kind) {
  switch (kind) {
    case ReshardStepKind::kAllReduce:
      return CollectiveKind::kAllReduce;
    case ReshardStepKind::kReduceScatter:
      return CollectiveKind::kReduceScatter;
    case ReshardStepKind::kAllToAll:
      return CollectiveKind::kAllToAll;
    case ReshardStepKind::kAllGather:
      return CollectiveKind::kAllGather;
    case ReshardStepKind::kSlice:
    case ReshardStepKind::kZeroFill:
      return std::nullopt;
  }
  return std::nullopt;
}

// A partial plan: its cost, tie-breaking keys, and its last step after the entry it extends
// (the earlier steps and keys are read back along the parents; the step's kind and mesh dim are
// its key's, its text and layout after are written once the search ends).
struct Label {
  double cost = 0;
  int32_t collectives = 0;
  int32_t depth = 0;                // steps
  std::array<int32_t, 4> key = {};  // the last step's (kind, mesh dim, from dim, to dim)
  int64_t parent = -1;              // the entry this plan extends; -1 for the source
  double bytes = 0, bytes_per_device = 0, step_cost = 0;  // the last step's (0 when local)
};

// The search's entries: a spec and the plan that reaches it.
using Entries = std::vector<std::pair<Code, Label>>;

bool NearlyEqual(double a, double b) {
  return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

// The keys of a plan ending in `label`, first step first.
void KeysOf(const Entries& entries, const Label& label, std::vector<std::array<int32_t, 4>>& out) {
  out.resize(static_cast<size_t>(label.depth));
  const Label* l = &label;
  for (size_t i = out.size(); i-- > 0;) {
    out[i] = l->key;
    if (l->parent >= 0) l = &entries[static_cast<size_t>(l->parent)].second;
  }
}

// Cheaper first; ties: fewer collectives, fewer steps, canonical order of the keys.
class Order {
 public:
  explicit Order(const Entries& entries) : entries_(entries) {}
  bool Better(const Label& a, const Label& b) const {
    if (!NearlyEqual(a.cost, b.cost)) return a.cost < b.cost;
    if (a.collectives != b.collectives) return a.collectives < b.collectives;
    if (a.depth != b.depth) return a.depth < b.depth;
    KeysOf(entries_, a, keys_a_);
    KeysOf(entries_, b, keys_b_);
    return keys_a_ < keys_b_;
  }

 private:
  const Entries& entries_;
  mutable std::vector<std::array<int32_t, 4>> keys_a_, keys_b_;
};

double ReceivedBytes(CollectiveKind kind, int64_t n, double b) {
  const double nd = static_cast<double>(n);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (nd - 1) / nd * b;
    case CollectiveKind::kAllToAll:
      return (nd - 1) / (nd * nd) * b;
    default:
      return (nd - 1) / nd * b;
  }
}

struct Planner {
  const ShardingSpec& dst;
  const Code& dst_code;
  const std::vector<int64_t>& shape;
  int64_t elem;
  const LogicalMesh& mesh;
  CostMode mode;

  // The current spec's lists, per tensor dim: length, minor-most mesh dim (-1 when empty),
  // shard count, and whether it is a prefix of dst's list.
  struct Lists {
    std::vector<int32_t> length, last;
    std::vector<int64_t> shards;
    std::vector<char> prefix_of_dst;
  };

  void Read(const Code& cur, Lists& lists) const {
    const size_t rank = shape.size();
    lists.length.assign(rank, 0);
    lists.last.assign(rank, -1);
    lists.shards.assign(rank, 1);
    lists.prefix_of_dst.assign(rank, 1);
    for (int32_t k = 0; k < mesh.ndim(); ++k) {
      const uint32_t place = PlaceOf(cur, k);
      if (place == kUnused || place == kPartial) continue;
      const size_t i = place - 1;
      const int32_t position = PositionOf(cur, k);
      ++lists.length[i];
      if (lists.last[i] < 0 || position > PositionOf(cur, lists.last[i])) lists.last[i] = k;
      lists.shards[i] *= mesh.shape[static_cast<size_t>(k)];
      if (PlaceOf(dst_code, k) != place || PositionOf(dst_code, k) != position) {
        lists.prefix_of_dst[i] = 0;
      }
    }
  }

  // Whether appending mesh dim k to the current list of tensor dim i moves it toward dst.
  bool AppendsTowardDst(const Lists& lists, size_t i, int32_t k) const {
    const std::vector<int32_t>& d = dst.dims[i];
    const size_t n = static_cast<size_t>(lists.length[i]);
    return lists.prefix_of_dst[i] && n < d.size() && d[n] == k;
  }

  // Appends to `out` every move from `cur` (entry `base_entry`, labelled `base`); an error from
  // the cost model ends the search.
  Status Expand(const Code& cur, const Label& base, int64_t base_entry, Lists& lists,
                Entries& out) const {
    Read(cur, lists);
    long double b = static_cast<long double>(elem);
    for (size_t i = 0; i < shape.size(); ++i) {
      b *= static_cast<long double>(shape[i] / lists.shards[i]);
    }
    const double local = static_cast<double>(b);
    const int32_t ndim = mesh.ndim();
    auto add = [&](ReshardStepKind kind, int32_t k, int32_t from, int32_t to, Code next,
                   double bytes) -> Status {
      Label l;
      const std::optional<CollectiveKind> collective = CollectiveOf(kind);
      if (collective) {
        const int64_t n = mesh.shape[static_cast<size_t>(k)];
        Result<double> c = MeshCollectiveCost(mesh, *collective, k, bytes, mode);
        ALPA_RETURN_IF_ERROR(c.status());
        l.bytes = bytes;
        l.bytes_per_device = n > 1 ? ReceivedBytes(*collective, n, bytes) : 0.0;
        l.step_cost = c.value();
      }
      l.cost = base.cost + l.step_cost;
      l.collectives = base.collectives + (collective ? 1 : 0);
      l.depth = base.depth + 1;
      l.key = {static_cast<int32_t>(kind), k, from, to};
      l.parent = base_entry;
      out.emplace_back(std::move(next), l);
      return Status::Ok();
    };
    const size_t rank = shape.size();
    // Partial sums not wanted by dst: all-reduce, or reduce-scatter onto a dim dst splits on k.
    for (int32_t k = 0; k < ndim; ++k) {
      if (PlaceOf(cur, k) != kPartial || PlaceOf(dst_code, k) == kPartial) continue;
      Code reduced = cur;
      SetPlace(reduced, k, kUnused, 0);
      ALPA_RETURN_IF_ERROR(add(ReshardStepKind::kAllReduce, k, -1, -1, reduced, local));
      for (size_t i = 0; i < rank; ++i) {
        if (!AppendsTowardDst(lists, i, k)) continue;
        Code next = reduced;
        SetPlace(next, k, static_cast<uint32_t>(i) + 1, lists.length[i]);
        ALPA_RETURN_IF_ERROR(
            add(ReshardStepKind::kReduceScatter, k, -1, static_cast<int32_t>(i), next, local));
      }
    }
    // The minor-most mesh dim of each tensor dim: all-gather, or all-to-all onto another dim.
    for (size_t i = 0; i < rank; ++i) {
      const int32_t k = lists.last[i];
      if (k < 0) continue;
      const double group = local * static_cast<double>(mesh.shape[static_cast<size_t>(k)]);
      Code gathered = cur;
      SetPlace(gathered, k, kUnused, 0);
      for (size_t j = 0; j < rank; ++j) {
        if (j == i || !AppendsTowardDst(lists, j, k)) continue;
        Code next = gathered;
        SetPlace(next, k, static_cast<uint32_t>(j) + 1, lists.length[j]);
        ALPA_RETURN_IF_ERROR(add(ReshardStepKind::kAllToAll, k, static_cast<int32_t>(i),
                                 static_cast<int32_t>(j), next, group));
      }
      ALPA_RETURN_IF_ERROR(
          add(ReshardStepKind::kAllGather, k, static_cast<int32_t>(i), -1, gathered, group));
    }
    // Unused mesh dims: slice toward dst, or zero-fill where dst is partial.
    for (int32_t k = 0; k < ndim; ++k) {
      if (PlaceOf(cur, k) != kUnused) continue;
      for (size_t i = 0; i < rank; ++i) {
        if (!AppendsTowardDst(lists, i, k)) continue;
        Code next = cur;
        SetPlace(next, k, static_cast<uint32_t>(i) + 1, lists.length[i]);
        ALPA_RETURN_IF_ERROR(add(ReshardStepKind::kSlice, k, -1, static_cast<int32_t>(i), next, 0));
      }
      if (PlaceOf(dst_code, k) == kPartial) {
        Code next = cur;
        SetPlace(next, k, kPartial, 0);
        ALPA_RETURN_IF_ERROR(add(ReshardStepKind::kZeroFill, k, -1, -1, next, 0));
      }
    }
    return Status::Ok();
  }
};

// What a step moves, from its key (kind, mesh dim, from dim, to dim): "partial", "tensor dim 1",
// "tensor dim 0 to tensor dim 1", "partial onto tensor dim 2".
std::string StepObject(const std::array<int32_t, 4>& key) {
  const auto kind = static_cast<ReshardStepKind>(key[0]);
  const std::string from = "tensor dim " + std::to_string(key[2]);
  const std::string to = "tensor dim " + std::to_string(key[3]);
  switch (kind) {
    case ReshardStepKind::kAllReduce:
    case ReshardStepKind::kZeroFill:
      return "partial";
    case ReshardStepKind::kReduceScatter:
      return "partial onto " + to;
    case ReshardStepKind::kAllToAll:
      return from + " to " + to;
    case ReshardStepKind::kAllGather:
      return from;
    case ReshardStepKind::kSlice:
      return to;
  }
  return "?";
}

// The steps of entry `e`'s plan in execution order, each with its layout after and its text
// when `describe`.
std::vector<ReshardStep> StepsOf(const Entries& entries, int64_t e, size_t rank, bool describe) {
  std::vector<int64_t> chain;
  for (int64_t i = e; entries[static_cast<size_t>(i)].second.parent >= 0;
       i = entries[static_cast<size_t>(i)].second.parent) {
    chain.push_back(i);
  }
  std::vector<ReshardStep> steps;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const auto& [after, label] = entries[static_cast<size_t>(*it)];
    ReshardStep step;
    step.kind = static_cast<ReshardStepKind>(label.key[0]);
    const std::optional<CollectiveKind> collective = CollectiveOf(step.kind);
    step.is_collective = collective.has_value();
    if (collective) step.collective = *collective;
    step.mesh_dims = {label.key[1]};
    step.bytes = label.bytes;
    step.bytes_per_device = label.bytes_per_device;
    step.cost = label.step_cost;
    if (describe) {
      const Code& before = entries[static_cast<size_t>(label.parent)].first;
      step.after = Decode(after, rank);
      step.description = std::string(ReshardStepName(step.kind)) + " " + StepObject(label.key) +
                         " over mesh dim " + std::to_string(label.key[1]) + ": " +
                         ToString(Decode(before, rank)) + " -> " + ToString(step.after);
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace

const char* ReshardStepName(ReshardStepKind kind) {
  switch (kind) {
    case ReshardStepKind::kAllReduce:
      return "all-reduce";
    case ReshardStepKind::kReduceScatter:
      return "reduce-scatter";
    case ReshardStepKind::kAllToAll:
      return "all-to-all";
    case ReshardStepKind::kAllGather:
      return "all-gather";
    case ReshardStepKind::kSlice:
      return "slice";
    case ReshardStepKind::kZeroFill:
      return "zero-fill";
  }
  return "?";
}

int32_t ReshardPlan::NumCollectives() const {
  int32_t n = 0;
  for (const auto& s : steps) n += s.is_collective ? 1 : 0;
  return n;
}

std::vector<ReshardStep> ReshardPlan::Collectives() const {
  std::vector<ReshardStep> out;
  for (const auto& s : steps) {
    if (s.is_collective) out.push_back(s);
  }
  return out;
}

bool IsAlpaForbiddenReshard(const ShardingSpec& src, const ShardingSpec& dst) {
  const size_t rank = std::min(src.rank(), dst.rank());
  for (size_t i = 0; i < rank; ++i) {
    const auto& s = src.dims[i];
    const auto& d = dst.dims[i];
    size_t p = 0;
    while (p < s.size() && p < d.size() && s[p] == d[p]) ++p;
    if (p < s.size() && p < d.size()) return true;
  }
  return false;
}

Result<ReshardPlan> PlanReshard(const ShardingSpec& src, const ShardingSpec& dst,
                                const std::vector<int64_t>& tensor_shape, int64_t element_bytes,
                                const LogicalMesh& mesh, const ReshardOptions& options) {
  if (element_bytes < 1) {
    return InvalidArgument("reshard: element_bytes is " + std::to_string(element_bytes) +
                           " (must be >= 1)");
  }
  Status s = ValidateShardingSpec(src, tensor_shape, mesh.shape);
  if (!s.ok()) return Status(s.code(), "reshard source: " + s.message());
  s = ValidateShardingSpec(dst, tensor_shape, mesh.shape);
  if (!s.ok()) return Status(s.code(), "reshard destination: " + s.message());

  const int32_t ndim = mesh.ndim();
  if (ndim > kMaxMeshDims || tensor_shape.size() > kMaxTensorDims) {
    return InvalidArgument("reshard: a mesh of " + std::to_string(ndim) + " dims and a tensor of " +
                           std::to_string(tensor_shape.size()) + " dims (at most " +
                           std::to_string(kMaxMeshDims) + " and " + std::to_string(kMaxTensorDims) +
                           ")");
  }
  const Code src_code = Encode(src, ndim);
  const Code dst_code = Encode(dst, ndim);
  const Planner planner{dst, dst_code, tensor_shape, element_bytes, mesh, options.cost_mode};
  // Dijkstra over specs; the state space is small (each tensor dim's list is a prefix of its
  // src or dst list), so a lazy-deletion heap over stored labels is plenty.
  Entries entries;
  const Order order(entries);
  struct State {
    size_t best = 0;  // the entry of the best plan to reach the spec so far
    bool settled = false;
  };
  std::unordered_map<Code, State> states;
  auto worse = [&](size_t a, size_t b) {
    return order.Better(entries[b].second, entries[a].second);
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(worse)> heap(worse);
  entries.emplace_back(src_code, Label{});
  states[src_code] = State{0, false};
  heap.push(0);
  Entries next;
  Planner::Lists lists;
  while (!heap.empty()) {
    const size_t e = heap.top();
    heap.pop();
    State& state = states[entries[e].first];
    if (state.best != e || state.settled) continue;
    state.settled = true;
    if (entries[e].first == dst_code) {
      ReshardPlan plan;
      plan.steps = StepsOf(entries, static_cast<int64_t>(e), tensor_shape.size(), options.describe);
      plan.plan_cost = entries[e].second.cost;
      plan.forbidden = options.alpa_compatible && IsAlpaForbiddenReshard(src, dst);
      plan.cost = plan.forbidden ? std::numeric_limits<double>::infinity() : plan.plan_cost;
      return plan;
    }
    next.clear();
    ALPA_RETURN_IF_ERROR(
        planner.Expand(entries[e].first, entries[e].second, static_cast<int64_t>(e), lists, next));
    for (auto& [spec, label] : next) {
      auto it = states.find(spec);
      if (it != states.end() &&
          (it->second.settled || !order.Better(label, entries[it->second.best].second))) {
        continue;
      }
      entries.emplace_back(std::move(spec), label);
      const size_t added = entries.size() - 1;
      if (it != states.end()) {
        it->second.best = added;
      } else {
        states.emplace(entries[added].first, State{added, false});
      }
      heap.push(added);
    }
  }
  return InternalError("reshard: no plan from '" + ToString(src) + "' to '" + ToString(dst) + "'");
}

}  // namespace alpa
