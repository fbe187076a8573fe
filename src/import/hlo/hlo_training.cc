// Roles, phases and aliases of an imported step (hlo_training.h), then dead ops dropped.
#include "import/hlo/hlo_training.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace alpa {
namespace {

// Appends an identity reshape of op `id` (a fresh op to carry an alias).
int32_t AppendCopy(Graph& graph, std::vector<std::string>& op_names, int32_t id) {
  Op copy;
  copy.kind = OpKind::kReshape;
  copy.operands = {id};
  copy.shape = graph.op(id).shape;
  copy.dtype = graph.op(id).dtype;
  copy.name = graph.op(id).name + ".copy";
  graph.ops.push_back(copy);
  op_names.push_back(op_names[static_cast<size_t>(id)]);
  return graph.size() - 1;
}

// Binds each aliased output to its parameter; returns the loss op (-1 if none).
Result<int32_t> BindAliases(HloImport& import, std::vector<bool>& donated) {
  Graph& graph = import.graph;
  std::vector<bool> aliased_output(import.outputs.size(), false);
  for (const HloAlias& alias : import.aliases) {
    if (alias.parameter_number < 0 || alias.parameter_number >= import.parameter_count) {
      return ParseError("input_output_alias names parameter " +
                        std::to_string(alias.parameter_number) + ", but the entry has " +
                        std::to_string(import.parameter_count));
    }
    auto it = std::find_if(import.outputs.begin(), import.outputs.end(), [&](const HloOutput& o) {
      return o.output_index == alias.output_index;
    });
    if (it == import.outputs.end()) {
      return ParseError("input_output_alias names an output index the ROOT does not have");
    }
    auto parameter = static_cast<int32_t>(alias.parameter_number);
    donated[static_cast<size_t>(parameter)] = true;
    aliased_output[static_cast<size_t>(it - import.outputs.begin())] = true;
    if (it->id == parameter) continue;  // returned unchanged: nothing replaces it
    if (graph.op(it->id).kind == OpKind::kParameter || graph.op(it->id).alias_of != -1) {
      it->id = AppendCopy(graph, import.op_names, it->id);
    }
    graph.ops[static_cast<size_t>(it->id)].alias_of = parameter;
  }
  // The loss (the first unaliased floating-point scalar) first, then the other outputs.
  int32_t loss = -1;
  size_t loss_index = import.outputs.size();
  for (size_t i = 0; i < import.outputs.size() && loss < 0; ++i) {
    const Op& op = graph.op(import.outputs[i].id);
    if (!aliased_output[i] && op.shape.empty() && IsFloating(op.dtype)) {
      loss = import.outputs[i].id;
      loss_index = i;
    }
  }
  std::vector<int32_t> outputs;
  if (loss >= 0) outputs.push_back(loss);
  for (size_t i = 0; i < import.outputs.size(); ++i) {
    if (i != loss_index) outputs.push_back(import.outputs[i].id);
  }
  graph.outputs = outputs;
  return loss;
}

// Ops that `root` depends on, itself included.
std::vector<bool> Ancestors(const Graph& graph, int32_t root) {
  std::vector<bool> marked(graph.ops.size(), false);
  if (root < 0) return marked;
  marked[static_cast<size_t>(root)] = true;
  for (int32_t id = root; id >= 0; --id) {
    if (!marked[static_cast<size_t>(id)]) continue;
    for (int32_t operand : graph.op(id).operands) marked[static_cast<size_t>(operand)] = true;
  }
  return marked;
}

// Whether op `id`, met walking up from an update of a parameter of `shape`, is that parameter's
// gradient: the sum of two backward contributions (JAX's add_any: a weight used twice), or the
// first op computed from the forward pass that is not elementwise and has the parameter's shape
// (the transpose, reduction, pad or scatter that ends the backward pass). Other ops computed
// from the forward pass belong to the update (a gradient-norm clip's reductions).
bool IsGradient(const Graph& graph, int32_t id, const Dims& shape,
                const std::vector<bool>& from_forward) {
  const Op& op = graph.op(id);
  if (!from_forward[static_cast<size_t>(id)] || op.shape != shape) return false;
  if (op.kind == OpKind::kAdd && op.operands[0] != op.operands[1] &&
      from_forward[static_cast<size_t>(op.operands[0])] &&
      from_forward[static_cast<size_t>(op.operands[1])]) {
    return true;
  }
  return !IsElementwise(op.kind);
}

void AssignPhases(Graph& graph, int32_t loss, bool has_aliases) {
  const size_t n = graph.ops.size();
  if (loss < 0 || !has_aliases) {
    // Not a training step: everything is the forward pass.
    for (Op& op : graph.ops) op.phase = Phase::kForward;
    return;
  }
  std::vector<bool> forward = Ancestors(graph, loss);
  // Ops computed from the forward pass (outside it).
  std::vector<bool> from_forward(n, false);
  for (size_t id = 0; id < n; ++id) {
    for (int32_t operand : graph.ops[id].operands) {
      auto o = static_cast<size_t>(operand);
      if ((forward[o] && graph.ops[o].kind != OpKind::kParameter) || from_forward[o]) {
        from_forward[id] = !forward[id];
      }
    }
  }
  for (size_t id = 0; id < n; ++id) {
    Op& op = graph.ops[id];
    if (op.kind == OpKind::kParameter) continue;
    op.phase = forward[id] ? Phase::kForward : Phase::kBackward;
  }
  std::vector<bool> visited(n, false);
  for (size_t start = 0; start < n; ++start) {
    if (graph.ops[start].alias_of < 0 || graph.ops[start].kind == OpKind::kParameter) continue;
    const Dims& shape = graph.op(graph.ops[start].alias_of).shape;
    std::vector<int32_t> stack = {static_cast<int32_t>(start)};
    while (!stack.empty()) {
      auto id = static_cast<size_t>(stack.back());
      stack.pop_back();
      if (visited[id] || forward[id]) continue;
      visited[id] = true;
      Op& op = graph.ops[id];
      if (op.kind == OpKind::kParameter) continue;
      if (IsGradient(graph, static_cast<int32_t>(id), shape, from_forward)) {
        op.role = TensorRole::kGradient;
        op.phase = Phase::kBackward;
        continue;
      }
      op.phase = Phase::kUpdate;
      for (int32_t operand : op.operands) stack.push_back(operand);
    }
  }
}

// Keeps the parameters and what the outputs need, renumbering the ops.
void DropDeadOps(HloImport& import) {
  Graph& graph = import.graph;
  std::vector<bool> live(graph.ops.size(), false);
  for (int32_t output : graph.outputs) live[static_cast<size_t>(output)] = true;
  for (int32_t id = graph.size() - 1; id >= 0; --id) {
    if (graph.op(id).kind == OpKind::kParameter && id < import.parameter_count) {
      live[static_cast<size_t>(id)] = true;
    }
    if (!live[static_cast<size_t>(id)]) continue;
    for (int32_t operand : graph.op(id).operands) live[static_cast<size_t>(operand)] = true;
  }
  std::vector<int32_t> new_id(graph.ops.size(), -1);
  Graph kept;
  std::vector<std::string> names;
  for (size_t id = 0; id < graph.ops.size(); ++id) {
    if (!live[id]) continue;
    Op op = graph.ops[id];
    for (int32_t& operand : op.operands) operand = new_id[static_cast<size_t>(operand)];
    if (op.alias_of >= 0) op.alias_of = new_id[static_cast<size_t>(op.alias_of)];
    new_id[id] = kept.size();
    kept.ops.push_back(std::move(op));
    names.push_back(import.op_names[id]);
  }
  for (int32_t output : graph.outputs) kept.outputs.push_back(new_id[static_cast<size_t>(output)]);
  graph = std::move(kept);
  import.op_names = std::move(names);
}

}  // namespace

Status AssignTrainingRoles(HloImport& import) {
  Graph& graph = import.graph;
  std::vector<bool> donated(static_cast<size_t>(import.parameter_count), false);
  Result<int32_t> loss = BindAliases(import, donated);
  if (!loss.ok()) return loss.status();
  std::vector<bool> feeds_loss = Ancestors(graph, loss.value());
  for (int32_t p = 0; p < import.parameter_count; ++p) {
    Op& op = graph.ops[static_cast<size_t>(p)];
    if (!donated[static_cast<size_t>(p)]) {
      op.role = TensorRole::kInput;
    } else {
      op.role =
          feeds_loss[static_cast<size_t>(p)] ? TensorRole::kParameter : TensorRole::kOptimizerState;
    }
  }
  AssignPhases(graph, loss.value(), !import.aliases.empty());
  DropDeadOps(import);
  return Status::Ok();
}

}  // namespace alpa
