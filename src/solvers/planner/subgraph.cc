// Subgraph extraction for the planner (subgraph.h).
#include "solvers/planner/subgraph.h"

#include <algorithm>
#include <utility>

#include "core/ir/graph_json.h"

namespace alpa {
namespace {

bool IsConstantLike(const Op& op) {
  return op.kind == OpKind::kConstant || op.kind == OpKind::kIota;
}

// Per op: whether it is a constant or iota, or computed from such ops alone (an XLA import
// defines a layer-independent broadcast of a constant, such as a causal mask, once, in the
// first layer that uses it). Every piece that reads one computes it itself, as the auto-sharding
// pass treats them (free: each device makes its piece locally).
std::vector<char> ComputedFromConstants(const Graph& graph) {
  std::vector<char> constant(static_cast<size_t>(graph.size()), 0);
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    bool derived = IsConstantLike(op);
    if (!derived && op.kind != OpKind::kParameter && !op.operands.empty()) {
      derived = std::all_of(op.operands.begin(), op.operands.end(),
                            [&](int32_t u) { return constant[static_cast<size_t>(u)] != 0; });
    }
    constant[static_cast<size_t>(id)] = derived ? 1 : 0;
  }
  return constant;
}

}  // namespace

std::vector<char> AccumulatedIntoGradient(const Graph& graph) {
  // From the last op back: when op r is reached every reader of it (a later op) has been, so
  // whether r is accumulated is final, and it passes that on to its operands of its own shape
  // when it is a backward add. One pass, where asking op by op walked the rest of the graph per
  // op and per term of the sum (a residual stream's gradient runs through every layer's adds).
  std::vector<char> accumulated(static_cast<size_t>(graph.size()), 0);
  for (int32_t r = graph.size() - 1; r >= 0; --r) {
    const Op& reader = graph.op(r);
    if (reader.role == TensorRole::kGradient) accumulated[static_cast<size_t>(r)] = 1;
    if (!accumulated[static_cast<size_t>(r)] || reader.kind != OpKind::kAdd ||
        reader.phase != Phase::kBackward) {
      continue;
    }
    for (int32_t u : reader.operands) {
      if (u < r && graph.op(u).shape == reader.shape) accumulated[static_cast<size_t>(u)] = 1;
    }
  }
  return accumulated;
}

bool AccumulatedIntoGradient(const Graph& graph, int32_t id) {
  return AccumulatedIntoGradient(graph)[static_cast<size_t>(id)] != 0;
}

