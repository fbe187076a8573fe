// The resharding edges of the sharding problem of a graph (phase 4 of BuildAutoShardModel):
// producer -> reader layout -> readers, or producer -> reader.
#include <algorithm>
#include <utility>
#include <vector>

#include "solvers/auto_sharding/auto_sharding_problem.h"

namespace alpa {
namespace {

using Restriction = ReshardCostCache::Restriction;

// Without ZeRO, a weight is read in the layout it is stored in (gathering it per use is
// ZeRO-3 / FSDP, which options.gather_parameters can leave out of ZeRO), and gradients are
// all-reduced (reduce-scattering them is the ZeRO rewrite).
Restriction ReshardRestriction(const AutoShardModel& model, int32_t u,
                               const AutoShardOptions& options) {
  const Op& op = model.graph->op(u);
  const bool weight = op.kind == OpKind::kParameter && op.role == TensorRole::kParameter;
  if (options.zero != ZeroMode::kOff) {
    return weight && !options.gather_parameters && !options.zero_parameters
               ? Restriction::kLocalOnly
               : Restriction::kNone;
  }
  if (weight) return Restriction::kLocalOnly;
  return model.gradient_like[static_cast<size_t>(u)] ? Restriction::kNoReduceScatter
                                                     : Restriction::kNone;
}

// One end of a resharding edge: a problem node and the interned spec of each of its choices.
struct EdgeSource {
  int32_t node;
  const std::vector<int32_t>& specs;
};

// Adds the edge from `from` to node `to_node` (with `to_count` choices, choice j wanting spec
// wanted(j)) of tensor type `type`, costs scaled by `weight`; an edge of zero costs is left out.
template <typename WantedSpec>
Status AddReshardEdge(AutoShardModel& model, const EdgeSource& from, int32_t type, int32_t to_node,
                      size_t to_count, WantedSpec wanted, Restriction limit, double weight) {
  const size_t from_count = from.specs.size();
  ShardingEdge edge;
  edge.u = from.node;
  edge.v = to_node;
  edge.costs.assign(from_count * to_count, 0.0);
  const bool same_root = FollowRoot(model.problem, from.node) == FollowRoot(model.problem, to_node);
  bool any = false;
  for (size_t i = 0; i < from_count; ++i) {
    for (size_t j = 0; j < to_count; ++j) {
      if (same_root && i != j) continue;  // only the diagonal can apply
      Result<double> cost = model.reshard->Cost(type, from.specs[i], wanted(j), limit);
      if (!cost.ok()) return cost.status();
      edge.costs[i * to_count + j] = cost.value() * weight;
      any = any || cost.value() != 0.0;
    }
  }
  if (any) model.problem.edges.push_back(std::move(edge));
  return Status::Ok();
}

}  // namespace

Status AddReaderLayoutEdges(AutoShardModel& model, const AutoShardOptions& options) {
  const Graph& graph = *model.graph;
  const double once = options.iteration_weight;
  const std::vector<bool> read_by_update = ReadByUpdate(model);
  for (int32_t u = 0; u < graph.size(); ++u) {
    const int32_t layout_node = model.layout_node[static_cast<size_t>(u)];
    if (layout_node < 0) continue;
    const auto& layouts = model.layout_specs[static_cast<size_t>(u)];
    const bool counted_once =
        model.gradient_like[static_cast<size_t>(u)] || read_by_update[static_cast<size_t>(u)];
    Status st = AddReshardEdge(
        model,
        EdgeSource{model.node[static_cast<size_t>(u)], model.result_spec[static_cast<size_t>(u)]},
        model.tensor_type[static_cast<size_t>(u)], layout_node, layouts.size(),
        [&](size_t j) { return layouts[j]; }, ReshardRestriction(model, u, options),
        counted_once ? once : 1.0);
    if (!st.ok()) return InternalError(DescribeOp(graph, u) + " reader layout: " + st.message());
  }
  return Status::Ok();
}

Status AddOperandEdges(AutoShardModel& model, const AutoShardOptions& options) {
  const Graph& graph = *model.graph;
  const double once = options.iteration_weight;
  for (int32_t v = 0; v < graph.size(); ++v) {
    const int32_t nv = model.node[static_cast<size_t>(v)];
    if (nv < 0) continue;
    const auto& srcs = model.sources[static_cast<size_t>(v)];
    const auto& wanted = model.wanted_spec[static_cast<size_t>(v)];
    for (size_t k = 0; k < srcs.size(); ++k) {
      const int32_t u = srcs[k].op;
      if (u < 0) continue;
      const int32_t layout_node = model.layout_node[static_cast<size_t>(u)];
      const bool via_layout = layout_node >= 0;
      const EdgeSource from =
          via_layout ? EdgeSource{layout_node, model.layout_specs[static_cast<size_t>(u)]}
                     : EdgeSource{model.node[static_cast<size_t>(u)],
                                  model.result_spec[static_cast<size_t>(u)]};
      const bool counted_once =
          model.gradient_like[static_cast<size_t>(u)] || graph.op(v).phase == Phase::kUpdate;
      Status st = AddReshardEdge(
          model, from, model.tensor_type[static_cast<size_t>(u)], nv,
          model.result_spec[static_cast<size_t>(v)].size(),
          [&](size_t j) { return wanted[j * srcs.size() + k]; },
          ReshardRestriction(model, u, options), counted_once ? once : 1.0);
      if (!st.ok()) {
        return InternalError(DescribeOp(graph, v) + " operand " + std::to_string(k) + ": " +
                             st.message());
      }
    }
  }
  return Status::Ok();
}

Status AddHandoffCosts(AutoShardModel& model, const AutoShardOptions& options) {
  const Graph& graph = *model.graph;
  std::vector<char> handed_off(static_cast<size_t>(graph.size()), 0);
  model.handoff_costs.assign(static_cast<size_t>(graph.size()), {});
  for (const HandedOffOutput& out : options.handed_off_outputs) {
    const int32_t u = out.op;
    const size_t i = static_cast<size_t>(u);
    // Counted once per op; a free or fused op is made locally in any layout, and an op with a
    // reader layout node hands over that (never partial) layout.
    if (handed_off[i] || model.node[i] < 0 || model.layout_node[i] >= 0) continue;
    handed_off[i] = 1;
    std::vector<int32_t> layouts;
    for (const ShardingSpec& spec : TensorLayouts(graph.op(u).shape, model.mesh)) {
      layouts.push_back(model.specs.Intern(spec));
    }
    const double weight =
        out.once_per_iteration || model.gradient_like[i] ? options.iteration_weight : 1.0;
    const Restriction limit = ReshardRestriction(model, u, options);
    ShardingNode& node = model.problem.nodes[static_cast<size_t>(model.node[i])];
    const std::vector<int32_t>& results = model.result_spec[i];
    std::vector<double>& added = model.handoff_costs[i];
    added.assign(results.size(), 0.0);
    for (size_t s = 0; s < results.size(); ++s) {
      if (model.specs.spec(results[s]).partial.empty()) continue;
      double cheapest = kForbiddenCost;
      for (int32_t layout : layouts) {
        Result<double> cost = model.reshard->Cost(model.tensor_type[i], results[s], layout, limit);
        if (!cost.ok()) {
          return InternalError(DescribeOp(graph, u) + " handover: " + cost.status().message());
        }
        cheapest = std::min(cheapest, cost.value());
      }
      added[s] = cheapest * weight;
      node.costs[s] += added[s];
    }
  }
  return Status::Ok();
}

}  // namespace alpa
