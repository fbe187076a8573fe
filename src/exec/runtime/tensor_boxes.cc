#include "exec/runtime/tensor_boxes.h"

#include <algorithm>

namespace alpa {
namespace {

// Calls f(src_offset, dst_offset, run) for every contiguous run of the box: the innermost dim
// is one run, outer dims are walked in row-major order.
template <typename F>
void ForEachRun(const Dims& shape, const std::vector<int64_t>& offsets,
                const std::vector<int64_t>& sizes, F&& f) {
  const size_t rank = shape.size();
  for (int64_t s : sizes) {
    if (s <= 0) return;
  }
  if (rank == 0) {
    f(0, 0, 1);
    return;
  }
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) strides[d] = strides[d + 1] * shape[d + 1];
  const int64_t run = sizes[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t dense = 0;
  while (true) {
    int64_t big = 0;
    for (size_t d = 0; d < rank; ++d) big += (offsets[d] + idx[d]) * strides[d];
    f(big, dense, run);
    dense += run;
    size_t d = rank - 1;
    while (true) {
      if (d == 0) return;
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

int64_t ElementCountOf(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void ExtractBox(const double* src, const Dims& shape, const std::vector<int64_t>& offsets,
                const std::vector<int64_t>& sizes, double* dst) {
  ForEachRun(shape, offsets, sizes, [&](int64_t big, int64_t dense, int64_t run) {
    std::copy(src + big, src + big + run, dst + dense);
  });
}

void InsertBox(const double* src, const std::vector<int64_t>& offsets,
               const std::vector<int64_t>& sizes, double* dst, const Dims& shape) {
  ForEachRun(shape, offsets, sizes, [&](int64_t big, int64_t dense, int64_t run) {
    std::copy(src + dense, src + dense + run, dst + big);
  });
}

bool IsWholeBox(const Dims& shape, const std::vector<int64_t>& offsets,
                const std::vector<int64_t>& sizes) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (offsets[d] != 0 || sizes[d] != shape[d]) return false;
  }
  return true;
}

const double* BoxValues(const double* src, const Dims& shape, const std::vector<int64_t>& offsets,
                        const std::vector<int64_t>& sizes, std::vector<double>& scratch) {
  if (IsWholeBox(shape, offsets, sizes)) return src;
  scratch.resize(static_cast<size_t>(ElementCountOf(sizes)));
  ExtractBox(src, shape, offsets, sizes, scratch.data());
  return scratch.data();
}

bool BoxInside(const Dims& shape, const std::vector<int64_t>& offsets,
               const std::vector<int64_t>& sizes) {
  if (offsets.size() != shape.size() || sizes.size() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (offsets[d] < 0 || sizes[d] < 0 || offsets[d] + sizes[d] > shape[d]) return false;
  }
  return true;
}

}  // namespace alpa
