// Data movement: broadcast_in_dim, transpose, slice, reverse (all one strided walk over the
// output), concatenate and pad. Reshape is a plain copy done by the dispatcher.
#include <algorithm>

#include "exec/cpu/eval.h"

namespace alpa {
namespace cpu {
namespace {

// out[index] = x[base + sum(index[i] * in_strides[i])] for every output index.
void StridedCopy(const HostTensor& x, const Dims& in_strides, int64_t base, HostTensor& out) {
  const double* src = x.data.data();
  double* dst = out.data.data();
  ForEach2(out.shape, RowMajorStrides(out.shape), 0, in_strides, base,
           [&](int64_t o, int64_t i) { dst[o] = src[i]; });
}

}  // namespace

void EvalBroadcastInDim(const Op& op, const Operands& in, HostTensor& out) {
  const HostTensor& x = *in[0];
  const Dims xs = RowMajorStrides(x.shape);
  Dims strides(out.shape.size(), 0);  // new dims and size-1 dims repeat: stride 0
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (x.shape[i] != 1) strides[static_cast<size_t>(op.attrs.dims[i])] = xs[i];
  }
  StridedCopy(x, strides, 0, out);
}

void EvalTranspose(const Op& op, const Operands& in, HostTensor& out) {
  const HostTensor& x = *in[0];
  const Dims xs = RowMajorStrides(x.shape);
  Dims strides;
  for (int64_t p : op.attrs.dims) strides.push_back(xs[static_cast<size_t>(p)]);
  StridedCopy(x, strides, 0, out);
}

void EvalSlice(const Op& op, const Operands& in, HostTensor& out) {
  const HostTensor& x = *in[0];
  const Dims xs = RowMajorStrides(x.shape);
  Dims strides(xs.size());
  int64_t base = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    base += op.attrs.starts[i] * xs[i];
    strides[i] = op.attrs.strides[i] * xs[i];
  }
  StridedCopy(x, strides, base, out);
}

void EvalReverse(const Op& op, const Operands& in, HostTensor& out) {
  const HostTensor& x = *in[0];
  Dims strides = RowMajorStrides(x.shape);
  int64_t base = 0;
  for (int64_t d : op.attrs.dims) {
    const size_t i = static_cast<size_t>(d);
    if (x.shape[i] == 0) return;
    base += (x.shape[i] - 1) * strides[i];
    strides[i] = -strides[i];
  }
  StridedCopy(x, strides, base, out);
}

void EvalConcatenate(const Op& op, const Operands& in, HostTensor& out) {
  const size_t axis = static_cast<size_t>(op.attrs.axis);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= out.shape[i];
  for (size_t i = axis + 1; i < out.shape.size(); ++i) inner *= out.shape[i];
  double* dst = out.data.data();
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor* x : in) {
      const int64_t block = x->shape[axis] * inner;
      const double* src = x->data.data() + o * block;
      dst = std::copy(src, src + block, dst);
    }
  }
}

void EvalPad(const Op& op, const Operands& in, HostTensor& out) {
  const OpAttrs& at = op.attrs;
  const HostTensor& x = *in[0];
  std::fill(out.data.begin(), out.data.end(), at.value);
  const Dims xs = RowMajorStrides(x.shape);
  const Dims os = RowMajorStrides(out.shape);
  // Input element i of a dim lands at lo + i * (interior + 1); negative padding crops, so only
  // the box of input indices that land inside the output is copied.
  Dims box(x.shape.size()), out_strides(x.shape.size());
  int64_t in_base = 0, out_base = 0;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t step = at.padding_interior[d] + 1, lo = at.padding_lo[d];
    const int64_t first = lo >= 0 ? 0 : (-lo + step - 1) / step;
    const int64_t last_pos = out.shape[d] - 1 - lo;  // the last output position, relative to lo
    const int64_t end = last_pos < 0 ? 0 : std::min(x.shape[d], last_pos / step + 1);
    box[d] = std::max<int64_t>(0, end - first);
    in_base += first * xs[d];
    out_base += (lo + first * step) * os[d];
    out_strides[d] = step * os[d];
  }
  const double* src = x.data.data();
  double* dst = out.data.data();
  ForEach2(box, xs, in_base, out_strides, out_base, [&](int64_t i, int64_t o) { dst[o] = src[i]; });
}

}  // namespace cpu
}  // namespace alpa
