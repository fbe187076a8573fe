// The contractions' index math for the host and the device: dot_general one output element at
// a time (the kernel for f64 and integer dtypes, and the fallback of cuBLASLt), the direct
// convolution, both summing in double in the interpreter's order; and the host-side plan that
// brings dot_general's operands to the [batch, M, K] x [batch, K, N] form of a batched GEMM.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/strided_index.h"

namespace alpa {
namespace cuda {

struct DotArgs {
  const void* lhs = nullptr;
  DType lhs_storage = DType::kF32;
  const void* rhs = nullptr;
  DType rhs_storage = DType::kF32;
  void* out = nullptr;
  DType out_storage = DType::kF32;
  OutputRounding rounding;
  StridedWalk batch;        // a: lhs offset, b: rhs offset
  StridedWalk lhs_free;     // a: lhs offset
  StridedWalk rhs_free;     // a: rhs offset
  StridedWalk contracting;  // a: lhs offset, b: rhs offset
};

// Output element `flat` of [batch, M, N] (the result's row-major order).
ALPA_HD void DotOutputAt(const DotArgs& d, int64_t flat) {
  const int64_t m = d.lhs_free.count, n = d.rhs_free.count;
  const int64_t j = flat % n, i = (flat / n) % m, p = flat / (n * m);
  int64_t lhs = 0, rhs = 0, unused = 0, lf = 0, rf = 0;
  WalkOffsets(d.batch, p, &lhs, &rhs);
  WalkOffsets(d.lhs_free, i, &lf, &unused);
  WalkOffsets(d.rhs_free, j, &rf, &unused);
  lhs += lf;
  rhs += rf;
  double sum = 0.0;
  for (int64_t k = 0; k < d.contracting.count; ++k) {
    int64_t lc = 0, rc = 0;
    WalkOffsets(d.contracting, k, &lc, &rc);
    sum +=
        LoadElement(d.lhs, d.lhs_storage, lhs + lc) * LoadElement(d.rhs, d.rhs_storage, rhs + rc);
  }
  StoreElement(d.out, d.out_storage, flat, FinishValue(sum, d.rounding));
}

// The dims of a rank-`rank` tensor not named in `a` or `b`, in increasing order.
inline Dims FreeDimsOf(int64_t rank, const Dims& a, const Dims& b) {
  Dims free;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(a.begin(), a.end(), d) == a.end() &&
        std::find(b.begin(), b.end(), d) == b.end()) {
      free.push_back(d);
    }
  }
  return free;
}

// The sizes and strides of `dims` of a dense tensor of `shape`.
inline void PickDims(const Dims& shape, const Dims& dims, Dims* sizes, Dims* strides) {
  const Dims all = DenseStrides(shape);
  sizes->clear();
  strides->clear();
  for (int64_t d : dims) {
    sizes->push_back(shape[static_cast<size_t>(d)]);
    strides->push_back(all[static_cast<size_t>(d)]);
  }
}

// dot_general op `id`'s walks; the caller sets pointers and rounding.
inline Result<DotArgs> DotArgsFor(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  const DotDims& dd = op.attrs.dot;
  const std::string what = DescribeOp(graph, id);
  const Dims& ls = graph.op(op.operands[0]).shape;
  const Dims& rs = graph.op(op.operands[1]).shape;
  const Dims lhs_free =
      FreeDimsOf(static_cast<int64_t>(ls.size()), dd.lhs_batch, dd.lhs_contracting);
  const Dims rhs_free =
      FreeDimsOf(static_cast<int64_t>(rs.size()), dd.rhs_batch, dd.rhs_contracting);
  Dims size, lstride, rstride, unused;
  DotArgs d;
  PickDims(ls, dd.lhs_batch, &size, &lstride);
  PickDims(rs, dd.rhs_batch, &unused, &rstride);
  Result<StridedWalk> batch = MakeWalk(size, lstride, 0, rstride, 0, what);
  if (!batch.ok()) return batch.status();
  PickDims(ls, dd.lhs_contracting, &size, &lstride);
  PickDims(rs, dd.rhs_contracting, &unused, &rstride);
  Result<StridedWalk> contracting = MakeWalk(size, lstride, 0, rstride, 0, what);
  if (!contracting.ok()) return contracting.status();
  PickDims(ls, lhs_free, &size, &lstride);
  Result<StridedWalk> lf = MakeWalk(size, lstride, 0, lstride, 0, what);
  if (!lf.ok()) return lf.status();
  PickDims(rs, rhs_free, &size, &rstride);
  Result<StridedWalk> rf = MakeWalk(size, rstride, 0, rstride, 0, what);
  if (!rf.ok()) return rf.status();
  d.batch = batch.value();
  d.contracting = contracting.value();
  d.lhs_free = lf.value();
  d.rhs_free = rf.value();
  return d;
}

