// gather (numpy take along an axis) and scatter_add, its VJP pair. Indices are clamped into
// [0, size - 1] of the indexed dim.
#include <algorithm>

#include "exec/cpu/eval.h"

namespace alpa {
namespace cpu {
namespace {

// The three factors of x's shape around `axis`: [outer, size, inner].
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};

AxisSplit SplitAt(const Dims& shape, size_t axis) {
  AxisSplit s;
  for (size_t i = 0; i < axis; ++i) s.outer *= shape[i];
  s.size = shape[axis];
  for (size_t i = axis + 1; i < shape.size(); ++i) s.inner *= shape[i];
  return s;
}

int64_t Clamp(double index, int64_t size) {
  if (!(index > 0.0)) return 0;  // also NaN
  if (index >= static_cast<double>(size - 1)) return size - 1;
  return static_cast<int64_t>(index);
}

}  // namespace

void EvalGather(const Op& op, const Operands& in, HostTensor& out) {
  const HostTensor& x = *in[0];
  const HostTensor& indices = *in[1];
  const AxisSplit s = SplitAt(x.shape, static_cast<size_t>(op.attrs.axis));
  double* dst = out.data.data();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (double index : indices.data) {
      const double* src = x.data.data() + (o * s.size + Clamp(index, s.size)) * s.inner;
      dst = std::copy(src, src + s.inner, dst);
    }
  }
}

void EvalScatterAdd(const Op& op, const Operands& in, HostTensor& out) {
  const HostTensor& x = *in[0];
  const HostTensor& indices = *in[1];
  const HostTensor& updates = *in[2];
  const AxisSplit s = SplitAt(x.shape, static_cast<size_t>(op.attrs.axis));
  out.data = x.data;
  const double* src = updates.data.data();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (double index : indices.data) {
      double* dst = out.data.data() + (o * s.size + Clamp(index, s.size)) * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) dst[i] += *src++;
    }
  }
}

}  // namespace cpu
}  // namespace alpa
