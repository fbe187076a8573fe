// VJP rules of the window ops. Both are built from pads, strided slices, compares and selects
// (no convolution), so they run wherever those ops run.
#include <limits>

#include "core/autodiff/vjp_rules.h"

namespace alpa {
namespace vjp {

// Sum windows: y[t] = sum_k xp[t s + k] (xp = x zero-padded). The transpose is separable per
// dim, so it is applied one dim at a time: dim i of size T becomes the padded size P as the sum
// over window offsets k of g placed at k, k + s, ... (a pad with interior s - 1). That costs
// sum_i W_i pads instead of prod_i W_i. Finally the padding is sliced off.
// Max windows: the gradient goes to each window's (first) maximum, which is select_and_scatter.
Status VjpReduceWindow(const VjpArgs& a, std::vector<int32_t>& out) {
  GraphBuilder& b = *a.b;
  const OpAttrs& at = a.op.attrs;
  int32_t x = a.op.operands[0];
  if (at.reduce == ReduceKind::kMax) {
    out[0] = b.SelectAndScatter(x, a.g, at.window, at.strides, at.padding_lo, at.padding_hi);
    return Status::Ok();
  }
  if (at.reduce != ReduceKind::kSum) {
    return Status(StatusCode::kUnsupported,
                  "autodiff: unknown reduce kind in " + DescribeOp(b.graph(), a.id));
  }
  const Dims xs = b.shape(x);
  size_t r = xs.size();
  int32_t cur = a.g;
  bool crop = false;
  for (size_t i = 0; i < r; ++i) {
    int64_t w = at.window[i], s = at.strides[i];
    int64_t padded = xs[i] + at.padding_lo[i] + at.padding_hi[i];
    int64_t t = b.shape(cur)[i];
    crop = crop || at.padding_lo[i] > 0 || at.padding_hi[i] > 0;
    if (w == 1 && s == 1 && t == padded) continue;  // identity along this dim
    int32_t sum = -1;
    for (int64_t k = 0; k < w; ++k) {
      Dims lo(r, 0), hi(r, 0), interior(r, 0);
      lo[i] = k;
      interior[i] = s - 1;
      hi[i] = padded - k - DilatedSize(t, s);
      int32_t term = b.Pad(cur, 0.0, lo, hi, interior);
      sum = sum < 0 ? term : b.Add(sum, term);
    }
    cur = sum;
  }
  if (crop) {
    Dims limits(r);
    for (size_t i = 0; i < r; ++i) limits[i] = at.padding_lo[i] + xs[i];
    cur = b.Slice(cur, at.padding_lo, limits);
  }
  out[0] = cur;
  return Status::Ok();
}

// select_and_scatter(x, src): out[argmax of window t] += src[t], so d out / d src[t] picks g at
// window t's argmax. For every window offset k (row-major, the tie order of the op), strided
// slices give x and g at offset k of every window at once; a running selection that replaces
// only on strictly greater keeps the first maximum, exactly like the op. x is padded with -inf
// and g with 0, as the op's padding never wins. The result is piecewise constant in x: no
// cotangent for x.
Status VjpSelectAndScatter(const VjpArgs& a, std::vector<int32_t>& out) {
  GraphBuilder& b = *a.b;
  const OpAttrs& at = a.op.attrs;
  if (!a.needed[1]) return Status::Ok();
  int32_t x = a.op.operands[0];
  const Dims xs = b.shape(x);
  const Dims ts = b.shape(a.op.operands[1]);
  size_t r = xs.size();
  if (HasZeroElements(ts)) {
    out[1] = b.Constant(0.0, ts, a.op.dtype);
    return Status::Ok();
  }
  bool pad = false;
  for (size_t i = 0; i < r; ++i) pad = pad || at.padding_lo[i] > 0 || at.padding_hi[i] > 0;
  int32_t xp = x, gp = a.g;
  if (pad) {
    xp = b.Pad(x, -std::numeric_limits<double>::infinity(), at.padding_lo, at.padding_hi);
    gp = b.Pad(a.g, 0.0, at.padding_lo, at.padding_hi);
  }
  int32_t best = -1, value = -1;
  Dims k(r, 0);
  while (b.ok()) {
    Dims limits(r);
    for (size_t i = 0; i < r; ++i) limits[i] = k[i] + DilatedSize(ts[i], at.strides[i]);
    int32_t xk = b.Slice(xp, k, limits, at.strides);
    int32_t gk = b.Slice(gp, k, limits, at.strides);
    if (best < 0) {
      best = xk;
      value = gk;
    } else {
      int32_t take = b.Compare(Comparison::kGt, xk, best);
      best = b.Select(take, xk, best);
      value = b.Select(take, gk, value);
    }
    // Next offset in row-major order.
    size_t i = r;
    while (i > 0 && ++k[i - 1] == at.window[i - 1]) k[--i] = 0;
    if (i == 0) break;
  }
  out[1] = value;
  return Status::Ok();
}

}  // namespace vjp
}  // namespace alpa
