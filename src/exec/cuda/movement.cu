// Data movement: one strided-copy kernel (strided_index.h's CopyAt over a StridedWalk) serves
// broadcast_in_dim, reshape, transpose, slice, concatenate (one walk per operand), pad (after a
// fill with its value; negative padding crops, interior padding spreads) and reverse, as well as
// the runner's box copies.
#include "exec/cuda/kernel_launch.h"

namespace alpa {
namespace cuda {
namespace {

__global__ void StridedCopyKernel(CopyArgs args) {
  const int64_t n = args.walk.count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    CopyAt(args, i);
  }
}

}  // namespace

Status LaunchStridedCopy(const LaunchContext& ctx, const CopyArgs& args, const std::string& what) {
  if (args.walk.count == 0) return Status::Ok();
  StridedCopyKernel<<<BlocksFor(args.walk.count), kThreadsPerBlock, 0, ctx.stream>>>(args);
  return CheckLaunch(what);
}

Status LaunchMovementOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                        const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                        OutputRounding rounding) {
  const Op& op = graph.op(id);
  const std::string what = DescribeOp(graph, id);
  Result<std::vector<CopyPiece>> pieces = MovementPieces(graph, id);
  if (!pieces.ok()) return pieces.status();
  if (op.kind == OpKind::kPad) {
    ALPA_RETURN_IF_ERROR(
        LaunchFill(ctx, out.data, out.storage, out.elements(), op.attrs.value, rounding, what));
  }
  for (const CopyPiece& piece : pieces.value()) {
    const DeviceTensor& src = operands[static_cast<size_t>(piece.operand)];
    CopyArgs args;
    args.src = src.data;
    args.src_storage = src.storage;
    args.dst = out.data;
    args.dst_storage = out.storage;
    args.rounding = rounding;
    args.walk = piece.walk;
    ALPA_RETURN_IF_ERROR(LaunchStridedCopy(ctx, args, what));
  }
  return Status::Ok();
}

}  // namespace cuda
}  // namespace alpa
