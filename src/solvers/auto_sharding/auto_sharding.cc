// AutoShard: build, solve, read the plan back (see auto_sharding.h).
#include "solvers/auto_sharding/auto_sharding.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include "core/problem/sharding_evaluator.h"
#include "solvers/auto_sharding/auto_sharding_problem.h"
#include "solvers/auto_sharding/warm_start.h"

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
    return InvalidArgument("auto-sharding: memory_budget_bytes is " +
                           std::to_string(*o.memory_budget_bytes) +
                           "; a budget must be a byte count >= 0 (or no budget at all)");
  }
  if (!(o.iteration_weight > 0 && o.iteration_weight <= 1)) {
    return InvalidArgument("auto-sharding: iteration_weight must be in (0, 1] (got " +
                           std::to_string(o.iteration_weight) + ")");
  }
  for (const HandedOffOutput& out : o.handed_off_outputs) {
    const int32_t id = out.op;
    if (id < 0 || id >= graph.size()) {
      return InvalidArgument("auto-sharding: handed_off_outputs names op " + std::to_string(id) +
                             ", not an op of the graph (" + std::to_string(graph.size()) + " ops)");
    }
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

// The model's size: ops by treatment, strategies and edges.
AutoShardStats ModelStats(const Graph& graph, const AutoShardModel& model) {
  AutoShardStats stats;
  stats.ops = graph.size();
  for (OpTreatment treatment : model.treatment) {
    stats.free_ops += treatment == OpTreatment::kFree;
    stats.fused_ops += treatment == OpTreatment::kFused;
    stats.follower_ops += treatment == OpTreatment::kFollow;
    stats.deciding_ops += treatment == OpTreatment::kDecide;
  }
  for (bool on_chip : model.on_chip) stats.on_chip_ops += on_chip ? 1 : 0;
  for (const ShardingNode& node : model.problem.nodes) stats.strategies += node.strategy_count();
  stats.edges = static_cast<int64_t>(model.problem.edges.size());
  return stats;
}

// The solve options, with the graph's layers as node groups unless the caller gave groups:
// identical layers are solved once by the exact elimination.
SolveOptions WithLayerGroups(const Graph& graph, const AutoShardModel& model,
                             const SolveOptions& options) {
  SolveOptions solve = options;
  if (!solve.node_groups.empty()) return solve;
  solve.node_groups.assign(model.problem.nodes.size(), -1);
  for (size_t op = 0; op < model.node.size(); ++op) {
    for (int32_t node : {model.node[op], model.layout_node[op]}) {
      if (node >= 0) solve.node_groups[static_cast<size_t>(node)] = graph.ops[op].layer;
    }
  }
  return solve;
}

// Each live tensor at its smallest shard: a lower bound on any plan's peak.
PeakUsage LeastPeak(const ShardingProblem& problem) {
  return PeakOverTime(problem, [&](size_t nd) {
    const ShardingNode& node = problem.nodes[nd];
    int64_t least = INT64_MAX;
    for (int32_t k = 0; k < node.strategy_count(); ++k) least = std::min(least, node.usage(k));
    return node.strategy_count() > 0 ? least : int64_t{0};
  });
}

// Why no plan fits the memory budget, with the peak every plan reaches when that exceeds it.
std::string MemoryInfeasibleMessage(const ShardingProblem& problem) {
  const PeakUsage need = LeastPeak(problem);
  std::string message = "no sharding plan fits the memory budget of " +
                        std::to_string(*problem.usage_limit) + " bytes per device";
  if (need.bytes > *problem.usage_limit) {
    message += "; every plan needs at least " + std::to_string(need.bytes) +
               " bytes at schedule step " + std::to_string(need.at);
  }
  return message;
}

// Fills result.ops with each op's chosen strategy and sums its costs; returns the collectives
// inside each op.
Result<std::vector<std::vector<OpCollective>>> ReadOpStrategies(
    const Graph& graph, const AutoShardModel& model, const std::vector<int32_t>& assignment,
    AutoShardResult& result) {
  std::vector<std::vector<OpCollective>> in_op(static_cast<size_t>(graph.size()));
  for (int32_t v = 0; v < graph.size(); ++v) {
    OpSharding& sharding = result.ops[static_cast<size_t>(v)];
    const OpTreatment treatment = model.treatment[static_cast<size_t>(v)];
    sharding.free = treatment == OpTreatment::kFree;
    sharding.fused = treatment == OpTreatment::kFused;
    sharding.on_chip = model.on_chip[static_cast<size_t>(v)];
    sharding.node = model.node[static_cast<size_t>(v)];
    if (sharding.node < 0) continue;
    sharding.follows = model.leader[static_cast<size_t>(v)];
    sharding.strategy = assignment[static_cast<size_t>(sharding.node)];
    Result<OpStrategy> strategy = ModelStrategy(model, v, sharding.strategy);
    if (!strategy.ok()) return strategy.status();
    sharding.strategy_name = StrategyName(graph, v, strategy.value());
    sharding.result = strategy.value().result;
    sharding.operands = strategy.value().operands;
    sharding.compute_cost = strategy.value().compute_cost;
    sharding.communication_cost = strategy.value().communication_cost;
    sharding.memory_bytes =
        graph.op(v).alias_of >= 0 || sharding.on_chip ? 0 : strategy.value().memory_bytes;
    result.compute_cost += sharding.compute_cost;
    result.communication_cost += sharding.communication_cost;
    in_op[static_cast<size_t>(v)] = std::move(strategy).value().collectives;
  }
  return in_op;
}

// One resharding of tensor `tensor` from spec `from` to spec `to`, for operand slot `operand`
// of `consumer` (both -1: into the tensor's reader layout).
struct ReshardMove {
  int32_t tensor;
  int32_t from, to;
  int32_t consumer, operand;
  bool into_update;  // it feeds the update phase (a gradient synchronisation)
};

// Appends the collectives of `move` to result.collectives and adds its cost.
Status AddReshardCollectives(const Graph& graph, const AutoShardModel& model,
                             const ReshardMove& move, AutoShardResult& result) {
  if (move.from == move.to) return Status::Ok();
  const int32_t u = move.tensor;
  Result<ReshardPlan> plan =
      model.reshard->Plan(model.tensor_type[static_cast<size_t>(u)], move.from, move.to);
  if (!plan.ok()) return plan.status();
  result.resharding_cost +=
      model.reshard->Allowed(plan.value()) ? plan.value().cost : kForbiddenCost;
  const std::string whom = move.consumer >= 0 ? " for " + DescribeOp(graph, move.consumer)
                                              : " of " + DescribeOp(graph, u) + " for its readers";
  for (const ReshardStep& step : plan.value().Collectives()) {
    PlannedCollective collective;
    collective.kind = step.collective;
    collective.mesh_dims = step.mesh_dims;
    collective.bytes = step.bytes;
    collective.cost = step.cost;
    collective.tensor = u;
    collective.consumer = move.consumer;
    collective.operand = move.operand;
    collective.gradient_sync = model.gradient_like[static_cast<size_t>(u)] || move.into_update;
    collective.description = step.description + whom;
    result.collectives.push_back(std::move(collective));
  }
  return Status::Ok();
}

void AddInOpCollectives(const Graph& graph, const AutoShardModel& model, int32_t v,
                        const std::vector<OpCollective>& in_op, AutoShardResult& result) {
  for (const OpCollective& oc : in_op) {
    PlannedCollective collective;
    collective.kind = oc.kind;
    collective.mesh_dims = {oc.mesh_dim};
    collective.bytes = oc.bytes;
    collective.cost = oc.cost;
    collective.tensor = v;
    collective.consumer = v;
    collective.inside_op = true;
    collective.gradient_sync = model.gradient_like[static_cast<size_t>(v)];
    collective.description = std::string(CollectiveName(oc.kind)) + " over mesh dim " +
                             std::to_string(oc.mesh_dim) + " inside " + DescribeOp(graph, v);
    result.collectives.push_back(std::move(collective));
  }
}

// Collectives in schedule order: the reshardings into each op (a tensor's shared one into its
// reader layout before its first reader), then the op's own.
Status AddCollectivesInScheduleOrder(const Graph& graph, const AutoShardModel& model,
                                     const std::vector<int32_t>& assignment,
                                     const std::vector<std::vector<OpCollective>>& in_op,
                                     AutoShardResult& result) {
  std::vector<bool> laid_out(static_cast<size_t>(graph.size()), false);
  const std::vector<bool> reader_update = ReadByUpdate(model);
  for (int32_t v : model.schedule) {
    const OpSharding& sharding = result.ops[static_cast<size_t>(v)];
    if (sharding.node < 0) continue;
    const Op& op = graph.op(v);
    const auto& srcs = model.sources[static_cast<size_t>(v)];
    for (size_t k = 0; k < srcs.size(); ++k) {
      const int32_t u = srcs[k].op;
      if (u < 0) continue;
      int32_t from =
          model.result_spec[static_cast<size_t>(u)]
                           [static_cast<size_t>(result.ops[static_cast<size_t>(u)].strategy)];
      const int32_t layout_node = model.layout_node[static_cast<size_t>(u)];
      if (layout_node >= 0) {
        const int32_t layout =
            model.layout_specs[static_cast<size_t>(u)]
                              [static_cast<size_t>(assignment[static_cast<size_t>(layout_node)])];
        if (!laid_out[static_cast<size_t>(u)]) {  // before the first reader
          laid_out[static_cast<size_t>(u)] = true;
          result.ops[static_cast<size_t>(u)].reader_layout = model.specs.spec(layout);
          ALPA_RETURN_IF_ERROR(AddReshardCollectives(
              graph, model,
              ReshardMove{u, from, layout, -1, -1, reader_update[static_cast<size_t>(u)]}, result));
        }
        from = layout;
      }
      const int32_t want =
          model.wanted_spec[static_cast<size_t>(v)]
                           [static_cast<size_t>(sharding.strategy) * srcs.size() + k];
      ALPA_RETURN_IF_ERROR(AddReshardCollectives(
          graph, model,
          ReshardMove{u, from, want, v, static_cast<int32_t>(k), op.phase == Phase::kUpdate},
          result));
    }
    AddInOpCollectives(graph, model, v, in_op[static_cast<size_t>(v)], result);
  }
  return Status::Ok();
}

// Counts the collectives by kind, with and without combining the gradient syncs of one kind
// over the same mesh dims into one bucket.
void CountCollectives(AutoShardResult& result) {
  std::set<std::pair<int32_t, std::vector<int32_t>>> buckets;  // gradient syncs: kind, dims
  for (const PlannedCollective& c : result.collectives) {
    Count(result.counts_uncombined, c.kind);
    if (c.gradient_sync && !buckets.insert({static_cast<int32_t>(c.kind), c.mesh_dims}).second) {
      continue;
    }
    Count(result.counts, c.kind);
  }
}

}  // namespace

