// Reductions: reduce_sum / reduce_max over any dims, in double with a fixed order and no
// atomics: a thread per output for short reductions, a warp per row for many long contiguous
// rows (softmax and layer-norm rows; 16-byte loads where they fit), a block per output for other
// long ones, and a split into chunks and a second pass where the outputs are too few to fill the
// GPU (full reductions, bias gradients: reduce_body.h's ReduceSplit); reduce_window (a thread
// per window) and select_and_scatter (a thread per source element, atomics on a double scratch,
// then one rounding to the dtype).
#include "exec/cuda/kernel_launch.h"
#include "exec/cuda/packed_elements.h"
#include "exec/cuda/reduce_body.h"

namespace alpa {
namespace cuda {
namespace {

__global__ void ReduceThreadPerOutputKernel(ReduceArgs r, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += step) {
    ReduceOutputAt(r, o);
  }
}

// Launched with kReduceBlockThreads threads: thread t reduces elements t, t + 256, ... of the
// row; the partial results combine in a tree, lower threads holding earlier elements.
__global__ void ReduceBlockPerOutputKernel(ReduceArgs r, int64_t n) {
  __shared__ double partial[kReduceBlockThreads];
  const int32_t t = static_cast<int32_t>(threadIdx.x);
  for (int64_t o = blockIdx.x; o < n; o += gridDim.x) {  // uniform across the block
    int64_t x_base = 0, out_offset = 0;
    WalkOffsets(r.kept, o, &x_base, &out_offset);
    partial[t] = ReduceRange(r, x_base, t, kReduceBlockThreads);
    __syncthreads();
    for (int32_t half = kReduceBlockThreads / 2; half > 0; half /= 2) {
      if (t < half) partial[t] = CombineReduce(r.is_max, partial[t], partial[t + half]);
      __syncthreads();
    }
    if (t == 0) StoreElement(r.out, r.out_storage, out_offset, FinishValue(partial[0], r.rounding));
    __syncthreads();  // partial[0] is read before the next row overwrites it
  }
}

// UsesWarpReduce: warp w of the grid reduces rows w, w + warps, ...; lane t elements t, t + 32,
// ...; the lanes combine by shuffles in a tree, lower lanes holding earlier elements.
__global__ void ReduceWarpPerOutputKernel(ReduceArgs r, int64_t n) {
  const int32_t lane = static_cast<int32_t>(threadIdx.x) % kWarpThreads;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarpThreads);
  for (int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpThreads;
       o < n; o += warps) {  // uniform across the warp
    int64_t x_base = 0, out_offset = 0;
    WalkOffsets(r.kept, o, &x_base, &out_offset);
    double acc = ReduceRange(r, x_base, lane, kWarpThreads);
    for (int32_t half = kWarpThreads / 2; half > 0; half /= 2) {
      const double later = __shfl_down_sync(0xffffffffu, acc, half);
      if (lane < half) acc = CombineReduce(r.is_max, acc, later);
    }
    if (lane == 0) StoreElement(r.out, r.out_storage, out_offset, FinishValue(acc, r.rounding));
  }
}

// ReduceWarpPerOutputKernel for rows that PacksRows: lane t reduces packs t, t + 32, ... of
// eight elements (16-byte loads), each pack in order.
__global__ void ReducePackedWarpKernel(ReduceArgs r, int64_t n) {
  const int32_t lane = static_cast<int32_t>(threadIdx.x) % kWarpThreads;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarpThreads);
  const int64_t packs = r.reduced.count / kPack;
  for (int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpThreads;
       o < n; o += warps) {  // uniform across the warp
    int64_t x_base = 0, out_offset = 0;
    WalkOffsets(r.kept, o, &x_base, &out_offset);
    double acc = ReduceIdentity(r.is_max);
    for (int64_t p = lane; p < packs; p += kWarpThreads) {
      float v[kPack];
      LoadEight(r.x, r.x_storage, x_base + p * kPack, v);
      for (int k = 0; k < kPack; ++k) acc = CombineReduce(r.is_max, acc, static_cast<double>(v[k]));
    }
    for (int32_t half = kWarpThreads / 2; half > 0; half /= 2) {
      const double later = __shfl_down_sync(0xffffffffu, acc, half);
      if (lane < half) acc = CombineReduce(r.is_max, acc, later);
    }
    if (lane == 0) StoreElement(r.out, r.out_storage, out_offset, FinishValue(acc, r.rounding));
  }
}

