// Which dot_generals the CUDA runner computes transposed (core/ir/transposed_product.h): a dot
// whose result buffer one transpose reads, swapping its free dims (autodiff's weight gradients,
// transpose(dot(g, x))), runs in the dot's place as the product of its swapped operands written
// into the transpose's buffer: one GEMM, no transpose kernel, and the dot's buffer is never
// allocated. Only where both are rounded kRuns that no attention region replaces, the dot's
// buffer is written once, not persistent, read by the transpose alone and kept in the
// transpose's storage, and the transpose's buffer is written by the transpose alone.
// ALPA_CUDA_TRANSPOSED_PRODUCTS=0 in the environment turns it off.
// Host code: planned and tested without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/dtype.h"
#include "exec/program/program.h"

namespace alpa {
namespace cuda {

struct TransposedProduct {
  int32_t dot_at = -1;        // the dot's instruction: the product runs there
  int32_t transpose_at = -1;  // the transpose's instruction: skipped
  // The dot's local graph with dot_general(rhs, lhs) appended: the transpose's shape (its last
  // op; its operands are the dot's, swapped).
  Graph swapped;
};

// Unless ALPA_CUDA_TRANSPOSED_PRODUCTS=0 is in the environment.
bool TransposedProductsEnabled();

// The products of `program` (buffers kept in `storage`, storage_policy.h) computed transposed, in
// program order; `replaced`: per instruction, whether an attention region's kernels replace it.
std::vector<TransposedProduct> PlanTransposedProducts(const DeviceProgram& program,
                                                      const std::vector<DType>& storage,
                                                      const std::vector<char>& replaced);

}  // namespace cuda
}  // namespace alpa
