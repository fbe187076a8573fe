// LaunchOp: checks the launch (operand count, shapes and storage types against the graph) and
// dispatches by op kind to the launchers of each concern (kernel_launch.h).
#include <string>
#include <vector>

#include "exec/cuda/kernel_launch.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/op_rounding.h"

namespace alpa {
namespace cuda {
namespace {

// The storage types a tensor of `dtype` may have: the dtype, or f32 for a 16-bit float value
// kept unrounded.
bool StorageFits(DType storage, DType dtype) {
  return storage == dtype ||
         (storage == DType::kF32 && (dtype == DType::kF16 || dtype == DType::kBF16));
}

Status CheckTensor(const Graph& graph, int32_t id, const DeviceTensor& t, const std::string& what) {
  const Op& op = graph.op(id);
  if (t.shape != op.shape) {
    return InvalidArgument(what + " has shape " + ShapeString(t.shape) + ", expected " +
                           ShapeString(op.shape));
  }
  if (!StorageFits(t.storage, op.dtype)) {
    return InvalidArgument(what + " is stored as " + DTypeName(t.storage) + ", which cannot hold " +
                           DTypeName(op.dtype));
  }
  if (t.data == nullptr && t.elements() > 0) return InvalidArgument(what + " has no memory");
  return Status::Ok();
}

Status CheckLaunchArguments(const Graph& graph, int32_t id,
                            const std::vector<DeviceTensor>& operands, const DeviceTensor& out) {
  if (id < 0 || id >= graph.size()) {
    return InvalidArgument("LaunchOp: op " + std::to_string(id) + " is outside the graph's " +
                           std::to_string(graph.size()) + " ops");
  }
  const Op& op = graph.op(id);
  const std::string what = DescribeOp(graph, id);
  if (op.kind == OpKind::kParameter) {
    return InvalidArgument(what + " is a parameter: it has no kernel");
  }
  if (operands.size() != op.operands.size()) {
    return InvalidArgument(what + " takes " + std::to_string(op.operands.size()) +
                           " operand(s), got " + std::to_string(operands.size()));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    ALPA_RETURN_IF_ERROR(CheckTensor(graph, op.operands[i], operands[i],
                                     "operand " + std::to_string(i) + " of " + what));
  }
  return CheckTensor(graph, id, out, "the result of " + what);
}

Status LaunchElementwiseOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                           const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                           OutputRounding rounding) {
  const Op& op = graph.op(id);
  ElementwiseArgs args;
  args.kind = op.kind;
  args.comparison = op.attrs.comparison;
  args.operand_count = static_cast<int32_t>(operands.size());
  for (size_t k = 0; k < operands.size(); ++k) {
    args.in[k] = operands[k].data;
    args.in_storage[k] = operands[k].storage;
  }
  args.out = out.data;
  args.out_storage = out.storage;
  args.rounding = rounding;
  return LaunchElementwise(ctx, args, out.elements(), DescribeOp(graph, id));
}

}  // namespace

Result<char*> ReserveScratch(const LaunchContext& ctx, const ScratchPlan& plan,
                             const std::string& what) {
  if (ctx.scratch == nullptr) {
    return InvalidArgument(what + " needs " + std::to_string(plan.total()) +
                           " bytes of scratch memory, and the launch context has no Scratch");
  }
  Result<void*> memory = ctx.scratch->Reserve(plan.total());
  if (!memory.ok()) {
    return Status(memory.status().code(), what + ": scratch of " + std::to_string(plan.total()) +
                                              " bytes: " + memory.status().message());
  }
  return static_cast<char*>(memory.value());
}

Status LaunchOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                const OpLaunch& launch) {
  ALPA_RETURN_IF_ERROR(CheckLaunchArguments(graph, id, operands, out));
  const Op& op = graph.op(id);
  const std::string what = DescribeOp(graph, id);
  const OutputRounding rounding = ForStorage(RoundingFor(op, launch.round), out.storage);
  switch (op.kind) {
    case OpKind::kConstant:
      return LaunchFill(ctx, out.data, out.storage, out.elements(), op.attrs.value, rounding, what);
    case OpKind::kIota: {
      const size_t axis = static_cast<size_t>(op.attrs.axis);
      return LaunchIota(ctx, out.data, out.storage, out.elements(), DenseStrides(op.shape)[axis],
                        op.shape[axis], rounding, what);
    }
    case OpKind::kDotGeneral:
      return LaunchDotGeneralOp(ctx, graph, id, operands, out, rounding);
    case OpKind::kConvolution:
      return LaunchConvolutionOp(ctx, graph, id, operands, out, rounding);
    case OpKind::kBroadcastInDim:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kConcatenate:
    case OpKind::kPad:
    case OpKind::kReverse:
      return LaunchMovementOp(ctx, graph, id, operands, out, rounding);
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      return LaunchReduceOp(ctx, graph, id, operands, out, rounding);
    case OpKind::kReduceWindow:
      return LaunchReduceWindowOp(ctx, graph, id, operands, out, rounding);
    case OpKind::kSelectAndScatter:
      return LaunchSelectAndScatterOp(ctx, graph, id, operands, out, rounding);
    case OpKind::kGather:
      return LaunchGatherOp(ctx, graph, id, operands, out, launch);
    case OpKind::kScatterAdd:
      return LaunchScatterAddOp(ctx, graph, id, operands, out, launch, rounding);
    case OpKind::kSelect:
      return LaunchElementwiseOp(ctx, graph, id, operands, out, rounding);
    default:
      if (IsElementwiseUnary(op.kind) || IsElementwiseBinary(op.kind)) {
        return LaunchElementwiseOp(ctx, graph, id, operands, out, rounding);
      }
      return Status(StatusCode::kUnsupported,
                    what + ": the CUDA backend has no kernel for this op kind");
  }
}

}  // namespace cuda
}  // namespace alpa
