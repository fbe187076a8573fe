#include "solvers/auto_sharding/warm_start.h"

#include <cmath>

namespace alpa {
namespace {

// Whether `from` solved a graph of `graph`'s ops on `model`'s mesh shape into as many problem
// nodes as `model` has.
bool SameStructure(const Graph& graph, const AutoShardModel& model, const AutoShardResult& from) {
  if (from.ops.size() != static_cast<size_t>(graph.size())) return false;
  if (from.node_strategies.size() != model.problem.nodes.size() ||
      from.node_strategy_counts.size() != model.problem.nodes.size()) {
    return false;
  }
  if (from.mesh_shape.size() != model.mesh.shape.size()) return false;
  for (size_t d = 0; d < from.mesh_shape.size(); ++d) {
    if (from.mesh_shape[d] != model.mesh.shape[d]) return false;
  }
  for (size_t v = 0; v < from.ops.size(); ++v) {
    if (from.ops[v].node != model.node[v]) return false;
  }
  return true;
}

bool Allowed(const ShardingNode& node, int32_t s) {
  return s >= 0 && s < node.strategy_count() && std::isfinite(node.costs[static_cast<size_t>(s)]);
}

// The node's cheapest strategy of finite cost (0 when none is).
int32_t CheapestAllowed(const ShardingNode& node) {
  int32_t best = 0;
  for (int32_t s = 0; s < node.strategy_count(); ++s) {
    if (Allowed(node, s) && (!Allowed(node, best) || node.costs[static_cast<size_t>(s)] <
                                                         node.costs[static_cast<size_t>(best)])) {
      best = s;
    }
  }
  return best;
}

// The strategy of deciding op `v` whose result layout is `chosen`'s, preferring one whose
// operand layouts are `chosen`'s too; -1 when no result layout matches.
int32_t MatchingStrategy(const AutoShardModel& model, int32_t v, const OpSharding& chosen) {
  const std::vector<int32_t>& results = model.result_spec[static_cast<size_t>(v)];
  const ShardingNode& node =
      model.problem.nodes[static_cast<size_t>(model.node[static_cast<size_t>(v)])];
  int32_t first = -1;
  for (int32_t s = 0; s < static_cast<int32_t>(results.size()); ++s) {
    if (!Allowed(node, s) ||
        !(model.specs.spec(results[static_cast<size_t>(s)]) == chosen.result)) {
      continue;
    }
    if (first < 0) first = s;
    Result<OpStrategy> strategy = ModelStrategy(model, v, s);
    if (strategy.ok() && strategy.value().operands == chosen.operands) return s;
  }
  return first;
}

}  // namespace

std::vector<int32_t> WarmStartAssignment(const Graph& graph, const AutoShardModel& model,
                                         const AutoShardResult& from) {
  if (!SameStructure(graph, model, from)) return {};
  const size_t nodes = model.problem.nodes.size();
  std::vector<int32_t> start(nodes, -1);
  for (size_t n = 0; n < nodes; ++n) {
    const ShardingNode& node = model.problem.nodes[n];
    const int32_t s = from.node_strategies[n];
    if (from.node_strategy_counts[n] == node.strategy_count() && Allowed(node, s)) start[n] = s;
  }
  for (int32_t v = 0; v < graph.size(); ++v) {
    const int32_t node = model.node[static_cast<size_t>(v)];
    if (node < 0 || start[static_cast<size_t>(node)] >= 0 ||
        model.treatment[static_cast<size_t>(v)] != OpTreatment::kDecide) {
      continue;
    }
    start[static_cast<size_t>(node)] = MatchingStrategy(model, v, from.ops[static_cast<size_t>(v)]);
  }
  for (size_t n = 0; n < nodes; ++n) {
    if (start[n] < 0) start[n] = CheapestAllowed(model.problem.nodes[n]);
  }
  // A follower shares its root's choice.
  for (size_t n = 0; n < nodes; ++n) {
    int32_t root = static_cast<int32_t>(n);
    for (size_t hops = 0;
         hops < nodes && model.problem.nodes[static_cast<size_t>(root)].follows >= 0; ++hops) {
      root = model.problem.nodes[static_cast<size_t>(root)].follows;
    }
    start[n] = start[static_cast<size_t>(root)];
  }
  return start;
}

}  // namespace alpa
