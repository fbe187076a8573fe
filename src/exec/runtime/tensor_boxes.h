// Moving boxes of dense row-major tensors: what slices, collectives and point-to-point moves do
// to local buffers.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace alpa {

int64_t ElementCountOf(const Dims& shape);

// Copies the box (offsets, sizes) of a tensor of `shape` held in `src` to `dst` (dense, sizes'
// elements).
void ExtractBox(const double* src, const Dims& shape, const std::vector<int64_t>& offsets,
                const std::vector<int64_t>& sizes, double* dst);
// Copies a dense tensor of `sizes` from `src` into the box at `offsets` of `dst` (of `shape`).
void InsertBox(const double* src, const std::vector<int64_t>& offsets,
               const std::vector<int64_t>& sizes, double* dst, const Dims& shape);

// Whether the box (offsets, sizes) is all of `shape`.
bool IsWholeBox(const Dims& shape, const std::vector<int64_t>& offsets,
                const std::vector<int64_t>& sizes);
// The box's values, dense: `src` itself when the box is the whole tensor, else the box copied
// into `scratch` (resized to it).
const double* BoxValues(const double* src, const Dims& shape, const std::vector<int64_t>& offsets,
                        const std::vector<int64_t>& sizes, std::vector<double>& scratch);

// Whether the box lies inside `shape`.
bool BoxInside(const Dims& shape, const std::vector<int64_t>& offsets,
               const std::vector<int64_t>& sizes);

}  // namespace alpa
