// AutoShard: build, solve, read the plan back (see auto_sharding.h).
#include "solvers/auto_sharding/auto_sharding.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include "core/problem/sharding_evaluator.h"
#include "solvers/auto_sharding/auto_sharding_problem.h"

namespace alpa {
namespace {

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Count(CollectiveCounts& c, CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      ++c.all_reduce;
      break;
    case CollectiveKind::kAllGather:
      ++c.all_gather;
      break;
    case CollectiveKind::kReduceScatter:
      ++c.reduce_scatter;
      break;
    case CollectiveKind::kAllToAll:
      ++c.all_to_all;
      break;
    case CollectiveKind::kSendRecv:
      break;
  }
}

Status CheckOptions(const Graph& graph, const LogicalMesh& mesh, const Cluster* cluster,
                    const AutoShardOptions& o) {
  if (mesh.shape.empty() || mesh.alpha.size() != mesh.shape.size() ||
      mesh.beta.size() != mesh.shape.size()) {
    return InvalidArgument("auto-sharding: the logical mesh needs a shape, alpha and beta per dim");
  }
  for (int64_t d : mesh.shape) {
    if (d < 1) return InvalidArgument("auto-sharding: mesh dims must be >= 1");
  }
  if (cluster == nullptr && o.cost_mode == CostMode::kRealUnits) {
    return InvalidArgument(
        "auto-sharding: the real-units cost model needs a cluster (its device prices compute); "
        "pass one or use the Alpa-compatible cost model");
  }
  if (o.batch_mesh_dim < kBatchDimFree || o.batch_mesh_dim >= mesh.ndim()) {
    return InvalidArgument("auto-sharding: batch_mesh_dim " + std::to_string(o.batch_mesh_dim) +
                           " is not a mesh dim of " + MeshShapeString(mesh.shape) +
                           " (-1: all, -2: free)");
  }
  if (o.memory_budget_bytes && *o.memory_budget_bytes < 0) {
    return InvalidArgument("auto-sharding: negative memory budget");
  }
  if (!(o.iteration_weight > 0 && o.iteration_weight <= 1)) {
    return InvalidArgument("auto-sharding: iteration_weight must be in (0, 1] (got " +
                           std::to_string(o.iteration_weight) + ")");
  }
  return ValidateGraph(graph);
}

struct PeakUsage {
  int64_t bytes = 0;
  int64_t at = 0;  // the first time step reaching it
};

// The largest sum of usage(node) over the nodes live at one time step.
template <typename Usage>
PeakUsage PeakOverTime(const ShardingProblem& p, Usage usage) {
  std::vector<int64_t> delta;
  for (size_t nd = 0; nd < p.nodes.size(); ++nd) {
    const UsageInterval& iv = p.nodes[nd].interval;
    if (static_cast<size_t>(iv.hi) >= delta.size()) delta.resize(static_cast<size_t>(iv.hi) + 1, 0);
    const int64_t use = usage(nd);
    delta[static_cast<size_t>(iv.lo)] += use;
    delta[static_cast<size_t>(iv.hi)] -= use;
  }
  PeakUsage peak;
  int64_t live = 0;
  for (size_t t = 0; t < delta.size(); ++t) {
    live += delta[t];
    if (live > peak.bytes) peak = {live, static_cast<int64_t>(t)};
  }
  return peak;
}

}  // namespace

const char* ZeroModeName(ZeroMode mode) {
  switch (mode) {
    case ZeroMode::kOff:
      return "off";
    case ZeroMode::kSearch:
      return "search";
    case ZeroMode::kForce:
      return "force";
  }
  return "?";
}

