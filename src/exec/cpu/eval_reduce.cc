// Reductions: reduce_sum / reduce_max over dims, reduce_window and its gradient
// select_and_scatter.
#include <cmath>
#include <limits>

#include "exec/cpu/eval.h"

namespace alpa {
namespace cpu {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// max that propagates NaN (like XLA's max).
inline double MaxNaN(double acc, double v) {
  if (std::isnan(acc)) return acc;
  return std::isnan(v) || v > acc ? v : acc;
}

// Steps a multi-index over `shape` in row-major order; false after the last one.
bool Next(std::vector<int64_t>& idx, const Dims& shape) {
  for (size_t d = shape.size(); d-- > 0;) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// Calls f(window_flat, offsets) for every window (output element of the window op, in row-major
// order) with the flat offsets in x of its in-bounds positions, in row-major order within the
// window. Padding positions are left out: they hold the identity and are never selected.
template <typename F>
void ForEachWindow(const OpAttrs& at, const Dims& x_shape, const Dims& out_shape, F&& f) {
  const size_t rank = x_shape.size();
  if (NumElements(out_shape) == 0) return;
  const Dims xs = RowMajorStrides(x_shape);
  const bool empty_window = NumElements(at.window) == 0;
  std::vector<int64_t> t(rank, 0), w(rank, 0), offsets;
  int64_t flat = 0;
  do {
    offsets.clear();
    if (!empty_window) {
      std::fill(w.begin(), w.end(), 0);
      do {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < rank && inside; ++d) {
          const int64_t p = t[d] * at.strides[d] + w[d] - at.padding_lo[d];
          inside = p >= 0 && p < x_shape[d];
          off += p * xs[d];
        }
        if (inside) offsets.push_back(off);
      } while (Next(w, at.window));
    }
    f(flat++, offsets);
  } while (Next(t, out_shape));
}

}  // namespace

void EvalReduce(const Op& op, const Operands& in, HostTensor& out) {
  const HostTensor& x = *in[0];
  const bool is_max = op.kind == OpKind::kReduceMax;
  if (is_max) std::fill(out.data.begin(), out.data.end(), kNegInf);  // max of nothing
  const Dims os = RowMajorStrides(out.shape);
  Dims strides(x.shape.size(), 0);  // reduced dims do not move the output offset
  size_t next_out = 0;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    bool reduced = false;
    for (int64_t r : op.attrs.dims) reduced = reduced || static_cast<size_t>(r) == d;
    if (!reduced) strides[d] = os[next_out++];
  }
  const double* src = x.data.data();
  double* dst = out.data.data();
  if (is_max) {
    ForEach2(x.shape, RowMajorStrides(x.shape), 0, strides, 0,
             [&](int64_t i, int64_t o) { dst[o] = MaxNaN(dst[o], src[i]); });
  } else {
    ForEach2(x.shape, RowMajorStrides(x.shape), 0, strides, 0,
             [&](int64_t i, int64_t o) { dst[o] += src[i]; });
  }
}

void EvalReduceWindow(const Op& op, const Operands& in, HostTensor& out) {
  const HostTensor& x = *in[0];
  const bool is_max = op.attrs.reduce == ReduceKind::kMax;
  ForEachWindow(op.attrs, x.shape, out.shape, [&](int64_t t, const std::vector<int64_t>& offsets) {
    double acc = is_max ? kNegInf : 0.0;
    for (int64_t off : offsets) {
      const double v = x.data[static_cast<size_t>(off)];
      acc = is_max ? MaxNaN(acc, v) : acc + v;
    }
    out.data[static_cast<size_t>(t)] = acc;
  });
}

void EvalSelectAndScatter(const Op& op, const Operands& in, HostTensor& out) {
  const HostTensor& x = *in[0];
  const HostTensor& source = *in[1];
  ForEachWindow(op.attrs, x.shape, source.shape,
                [&](int64_t t, const std::vector<int64_t>& offsets) {
                  if (offsets.empty()) return;  // a window entirely in padding selects nothing
                  int64_t best = offsets[0];
                  for (int64_t off : offsets) {
                    // Strictly greater: the first maximum wins ties.
                    if (x.data[static_cast<size_t>(off)] > x.data[static_cast<size_t>(best)]) {
                      best = off;
                    }
                  }
                  out.data[static_cast<size_t>(best)] += source.data[static_cast<size_t>(t)];
                });
}

}  // namespace cpu
}  // namespace alpa
