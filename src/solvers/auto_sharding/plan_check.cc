// The independent plan checker (plan_check.h). Everything here is derived from the op semantics
// in core/ir/graph.h; nothing is taken from the strategy enumeration or the resharding planner.
// The layout rules per op kind are at the top of plan_check_rules.cc.
#include "solvers/auto_sharding/plan_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/cluster/sharding_spec.h"
#include "core/util/dtype.h"
#include "core/util/wide_int.h"

#include "solvers/auto_sharding/plan_check_internal.h"

namespace alpa {
namespace {

using namespace plan_check;  // NOLINT: the checker's own internals

// ---- The checker ----

bool IsPlanStatus(SolveStatus s) {
  return s == SolveStatus::kOptimal || s == SolveStatus::kFeasible || s == SolveStatus::kCancelled;
}

// The op whose result op `id`'s value is read from: itself, or through fused broadcasts (made by
// their readers) their operand's producer.
int32_t RealProducer(const Graph& graph, const AutoShardResult& result, int32_t id) {
  while (result.ops[static_cast<size_t>(id)].fused && !graph.op(id).operands.empty()) {
    id = graph.op(id).operands[0];
  }
  return id;
}

class PlanChecker {
 public:
  PlanChecker(const Graph& graph, const std::vector<int64_t>& mesh, const AutoShardResult& result)
      : graph_(graph), mesh_(mesh), result_(result) {}

  Status CheckStructure();
  Status CheckSpecs();
  Status CheckOps();
  Status CheckEdges();
  Status CheckObjective();

 private:
  const OpSharding& sharding(int32_t id) const { return result_.ops[static_cast<size_t>(id)]; }
  bool Materialized(int32_t id) const { return !sharding(id).free && !sharding(id).fused; }
  std::string EdgeName(int32_t producer, int32_t consumer, size_t k) const {
    return "edge " + DescribeOp(graph_, producer) + " -> operand " + std::to_string(k) + " of " +
           DescribeOp(graph_, consumer);
  }

