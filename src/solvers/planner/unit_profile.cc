// Profiles of auto-sharded layer groups (unit_profile.h).
#include "solvers/planner/unit_profile.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/ir/recompute.h"
#include "solvers/auto_sharding/plan_check.h"
#include "solvers/planner/gradient_sharding.h"
#include "solvers/planner/weight_gradient_ops.h"

namespace alpa {

namespace {

// Per op: the values in memory that reading its result reads: the result itself, or for an op
// kept on chip (OpSharding::on_chip) the values it is made from (in graph order, operands
// first).
std::vector<std::vector<int32_t>> ValuesReadThrough(const Graph& graph,
                                                    const AutoShardResult& result) {
  std::vector<std::vector<int32_t>> through(static_cast<size_t>(graph.size()));
  for (int32_t v = 0; v < graph.size(); ++v) {
    std::vector<int32_t>& values = through[static_cast<size_t>(v)];
    if (!result.ops[static_cast<size_t>(v)].on_chip) {
      values.push_back(v);
      continue;
    }
    for (int32_t u : graph.op(v).operands) {
      const std::vector<int32_t>& inner = through[static_cast<size_t>(u)];
      values.insert(values.end(), inner.begin(), inner.end());
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
  }
  return through;
}

// ProfileUnitMemory with the ops selective recomputation reruns (SelectivelyRecomputedOps of
// `graph`) given, so that ProfileUnit finds them once for its time and its memory.
Result<UnitMemory> MemoryWithRerun(const Graph& graph, const AutoShardResult& result,
                                   const std::vector<bool>& rerun) {
  std::vector<char> read_by_backward(static_cast<size_t>(graph.size()), 0);
  std::vector<char> read_by_rerun(static_cast<size_t>(graph.size()), 0);
  const std::vector<std::vector<int32_t>> through = ValuesReadThrough(graph, result);
  for (int32_t v = 0; v < graph.size(); ++v) {
    const Op& op = graph.op(v);
    std::vector<char>* reads = op.phase == Phase::kBackward    ? &read_by_backward
                               : rerun[static_cast<size_t>(v)] ? &read_by_rerun
                                                               : nullptr;
    if (reads == nullptr) continue;
    for (int32_t u : op.operands) {
      for (int32_t w : through[static_cast<size_t>(u)]) (*reads)[static_cast<size_t>(w)] = 1;
    }
  }
  UnitMemory memory;
  for (int32_t v = 0; v < graph.size(); ++v) {
    const Op& op = graph.op(v);
    const int64_t bytes = result.ops[static_cast<size_t>(v)].memory_bytes;
    const bool held = op.kind == OpKind::kParameter;
    if (held && op.role == TensorRole::kParameter) {
      memory.parameters += bytes;
    } else if (held && op.role == TensorRole::kOptimizerState) {
      memory.optimizer_state += bytes;
    } else if (op.role == TensorRole::kGradient) {
      memory.gradients += bytes;
    } else if (op.phase == Phase::kForward) {
      const size_t i = static_cast<size_t>(v);
      if (read_by_backward[i]) memory.activations += bytes;
      if (rerun[i]) {
        memory.recomputed += bytes;
      } else if (read_by_backward[i] || read_by_rerun[i]) {
        memory.selective_activations += bytes;
      }
    }
    if (held && op.role == TensorRole::kInput && op.phase == Phase::kForward) {
      memory.checkpoints += bytes;
    }
  }
  const std::vector<int64_t> mesh_shape(result.mesh_shape.begin(), result.mesh_shape.end());
  Result<PlanMemory> usage = RecomputePlanMemory(graph, mesh_shape, result);
  if (!usage.ok()) return usage.status();
  int64_t forward_backward_peak = 0, update_peak = 0;
  for (size_t t = 0; t < usage.value().usage.size() && t < result.schedule.size(); ++t) {
    const int64_t bytes = usage.value().usage[t];
    int64_t& peak =
        graph.op(result.schedule[t]).phase == Phase::kUpdate ? update_peak : forward_backward_peak;
    peak = std::max(peak, bytes);
  }
  memory.working =
      std::max<int64_t>(0, forward_backward_peak - memory.persistent() - memory.activations);
  memory.update = std::max<int64_t>(0, update_peak - memory.persistent());
  return memory;
}

}  // namespace

void SetZero2Figures(const Graph& graph, const AutoShardResult& result, UnitProfile& profile) {
  const GradientSharding zero2 = FindGradientChains(graph, result);
  profile.zero2_moved_seconds = zero2.moved_seconds;
  profile.zero2_saved_bytes = zero2.saved_bytes;
  profile.zero2_transient_bytes = zero2.transient_bytes;
}

Result<UnitMemory> ProfileUnitMemory(const Graph& graph, const AutoShardResult& result) {
  return MemoryWithRerun(graph, result, SelectivelyRecomputedOps(graph));
}

std::vector<HandedOffOutput> HandedOffOutputs(const Subgraph& sub) {
  std::vector<HandedOffOutput> out;
  for (size_t i = 0; i < sub.boundary_outputs.size(); ++i) {
    if (sub.boundary_output_accumulated[i] == 0) continue;
    out.push_back({sub.boundary_outputs[i], true});
  }
  return out;
}

Result<UnitProfile> ProfileUnit(const Graph& graph, const LogicalMesh& mesh, const Cluster& cluster,
                                const AutoShardOptions& options) {
  Result<AutoShardResult> solved = AutoShard(graph, mesh, &cluster, options);
  if (!solved.ok()) return solved.status();
  const AutoShardResult& result = solved.value();
  if (result.status != SolveStatus::kOptimal && result.status != SolveStatus::kFeasible) {
    const StatusCode code =
        result.status == SolveStatus::kInfeasible ? StatusCode::kInfeasible : StatusCode::kInternal;
    return Status(code, "auto-sharding on mesh " + MeshShapeString(mesh.shape) +
                            " found no plan: " + result.message);
  }
  UnitProfile profile;
  // Once per iteration: the update phase and every gradient synchronisation (unweighted
  // costs, whatever options.iteration_weight the solve used).
  // Selective recomputation reruns its ops and whatever feeds them (a collective consumed by a
  // rerun op, or a shared resharding of a rerun op's value).
  const std::vector<bool> rerun = SelectivelyRecomputedOps(graph);
  const std::vector<char> weight_gradient = WeightGradientOps(graph);
  long double per_microbatch = 0, per_iteration = 0, forward = 0, selective = 0, weight = 0;
  for (int32_t v = 0; v < graph.size(); ++v) {
    const OpSharding& o = result.ops[static_cast<size_t>(v)];
    const Phase phase = graph.op(v).phase;
    (phase == Phase::kUpdate ? per_iteration : per_microbatch) += o.compute_cost;
    if (phase == Phase::kForward) forward += o.compute_cost;
    if (rerun[static_cast<size_t>(v)]) selective += o.compute_cost;
    if (weight_gradient[static_cast<size_t>(v)]) weight += o.compute_cost;
  }
  for (const PlannedCollective& c : result.collectives) {
    // A shared resharding (consumer -1) belongs to the phase of the tensor it lays out.
    const int32_t owner = c.consumer >= 0 ? c.consumer : c.tensor;
    const Phase phase = graph.op(owner).phase;
    if (c.gradient_sync || (c.consumer >= 0 && phase == Phase::kUpdate)) {
      per_iteration += c.cost;
    } else {
      per_microbatch += c.cost;
      if (phase == Phase::kForward) forward += c.cost;
      if (rerun[static_cast<size_t>(owner)]) selective += c.cost;
      if (weight_gradient[static_cast<size_t>(owner)]) weight += c.cost;
    }
  }
  profile.latency = static_cast<double>(per_microbatch);
  profile.forward_latency = static_cast<double>(forward);
  profile.selective_latency = static_cast<double>(selective);
  profile.weight_gradient_latency = static_cast<double>(weight);
  profile.iteration_overhead = static_cast<double>(per_iteration);

  Result<UnitMemory> memory = MemoryWithRerun(graph, result, rerun);
  if (!memory.ok()) return memory.status();
  profile.persistent_bytes = memory.value().persistent();
  profile.activation_bytes = memory.value().activations;
  profile.checkpoint_bytes = memory.value().checkpoints;
  profile.selective_activation_bytes = memory.value().selective_activations;
  profile.recomputed_bytes = memory.value().recomputed;
  profile.working_bytes = memory.value().working;
  profile.update_bytes = memory.value().update;
  SetZero2Figures(graph, result, profile);
  profile.sharding = std::make_shared<const AutoShardResult>(std::move(solved).value());
  return profile;
}

}  // namespace alpa