Result<AutoShardResult> AutoShard(const Graph& graph, const LogicalMesh& mesh,
                                  const Cluster* cluster, const AutoShardOptions& options) {
  ALPA_RETURN_IF_ERROR(CheckOptions(graph, mesh, cluster, options));
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::unique_ptr<AutoShardModel>> built =
      BuildAutoShardModel(graph, mesh, cluster, options);
  if (!built.ok()) return built.status();
  const AutoShardModel& m = *built.value();

  AutoShardResult r;
  r.mesh_shape.assign(mesh.shape.begin(), mesh.shape.end());
  r.schedule = m.schedule;
  r.stats.ops = graph.size();
  for (OpTreatment t : m.treatment) {
    r.stats.free_ops += t == OpTreatment::kFree;
    r.stats.fused_ops += t == OpTreatment::kFused;
    r.stats.follower_ops += t == OpTreatment::kFollow;
    r.stats.deciding_ops += t == OpTreatment::kDecide;
  }
  for (const ShardingNode& node : m.problem.nodes) r.stats.strategies += node.strategy_count();
  r.stats.edges = static_cast<int64_t>(m.problem.edges.size());
  r.stats.build_seconds = Since(t0);

  const auto t1 = std::chrono::steady_clock::now();
  SolveOptions solve = options.solve;
  if (solve.node_groups.empty()) {
    // The graph's layers: identical layers are solved once by the exact elimination.
    solve.node_groups.assign(m.problem.nodes.size(), -1);
    for (size_t op = 0; op < m.node.size(); ++op) {
      for (int32_t node : {m.node[op], m.layout_node[op]}) {
        if (node >= 0) solve.node_groups[static_cast<size_t>(node)] = graph.ops[op].layer;
      }
    }
  }
  SolveResult solved = SolveSharding(m.problem, solve);
  r.stats.solve_seconds = Since(t1);
  r.stats.solver = solved.stats;
  r.status = solved.status;
  r.message = solved.message;
  r.lower_bound = solved.lower_bound;
  if (solved.status == SolveStatus::kInfeasible && m.problem.usage_limit) {
    // Each live tensor at its smallest shard: a lower bound on any plan's peak.
    const PeakUsage need = PeakOverTime(m.problem, [&](size_t nd) {
      const ShardingNode& node = m.problem.nodes[nd];
      int64_t least = INT64_MAX;
      for (int32_t k = 0; k < node.strategy_count(); ++k) least = std::min(least, node.usage(k));
      return least;
    });
    r.message = "no sharding plan fits the memory budget of " +
                std::to_string(*m.problem.usage_limit) + " bytes per device";
    if (need.bytes > *m.problem.usage_limit) {
      r.message += "; every plan needs at least " + std::to_string(need.bytes) +
                   " bytes at schedule step " + std::to_string(need.at);
    }
  }
  r.ops.assign(static_cast<size_t>(graph.size()), {});
  if (solved.assignment.empty()) {
    r.objective = std::numeric_limits<long double>::infinity();
    return r;
  }

  // Per-op strategies, and the collectives inside each op.
  std::vector<std::vector<OpCollective>> in_op(static_cast<size_t>(graph.size()));
  for (int32_t v = 0; v < graph.size(); ++v) {
    OpSharding& o = r.ops[static_cast<size_t>(v)];
    const OpTreatment t = m.treatment[static_cast<size_t>(v)];
    o.free = t == OpTreatment::kFree;
    o.fused = t == OpTreatment::kFused;
    o.node = m.node[static_cast<size_t>(v)];
    if (o.node < 0) continue;
    o.follows = m.leader[static_cast<size_t>(v)];
    o.strategy = solved.assignment[static_cast<size_t>(o.node)];
    Result<OpStrategy> s = ModelStrategy(m, v, o.strategy);
    if (!s.ok()) return s.status();
    o.strategy_name = StrategyName(graph, v, s.value());
    o.result = s.value().result;
    o.operands = s.value().operands;
    o.compute_cost = s.value().compute_cost;
    o.communication_cost = s.value().communication_cost;
    o.memory_bytes = graph.op(v).alias_of >= 0 ? 0 : s.value().memory_bytes;
    r.compute_cost += o.compute_cost;
    r.communication_cost += o.communication_cost;
    in_op[static_cast<size_t>(v)] = std::move(s).value().collectives;
  }

  // Collectives in schedule order: the reshardings into each op (a tensor's shared one into its
  // reader layout before its first reader), then the op's own.
  auto add_reshard = [&](int32_t u, int32_t from, int32_t to, int32_t consumer, int32_t operand,
                         bool into_update) -> Status {
    if (from == to) return Status::Ok();
    Result<ReshardPlan> plan = m.reshard->Plan(m.tensor_type[static_cast<size_t>(u)], from, to);
    if (!plan.ok()) return plan.status();
    r.resharding_cost += m.reshard->Allowed(plan.value()) ? plan.value().cost : kForbiddenCost;
    const std::string whom = consumer >= 0 ? " for " + DescribeOp(graph, consumer)
                                           : " of " + DescribeOp(graph, u) + " for its readers";
    for (const ReshardStep& step : plan.value().Collectives()) {
      PlannedCollective c;
      c.kind = step.collective;
      c.mesh_dims = step.mesh_dims;
      c.bytes = step.bytes;
      c.cost = step.cost;
      c.tensor = u;
      c.consumer = consumer;
      c.operand = operand;
      c.gradient_sync = m.gradient_like[static_cast<size_t>(u)] || into_update;
      c.description = step.description + whom;
      r.collectives.push_back(std::move(c));
    }
    return Status::Ok();
  };
  std::vector<bool> laid_out(static_cast<size_t>(graph.size()), false);
  std::vector<bool> reader_update(static_cast<size_t>(graph.size()), false);
  for (int32_t v = 0; v < graph.size(); ++v) {
    if (graph.op(v).phase != Phase::kUpdate || m.node[static_cast<size_t>(v)] < 0) continue;
    for (const OperandSource& s : m.sources[static_cast<size_t>(v)]) {
      if (s.op >= 0) reader_update[static_cast<size_t>(s.op)] = true;
    }
  }
  for (int32_t v : m.schedule) {
    const OpSharding& o = r.ops[static_cast<size_t>(v)];
    if (o.node < 0) continue;
    const Op& op = graph.op(v);
    const auto& srcs = m.sources[static_cast<size_t>(v)];
    for (size_t k = 0; k < srcs.size(); ++k) {
      const int32_t u = srcs[k].op;
      if (u < 0) continue;
      int32_t from = m.result_spec[static_cast<size_t>(u)]
                                  [static_cast<size_t>(r.ops[static_cast<size_t>(u)].strategy)];
      const int32_t nl = m.layout_node[static_cast<size_t>(u)];
      if (nl >= 0) {
        const int32_t layout =
            m.layout_specs[static_cast<size_t>(u)]
                          [static_cast<size_t>(solved.assignment[static_cast<size_t>(nl)])];
        if (!laid_out[static_cast<size_t>(u)]) {  // before the first reader
          laid_out[static_cast<size_t>(u)] = true;
          r.ops[static_cast<size_t>(u)].reader_layout = m.specs.spec(layout);
          ALPA_RETURN_IF_ERROR(
              add_reshard(u, from, layout, -1, -1, reader_update[static_cast<size_t>(u)]));
        }
        from = layout;
      }
      const int32_t want =
          m.wanted_spec[static_cast<size_t>(v)][static_cast<size_t>(o.strategy) * srcs.size() + k];
      ALPA_RETURN_IF_ERROR(
          add_reshard(u, from, want, v, static_cast<int32_t>(k), op.phase == Phase::kUpdate));
    }
    for (const OpCollective& oc : in_op[static_cast<size_t>(v)]) {
      PlannedCollective c;
      c.kind = oc.kind;
      c.mesh_dims = {oc.mesh_dim};
      c.bytes = oc.bytes;
      c.cost = oc.cost;
      c.tensor = v;
      c.consumer = v;
      c.inside_op = true;
      c.gradient_sync = m.gradient_like[static_cast<size_t>(v)];
      c.description = std::string(CollectiveName(oc.kind)) + " over mesh dim " +
                      std::to_string(oc.mesh_dim) + " inside " + DescribeOp(graph, v);
      r.collectives.push_back(std::move(c));
    }
  }
  std::set<std::pair<int32_t, std::vector<int32_t>>> buckets;  // gradient syncs: kind, dims
  for (const PlannedCollective& c : r.collectives) {
    Count(r.counts_uncombined, c.kind);
    if (c.gradient_sync && !buckets.insert({static_cast<int32_t>(c.kind), c.mesh_dims}).second) {
      continue;
    }
    Count(r.counts, c.kind);
  }

  // Objective (re-evaluated from the problem) and peak memory.
  const Evaluation eval = EvaluateAssignment(m.problem, solved.assignment);
  r.objective = eval.cost;
  r.iteration_weight = options.iteration_weight;
  const PeakUsage peak = PeakOverTime(
      m.problem, [&](size_t nd) { return m.problem.nodes[nd].usage(solved.assignment[nd]); });
  r.peak_memory_bytes = peak.bytes;
  r.peak_memory_time = peak.at;
  return r;
}

}  // namespace alpa