// How dot_general's operands reach a batched row-major GEMM out[b] = A[b] x B[b] with A
// [batch, M, K] and B [batch, K, N]: each operand is used in place when its dims already come
// as (batch, free, contracting) or (batch, contracting, free), else transposed into scratch
// (`*_permutation`: the transpose's attrs.dims, giving the [batch, M, K] / [batch, K, N] order).
struct GemmPlan {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool lhs_transposed = false;            // lhs memory is [batch, K, M]
  bool rhs_transposed = false;            // rhs memory is [batch, N, K]
  Dims lhs_permutation, rhs_permutation;  // empty: used in place
};

inline bool IsIdentityOrder(const Dims& a, const Dims& b, const Dims& c) {
  int64_t next = 0;
  for (const Dims* part : {&a, &b, &c}) {
    for (int64_t d : *part) {
      if (d != next++) return false;
    }
  }
  return true;
}

inline Dims Concat3(const Dims& a, const Dims& b, const Dims& c) {
  Dims all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  return all;
}

inline GemmPlan PlanGemm(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  const DotDims& dd = op.attrs.dot;
  const Dims& ls = graph.op(op.operands[0]).shape;
  const Dims& rs = graph.op(op.operands[1]).shape;
  const Dims lhs_free =
      FreeDimsOf(static_cast<int64_t>(ls.size()), dd.lhs_batch, dd.lhs_contracting);
  const Dims rhs_free =
      FreeDimsOf(static_cast<int64_t>(rs.size()), dd.rhs_batch, dd.rhs_contracting);
  GemmPlan p;
  for (int64_t d : dd.lhs_batch) p.batch *= ls[static_cast<size_t>(d)];
  for (int64_t d : lhs_free) p.m *= ls[static_cast<size_t>(d)];
  for (int64_t d : dd.lhs_contracting) p.k *= ls[static_cast<size_t>(d)];
  for (int64_t d : rhs_free) p.n *= rs[static_cast<size_t>(d)];
  if (!IsIdentityOrder(dd.lhs_batch, lhs_free, dd.lhs_contracting)) {
    if (IsIdentityOrder(dd.lhs_batch, dd.lhs_contracting, lhs_free)) {
      p.lhs_transposed = true;
    } else {
      p.lhs_permutation = Concat3(dd.lhs_batch, lhs_free, dd.lhs_contracting);
    }
  }
  if (!IsIdentityOrder(dd.rhs_batch, dd.rhs_contracting, rhs_free)) {
    if (IsIdentityOrder(dd.rhs_batch, rhs_free, dd.rhs_contracting)) {
      p.rhs_transposed = true;
    } else {
      p.rhs_permutation = Concat3(dd.rhs_batch, dd.rhs_contracting, rhs_free);
    }
  }
  return p;
}

// The direct convolution, one output element of [N, O, T1..Tk] at a time.
constexpr int32_t kMaxSpatialRank = kMaxKernelRank - 2;

struct ConvArgs {
  const void* x = nullptr;
  DType x_storage = DType::kF32;
  const void* w = nullptr;
  DType w_storage = DType::kF32;
  void* out = nullptr;
  DType out_storage = DType::kF32;
  OutputRounding rounding;
  int32_t spatial_rank = 0;
  int64_t in_features = 0, out_features = 0, group_in = 0, group_out = 1;
  int64_t in_spatial[kMaxSpatialRank] = {};
  int64_t in_stride[kMaxSpatialRank] = {};  // row-major strides of the input's spatial dims
  int64_t kernel_spatial[kMaxSpatialRank] = {};
  int64_t out_spatial[kMaxSpatialRank] = {};
  int64_t stride[kMaxSpatialRank] = {};
  int64_t padding_lo[kMaxSpatialRank] = {};
  int64_t lhs_dilation[kMaxSpatialRank] = {};
  int64_t rhs_dilation[kMaxSpatialRank] = {};
  int64_t s_count = 1, k_count = 1, t_count = 1;
};

