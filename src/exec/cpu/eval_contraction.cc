// dot_general and convolution, accumulating in double.
#include <algorithm>

#include "exec/cpu/eval.h"

namespace alpa {
namespace cpu {
namespace {

// The dims of a rank-`rank` tensor not named in `a` or `b`, in increasing order.
Dims FreeDims(int64_t rank, const Dims& a, const Dims& b) {
  Dims free;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(a.begin(), a.end(), d) == a.end() &&
        std::find(b.begin(), b.end(), d) == b.end()) {
      free.push_back(d);
    }
  }
  return free;
}

// Copies `t` into a dense [batch][free][contracting] block so that the inner product runs over
// contiguous memory whatever the dims' positions were.
std::vector<double> Pack(const HostTensor& t, const Dims& batch, const Dims& free,
                         const Dims& contracting) {
  const Dims strides = RowMajorStrides(t.shape);
  const std::vector<int64_t> ob = OffsetsOver(t.shape, strides, batch);
  const std::vector<int64_t> of = OffsetsOver(t.shape, strides, free);
  const std::vector<int64_t> oc = OffsetsOver(t.shape, strides, contracting);
  std::vector<double> packed;
  packed.reserve(ob.size() * of.size() * oc.size());
  for (int64_t b : ob) {
    for (int64_t f : of) {
      for (int64_t c : oc) packed.push_back(t.data[static_cast<size_t>(b + f + c)]);
    }
  }
  return packed;
}

}  // namespace

void EvalDotGeneral(const Op& op, const Operands& in, HostTensor& out) {
  const DotDims& d = op.attrs.dot;
  const HostTensor& lhs = *in[0];
  const HostTensor& rhs = *in[1];
  const Dims lhs_free =
      FreeDims(static_cast<int64_t>(lhs.shape.size()), d.lhs_batch, d.lhs_contracting);
  const Dims rhs_free =
      FreeDims(static_cast<int64_t>(rhs.shape.size()), d.rhs_batch, d.rhs_contracting);
  int64_t batch = 1, m = 1, n = 1, k = 1;
  for (int64_t x : d.lhs_batch) batch *= lhs.shape[static_cast<size_t>(x)];
  for (int64_t x : lhs_free) m *= lhs.shape[static_cast<size_t>(x)];
  for (int64_t x : rhs_free) n *= rhs.shape[static_cast<size_t>(x)];
  for (int64_t x : d.lhs_contracting) k *= lhs.shape[static_cast<size_t>(x)];
  if (out.data.empty() || k == 0) return;  // out is zero-filled: an empty sum is 0
  const std::vector<double> a = Pack(lhs, d.lhs_batch, lhs_free, d.lhs_contracting);
  const std::vector<double> b = Pack(rhs, d.rhs_batch, rhs_free, d.rhs_contracting);
  // out [batch][m][n] is exactly the result layout: batch dims, lhs free, rhs free.
  double* o = out.data.data();
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      const double* arow = a.data() + (p * m + i) * k;
      for (int64_t j = 0; j < n; ++j) {
        const double* brow = b.data() + (p * n + j) * k;
        double sum = 0.0;
        for (int64_t c = 0; c < k; ++c) sum += arow[c] * brow[c];
        *o++ = sum;
      }
    }
  }
}

void EvalConvolution(const Op& op, const Operands& in, HostTensor& out) {
  const OpAttrs& at = op.attrs;
  const HostTensor& x = *in[0];
  const HostTensor& w = *in[1];
  const size_t rank = x.shape.size();
  const size_t k = rank - 2;
  const int64_t batch = x.shape[0], in_features = x.shape[1], out_features = w.shape[0];
  const int64_t groups = at.feature_group_count;
  const int64_t group_in = in_features / groups, group_out = out_features / groups;
  const Dims in_spatial(x.shape.begin() + 2, x.shape.end());
  const Dims kernel_spatial(w.shape.begin() + 2, w.shape.end());
  const Dims out_spatial(out.shape.begin() + 2, out.shape.end());
  const int64_t s_count = NumElements(in_spatial), k_count = NumElements(kernel_spatial);
  const int64_t t_count = NumElements(out_spatial);
  if (out.data.empty() || k_count == 0 || group_in == 0) return;

  // Every (output position, kernel position) pair that reads a real input element (not padding
  // and not a hole of the lhs dilation), as flat spatial offsets. Built once per op.
  struct Tap {
    int64_t t, kk, s;
  };
  std::vector<Tap> taps;
  const Dims s_strides = RowMajorStrides(in_spatial);
  for (int64_t t = 0; t < t_count; ++t) {
    for (int64_t kk = 0; kk < k_count; ++kk) {
      int64_t s = 0, t_rest = t, k_rest = kk;
      bool valid = true;
      for (size_t i = k; i-- > 0;) {  // innermost spatial dim first
        const int64_t ti = t_rest % out_spatial[i], ki = k_rest % kernel_spatial[i];
        t_rest /= out_spatial[i];
        k_rest /= kernel_spatial[i];
        // Position in the dilated, padded input.
        const int64_t p = ti * at.strides[i] + ki * at.rhs_dilation[i] - at.padding_lo[i];
        if (p < 0 || p % at.lhs_dilation[i] != 0 || p / at.lhs_dilation[i] >= in_spatial[i]) {
          valid = false;
          break;
        }
        s += (p / at.lhs_dilation[i]) * s_strides[i];
      }
      if (valid) taps.push_back({t, kk, s});
    }
  }

  for (int64_t nb = 0; nb < batch; ++nb) {
    for (int64_t o = 0; o < out_features; ++o) {
      const int64_t g = o / group_out;
      double* obase = out.data.data() + (nb * out_features + o) * t_count;
      for (int64_t c = 0; c < group_in; ++c) {
        const double* xbase = x.data.data() + (nb * in_features + g * group_in + c) * s_count;
        const double* wbase = w.data.data() + (o * group_in + c) * k_count;
        for (const Tap& tap : taps) obase[tap.t] += xbase[tap.s] * wbase[tap.kk];
      }
    }
  }
}

}  // namespace cpu
}  // namespace alpa
