#include "exec/comm/reduction.h"

#include <cstring>

namespace alpa {

namespace {

// Max that keeps a NaN once one appears, whichever side it is on.
inline double MaxPropagatingNan(double acc, double value) {
  return (value > acc || value != value) ? value : acc;
}

}  // namespace

void ReduceInOrder(ReduceOp op, const double* const* inputs, int64_t input_count, int64_t count,
                   double* out) {
  if (count <= 0 || input_count <= 0) return;
  // One pass per input keeps the inner loops contiguous; the per-element order is still
  // ((in0 op in1) op in2) ..., the left fold in group order.
  if (out != inputs[0]) std::memmove(out, inputs[0], static_cast<size_t>(count) * sizeof(double));
  for (int64_t j = 1; j < input_count; ++j) {
    const double* in = inputs[j];
    if (op == ReduceOp::kSum) {
      for (int64_t e = 0; e < count; ++e) out[e] += in[e];
    } else {
      for (int64_t e = 0; e < count; ++e) out[e] = MaxPropagatingNan(out[e], in[e]);
    }
  }
}

}  // namespace alpa