  const Graph& graph_;
  const std::vector<int64_t>& mesh_;
  const AutoShardResult& result_;
  // Resharding collectives per (tensor, consumer, operand), in list order; inside-op ones per op.
  std::map<std::tuple<int32_t, int32_t, int32_t>, std::vector<size_t>> edge_collectives_;
  std::map<int32_t, std::vector<size_t>> op_collectives_;
};

Status PlanChecker::CheckStructure() {
  if (mesh_.empty()) return InvalidArgument("the mesh shape is empty");
  for (int64_t n : mesh_) {
    if (n < 1) return InvalidArgument("mesh shape has a dim of size " + std::to_string(n));
  }
  if (!result_.mesh_shape.empty() &&
      !std::equal(result_.mesh_shape.begin(), result_.mesh_shape.end(), mesh_.begin(),
                  mesh_.end())) {
    return InvalidArgument("the result was solved on another mesh shape than the one given");
  }
  if (!IsPlanStatus(result_.status)) {
    return InvalidArgument(std::string("the result holds no plan (status ") +
                           SolveStatusName(result_.status) + ")");
  }
  if (result_.ops.size() != graph_.ops.size()) {
    return InvalidArgument("the result has " + std::to_string(result_.ops.size()) +
                           " op shardings for a graph of " + std::to_string(graph_.size()) +
                           " ops");
  }
  std::vector<bool> output(static_cast<size_t>(graph_.size()), false);
  for (int32_t out : graph_.outputs)
    output[static_cast<size_t>(RealProducer(graph_, result_, out))] = true;
  for (int32_t id = 0; id < graph_.size(); ++id) {
    const OpSharding& s = sharding(id);
    const Op& op = graph_.op(id);
    if (s.free && s.fused) return OpError(graph_, id, "marked both free and fused");
    if (s.fused && op.kind != OpKind::kBroadcastInDim) {
      return OpError(graph_, id, "marked fused, but only broadcast_in_dim ops are fused");
    }
    if (s.on_chip && (s.free || s.fused)) {
      return OpError(graph_, id, "marked on chip, but it is not computed (free or fused)");
    }
    if (s.on_chip &&
        (op.kind == OpKind::kParameter || op.alias_of >= 0 || output[static_cast<size_t>(id)])) {
      return OpError(graph_, id,
                     "marked on chip, but a parameter, an update or an output is held in memory");
    }
    if (s.free) {
      for (int32_t x : op.operands) {
        const int32_t src = RealProducer(graph_, result_, x);
        if (!sharding(src).free) {
          return OpError(graph_, id,
                         "marked free (made locally in any layout) but reads " +
                             DescribeOp(graph_, src) + ", which is not free");
        }
      }
    }
  }
  const int32_t ndim = static_cast<int32_t>(mesh_.size());
  for (size_t i = 0; i < result_.collectives.size(); ++i) {
    const PlannedCollective& collective = result_.collectives[i];
    const std::string name =
        "collective " + std::to_string(i) + " (" + CollectiveName(collective.kind) +
        (collective.description.empty() ? "" : ", " + collective.description) + ")";
    if (collective.kind == CollectiveKind::kSendRecv) {
      return InvalidArgument(name + ": send-recv inside a mesh");
    }
    if (collective.mesh_dims.empty()) return InvalidArgument(name + ": no mesh dims");
    for (size_t j = 0; j < collective.mesh_dims.size(); ++j) {
      if (collective.mesh_dims[j] < 0 || collective.mesh_dims[j] >= ndim) {
        return InvalidArgument(name + ": mesh dim " + std::to_string(collective.mesh_dims[j]) +
                               " out of range for a " + std::to_string(ndim) + "-D mesh");
      }
      for (size_t j2 = 0; j2 < j; ++j2) {
        if (collective.mesh_dims[j2] == collective.mesh_dims[j])
          return InvalidArgument(name + ": a mesh dim twice");
      }
    }
    if (!std::isfinite(collective.cost)) return InvalidArgument(name + ": cost is not finite");
    if (collective.tensor < 0 || collective.tensor >= graph_.size() || collective.consumer < -1 ||
        collective.consumer >= graph_.size() ||
        (collective.consumer == -1 && collective.inside_op)) {
      return InvalidArgument(name + ": tensor or consumer op out of range");
    }
    if (collective.consumer == -1) {  // lays the tensor out for all its readers
      if (collective.operand != -1 || !sharding(collective.tensor).reader_layout) {
        return InvalidArgument(name + ": shared by the readers of " +
                               DescribeOp(graph_, collective.tensor) +
                               ", which has no reader layout (or names an operand)");
      }
      edge_collectives_[{collective.tensor, -1, -1}].push_back(i);
      continue;
    }
    if (collective.inside_op) {
      if (collective.consumer != collective.tensor) {
        return InvalidArgument(name + ": inside an op, but its consumer " +
                               DescribeOp(graph_, collective.consumer) + " is not its tensor " +
                               DescribeOp(graph_, collective.tensor));
      }
      if (!Materialized(collective.tensor)) {
        return OpError(graph_, collective.tensor, name + " is inside an op that is free or fused");
      }
      op_collectives_[collective.tensor].push_back(i);
    } else {
      const size_t n = graph_.op(collective.consumer).operands.size();
      if (collective.operand < 0 || static_cast<size_t>(collective.operand) >= n) {
        return InvalidArgument(name + ": operand " + std::to_string(collective.operand) + " of " +
                               DescribeOp(graph_, collective.consumer) + " does not exist");
      }
      edge_collectives_[{collective.tensor, collective.consumer, collective.operand}].push_back(i);
    }
  }
  return Status::Ok();
}

Status PlanChecker::CheckSpecs() {
  for (int32_t id = 0; id < graph_.size(); ++id) {
    if (!Materialized(id)) continue;
    const OpSharding& s = sharding(id);
    const Op& op = graph_.op(id);
    Status st = ValidateShardingSpec(s.result, op.shape, mesh_);
    if (!st.ok()) return OpError(graph_, id, "invalid result spec: " + st.message());
    if (s.operands.size() != op.operands.size()) {
      return OpError(graph_, id,
                     "has " + std::to_string(s.operands.size()) + " operand specs for " +
                         std::to_string(op.operands.size()) + " operands");
    }
    for (size_t k = 0; k < op.operands.size(); ++k) {
      st = ValidateShardingSpec(s.operands[k], graph_.op(op.operands[k]).shape, mesh_);
      if (!st.ok()) {
        return OpError(graph_, id,
                       "invalid spec for operand " + std::to_string(k) + ": " + st.message());
      }
    }
  }
  return Status::Ok();
}

Status PlanChecker::CheckOps() {
  for (int32_t id = 0; id < graph_.size(); ++id) {
    if (!Materialized(id)) continue;
    const OpSharding& op_sharding = sharding(id);
    const Op& op = graph_.op(id);
    std::vector<ShardingSpec> in;
    for (const ShardingSpec& spec : op_sharding.operands) in.push_back(Canonical(spec, mesh_));
    const ShardingSpec claimed = Canonical(op_sharding.result, mesh_);
    const OpView view{graph_, id, op, in, claimed};
    Layout got;
    std::string e = DeriveResult(view, got);
    if (e.empty()) e = DuplicateMeshDim(got);
    if (!e.empty()) return OpError(graph_, id, e);

    auto it = op_collectives_.find(id);
    if (it != op_collectives_.end()) {
      for (size_t i : it->second) {
        const PlannedCollective& c = result_.collectives[i];
        e = ApplyCollective(got, c, claimed, mesh_);
        if (!e.empty()) {
          return OpError(graph_, id,
                         std::string("its in-op ") + CollectiveName(c.kind) + " over " +
                             MeshDimsText(c.mesh_dims) + " (collective " + std::to_string(i) +
                             ") does not apply: " + e);
        }
      }
    }
    if (!got.max_pending.empty()) {
      return OpError(graph_, id,
                     "the reduced dims are split over " + MeshDimsText(got.max_pending) +
                         ", which needs an in-op all-reduce (max) over them; none is listed");
    }
    if (got.spec == claimed) continue;
    std::vector<int32_t> missing;
    for (int32_t m : got.spec.partial) {
      if (!Contains(claimed.partial, m)) missing.push_back(m);
    }
    bool partial_subset = true;
    for (int32_t m : claimed.partial) {
      partial_subset = partial_subset && Contains(got.spec.partial, m);
    }
    if (got.spec.dims == claimed.dims && partial_subset && !missing.empty()) {
      return OpError(
          graph_, id,
          "its local result is a partial sum over " + MeshDimsText(missing) +
              " (split contracting, reduced or table dims, or a partial operand), but the plan "
              "claims " +
              Quote(op_sharding.result) + " and lists no in-op all-reduce over " +
              MeshDimsText(missing));
    }
    std::string ins;
    for (size_t k = 0; k < op_sharding.operands.size(); ++k) {
      ins += (k > 0 ? ", " : "") + Quote(op_sharding.operands[k]);
    }
    return OpError(graph_, id,
                   "the plan claims result spec " + Quote(op_sharding.result) +
                       ", but from operand specs " + ins +
                       " (and its in-op collectives) it computes " + Quote(got.spec));
  }
  return Status::Ok();
}

Status PlanChecker::CheckEdges() {
  std::vector<bool> used(result_.collectives.size(), false);
  for (int32_t id = 0; id < graph_.size(); ++id) {
    if (!Materialized(id)) continue;
    const Op& op = graph_.op(id);
    for (size_t k = 0; k < op.operands.size(); ++k) {
      int32_t src = op.operands[k];
      ShardingSpec want = Canonical(sharding(id).operands[k], mesh_);
      // Through fused broadcasts: the wanted layout maps back onto the broadcast's operand.
      while (sharding(src).fused) {
        const Op& b = graph_.op(src);
        const Dims& xs = graph_.op(b.operands[0]).shape;
        ShardingSpec back;
        back.dims.assign(xs.size(), {});
        back.partial = want.partial;
        for (size_t i = 0; i < xs.size(); ++i) {
          const size_t od = static_cast<size_t>(b.attrs.dims[i]);
          if (xs[i] == b.shape[od]) back.dims[i] = want.dims[od];
        }
        want = std::move(back);
        src = b.operands[0];
      }
      if (sharding(src).free) continue;
      Layout have;
      have.spec = Canonical(sharding(src).result, mesh_);
      if (sharding(src).reader_layout) {
        // Every reader reads the reader layout: check the shared resharding into it, then go on
        // from there.
        const ShardingSpec layout = Canonical(*sharding(src).reader_layout, mesh_);
        auto shared = edge_collectives_.find({src, -1, -1});
        if (shared != edge_collectives_.end()) {
          for (size_t i : shared->second) {
            used[i] = true;
            const PlannedCollective& c = result_.collectives[i];
            std::string e = ApplyCollective(have, c, layout, mesh_);
            if (!e.empty()) {
              return InvalidArgument("reader layout of " + DescribeOp(graph_, src) + ": its " +
                                     CollectiveName(c.kind) + " over " + MeshDimsText(c.mesh_dims) +
                                     " (collective " + std::to_string(i) +
                                     ") does not apply: " + e);
            }
          }
        }
        std::string e = LocalDifference(have.spec, layout);
        if (!e.empty()) {
          return InvalidArgument("reader layout of " + DescribeOp(graph_, src) + ": " + e);
        }
        have = Layout();
        have.spec = layout;
      }
      auto it = edge_collectives_.find({src, id, static_cast<int32_t>(k)});
      if (it != edge_collectives_.end()) {
        for (size_t i : it->second) {
          used[i] = true;
          const PlannedCollective& c = result_.collectives[i];
          std::string e = ApplyCollective(have, c, want, mesh_);
          if (!e.empty()) {
            return InvalidArgument(EdgeName(src, id, k) + ": its " + CollectiveName(c.kind) +
                                   " over " + MeshDimsText(c.mesh_dims) + " (collective " +
                                   std::to_string(i) + ") does not apply: " + e);
          }
        }
      }
      std::string e = LocalDifference(have.spec, want);
      if (!e.empty()) {
        return InvalidArgument(
            EdgeName(src, id, k) + ": after its " +
            std::to_string(it == edge_collectives_.end() ? 0 : it->second.size()) +
            " collective(s) " + e);
      }
    }
  }
  for (size_t i = 0; i < result_.collectives.size(); ++i) {
    const PlannedCollective& c = result_.collectives[i];
    if (c.inside_op || used[i]) continue;
    if (c.consumer < 0) {
      return InvalidArgument("collective " + std::to_string(i) + " lays out " +
                             DescribeOp(graph_, c.tensor) + " for readers it does not have");
    }
    return InvalidArgument("collective " + std::to_string(i) + " (" + CollectiveName(c.kind) +
                           ") moves " + DescribeOp(graph_, c.tensor) + " into operand " +
                           std::to_string(c.operand) + " of " + DescribeOp(graph_, c.consumer) +
                           ", which is not an edge between materialized ops of the plan");
  }
  return Status::Ok();
}

Status PlanChecker::CheckObjective() {
  // Once-per-iteration work (AutoShardOptions::iteration_weight): the update phase's compute,
  // and every collective that synchronises a gradient or runs inside an update op.
  const long double once = result_.iteration_weight;
  long double sum = 0;
  for (int32_t id = 0; id < graph_.size(); ++id) {
    const OpSharding& s = sharding(id);
    if (!std::isfinite(s.compute_cost) || !std::isfinite(s.communication_cost)) {
      return OpError(graph_, id, "its cost is not finite");
    }
    sum += static_cast<long double>(s.compute_cost) *
           (graph_.op(id).phase == Phase::kUpdate ? once : 1.0L);
  }
  for (const PlannedCollective& c : result_.collectives) {
    const bool in_update =
        c.inside_op && c.consumer >= 0 && graph_.op(c.consumer).phase == Phase::kUpdate;
    sum += static_cast<long double>(c.cost) * (c.gradient_sync || in_update ? once : 1.0L);
  }
  const long double obj = result_.objective;
  const long double tol = 1e-6L * std::max(std::fabs(sum), std::fabs(obj)) + 1e-15L;
  if (!(std::fabs(sum - obj) <= tol)) {
    return InvalidArgument("objective " + std::to_string(static_cast<double>(obj)) +
                           " differs from the recomputed compute + communication + resharding "
                           "cost " +
                           std::to_string(static_cast<double>(sum)));
  }
  return Status::Ok();
}

}  // namespace

Result<PlanMemory> RecomputePlanMemory(const Graph& graph, const std::vector<int64_t>& mesh_shape,
                                       const AutoShardResult& result) {
  const int32_t n = graph.size();
  if (result.ops.size() != graph.ops.size()) {
    return InvalidArgument("the result has " + std::to_string(result.ops.size()) +
                           " op shardings for a graph of " + std::to_string(n) + " ops");
  }
  auto sharding = [&](int32_t id) -> const OpSharding& {
    return result.ops[static_cast<size_t>(id)];
  };
  auto computed = [&](int32_t id) { return !sharding(id).free && !sharding(id).fused; };
  // Held in memory: computed and not kept on chip inside its readers' kernels.
  auto materialized = [&](int32_t id) { return computed(id) && !sharding(id).on_chip; };
  auto real_producer = [&](int32_t id) { return RealProducer(graph, result, id); };
  const int64_t steps = static_cast<int64_t>(result.schedule.size());
  std::vector<int64_t> pos(static_cast<size_t>(n), -1);
  for (int64_t t = 0; t < steps; ++t) {
    const int32_t id = result.schedule[static_cast<size_t>(t)];
    if (id < 0 || id >= n) {
      return InvalidArgument("schedule position " + std::to_string(t) + " holds op " +
                             std::to_string(id) + ", out of range");
    }
    if (pos[static_cast<size_t>(id)] >= 0) {
      return InvalidArgument("the schedule runs " + DescribeOp(graph, id) + " twice");
    }
    pos[static_cast<size_t>(id)] = t;
  }
  std::vector<int64_t> start(static_cast<size_t>(n), 0), end(static_cast<size_t>(n), 0);
  for (int32_t id = 0; id < n; ++id) {
    if (!computed(id)) continue;
    const int64_t p = pos[static_cast<size_t>(id)];
    if (p < 0) return InvalidArgument(DescribeOp(graph, id) + " is not in the schedule");
    start[static_cast<size_t>(id)] = graph.op(id).kind == OpKind::kParameter ? 0 : p;
    end[static_cast<size_t>(id)] = p;
  }
  // Per on-chip op: the held values it is made from (its operands' producers, and through an
  // on-chip operand that one's), filled in graph (topological) order. A read of an on-chip
  // value reads those.
  std::vector<std::vector<int32_t>> made_from(static_cast<size_t>(n));
  auto read_values = [&](int32_t id) {
    std::vector<int32_t> values;
    for (int32_t x : graph.op(id).operands) {
      const int32_t src = real_producer(x);
      if (materialized(src)) {
        values.push_back(src);
      } else if (computed(src)) {
        const std::vector<int32_t>& inner = made_from[static_cast<size_t>(src)];
        values.insert(values.end(), inner.begin(), inner.end());
      }
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  };
  // Per producer: its last reader (position, op) and the last position of any other reader, to
  // tell whether an update may overwrite its parameter in place.
  std::vector<std::pair<int64_t, int32_t>> last_reader(static_cast<size_t>(n), {-1, -1});
  std::vector<int64_t> other_last(static_cast<size_t>(n), -1);
  for (int32_t id = 0; id < n; ++id) {
    if (!computed(id)) continue;
    const int64_t p = pos[static_cast<size_t>(id)];
    for (int32_t x : graph.op(id).operands) {
      const int32_t src = real_producer(x);
      if (computed(src) && pos[static_cast<size_t>(src)] >= p) {
        return InvalidArgument("the schedule runs " + DescribeOp(graph, id) +
                               " before its operand " + DescribeOp(graph, src));
      }
    }
    const std::vector<int32_t> values = read_values(id);
    if (!materialized(id)) made_from[static_cast<size_t>(id)] = values;
    for (int32_t src : values) {
      end[static_cast<size_t>(src)] = std::max(end[static_cast<size_t>(src)], p);
      auto& best = last_reader[static_cast<size_t>(src)];
      if (best.second == id) continue;
      if (p > best.first) {
        other_last[static_cast<size_t>(src)] = best.first;
        best = {p, id};
      } else {
        other_last[static_cast<size_t>(src)] = std::max(other_last[static_cast<size_t>(src)], p);
      }
    }
  }
  std::vector<bool> to_end(static_cast<size_t>(n), false);
  for (int32_t o : graph.outputs) to_end[static_cast<size_t>(real_producer(o))] = true;
  std::vector<int64_t> bytes(static_cast<size_t>(n), 0);
  for (int32_t id = 0; id < n; ++id) {
    if (!materialized(id)) continue;
    const Op& op = graph.op(id);
    const ShardingSpec& spec = sharding(id).result;
    Status st = ValidateShardingSpec(spec, op.shape, mesh_shape);
    if (!st.ok()) return InvalidArgument(DescribeOp(graph, id) + ": " + st.message());
    bytes[static_cast<size_t>(id)] = TensorBytes(op) / ShardCount(spec, mesh_shape);
  }
  PlanMemory memory;
  std::vector<bool> donated(static_cast<size_t>(n), false);
  std::vector<Int128> delta(static_cast<size_t>(steps) + 1, 0);
  for (int32_t id = 0; id < n; ++id) {
    if (!materialized(id)) continue;
    const Op& op = graph.op(id);
    int64_t op_bytes = bytes[static_cast<size_t>(id)];
    if (op.alias_of >= 0 && op.alias_of < n && materialized(op.alias_of)) {
      // Donation: the update writes into its parameter's buffer (no bytes of its own) when the
      // parameter has no reader after it, its shard fits that buffer, and no other update took
      // the buffer first. Otherwise it needs its own buffer, as any other value.
      const size_t a = static_cast<size_t>(op.alias_of);
      const auto& best = last_reader[a];
      const int64_t later = best.second == id ? other_last[a] : best.first;
      const int64_t p = pos[static_cast<size_t>(id)];
      std::string why;
      if (later > p) {
        why = DescribeOp(graph, id) + " (position " + std::to_string(p) + ") cannot update " +
              DescribeOp(graph, op.alias_of) + " in place: it is still read at position " +
              std::to_string(later);
      } else if (op_bytes > bytes[a]) {
        why = DescribeOp(graph, id) + " cannot update " + DescribeOp(graph, op.alias_of) +
              " in place: its shard is larger than the parameter's";
      } else if (donated[a]) {
        why = DescribeOp(graph, id) + " cannot update " + DescribeOp(graph, op.alias_of) +
              " in place: another update already does";
      }
      if (why.empty()) {
        donated[a] = true;
        op_bytes = 0;
      } else {
        memory.copied_updates.push_back(why);
      }
    }
    if (op.kind == OpKind::kParameter || op.alias_of >= 0 || to_end[static_cast<size_t>(id)]) {
      end[static_cast<size_t>(id)] = steps - 1;
    }
    delta[static_cast<size_t>(start[static_cast<size_t>(id)])] += op_bytes;
    delta[static_cast<size_t>(end[static_cast<size_t>(id)]) + 1] -= op_bytes;
  }
  Int128 live = 0, peak = 0;
  for (int64_t t = 0; t < steps; ++t) {
    live += delta[static_cast<size_t>(t)];
    if (live > static_cast<Int128>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgument("memory at schedule position " + std::to_string(t) +
                             " overflows int64");
    }
    memory.usage.push_back(static_cast<int64_t>(live));
    if (live > peak) {
      peak = live;
      memory.peak_time = t;
    }
  }
  memory.peak_bytes = static_cast<int64_t>(peak);
  return memory;
}

Status CheckShardingPlan(const Graph& graph, const std::vector<int64_t>& mesh_shape,
                         const AutoShardResult& result,
                         std::optional<int64_t> memory_budget_bytes) {
  ALPA_RETURN_IF_ERROR(ValidateGraph(graph));
  PlanChecker checker(graph, mesh_shape, result);
  ALPA_RETURN_IF_ERROR(checker.CheckStructure());
  ALPA_RETURN_IF_ERROR(checker.CheckSpecs());
  ALPA_RETURN_IF_ERROR(checker.CheckOps());
  ALPA_RETURN_IF_ERROR(checker.CheckEdges());

  Result<PlanMemory> memory = RecomputePlanMemory(graph, mesh_shape, result);
  if (!memory.ok()) return memory.status();
  const PlanMemory& plan_memory = memory.value();
  if (plan_memory.peak_bytes != result.peak_memory_bytes) {
    return InvalidArgument(
        "peak memory " + std::to_string(result.peak_memory_bytes) +
        " bytes per device, but the schedule gives " + std::to_string(plan_memory.peak_bytes) +
        " (first reached at position " + std::to_string(plan_memory.peak_time) + ")" +
        (plan_memory.copied_updates.empty()
             ? std::string()
             : "; " + std::to_string(plan_memory.copied_updates.size()) +
                   " update(s) need their own buffer, e.g. " + plan_memory.copied_updates[0]));
  }
  if (!plan_memory.usage.empty()) {
    // Ties allowed: the claimed time may be any position where the usage reaches the peak.
    const int64_t t = result.peak_memory_time;
    if (t < 0 || t >= static_cast<int64_t>(plan_memory.usage.size()) ||
        plan_memory.usage[static_cast<size_t>(t)] != plan_memory.peak_bytes) {
      return InvalidArgument(
          "peak memory time " + std::to_string(t) + " is not a peak of the schedule (" +
          (t >= 0 && t < static_cast<int64_t>(plan_memory.usage.size())
               ? std::to_string(plan_memory.usage[static_cast<size_t>(t)]) + " bytes there"
               : std::string("out of range")) +
          ", peak " + std::to_string(plan_memory.peak_bytes) + " first at " +
          std::to_string(plan_memory.peak_time) + ")");
    }
  }
  if (memory_budget_bytes.has_value() && plan_memory.peak_bytes > *memory_budget_bytes) {
    return InvalidArgument("peak memory " + std::to_string(plan_memory.peak_bytes) +
                           " bytes per device exceeds the budget of " +
                           std::to_string(*memory_budget_bytes) + " (at schedule position " +
                           std::to_string(plan_memory.peak_time) + ")");
  }
  return checker.CheckObjective();
}

}  // namespace alpa
