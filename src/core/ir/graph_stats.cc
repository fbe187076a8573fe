#include "core/ir/graph_stats.h"

#include <algorithm>
#include <limits>

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

namespace {

// int64 sums of tensor bytes: a graph that passed ValidateGraph keeps all its results together
// below 2^63 bytes, so these never saturate for one; an unvalidated graph reads INT64_MAX
// rather than a wrapped negative total.
void AddSaturating(int64_t x, int64_t* sum) {
  if (__builtin_add_overflow(*sum, x, sum)) *sum = std::numeric_limits<int64_t>::max();
}

}  // namespace

GraphStats ComputeGraphStats(const Graph& graph) {
  GraphStats stats;
  stats.num_ops = graph.size();
  int64_t max_layer = -1;
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    stats.ops_by_kind[OpKindName(op.kind)] += 1;
    stats.ops_by_phase[PhaseName(op.phase)] += 1;
    max_layer = std::max<int64_t>(max_layer, op.layer);
    const Result<int64_t> elements = ElementCount(op.shape);
    const int64_t count = elements.ok() ? elements.value() : std::numeric_limits<int64_t>::max();
    int64_t bytes = 0;
    if (__builtin_mul_overflow(count, DTypeBytes(op.dtype), &bytes)) {
      bytes = std::numeric_limits<int64_t>::max();
    }
    if (op.kind == OpKind::kParameter) {
      if (op.role == TensorRole::kParameter) {
        AddSaturating(count, &stats.parameter_count);
        AddSaturating(bytes, &stats.parameter_bytes);
      } else if (op.role == TensorRole::kOptimizerState) {
        AddSaturating(bytes, &stats.optimizer_state_bytes);
      } else if (op.role == TensorRole::kInput) {
        AddSaturating(bytes, &stats.input_bytes);
      }
    } else if (op.role == TensorRole::kGradient) {
      AddSaturating(bytes, &stats.gradient_bytes);
    } else if (op.role == TensorRole::kActivation && op.phase == Phase::kForward &&
               op.kind != OpKind::kConstant && op.kind != OpKind::kIota) {
      stats.activation_bytes += static_cast<long double>(bytes);
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