Result<AutoShardResult> AutoShard(const Graph& graph, const LogicalMesh& mesh,
                                  const Cluster* cluster, const AutoShardOptions& options) {
  ALPA_RETURN_IF_ERROR(CheckOptions(graph, mesh, cluster, options));
  const auto build_start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<AutoShardModel>> built =
      BuildAutoShardModel(graph, mesh, cluster, options);
  if (!built.ok()) return built.status();
  const AutoShardModel& model = *built.value();

  AutoShardResult result;
  result.mesh_shape.assign(mesh.shape.begin(), mesh.shape.end());
  result.schedule = model.schedule;
  result.stats = ModelStats(graph, model);
  result.stats.build_seconds = Since(build_start);
  result.least_peak_memory_bytes = LeastPeak(model.problem).bytes;

  const auto solve_start = std::chrono::steady_clock::now();
  SolveOptions solve = WithLayerGroups(graph, model, options.solve);
  if (options.warm_start) solve.warm_start = WarmStartAssignment(graph, model, *options.warm_start);
  SolveResult solved = SolveSharding(model.problem, solve);
  result.stats.solve_seconds = Since(solve_start);
  result.stats.solver = solved.stats;
  result.status = solved.status;
  result.message = solved.message;
  result.lower_bound = solved.lower_bound;
  if (solved.status == SolveStatus::kInfeasible && model.problem.usage_limit) {
    result.message = MemoryInfeasibleMessage(model.problem);
  }
  result.ops.assign(static_cast<size_t>(graph.size()), {});
  result.node_strategies = solved.assignment;
  result.node_strategy_counts.reserve(model.problem.nodes.size());
  for (const ShardingNode& node : model.problem.nodes) {
    result.node_strategy_counts.push_back(node.strategy_count());
  }
  if (solved.assignment.empty()) {
    result.objective = std::numeric_limits<long double>::infinity();
    return result;
  }

  Result<std::vector<std::vector<OpCollective>>> in_op =
      ReadOpStrategies(graph, model, solved.assignment, result);
  if (!in_op.ok()) return in_op.status();
  ALPA_RETURN_IF_ERROR(
      AddCollectivesInScheduleOrder(graph, model, solved.assignment, in_op.value(), result));
  CountCollectives(result);

  // Objective (re-evaluated from the problem) and peak memory.
  const Evaluation eval = EvaluateAssignment(model.problem, solved.assignment);
  for (int32_t v = 0; v < graph.size(); ++v) {
    const std::vector<double>& added = model.handoff_costs[static_cast<size_t>(v)];
    if (added.empty()) continue;
    result.handoff_cost += added[static_cast<size_t>(result.ops[static_cast<size_t>(v)].strategy)];
  }
  result.objective = eval.cost - result.handoff_cost;
  result.iteration_weight = options.iteration_weight;
  const PeakUsage peak = PeakOverTime(model.problem, [&](size_t nd) {
    return model.problem.nodes[nd].usage(solved.assignment[nd]);
  });
  result.peak_memory_bytes = peak.bytes;
  result.peak_memory_time = peak.at;
  return result;
}

}  // namespace alpa
