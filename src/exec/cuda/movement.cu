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

template <typename T>
__global__ void RawStridedCopyKernel(CopyArgs args) {
  const int64_t n = args.walk.count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    RawCopyAt<T>(args, i);
  }
}

template <typename T>
void LaunchRawCopy(const LaunchContext& ctx, const CopyArgs& c) {
  RawStridedCopyKernel<T><<<BlocksFor(c.walk.count), kThreadsPerBlock, 0, ctx.stream>>>(c);
}

// A copy of stored bytes (CopiesBytes): one memcpy where both views are dense, else a kernel
// moving elements of the storage's width.
Status LaunchByteCopy(const LaunchContext& ctx, const CopyArgs& c, const std::string& what) {
  const int64_t width = DTypeBytes(c.src_storage);
  const bool dense =
      c.walk.rank == 0 || (c.walk.rank == 1 && c.walk.a_stride[0] == 1 && c.walk.b_stride[0] == 1);
  if (dense) {
    return CudaStatus(cudaMemcpyAsync(static_cast<char*>(c.dst) + c.walk.b_base * width,
                                      static_cast<const char*>(c.src) + c.walk.a_base * width,
                                      static_cast<size_t>(c.walk.count * width),
                                      cudaMemcpyDeviceToDevice, ctx.stream),
                      what);
  }
  switch (width) {
    case 1:
      LaunchRawCopy<uint8_t>(ctx, c);
      break;
    case 2:
      LaunchRawCopy<uint16_t>(ctx, c);
      break;
    case 4:
      LaunchRawCopy<uint32_t>(ctx, c);
      break;
    default:
      LaunchRawCopy<uint64_t>(ctx, c);
      break;
  }
  return CheckLaunch(what);
}

}  // namespace

Status LaunchStridedCopy(const LaunchContext& ctx, const CopyArgs& args, const std::string& what) {
  if (args.walk.count == 0) return Status::Ok();
  CopyArgs c = args;
  c.walk = SimplifyWalk(args.walk);
  if (CopiesBytes(c)) return LaunchByteCopy(ctx, c, what);
  StridedCopyKernel<<<BlocksFor(c.walk.count), kThreadsPerBlock, 0, ctx.stream>>>(c);
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
