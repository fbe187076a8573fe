// Weight-gradient ops of a piece (weight_gradient_ops.h).
#include "solvers/planner/weight_gradient_ops.h"

#include "solvers/planner/subgraph.h"

namespace alpa {

std::vector<char> WeightGradientOps(const Graph& graph) {
  const size_t n = static_cast<size_t>(graph.size());
  const std::vector<char> accumulated = AccumulatedIntoGradient(graph);
  // The input-gradient ops: the per-microbatch backward outputs and every backward op they
  // read, found walking back from the last op (readers come after their operands).
  std::vector<char> input_gradient(n, 0);
  for (int32_t out : graph.outputs) {
    const size_t o = static_cast<size_t>(out);
    if (graph.op(out).phase == Phase::kBackward && !accumulated[o]) input_gradient[o] = 1;
  }
  for (int32_t r = graph.size() - 1; r >= 0; --r) {
    if (!input_gradient[static_cast<size_t>(r)]) continue;
    for (int32_t u : graph.op(r).operands) {
      if (graph.op(u).phase == Phase::kBackward) input_gradient[static_cast<size_t>(u)] = 1;
    }
  }
  std::vector<char> weight(n, 0);
  for (size_t i = 0; i < n; ++i) {
    weight[i] = graph.op(static_cast<int32_t>(i)).phase == Phase::kBackward && !input_gradient[i];
  }
  return weight;
}

}  // namespace alpa
