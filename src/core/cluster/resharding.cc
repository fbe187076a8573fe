// Resharding plans: a shortest-path search over sharding specs (rules in resharding.h).
#include "core/cluster/resharding.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <queue>

namespace alpa {
namespace {

// A partial plan: its cost, tie-breaking keys, and its last step after the entry it extends
// (the steps are read back along the parents once the search ends; their layouts and texts are
// written only then).
struct Label {
  double cost = 0;
  int32_t collectives = 0;
  std::vector<std::array<int32_t, 4>> keys;  // (kind, mesh dim, from dim, to dim) per step
  int64_t parent = -1;                       // the entry this plan extends; -1 for the source
  ReshardStep step;                          // without `after` and `description`
};

// The search's entries: a spec and the plan that reaches it.
using Entries = std::vector<std::pair<ShardingSpec, Label>>;

bool NearlyEqual(double a, double b) {
  return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

// Cheaper first; ties: fewer collectives, fewer steps, canonical order.
bool Better(const Label& a, const Label& b) {
  if (!NearlyEqual(a.cost, b.cost)) return a.cost < b.cost;
  if (a.collectives != b.collectives) return a.collectives < b.collectives;
  if (a.keys.size() != b.keys.size()) return a.keys.size() < b.keys.size();
  return a.keys < b.keys;
}

bool Contains(const std::vector<int32_t>& v, int32_t k) {
  return std::find(v.begin(), v.end(), k) != v.end();
}

// Whether appending mesh dim k to cur.dims[i] moves it toward dst.dims[i].
bool AppendsTowardDst(const ShardingSpec& cur, const ShardingSpec& dst, size_t i, int32_t k) {
  const auto& c = cur.dims[i];
  const auto& d = dst.dims[i];
  return c.size() < d.size() && std::equal(c.begin(), c.end(), d.begin()) && d[c.size()] == k;
}

double LocalBytes(const ShardingSpec& spec, const std::vector<int64_t>& shape, int64_t elem,
                  const std::vector<int64_t>& mesh_shape) {
  long double b = static_cast<long double>(elem);
  for (size_t i = 0; i < shape.size(); ++i) {
    b *= static_cast<long double>(shape[i] / TensorDimShards(spec, i, mesh_shape));
  }
  return static_cast<double>(b);
}

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
  const std::vector<int64_t>& shape;
  int64_t elem;
  const LogicalMesh& mesh;
  CostMode mode;

  // Appends to `out` every move from `cur` (entry `base_entry`, labelled `base`); an error from
  // the cost model ends the search.
  Status Expand(const ShardingSpec& cur, const Label& base, int64_t base_entry,
                Entries& out) const {
    const double local = LocalBytes(cur, shape, elem, mesh.shape);
    const int32_t ndim = mesh.ndim();
    auto add = [&](ReshardStepKind kind, int32_t k, int32_t from, int32_t to, ShardingSpec next,
                   double bytes) -> Status {
      ReshardStep step;
      step.kind = kind;
      step.mesh_dims = {k};
      step.is_collective = kind != ReshardStepKind::kSlice && kind != ReshardStepKind::kZeroFill;
      if (step.is_collective) {
        step.collective = kind == ReshardStepKind::kAllReduce       ? CollectiveKind::kAllReduce
                          : kind == ReshardStepKind::kReduceScatter ? CollectiveKind::kReduceScatter
                          : kind == ReshardStepKind::kAllToAll      ? CollectiveKind::kAllToAll
                                                                    : CollectiveKind::kAllGather;
        const int64_t n = mesh.shape[static_cast<size_t>(k)];
        Result<double> c = MeshCollectiveCost(mesh, step.collective, k, bytes, mode);
        ALPA_RETURN_IF_ERROR(c.status());
        step.bytes = bytes;
        step.bytes_per_device = n > 1 ? ReceivedBytes(step.collective, n, bytes) : 0.0;
        step.cost = c.value();
      }
      Label l;
      l.cost = base.cost + step.cost;
      l.collectives = base.collectives + (step.is_collective ? 1 : 0);
      l.keys.reserve(base.keys.size() + 1);
      l.keys.assign(base.keys.begin(), base.keys.end());
      l.keys.push_back({static_cast<int32_t>(kind), k, from, to});
      l.parent = base_entry;
      l.step = std::move(step);
      out.emplace_back(std::move(next), std::move(l));
      return Status::Ok();
    };
    const size_t rank = cur.rank();
    // Partial sums not wanted by dst: all-reduce, or reduce-scatter onto a dim dst splits on k.
    for (int32_t k : cur.partial) {
      if (Contains(dst.partial, k)) continue;
      ShardingSpec reduced = cur;
      reduced.partial.erase(std::find(reduced.partial.begin(), reduced.partial.end(), k));
      ALPA_RETURN_IF_ERROR(add(ReshardStepKind::kAllReduce, k, -1, -1, reduced, local));
      for (size_t i = 0; i < rank; ++i) {
        if (!AppendsTowardDst(cur, dst, i, k)) continue;
        ShardingSpec next = reduced;
        next.dims[i].push_back(k);
        ALPA_RETURN_IF_ERROR(
            add(ReshardStepKind::kReduceScatter, k, -1, static_cast<int32_t>(i), next, local));
      }
    }
    // The minor-most mesh dim of each tensor dim: all-gather, or all-to-all onto another dim.
    for (size_t i = 0; i < rank; ++i) {
      if (cur.dims[i].empty()) continue;
      const int32_t k = cur.dims[i].back();
      const double group = local * static_cast<double>(mesh.shape[static_cast<size_t>(k)]);
      ShardingSpec gathered = cur;
      gathered.dims[i].pop_back();
      for (size_t j = 0; j < rank; ++j) {
        if (j == i || !AppendsTowardDst(cur, dst, j, k)) continue;
        ShardingSpec next = gathered;
        next.dims[j].push_back(k);
        ALPA_RETURN_IF_ERROR(add(ReshardStepKind::kAllToAll, k, static_cast<int32_t>(i),
                                 static_cast<int32_t>(j), next, group));
      }
      ALPA_RETURN_IF_ERROR(
          add(ReshardStepKind::kAllGather, k, static_cast<int32_t>(i), -1, gathered, group));
    }
    // Unused mesh dims: slice toward dst, or zero-fill where dst is partial.
    for (int32_t k = 0; k < ndim; ++k) {
      bool used = Contains(cur.partial, k);
      for (const auto& d : cur.dims) used = used || Contains(d, k);
      if (used) continue;
      for (size_t i = 0; i < rank; ++i) {
        if (!AppendsTowardDst(cur, dst, i, k)) continue;
        ShardingSpec next = cur;
        next.dims[i].push_back(k);
        ALPA_RETURN_IF_ERROR(add(ReshardStepKind::kSlice, k, -1, static_cast<int32_t>(i), next, 0));
      }
      if (Contains(dst.partial, k)) {
        ShardingSpec next = cur;
        next.partial.insert(std::lower_bound(next.partial.begin(), next.partial.end(), k), k);
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
std::vector<ReshardStep> StepsOf(const Entries& entries, int64_t e, bool describe) {
  std::vector<int64_t> chain;
  for (int64_t i = e; entries[static_cast<size_t>(i)].second.parent >= 0;
       i = entries[static_cast<size_t>(i)].second.parent) {
    chain.push_back(i);
  }
  std::vector<ReshardStep> steps;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const auto& [after, label] = entries[static_cast<size_t>(*it)];
    const ShardingSpec& before = entries[static_cast<size_t>(label.parent)].first;
    ReshardStep step = label.step;
    if (!describe) {
      steps.push_back(std::move(step));
      continue;
    }
    step.description = std::string(ReshardStepName(step.kind)) + " " +
                       StepObject(label.keys.back()) + " over mesh dim " +
                       std::to_string(label.keys.back()[1]) + ": " + ToString(before) + " -> " +
                       ToString(after);
    step.after = after;
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

  const Planner planner{dst, tensor_shape, element_bytes, mesh, options.cost_mode};
  // Dijkstra over specs; the state space is small (each tensor dim's list is a prefix of its
  // src or dst list), so a lazy-deletion heap over stored labels is plenty.
  Entries entries;
  struct State {
    size_t best = 0;  // the entry of the best plan to reach the spec so far
    bool settled = false;
  };
  std::map<ShardingSpec, State> states;
  auto worse = [&](size_t a, size_t b) { return Better(entries[b].second, entries[a].second); };
  std::priority_queue<size_t, std::vector<size_t>, decltype(worse)> heap(worse);
  entries.emplace_back(src, Label{});
  states[src] = State{0, false};
  heap.push(0);
  Entries next;
  while (!heap.empty()) {
    const size_t e = heap.top();
    heap.pop();
    State& state = states[entries[e].first];
    if (state.best != e || state.settled) continue;
    state.settled = true;
    if (entries[e].first == dst) {
      ReshardPlan plan;
      plan.steps = StepsOf(entries, static_cast<int64_t>(e), options.describe);
      plan.plan_cost = entries[e].second.cost;
      plan.forbidden = options.alpa_compatible && IsAlpaForbiddenReshard(src, dst);
      plan.cost = plan.forbidden ? std::numeric_limits<double>::infinity() : plan.plan_cost;
      return plan;
    }
    next.clear();
    ALPA_RETURN_IF_ERROR(
        planner.Expand(entries[e].first, entries[e].second, static_cast<int64_t>(e), next));
    for (auto& [spec, label] : next) {
      auto it = states.find(spec);
      if (it != states.end() &&
          (it->second.settled || !Better(label, entries[it->second.best].second))) {
        continue;
      }
      entries.emplace_back(std::move(spec), std::move(label));
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