Result<Subgraph> ExtractSubgraph(const Graph& graph, const std::vector<int32_t>& op_group,
                                 int32_t first, int32_t last) {
  if (op_group.size() != static_cast<size_t>(graph.size())) {
    return InvalidArgument("subgraph: op_group has " + std::to_string(op_group.size()) +
                           " entries for " + std::to_string(graph.size()) + " ops");
  }
  if (first > last) {
    return InvalidArgument("subgraph: empty group range " + std::to_string(first) + ".." +
                           std::to_string(last));
  }
  const size_t n = static_cast<size_t>(graph.size());
  auto selected = [&](int32_t id) {
    const int32_t g = op_group[static_cast<size_t>(id)];
    return g >= first && g <= last;
  };
  // What is copied: the selection, plus (walking backwards, so users come before operands)
  // parameters, constants (and what is computed from them alone) and ungrouped ops that a
  // copied op reads.
  const std::vector<char> from_constants = ComputedFromConstants(graph);
  std::vector<char> copy(n, 0);
  for (int32_t id = graph.size() - 1; id >= 0; --id) {
    if (selected(id)) copy[static_cast<size_t>(id)] = 1;
    if (!copy[static_cast<size_t>(id)]) continue;
    // The parameter an update replaces comes along even when the update does not read it
    // (an optimizer that computes the new value from master weights or moments).
    if (graph.op(id).alias_of >= 0) copy[static_cast<size_t>(graph.op(id).alias_of)] = 1;
    for (int32_t u : graph.op(id).operands) {
      const Op& operand = graph.op(u);
      if (operand.kind == OpKind::kParameter || from_constants[static_cast<size_t>(u)] ||
          op_group[static_cast<size_t>(u)] < 0) {
        copy[static_cast<size_t>(u)] = 1;
      }
    }
  }

  Subgraph sub;
  std::vector<int32_t> local(n, -1);
  for (int32_t id = 0; id < graph.size(); ++id) {
    if (!copy[static_cast<size_t>(id)]) continue;
    Op op = graph.op(id);
    for (int32_t& u : op.operands) {
      if (local[static_cast<size_t>(u)] < 0) {  // computed elsewhere: an input here
        const Op& src = graph.op(u);
        Op in;
        in.kind = OpKind::kParameter;
        in.shape = src.shape;
        in.dtype = src.dtype;
        in.role = TensorRole::kInput;
        in.phase = src.phase;
        in.layer = op.layer;
        in.name = src.name;
        local[static_cast<size_t>(u)] = sub.graph.size();
        sub.boundary_inputs.push_back(sub.graph.size());
        sub.origin.push_back(u);
        sub.graph.ops.push_back(std::move(in));
      }
      u = local[static_cast<size_t>(u)];
    }
    if (op.alias_of >= 0) {
      op.alias_of = local[static_cast<size_t>(op.alias_of)];  // copied above
      if (op.alias_of < 0) {
        return InternalError("subgraph: the parameter " + DescribeOp(graph, id) +
                             " updates was not copied");
      }
    }
    local[static_cast<size_t>(id)] = sub.graph.size();
    sub.origin.push_back(id);
    sub.graph.ops.push_back(std::move(op));
  }
  if (sub.graph.ops.empty() || std::none_of(sub.origin.begin(), sub.origin.end(), selected)) {
    return InvalidArgument("subgraph: groups " + std::to_string(first) + ".." +
                           std::to_string(last) + " hold no op");
  }

  std::vector<char> is_output(static_cast<size_t>(sub.graph.size()), 0);
  for (int32_t out : graph.outputs) {
    const int32_t l = local[static_cast<size_t>(out)];
    if (l >= 0 && selected(out) && !is_output[static_cast<size_t>(l)]) {
      is_output[static_cast<size_t>(l)] = 1;
      sub.graph.outputs.push_back(l);
    }
  }
  std::vector<char> read_outside(n, 0);
  for (int32_t id = 0; id < graph.size(); ++id) {
    if (selected(id)) continue;
    for (int32_t u : graph.op(id).operands) {
      // A reader elsewhere computes a constant-derived value itself.
      if (selected(u) && !from_constants[static_cast<size_t>(u)]) {
        read_outside[static_cast<size_t>(u)] = 1;
      }
    }
  }
  std::vector<char> accumulated;  // computed at the first boundary output
  for (int32_t id = 0; id < graph.size(); ++id) {
    const int32_t l = local[static_cast<size_t>(id)];
    if (!read_outside[static_cast<size_t>(id)] || l < 0) continue;
    if (accumulated.empty()) accumulated = AccumulatedIntoGradient(graph);
    sub.boundary_outputs.push_back(l);
    sub.boundary_output_accumulated.push_back(accumulated[static_cast<size_t>(id)]);
    if (!is_output[static_cast<size_t>(l)]) {
      is_output[static_cast<size_t>(l)] = 1;
      sub.graph.outputs.push_back(l);
    }
  }
  return sub;
}

std::string StructuralKey(const Graph& graph) {
  Graph g = graph;
  for (Op& op : g.ops) {
    op.name.clear();
    op.source.clear();
    op.layer = 0;
  }
  Result<std::string> json = WriteGraphJson(g);
  return json.ok() ? std::move(json).value() : std::string();
}

}  // namespace alpa
