// A product written transposed: a dot_general without batch dims whose result one transpose
// reads, swapping its lhs-free dims and its rhs-free dims (the weight gradient transpose(dot(g,
// x)) that autodiff writes), equals the dot_general of the swapped operands. The CUDA runner
// computes such a pair as that one product, writing the transpose's result
// (exec/cuda/transposed_product.h), and the cost model's replay of the runner prices it so
// (core/ir/fusion.h PricedResults with single-reader fusion): the dot's own result is never
// written.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace alpa {

// Whether `transpose` (of the dot's result) swaps the free dims of `dot`, a dot_general without
// batch dims: [lhs free..., rhs free...] to [rhs free..., lhs free...], both sides non-empty.
bool TransposeSwapsProduct(const Op& dot, const Graph& graph, const Op& transpose);

// The dot dims of dot_general(rhs, lhs) for a dot_general(lhs, rhs) without batch dims.
DotDims SwappedDotDims(const DotDims& dims);

// Per op of `graph`: true for a dot_general whose one user is a transpose that swaps its free
// dims (and which is not an output of the graph).
std::vector<bool> ProductsReadTransposed(const Graph& graph);

}  // namespace alpa
