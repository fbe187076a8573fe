#include "core/ir/graph_stats.h"

#include <algorithm>

namespace alpa {
namespace {

long double Elements(const Dims& shape) {
  long double n = 1;
  for (int64_t d : shape) n *= static_cast<long double>(d);
  return n;
}

long double DotFlops(const Graph& graph, const Op& op) {
  const Dims& lhs = graph.op(op.operands[0]).shape;
  const DotDims& d = op.attrs.dot;
  // Result elements times the contracted extent, one multiply and one add each.
  long double contracted = 1;
  for (int64_t c : d.lhs_contracting)
    contracted *= static_cast<long double>(lhs[static_cast<size_t>(c)]);
  return 2 * Elements(op.shape) * contracted;
}

long double ConvFlops(const Graph& graph, const Op& op) {
  const Dims& kernel = graph.op(op.operands[1]).shape;
  // Each output element contracts C / groups input features over the kernel window.
  long double per_output = 1;
  for (size_t i = 1; i < kernel.size(); ++i) per_output *= static_cast<long double>(kernel[i]);
  return 2 * Elements(op.shape) * per_output;
}

}  // namespace

long double OpFlops(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  switch (op.kind) {
    case OpKind::kDotGeneral:
      return DotFlops(graph, op);
    case OpKind::kConvolution:
      return ConvFlops(graph, op);
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      return Elements(graph.op(op.operands[0]).shape);
    case OpKind::kReduceWindow: {
      long double window = 1;
      for (int64_t w : op.attrs.window) window *= static_cast<long double>(w);
      return Elements(op.shape) * window;
    }
    case OpKind::kSelectAndScatter: {
      long double window = 1;
      for (int64_t w : op.attrs.window) window *= static_cast<long double>(w);
      return Elements(graph.op(op.operands[1]).shape) * window;
    }
    case OpKind::kScatterAdd:
      return Elements(graph.op(op.operands[2]).shape);
    case OpKind::kSelect:
      return Elements(op.shape);
    default:
      break;
  }
  if (IsElementwiseUnary(op.kind) && op.kind != OpKind::kConvert) return Elements(op.shape);
  if (IsElementwiseBinary(op.kind)) return Elements(op.shape);
  return 0;
}

long double OpBytesAccessed(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  if (op.kind == OpKind::kParameter || op.kind == OpKind::kConstant || op.kind == OpKind::kIota) {
    return 0;  // sources are not computed
  }
  long double bytes = Elements(op.shape) * static_cast<long double>(DTypeBytes(op.dtype));
  for (int32_t o : op.operands) {
    const Op& in = graph.op(o);
    bytes += Elements(in.shape) * static_cast<long double>(DTypeBytes(in.dtype));
  }
  return bytes;
}

GraphStats ComputeGraphStats(const Graph& graph) {
  GraphStats stats;
  stats.num_ops = graph.size();
  int64_t max_layer = -1;
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    stats.ops_by_kind[OpKindName(op.kind)] += 1;
    stats.ops_by_phase[PhaseName(op.phase)] += 1;
    max_layer = std::max<int64_t>(max_layer, op.layer);
    long double elements = Elements(op.shape);
    long double bytes = elements * static_cast<long double>(DTypeBytes(op.dtype));
    int64_t whole_bytes = static_cast<int64_t>(bytes);
    if (op.kind == OpKind::kParameter) {
      if (op.role == TensorRole::kParameter) {
        stats.parameter_count += static_cast<int64_t>(elements);
        stats.parameter_bytes += whole_bytes;
      } else if (op.role == TensorRole::kOptimizerState) {
        stats.optimizer_state_bytes += whole_bytes;
      } else if (op.role == TensorRole::kInput) {
        stats.input_bytes += whole_bytes;
      }
    } else if (op.role == TensorRole::kGradient) {
      stats.gradient_bytes += whole_bytes;
    } else if (op.role == TensorRole::kActivation && op.phase == Phase::kForward &&
               op.kind != OpKind::kConstant && op.kind != OpKind::kIota) {
      stats.activation_bytes += bytes;
    }
    long double flops = OpFlops(graph, id);
    stats.flops += flops;
    stats.flops_by_phase[PhaseName(op.phase)] += flops;
    if (op.kind == OpKind::kDotGeneral) stats.dot_flops += flops;
    if (op.kind == OpKind::kConvolution) stats.conv_flops += flops;
  }
  stats.num_layers = max_layer + 1;
  return stats;
}

}  // namespace alpa
