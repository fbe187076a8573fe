// Index math of the CUDA backend's data-movement kernels, for the host and the device: a box
// walked in row-major order with two offsets that advance by per-dim strides (the interpreter's
// ForEach2, one element at a time from its flat index), and the host-side construction of the
// walk for each movement op, so that the unit tests run the very walks the kernels run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/cuda/kernel_math.h"

namespace alpa {
namespace cuda {

// The highest rank a kernel takes (its index structs are passed by value).
constexpr int32_t kMaxKernelRank = 8;

// A box of `shape` and two strided views of it: element `flat` (row-major in the box) sits at
// a_base + sum(index[d] * a_stride[d]) in one tensor and at the b counterpart in the other.
// Strides may be 0 (broadcast) or negative (reverse).
struct StridedWalk {
  int32_t rank = 0;
  int64_t shape[kMaxKernelRank] = {};
  int64_t a_stride[kMaxKernelRank] = {};
  int64_t b_stride[kMaxKernelRank] = {};
  int64_t a_base = 0, b_base = 0;
  int64_t count = 1;  // elements of the box
};

// A flat index below 2^32 (every tensor but the largest) is split with 32-bit divisions, which a
// GPU runs several times faster than 64-bit ones; the quotients only shrink, so they fit too.
ALPA_HD void WalkOffsets(const StridedWalk& w, int64_t flat, int64_t* a, int64_t* b) {
  int64_t oa = w.a_base, ob = w.b_base;
  constexpr int64_t kNarrow = 0xffffffffLL;
  if (flat >= 0 && flat <= kNarrow) {
    uint32_t f = static_cast<uint32_t>(flat);
    for (int32_t d = w.rank - 1; d >= 0; --d) {
      uint32_t i = f, q = 0;  // a dim beyond 2^32 holds the whole index
      if (w.shape[d] <= kNarrow) {
        const uint32_t extent = static_cast<uint32_t>(w.shape[d]);
        q = f / extent;
        i = f - q * extent;
      }
      f = q;
      oa += static_cast<int64_t>(i) * w.a_stride[d];
      ob += static_cast<int64_t>(i) * w.b_stride[d];
    }
  } else {
    for (int32_t d = w.rank - 1; d >= 0; --d) {
      const int64_t i = flat % w.shape[d];
      flat /= w.shape[d];
      oa += i * w.a_stride[d];
      ob += i * w.b_stride[d];
    }
  }
  *a = oa;
  *b = ob;
}

// Row-major strides (elements) of a shape.
inline Dims DenseStrides(const Dims& shape) {
  Dims strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

inline int64_t ElementsOf(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A walk over `shape`; kUnsupported past kMaxKernelRank dims (`what` names the op).
inline Result<StridedWalk> MakeWalk(const Dims& shape, const Dims& a_stride, int64_t a_base,
                                    const Dims& b_stride, int64_t b_base, const std::string& what) {
  if (shape.size() > static_cast<size_t>(kMaxKernelRank)) {
    return Status(StatusCode::kUnsupported, what + ": rank " + std::to_string(shape.size()) +
                                                " is beyond the CUDA kernels' " +
                                                std::to_string(kMaxKernelRank));
  }
  StridedWalk w;
  w.rank = static_cast<int32_t>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    w.shape[d] = shape[d];
    w.a_stride[d] = a_stride[d];
    w.b_stride[d] = b_stride[d];
  }
  w.a_base = a_base;
  w.b_base = b_base;
  w.count = ElementsOf(shape);
  return w;
}

// The same walk with fewer dims: dims of extent 1 dropped, and each dim merged into the one
// before it where both views step over the pair as over one dim (a reshape becomes one dim, a
// broadcast of a row two). Element `flat` keeps its offsets, with fewer divisions to find them.
inline StridedWalk SimplifyWalk(const StridedWalk& w) {
  StridedWalk s;
  s.a_base = w.a_base;
  s.b_base = w.b_base;
  s.count = w.count;
  s.rank = 0;
  for (int32_t d = 0; d < w.rank; ++d) {
    if (w.shape[d] == 1) continue;
    const int32_t last = s.rank - 1;
    if (last >= 0 && s.a_stride[last] == w.a_stride[d] * w.shape[d] &&
        s.b_stride[last] == w.b_stride[d] * w.shape[d]) {
      s.shape[last] *= w.shape[d];
      s.a_stride[last] = w.a_stride[d];
      s.b_stride[last] = w.b_stride[d];
      continue;
    }
    s.shape[s.rank] = w.shape[d];
    s.a_stride[s.rank] = w.a_stride[d];
    s.b_stride[s.rank] = w.b_stride[d];
    ++s.rank;
  }
  return s;
}

// The copies an op is made of: dst[b offset] = src[a offset] over each walk, src being operand
// `operand` (a: source offsets, b: destination offsets). Pad first fills the output with its value.
struct CopyPiece {
  int32_t operand = 0;
  StridedWalk walk;
};

// The walks of a movement op (broadcast_in_dim, reshape, transpose, slice, concatenate, pad,
// reverse) from the operands' shapes to the op's shape, as the interpreter's eval_movement.cc.
inline Result<std::vector<CopyPiece>> MovementPieces(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  const std::string what = DescribeOp(graph, id);
  const Dims& out_shape = op.shape;
  const Dims out_strides = DenseStrides(out_shape);
  auto single = [&](const Dims& in_strides, int64_t base) -> Result<std::vector<CopyPiece>> {
    Result<StridedWalk> w = MakeWalk(out_shape, in_strides, base, out_strides, 0, what);
    if (!w.ok()) return w.status();
    return std::vector<CopyPiece>{CopyPiece{0, w.value()}};
  };
  const Dims& x_shape = graph.op(op.operands[0]).shape;
  const Dims xs = DenseStrides(x_shape);
  switch (op.kind) {
    case OpKind::kBroadcastInDim: {
      Dims strides(out_shape.size(), 0);  // new dims and size-1 dims repeat
      for (size_t i = 0; i < x_shape.size(); ++i) {
        if (x_shape[i] != 1) strides[static_cast<size_t>(op.attrs.dims[i])] = xs[i];
      }
      return single(strides, 0);
    }
    case OpKind::kReshape: {
      // Both tensors are dense in the same row-major order: one flat run.
      Result<StridedWalk> w = MakeWalk(Dims{ElementsOf(out_shape)}, Dims{1}, 0, Dims{1}, 0, what);
      if (!w.ok()) return w.status();
      return std::vector<CopyPiece>{CopyPiece{0, w.value()}};
    }
    case OpKind::kTranspose: {
      Dims strides;
      for (int64_t p : op.attrs.dims) strides.push_back(xs[static_cast<size_t>(p)]);
      return single(strides, 0);
    }
    case OpKind::kSlice: {
      Dims strides(xs.size());
      int64_t base = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        base += op.attrs.starts[i] * xs[i];
        strides[i] = op.attrs.strides[i] * xs[i];
      }
      return single(strides, base);
    }
    case OpKind::kReverse: {
      Dims strides = xs;
      int64_t base = 0;
      for (int64_t d : op.attrs.dims) {
        const size_t i = static_cast<size_t>(d);
        if (x_shape[i] == 0) return std::vector<CopyPiece>{};
        base += (x_shape[i] - 1) * strides[i];
        strides[i] = -strides[i];
      }
      return single(strides, base);
    }
    case OpKind::kConcatenate: {
      const size_t axis = static_cast<size_t>(op.attrs.axis);
      std::vector<CopyPiece> pieces;
      int64_t at = 0;
      for (size_t k = 0; k < op.operands.size(); ++k) {
        const Dims& shape = graph.op(op.operands[k]).shape;
        Result<StridedWalk> w =
            MakeWalk(shape, DenseStrides(shape), 0, out_strides, at * out_strides[axis], what);
        if (!w.ok()) return w.status();
        pieces.push_back(CopyPiece{static_cast<int32_t>(k), w.value()});
        at += shape[axis];
      }
      return pieces;
    }
    case OpKind::kPad: {
      // Input element i of a dim lands at lo + i * (interior + 1); negative padding crops, so
      // only the box of input indices that land inside the output is copied.
      const OpAttrs& at = op.attrs;
      Dims box(x_shape.size()), dst_strides(x_shape.size());
      int64_t in_base = 0, out_base = 0;
      for (size_t d = 0; d < x_shape.size(); ++d) {
        const int64_t step = at.padding_interior[d] + 1, lo = at.padding_lo[d];
        const int64_t first = lo >= 0 ? 0 : (-lo + step - 1) / step;
        const int64_t last_pos = out_shape[d] - 1 - lo;
        const int64_t end = last_pos < 0 ? 0 : std::min(x_shape[d], last_pos / step + 1);
        box[d] = std::max<int64_t>(0, end - first);
        in_base += first * xs[d];
        out_base += (lo + first * step) * out_strides[d];
        dst_strides[d] = step * out_strides[d];
      }
      Result<StridedWalk> w = MakeWalk(box, xs, in_base, dst_strides, out_base, what);
      if (!w.ok()) return w.status();
      return std::vector<CopyPiece>{CopyPiece{0, w.value()}};
    }
    default:
      return InternalError(what + " is not a movement op");
  }
}

// The walk of a box copy between two tensors (LaunchCopyBox): `sizes` at `src_offsets` of a
// tensor of `src_shape` to `dst_offsets` of one of `dst_shape`. kInvalidArgument when the box
// leaves either tensor.
inline Result<StridedWalk> BoxWalk(const Dims& src_shape, const Dims& src_offsets,
                                   const Dims& dst_shape, const Dims& dst_offsets,
                                   const Dims& sizes) {
  const size_t rank = sizes.size();
  if (src_shape.size() != rank || dst_shape.size() != rank || src_offsets.size() != rank ||
      dst_offsets.size() != rank) {
    return InvalidArgument("a box copy of rank " + std::to_string(rank) + " between tensors " +
                           ShapeString(src_shape) + " and " + ShapeString(dst_shape) +
                           " with offsets of " + std::to_string(src_offsets.size()) + " and " +
                           std::to_string(dst_offsets.size()) + " dims");
  }
  for (size_t d = 0; d < rank; ++d) {
    if (sizes[d] < 0 || src_offsets[d] < 0 || dst_offsets[d] < 0 ||
        src_offsets[d] > src_shape[d] - sizes[d] || dst_offsets[d] > dst_shape[d] - sizes[d]) {
      return InvalidArgument(
          "box copy: dim " + std::to_string(d) + " of size " + std::to_string(sizes[d]) + " at " +
          std::to_string(src_offsets[d]) + " of " + ShapeString(src_shape) + " to " +
          std::to_string(dst_offsets[d]) + " of " + ShapeString(dst_shape) + " leaves a tensor");
    }
  }
  const Dims ss = DenseStrides(src_shape), ds = DenseStrides(dst_shape);
  int64_t src_base = 0, dst_base = 0;
  for (size_t d = 0; d < rank; ++d) {
    src_base += src_offsets[d] * ss[d];
    dst_base += dst_offsets[d] * ds[d];
  }
  return MakeWalk(sizes, ss, src_base, ds, dst_base, "box copy");
}

// One element of a strided copy: dst[b] = src[a], converted between storages (and rounded when
// `rounding` says so).
struct CopyArgs {
  const void* src = nullptr;
  DType src_storage = DType::kF32;
  void* dst = nullptr;
  DType dst_storage = DType::kF32;
  OutputRounding rounding{false, DType::kF32};
  StridedWalk walk;
};

// Whether the copy moves stored elements unchanged: the same storage on both sides and no
// rounding, so that their bytes may be copied (RawCopyAt).
inline bool CopiesBytes(const CopyArgs& c) {
  return c.src_storage == c.dst_storage && !c.rounding.round;
}

// CopyAt for CopiesBytes copies, with T of the storage's width.
template <typename T>
ALPA_HD void RawCopyAt(const CopyArgs& c, int64_t flat) {
  int64_t a = 0, b = 0;
  WalkOffsets(c.walk, flat, &a, &b);
  static_cast<T*>(c.dst)[b] = static_cast<const T*>(c.src)[a];
}

ALPA_HD void CopyAt(const CopyArgs& c, int64_t flat) {
  int64_t a = 0, b = 0;
  WalkOffsets(c.walk, flat, &a, &b);
  StoreElement(c.dst, c.dst_storage, b,
               FinishValue(LoadElement(c.src, c.src_storage, a), c.rounding));
}

}  // namespace cuda
}  // namespace alpa
