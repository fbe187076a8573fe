// Whole-graph validation: references, cycles, types, aliases and outputs.
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace alpa {
namespace {

// Finds a cycle through forward references, if any, and describes it ("op 3 -> op 5 -> op 3").
std::string FindCycle(const Graph& graph) {
  int32_t n = graph.size();
  std::vector<int8_t> state(static_cast<size_t>(n), 0);  // 0 new, 1 on stack, 2 done
  std::vector<int32_t> parent(static_cast<size_t>(n), -1);
  for (int32_t root = 0; root < n; ++root) {
    if (state[static_cast<size_t>(root)] != 0) continue;
    // Iterative DFS over operand edges (op -> operand).
    std::vector<std::pair<int32_t, size_t>> stack = {{root, 0}};
    state[static_cast<size_t>(root)] = 1;
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      const std::vector<int32_t>& ins = graph.op(v).operands;
      if (next == ins.size()) {
        state[static_cast<size_t>(v)] = 2;
        stack.pop_back();
        continue;
      }
      int32_t w = ins[next++];
      if (w < 0 || w >= n) continue;
      if (state[static_cast<size_t>(w)] == 1) {
        // w is on the stack: the cycle is w -> ... -> v -> w.
        std::string path = DescribeOp(graph, w);
        bool on = false;
        for (const auto& [u, unused] : stack) {
          (void)unused;
          if (u == w) on = true;
          if (on && u != w) path += " -> " + DescribeOp(graph, u);
        }
        return path + " -> " + DescribeOp(graph, w);
      }
      if (state[static_cast<size_t>(w)] == 0) {
        state[static_cast<size_t>(w)] = 1;
        parent[static_cast<size_t>(w)] = v;
        stack.push_back({w, 0});
      }
    }
  }
  return "";
}

}  // namespace

Status ValidateGraph(const Graph& graph) {
  int32_t n = graph.size();
  // References first: out of range, then forward references (cycles or misordering).
  for (int32_t id = 0; id < n; ++id) {
    const Op& op = graph.op(id);
    for (size_t i = 0; i < op.operands.size(); ++i) {
      int32_t o = op.operands[i];
      if (o < 0 || o >= n) {
        return InvalidGraph(DescribeOp(graph, id) + ": operand " + std::to_string(i) +
                            " refers to op " + std::to_string(o) +
                            ", which does not exist (the graph has " + std::to_string(n) + " ops)");
      }
    }
  }
  for (int32_t id = 0; id < n; ++id) {
    const Op& op = graph.op(id);
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (op.operands[i] >= id) {
        std::string cycle = FindCycle(graph);
        if (!cycle.empty()) return InvalidGraph("the graph has a cycle: " + cycle);
        return InvalidGraph(DescribeOp(graph, id) + ": operand " + std::to_string(i) +
                            " refers to op " + std::to_string(op.operands[i]) +
                            ", which comes later; ops must be listed in topological order");
      }
    }
  }
  std::vector<int32_t> replaced_by(static_cast<size_t>(n), -1);
  int64_t total_bytes = 0;
  for (int32_t id = 0; id < n; ++id) {
    Op inferred = graph.op(id);
    ALPA_RETURN_IF_ERROR(InferOpType(graph, id, inferred));
    const Op& op = graph.op(id);
    if (inferred.shape != op.shape || inferred.dtype != op.dtype) {
      return InvalidGraph(DescribeOp(graph, id) + ": stored type " + DTypeName(op.dtype) +
                          ShapeString(op.shape) + " differs from the inferred " +
                          DTypeName(inferred.dtype) + ShapeString(inferred.shape));
    }
    ALPA_RETURN_IF_ERROR(AddOpBytes(op, id, &total_bytes));
    if (static_cast<int32_t>(op.role) < 0 || static_cast<int32_t>(op.role) > 4) {
      return InvalidGraph(DescribeOp(graph, id) + ": unknown tensor role");
    }
    if (static_cast<int32_t>(op.phase) < 0 || static_cast<int32_t>(op.phase) > 2) {
      return InvalidGraph(DescribeOp(graph, id) + ": unknown phase");
    }
    if (op.layer < -1) return InvalidGraph(DescribeOp(graph, id) + ": layer must be >= -1");
    if (op.alias_of != -1) {
      if (op.alias_of < 0 || op.alias_of >= n || graph.op(op.alias_of).kind != OpKind::kParameter) {
        return InvalidGraph(DescribeOp(graph, id) + ": alias_of " + std::to_string(op.alias_of) +
                            " is not a parameter op");
      }
      const Op& target = graph.op(op.alias_of);
      if (target.shape != op.shape || target.dtype != op.dtype) {
        return InvalidGraph(DescribeOp(graph, id) + ": aliases " + DescribeOp(graph, op.alias_of) +
                            " of a different type (" + DTypeName(target.dtype) +
                            ShapeString(target.shape) + ")");
      }
      int32_t& previous = replaced_by[static_cast<size_t>(op.alias_of)];
      if (previous != -1) {
        return InvalidGraph(DescribeOp(graph, id) + ": " + DescribeOp(graph, op.alias_of) +
                            " is already replaced by " + DescribeOp(graph, previous));
      }
      previous = id;
    }
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    int32_t o = graph.outputs[i];
    if (o < 0 || o >= n) {
      return InvalidGraph("output " + std::to_string(i) + " refers to op " + std::to_string(o) +
                          ", which does not exist");
    }
  }
  return Status::Ok();
}

}  // namespace alpa