// Whether the rows of a warp reduction may be read in packs: f32 or bf16 rows, contiguous, a
// multiple of 8 long, each starting 16-byte aligned.
bool PacksRows(const ReduceArgs& r) {
  const StridedWalk& red = r.reduced;
  if (red.rank != 1 || red.a_stride[0] != 1 || red.count % kPack != 0) return false;
  if (r.x_storage != DType::kF32 && r.x_storage != DType::kBF16) return false;
  if (reinterpret_cast<uintptr_t>(r.x) % 16 != 0 || r.kept.a_base % kPack != 0) return false;
  for (int32_t d = 0; d < r.kept.rank; ++d) {
    if (r.kept.a_stride[d] % kPack != 0) return false;
  }
  return true;
}

// Split reductions (ReduceSplit): block (o, c) reduces chunk c of output o's row, its threads
// striding through the chunk, into partial[c * n + o].
__global__ void ReduceSplitBlockKernel(ReduceArgs r, int64_t n, int64_t chunk, double* partial) {
  __shared__ double part[kReduceBlockThreads];
  const int32_t t = static_cast<int32_t>(threadIdx.x);
  const int64_t o = blockIdx.x, c = blockIdx.y;
  int64_t x_base = 0, out_offset = 0;
  WalkOffsets(r.kept, o, &x_base, &out_offset);
  const int64_t begin = c * chunk, end = min(r.reduced.count, begin + chunk);
  part[t] = ReduceChunk(r, x_base, begin + t, end, kReduceBlockThreads);
  __syncthreads();
  for (int32_t half = kReduceBlockThreads / 2; half > 0; half /= 2) {
    if (t < half) part[t] = CombineReduce(r.is_max, part[t], part[t + half]);
    __syncthreads();
  }
  if (t == 0) partial[c * n + o] = part[0];
}

// Thread (o, c) reduces chunk c of output o in order into partial[c * n + o].
__global__ void ReduceSplitThreadKernel(ReduceArgs r, int64_t n, int64_t chunk, double* partial) {
  const int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= n) return;
  const int64_t c = blockIdx.y;
  int64_t x_base = 0, out_offset = 0;
  WalkOffsets(r.kept, o, &x_base, &out_offset);
  const int64_t begin = c * chunk, end = min(r.reduced.count, begin + chunk);
  partial[c * n + o] = ReduceChunk(r, x_base, begin, end, 1);
}

__global__ void CombineSplitKernel(ReduceArgs r, const double* partial, int64_t n, int64_t chunks) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += step) {
    CombineSplitAt(r, partial, n, chunks, o);
  }
}

Status LaunchSplitReduce(const LaunchContext& ctx, const ReduceArgs& r, int64_t n,
                         const ReduceSplit& split, const std::string& what) {
  ScratchPlan plan;
  plan.Add(static_cast<size_t>(n * split.chunks) * sizeof(double));
  Result<char*> scratch = ReserveScratch(ctx, plan, what);
  if (!scratch.ok()) return scratch.status();
  double* partial = reinterpret_cast<double*>(scratch.value());
  if (UsesBlockReduce(r, n)) {
    const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(split.chunks));
    ReduceSplitBlockKernel<<<grid, kReduceBlockThreads, 0, ctx.stream>>>(r, n, split.chunk,
                                                                         partial);
  } else {
    const dim3 grid(BlocksFor(n), static_cast<unsigned>(split.chunks));
    ReduceSplitThreadKernel<<<grid, kThreadsPerBlock, 0, ctx.stream>>>(r, n, split.chunk, partial);
  }
  ALPA_RETURN_IF_ERROR(CheckLaunch(what));
  CombineSplitKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(r, partial, n,
                                                                        split.chunks);
  return CheckLaunch(what);
}

