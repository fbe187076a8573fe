// The per-output math of the CUDA backend's reductions (reduce_sum / reduce_max over dims,
// reduce_window, select_and_scatter) for the host and the device, and its host-side setup from
// an op, as the interpreter's eval_reduce.cc: sums in double in row-major order, max propagating
// NaN, windows over the in-bounds positions only (padding holds the identity).
#pragma once

#include <cstdint>
#include <string>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/strided_index.h"

namespace alpa {
namespace cuda {

// A reduction over at least this many elements per output runs a block of kReduceBlockThreads
// per output (strided partial results combined in a tree); shorter ones a thread per output.
constexpr int64_t kBlockReduceMinExtent = 1024;
constexpr int32_t kReduceBlockThreads = 256;

// reduce_sum / reduce_max: output element o (row-major) reduces x over `reduced` from the
// x offset that `kept` gives for o.
struct ReduceArgs {
  const void* x = nullptr;
  DType x_storage = DType::kF32;
  void* out = nullptr;
  DType out_storage = DType::kF32;
  OutputRounding rounding;
  bool is_max = false;
  StridedWalk kept;     // over the output's shape; a: x offset, b: output offset
  StridedWalk reduced;  // over the reduced dims in x's order; a: x offset
};

// The reduction of reduced elements begin, begin + step, ... below `end` of the output at x
// offset x_base.
ALPA_HD double ReduceChunk(const ReduceArgs& r, int64_t x_base, int64_t begin, int64_t end,
                           int64_t step) {
  double acc = ReduceIdentity(r.is_max);
  const bool one_dim = r.reduced.rank == 1;  // a row: no division per element
  for (int64_t k = begin; k < end; k += step) {
    int64_t a = 0, unused = 0;
    if (one_dim) {
      a = r.reduced.a_base + k * r.reduced.a_stride[0];
    } else {
      WalkOffsets(r.reduced, k, &a, &unused);
    }
    acc = CombineReduce(r.is_max, acc, LoadElement(r.x, r.x_storage, x_base + a));
  }
  return acc;
}

ALPA_HD double ReduceRange(const ReduceArgs& r, int64_t x_base, int64_t begin, int64_t step) {
  return ReduceChunk(r, x_base, begin, r.reduced.count, step);
}

// Whether the reduction runs a block per output: long rows that are contiguous in memory (the
// innermost reduced dim is x's innermost: softmax, layer norm), or long reductions with too few
// outputs to fill the GPU with a thread each. Reductions over outer dims with many outputs run a
// thread per output, whose neighbours read neighbouring elements.
inline bool UsesBlockReduce(const ReduceArgs& r, int64_t outputs) {
  if (r.reduced.count < kBlockReduceMinExtent) return false;
  const bool contiguous = r.reduced.rank > 0 && r.reduced.a_stride[r.reduced.rank - 1] == 1;
  return contiguous || outputs < kBlockReduceMinExtent;
}

// A reduction with too few outputs to fill the GPU is split: each output's reduced elements
// into `chunks` consecutive chunks of `chunk` elements, reduced in parallel into partial results
// (partial[c * outputs + o]), which a second pass combines in chunk order per output. Long
// contiguous rows (UsesBlockReduce) reduce each chunk with a block, others with a thread, whose
// neighbours read neighbouring outputs.
struct ReduceSplit {
  int64_t chunks = 1;  // 1: not split
  int64_t chunk = 0;
};
constexpr int64_t kSplitTargetBlocks = 2048;      // blocks of a split block reduction
constexpr int64_t kSplitTargetThreads = 1 << 18;  // threads of a split thread reduction
constexpr int64_t kSplitMinChunk = 32;            // elements per thread of a split chunk

inline ReduceSplit ReduceSplitFor(const ReduceArgs& r, int64_t outputs) {
  ReduceSplit split;
  const int64_t count = r.reduced.count;
  if (outputs <= 0 || count <= 0) return split;
  int64_t chunks = 1;
  if (UsesBlockReduce(r, outputs)) {
    chunks = std::min((kSplitTargetBlocks + outputs - 1) / outputs,
                      (count + kSplitTargetBlocks - 1) / kSplitTargetBlocks);
  } else {
    chunks = std::min((kSplitTargetThreads + outputs - 1) / outputs,
                      (count + kSplitMinChunk - 1) / kSplitMinChunk);
  }
  chunks = std::min<int64_t>(chunks, 65535);  // a grid dimension
  if (chunks <= 1) return split;
  split.chunk = (count + chunks - 1) / chunks;
  split.chunks = (count + split.chunk - 1) / split.chunk;
  return split;
}

// The second pass of a split reduction: output o from its partial results.
ALPA_HD void CombineSplitAt(const ReduceArgs& r, const double* partial, int64_t outputs,
                            int64_t chunks, int64_t o) {
  double acc = ReduceIdentity(r.is_max);
  for (int64_t c = 0; c < chunks; ++c) acc = CombineReduce(r.is_max, acc, partial[c * outputs + o]);
  int64_t x_base = 0, out_offset = 0;
  WalkOffsets(r.kept, o, &x_base, &out_offset);
  StoreElement(r.out, r.out_storage, out_offset, FinishValue(acc, r.rounding));
}

// Many long contiguous rows (softmax and layer-norm rows) run a warp per row instead of a block:
// lane t reduces elements t, t + 32, ... and the lanes combine in a tree (lower lane = earlier),
// without the block's barriers.
constexpr int32_t kWarpThreads = 32;
constexpr int64_t kWarpReduceMinRows = 2048;
constexpr int64_t kWarpReduceMaxExtent = 1 << 15;

inline bool UsesWarpReduce(const ReduceArgs& r, int64_t outputs) {
  const bool contiguous = r.reduced.rank > 0 && r.reduced.a_stride[r.reduced.rank - 1] == 1;
  return UsesBlockReduce(r, outputs) && contiguous && outputs >= kWarpReduceMinRows &&
         r.reduced.count <= kWarpReduceMaxExtent;
}

ALPA_HD void ReduceOutputAt(const ReduceArgs& r, int64_t o) {
  int64_t x_base = 0, out_offset = 0;
  WalkOffsets(r.kept, o, &x_base, &out_offset);
  StoreElement(r.out, r.out_storage, out_offset,
               FinishValue(ReduceRange(r, x_base, 0, 1), r.rounding));
}

// reduce_sum / reduce_max op `id` on x at `x`; the caller sets pointers and rounding.
inline Result<ReduceArgs> ReduceArgsFor(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  const std::string what = DescribeOp(graph, id);
  const Dims& x_shape = graph.op(op.operands[0]).shape;
  const Dims xs = DenseStrides(x_shape);
  Dims kept_strides, reduced_shape, reduced_strides;
  for (size_t d = 0; d < x_shape.size(); ++d) {
    bool reduced = false;
    for (int64_t r : op.attrs.dims) reduced = reduced || static_cast<size_t>(r) == d;
    if (reduced) {
      reduced_shape.push_back(x_shape[d]);
      reduced_strides.push_back(xs[d]);
    } else {
      kept_strides.push_back(xs[d]);
    }
  }
  ReduceArgs r;
  r.is_max = op.kind == OpKind::kReduceMax;
  Result<StridedWalk> kept = MakeWalk(op.shape, kept_strides, 0, DenseStrides(op.shape), 0, what);
  if (!kept.ok()) return kept.status();
  Result<StridedWalk> reduced =
      MakeWalk(reduced_shape, reduced_strides, 0, reduced_strides, 0, what);
  if (!reduced.ok()) return reduced.status();
  r.kept = SimplifyWalk(kept.value());
  r.reduced = SimplifyWalk(reduced.value());
  return r;
}

// reduce_window and select_and_scatter: windows over every dim of x, one per element of the
// window op's output (row-major).
struct WindowArgs {
  int32_t rank = 0;
  int64_t x_shape[kMaxKernelRank] = {};
  int64_t x_stride[kMaxKernelRank] = {};
  int64_t out_shape[kMaxKernelRank] = {};
  int64_t window[kMaxKernelRank] = {};
  int64_t stride[kMaxKernelRank] = {};
  int64_t padding_lo[kMaxKernelRank] = {};
  int64_t window_count = 0;
  const void* x = nullptr;
  DType x_storage = DType::kF32;
};

// The x offset of position `w` (row-major in the window) of window `t`, or -1 in the padding.
ALPA_HD int64_t WindowPositionOffset(const WindowArgs& a, int64_t t, int64_t w) {
  int64_t offset = 0;
  for (int32_t d = a.rank - 1; d >= 0; --d) {
    const int64_t td = t % a.out_shape[d], wd = w % a.window[d];
    t /= a.out_shape[d];
    w /= a.window[d];
    const int64_t p = td * a.stride[d] + wd - a.padding_lo[d];
    if (p < 0 || p >= a.x_shape[d]) return -1;
    offset += p * a.x_stride[d];
  }
  return offset;
}

ALPA_HD double WindowReduceAt(const WindowArgs& a, bool is_max, int64_t t) {
  double acc = ReduceIdentity(is_max);
  for (int64_t w = 0; w < a.window_count; ++w) {
    const int64_t offset = WindowPositionOffset(a, t, w);
    if (offset >= 0) acc = CombineReduce(is_max, acc, LoadElement(a.x, a.x_storage, offset));
  }
  return acc;
}

// The x offset of window t's first maximum (select_and_scatter's target), -1 when the window
// lies entirely in the padding.
ALPA_HD int64_t WindowArgmaxAt(const WindowArgs& a, int64_t t) {
  int64_t best = -1;
  double best_value = 0.0;
  for (int64_t w = 0; w < a.window_count; ++w) {
    const int64_t offset = WindowPositionOffset(a, t, w);
    if (offset < 0) continue;
    const double v = LoadElement(a.x, a.x_storage, offset);
    if (best < 0 || v > best_value) {  // strictly greater: the first maximum wins ties
      best = offset;
      best_value = v;
    }
  }
  return best;
}

// The windows of reduce_window / select_and_scatter op `id` (window output shape: the op's
// shape, or the source's for select_and_scatter).
inline Result<WindowArgs> WindowArgsFor(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  const Dims& x_shape = graph.op(op.operands[0]).shape;
  const Dims& out_shape =
      op.kind == OpKind::kSelectAndScatter ? graph.op(op.operands[1]).shape : op.shape;
  if (x_shape.size() > static_cast<size_t>(kMaxKernelRank)) {
    return Status(StatusCode::kUnsupported,
                  DescribeOp(graph, id) + ": rank " + std::to_string(x_shape.size()) +
                      " is beyond the CUDA kernels' " + std::to_string(kMaxKernelRank));
  }
  WindowArgs a;
  a.rank = static_cast<int32_t>(x_shape.size());
  const Dims xs = DenseStrides(x_shape);
  for (size_t d = 0; d < x_shape.size(); ++d) {
    a.x_shape[d] = x_shape[d];
    a.x_stride[d] = xs[d];
    a.out_shape[d] = out_shape[d];
    a.window[d] = op.attrs.window[d];
    a.stride[d] = op.attrs.strides[d];
    a.padding_lo[d] = op.attrs.padding_lo[d];
  }
  a.window_count = ElementsOf(op.attrs.window);
  return a;
}

}  // namespace cuda
}  // namespace alpa
