// Internal to the CPU reference interpreter: the per-concern evaluation functions and the index
// helpers they share. Every Eval* function takes a validated op (its type inferred, operands of
// the inferred shapes) and writes `out`, whose shape, dtype and zero-filled data the caller sets.
// Results are rounded to the op's dtype by the caller (EvaluateValidatedOp), not here.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/cpu/interpreter.h"

namespace alpa {
namespace cpu {

using Operands = std::vector<const HostTensor*>;

// Row-major strides of a shape (elements).
Dims RowMajorStrides(const Dims& shape);
int64_t NumElements(const Dims& shape);

// Walks `shape` in row-major order, keeping two offsets that advance by per-dim strides
// `sa` / `sb` from bases `a0` / `b0`; calls f(a, b) once per index. Strides may be 0 (broadcast,
// reduced dims) or negative (reverse). The innermost dim is a tight loop: no per-element
// allocation and no per-element division.
template <typename F>
void ForEach2(const Dims& shape, const Dims& sa, int64_t a0, const Dims& sb, int64_t b0, F&& f) {
  const size_t rank = shape.size();
  for (int64_t d : shape) {
    if (d <= 0) return;
  }
  if (rank == 0) {
    f(a0, b0);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  const size_t last = rank - 1;
  const int64_t n = shape[last], da = sa[last], db = sb[last];
  int64_t a = a0, b = b0;
  while (true) {
    int64_t ia = a, ib = b;
    for (int64_t i = 0; i < n; ++i, ia += da, ib += db) f(ia, ib);
    // Carry into the outer dims.
    size_t d = last;
    while (true) {
      if (d == 0) return;
      --d;
      ++idx[d];
      a += sa[d];
      b += sb[d];
      if (idx[d] < shape[d]) break;
      a -= sa[d] * shape[d];
      b -= sb[d] * shape[d];
      idx[d] = 0;
    }
  }
}

// Offsets (by `strides`) of every index over the listed dims of `shape`, in row-major order of
// those dims; one entry (0) when `dims` is empty.
std::vector<int64_t> OffsetsOver(const Dims& shape, const Dims& strides, const Dims& dims);

// ---- eval_elementwise.cc ----
void EvalConstant(const Op& op, HostTensor& out);
void EvalIota(const Op& op, HostTensor& out);
void EvalUnary(const Op& op, const Operands& in, HostTensor& out);
void EvalBinary(const Op& op, const Operands& in, HostTensor& out);
void EvalSelect(const Operands& in, HostTensor& out);

// ---- eval_contraction.cc ----
void EvalDotGeneral(const Op& op, const Operands& in, HostTensor& out);
void EvalConvolution(const Op& op, const Operands& in, HostTensor& out);

// ---- eval_movement.cc ----
void EvalBroadcastInDim(const Op& op, const Operands& in, HostTensor& out);
void EvalTranspose(const Op& op, const Operands& in, HostTensor& out);
void EvalSlice(const Op& op, const Operands& in, HostTensor& out);
void EvalConcatenate(const Op& op, const Operands& in, HostTensor& out);
void EvalPad(const Op& op, const Operands& in, HostTensor& out);
void EvalReverse(const Op& op, const Operands& in, HostTensor& out);

// ---- eval_reduce.cc ----
void EvalReduce(const Op& op, const Operands& in, HostTensor& out);
void EvalReduceWindow(const Op& op, const Operands& in, HostTensor& out);
void EvalSelectAndScatter(const Op& op, const Operands& in, HostTensor& out);

// ---- eval_indexing.cc ----
void EvalGather(const Op& op, const Operands& in, HostTensor& out);
void EvalScatterAdd(const Op& op, const Operands& in, HostTensor& out);

}  // namespace cpu

}  // namespace alpa