__global__ void WindowReduceKernel(WindowArgs a, bool is_max, void* out, DType out_storage,
                                   int64_t n, OutputRounding rounding) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += step) {
    StoreElement(out, out_storage, t, FinishValue(WindowReduceAt(a, is_max, t), rounding));
  }
}

__global__ void SelectAndScatterKernel(WindowArgs a, const void* source, DType source_storage,
                                       double* acc, int64_t windows) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < windows;
       t += step) {
    const int64_t target = WindowArgmaxAt(a, t);
    if (target >= 0) atomicAdd(acc + target, LoadElement(source, source_storage, t));
  }
}

}  // namespace

Status LaunchReduceOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                      const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                      OutputRounding rounding) {
  const std::string what = DescribeOp(graph, id);
  Result<ReduceArgs> args = ReduceArgsFor(graph, id);
  if (!args.ok()) return args.status();
  ReduceArgs r = args.value();
  r.x = operands[0].data;
  r.x_storage = operands[0].storage;
  r.out = out.data;
  r.out_storage = out.storage;
  r.rounding = rounding;
  const int64_t n = out.elements();
  if (n == 0) return Status::Ok();
  const ReduceSplit split = ReduceSplitFor(r, n);
  if (split.chunks > 1) return LaunchSplitReduce(ctx, r, n, split, what);
  if (UsesWarpReduce(r, n)) {
    const int64_t rows_per_block = kThreadsPerBlock / kWarpThreads;
    const unsigned blocks = static_cast<unsigned>(
        std::min<int64_t>((n + rows_per_block - 1) / rows_per_block, kMaxBlocks));
    if (PacksRows(r)) {
      ReducePackedWarpKernel<<<blocks, kThreadsPerBlock, 0, ctx.stream>>>(r, n);
    } else {
      ReduceWarpPerOutputKernel<<<blocks, kThreadsPerBlock, 0, ctx.stream>>>(r, n);
    }
  } else if (UsesBlockReduce(r, n)) {
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(n, kMaxBlocks));
    ReduceBlockPerOutputKernel<<<blocks, kReduceBlockThreads, 0, ctx.stream>>>(r, n);
  } else {
    ReduceThreadPerOutputKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(r, n);
  }
  return CheckLaunch(what);
}

Status LaunchReduceWindowOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                            const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                            OutputRounding rounding) {
  const Op& op = graph.op(id);
  Result<WindowArgs> args = WindowArgsFor(graph, id);
  if (!args.ok()) return args.status();
  WindowArgs a = args.value();
  a.x = operands[0].data;
  a.x_storage = operands[0].storage;
  const int64_t n = out.elements();
  if (n == 0) return Status::Ok();
  WindowReduceKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(
      a, op.attrs.reduce == ReduceKind::kMax, out.data, out.storage, n, rounding);
  return CheckLaunch(DescribeOp(graph, id));
}

Status LaunchSelectAndScatterOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                                const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                                OutputRounding rounding) {
  const std::string what = DescribeOp(graph, id);
  Result<WindowArgs> args = WindowArgsFor(graph, id);
  if (!args.ok()) return args.status();
  WindowArgs a = args.value();
  a.x = operands[0].data;
  a.x_storage = operands[0].storage;
  const int64_t n = out.elements();
  if (n == 0) return Status::Ok();
  ScratchPlan plan;
  plan.Add(static_cast<size_t>(n) * sizeof(double));
  Result<char*> scratch = ReserveScratch(ctx, plan, what);
  if (!scratch.ok()) return scratch.status();
  double* acc = reinterpret_cast<double*>(scratch.value());
  ALPA_RETURN_IF_ERROR(CudaStatus(
      cudaMemsetAsync(acc, 0, static_cast<size_t>(n) * sizeof(double), ctx.stream), what));
  const int64_t windows = operands[1].elements();
  if (windows > 0) {
    SelectAndScatterKernel<<<BlocksFor(windows), kThreadsPerBlock, 0, ctx.stream>>>(
        a, operands[1].data, operands[1].storage, acc, windows);
    ALPA_RETURN_IF_ERROR(CheckLaunch(what));
  }
  return LaunchStoreFromDouble(ctx, acc, out.data, out.storage, n, rounding, what);
}

}  // namespace cuda
}  // namespace alpa
