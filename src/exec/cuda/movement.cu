// Data movement: strided copies over a StridedWalk (simplified first: SimplifyWalk) serve
// broadcast_in_dim, reshape, transpose, slice, concatenate (one walk per operand), pad (after a
// fill with its value; negative padding crops, interior padding spreads) and reverse, as well as
// the runner's box copies. A copy that moves stored elements unchanged (CopiesBytes) is one
// cudaMemcpyAsync where both views are dense, else a kernel moving the storage's words, 16 bytes
// of destination per thread where the innermost dim allows; others convert through CopyAt.
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

// A 16-byte pack of destination elements (SpansFit): thread s writes elements [s * span,
// (s + 1) * span) of the walk, which lie in one run of the innermost dim: one division for
// the pack, its source elements a_inner apart.
template <typename T>
struct alignas(16) Pack16 {
  static constexpr int64_t kSpan = 16 / sizeof(T);
  T v[16 / sizeof(T)];
};

template <typename T>
__global__ void RawSpanCopyKernel(CopyArgs c, int64_t spans) {
  constexpr int64_t kSpan = Pack16<T>::kSpan;
  const int64_t a_inner = c.walk.a_stride[c.walk.rank - 1];
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; s < spans;
       s += step) {
    int64_t a = 0, b = 0;
    WalkOffsets(c.walk, s * kSpan, &a, &b);
    Pack16<T> p;
    for (int64_t k = 0; k < kSpan; ++k) p.v[k] = static_cast<const T*>(c.src)[a + k * a_inner];
    *reinterpret_cast<Pack16<T>*>(static_cast<T*>(c.dst) + b) = p;
  }
}

// Whether every pack of the walk is one aligned 16-byte run of the destination.
template <typename T>
bool SpansFit(const CopyArgs& c) {
  const int64_t span = Pack16<T>::kSpan;
  const StridedWalk& w = c.walk;
  if (w.rank == 0 || w.b_stride[w.rank - 1] != 1 || w.shape[w.rank - 1] % span != 0 ||
      w.b_base % span != 0 || reinterpret_cast<uintptr_t>(c.dst) % 16 != 0) {
    return false;
  }
  for (int32_t d = 0; d + 1 < w.rank; ++d) {
    if (w.b_stride[d] % span != 0) return false;
  }
  return true;
}

template <typename T>
void LaunchRawCopy(const LaunchContext& ctx, const CopyArgs& c) {
  if (SpansFit<T>(c)) {
    const int64_t spans = c.walk.count / Pack16<T>::kSpan;
    RawSpanCopyKernel<T><<<BlocksFor(spans), kThreadsPerBlock, 0, ctx.stream>>>(c, spans);
    return;
  }
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

Status LaunchArrange(const LaunchContext& ctx, const DeviceTensor& t, const Dims& permutation,
                     void* dst, DType type, const std::string& what) {
  CopyArgs args;
  args.src = t.data;
  args.src_storage = t.storage;
  args.dst = dst;
  args.dst_storage = type;
  Result<StridedWalk> walk = Status::Ok();
  if (permutation.empty()) {
    walk = MakeWalk(Dims{t.elements()}, Dims{1}, 0, Dims{1}, 0, what);
  } else {
    const Dims all = DenseStrides(t.shape);
    Dims shape, strides;
    for (int64_t d : permutation) {
      shape.push_back(t.shape[static_cast<size_t>(d)]);
      strides.push_back(all[static_cast<size_t>(d)]);
    }
    walk = MakeWalk(shape, strides, 0, DenseStrides(shape), 0, what);
  }
  if (!walk.ok()) return walk.status();
  args.walk = walk.value();
  return LaunchStridedCopy(ctx, args, what);
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
