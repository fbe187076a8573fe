#include "exec/runtime/masked_indexing.h"

#include <algorithm>

namespace alpa {
namespace {

struct AxisSplit {
  int64_t outer = 1, rows = 1, inner = 1;
};

AxisSplit SplitAt(const Dims& shape, size_t axis) {
  AxisSplit s;
  for (size_t i = 0; i < axis; ++i) s.outer *= shape[i];
  s.rows = shape[axis];
  for (size_t i = axis + 1; i < shape.size(); ++i) s.inner *= shape[i];
  return s;
}

// The local row of a global index, or -1 when another device holds it.
int64_t LocalRow(double index, int64_t offset, int64_t local_rows, int64_t size) {
  int64_t row = 0;
  if (index > 0.0) {
    row = index >= static_cast<double>(size - 1) ? size - 1 : static_cast<int64_t>(index);
  }
  row -= offset;
  return row >= 0 && row < local_rows ? row : -1;
}

}  // namespace

void MaskedGather(const Op& op, const HostTensor& x, const HostTensor& indices, int64_t offset,
                  int64_t size, HostTensor& out) {
  const AxisSplit s = SplitAt(x.shape, static_cast<size_t>(op.attrs.axis));
  double* dst = out.data.data();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (double index : indices.data) {
      const int64_t row = LocalRow(index, offset, s.rows, size);
      if (row < 0) {
        std::fill(dst, dst + s.inner, 0.0);
      } else {
        const double* src = x.data.data() + (o * s.rows + row) * s.inner;
        std::copy(src, src + s.inner, dst);
      }
      dst += s.inner;
    }
  }
}

void MaskedScatterAdd(const Op& op, const HostTensor& x, const HostTensor& indices,
                      const HostTensor& updates, int64_t offset, int64_t size, HostTensor& out) {
  const AxisSplit s = SplitAt(x.shape, static_cast<size_t>(op.attrs.axis));
  out.data = x.data;
  const double* src = updates.data.data();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (double index : indices.data) {
      const int64_t row = LocalRow(index, offset, s.rows, size);
      if (row >= 0) {
        double* dst = out.data.data() + (o * s.rows + row) * s.inner;
        for (int64_t i = 0; i < s.inner; ++i) dst[i] += src[i];
      }
      src += s.inner;
    }
  }
}

}  // namespace alpa
