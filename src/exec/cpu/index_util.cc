// Index helpers shared by the CPU evaluation files.
#include "exec/cpu/eval.h"

namespace alpa {
namespace cpu {

Dims RowMajorStrides(const Dims& shape) {
  Dims strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t NumElements(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> OffsetsOver(const Dims& shape, const Dims& strides, const Dims& dims) {
  Dims sub_shape, sub_strides;
  for (int64_t d : dims) {
    sub_shape.push_back(shape[static_cast<size_t>(d)]);
    sub_strides.push_back(strides[static_cast<size_t>(d)]);
  }
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(NumElements(sub_shape)));
  ForEach2(sub_shape, sub_strides, 0, sub_strides, 0,
           [&](int64_t a, int64_t) { offsets.push_back(a); });
  return offsets;
}

}  // namespace cpu
}  // namespace alpa