// The input's flat spatial offset that output position t reads at kernel position kk, or -1
// (padding or a hole of the lhs dilation).
ALPA_HD int64_t ConvTapOffset(const ConvArgs& c, int64_t t, int64_t kk) {
  int64_t s = 0;
  for (int32_t i = c.spatial_rank - 1; i >= 0; --i) {
    const int64_t ti = t % c.out_spatial[i], ki = kk % c.kernel_spatial[i];
    t /= c.out_spatial[i];
    kk /= c.kernel_spatial[i];
    const int64_t p = ti * c.stride[i] + ki * c.rhs_dilation[i] - c.padding_lo[i];
    if (p < 0 || p % c.lhs_dilation[i] != 0 || p / c.lhs_dilation[i] >= c.in_spatial[i]) return -1;
    s += (p / c.lhs_dilation[i]) * c.in_stride[i];
  }
  return s;
}

ALPA_HD void ConvOutputAt(const ConvArgs& c, int64_t flat) {
  const int64_t t = flat % c.t_count;
  const int64_t o = (flat / c.t_count) % c.out_features;
  const int64_t nb = flat / (c.t_count * c.out_features);
  const int64_t g = o / c.group_out;
  double sum = 0.0;
  for (int64_t ch = 0; ch < c.group_in; ++ch) {
    const int64_t x_base = (nb * c.in_features + g * c.group_in + ch) * c.s_count;
    const int64_t w_base = (o * c.group_in + ch) * c.k_count;
    for (int64_t kk = 0; kk < c.k_count; ++kk) {
      const int64_t s = ConvTapOffset(c, t, kk);
      if (s < 0) continue;
      sum += LoadElement(c.x, c.x_storage, x_base + s) * LoadElement(c.w, c.w_storage, w_base + kk);
    }
  }
  StoreElement(c.out, c.out_storage, flat, FinishValue(sum, c.rounding));
}

// convolution op `id`'s geometry; the caller sets pointers and rounding.
inline Result<ConvArgs> ConvArgsFor(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  const OpAttrs& at = op.attrs;
  const Dims& xs = graph.op(op.operands[0]).shape;
  const Dims& ws = graph.op(op.operands[1]).shape;
  if (xs.size() > static_cast<size_t>(kMaxKernelRank)) {
    return Status(StatusCode::kUnsupported,
                  DescribeOp(graph, id) + ": rank " + std::to_string(xs.size()) +
                      " is beyond the CUDA kernels' " + std::to_string(kMaxKernelRank));
  }
  ConvArgs c;
  c.spatial_rank = static_cast<int32_t>(xs.size() - 2);
  c.in_features = xs[1];
  c.out_features = ws[0];
  const int64_t groups = at.feature_group_count;
  c.group_in = xs[1] / groups;
  c.group_out = std::max<int64_t>(1, ws[0] / groups);
  const Dims in_spatial(xs.begin() + 2, xs.end());
  const Dims in_strides = DenseStrides(in_spatial);
  for (size_t i = 0; i + 2 < xs.size(); ++i) {
    c.in_spatial[i] = xs[i + 2];
    c.in_stride[i] = in_strides[i];
    c.kernel_spatial[i] = ws[i + 2];
    c.out_spatial[i] = op.shape[i + 2];
    c.stride[i] = at.strides[i];
    c.padding_lo[i] = at.padding_lo[i];
    c.lhs_dilation[i] = at.lhs_dilation[i];
    c.rhs_dilation[i] = at.rhs_dilation[i];
  }
  c.s_count = ElementsOf(in_spatial);
  c.k_count = ElementsOf(Dims(ws.begin() + 2, ws.end()));
  c.t_count = ElementsOf(Dims(op.shape.begin() + 2, op.shape.end()));
  return c;
}

}  // namespace cuda
}  // namespace alpa
