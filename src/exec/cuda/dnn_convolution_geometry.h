// How a convolution op (core/ir/graph.h) maps onto one of cuDNN's convolution operations, or why
// it does not. cuDNN's convolutions are defined by a forward problem over [N, C, spatial...]
// tensors with 2 or 3 spatial dims: y[n, k, p] = sum over the channels c of k's group and the
// kernel positions r of x[n, c, p * stride - pre_padding + r * dilation] * w[k, c - first
// channel of the group, r'], positions outside x (the pre and post paddings) reading zero, r' = r
// in cross-correlation mode and R - 1 - r in convolution mode (the kernel flipped); the groups
// follow from the channel counts (x's C over w's C).
//   - Forward: an op without an input (lhs) dilation is that problem in cross-correlation mode:
//     x is the op's input, w its kernel and y its result; padding_lo / padding_hi become the pre
//     and post paddings, strides and rhs_dilation the filter strides and dilations.
//   - Backward data: an op with an input dilation (the input gradient of a strided convolution,
//     as autodiff writes it: output strides 1, one group) is the gradient of a forward problem
//     with respect to its x: cuDNN's dy is the op's input, its dx the op's result, stride the
//     input dilation, dilation the kernel's, pre padding (R - 1) * dilation - padding_lo, in
//     convolution mode over the op's kernel with its first two dims swapped (w [op input
//     features, op output features, spatial...]: the caller transposes the kernel).
// A convolution of 1 spatial dim gets a leading spatial dim of size 1 (same memory layout).
// Host code (no cuDNN here): the geometry is tested against the interpreter without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {
namespace cuda {

enum class DnnConvDirection : int32_t { kForward = 0, kBackwardData = 1 };

struct DnnConvGeometry {
  DnnConvDirection direction = DnnConvDirection::kForward;
  // cuDNN's forward problem: [N, C, spatial...] of x, [K, C / groups, spatial...] of w and
  // [N, K, spatial...] of y, 4 or 5 dims each, dense row-major. Forward: x, w, y are the op's
  // input, kernel and result. Backward data: x (dx) is the op's result, y (dy) its input, w its
  // kernel transposed (dims 0 and 1 swapped).
  std::vector<int64_t> x_dims, w_dims, y_dims;
  // Per spatial dim (2 or 3).
  std::vector<int64_t> pre_padding, post_padding, strides, dilations;
  int64_t groups = 1;
};

// The geometry of convolution op `id` of `graph` (validated). kUnsupported saying why no cuDNN
// convolution computes it: more than 3 spatial dims, an empty dim (the caller handles empty
// results and sums) or one beyond int32; without an input dilation, a negative padding (a crop);
// with one, feature groups, an output stride, or paddings that leave no valid pre / post padding
// of the gradient's forward problem.
Result<DnnConvGeometry> DnnConvGeometryFor(const Graph& graph, int32_t id);

// A text naming every field: the key under which a geometry's execution plans are cached.
std::string DnnConvGeometryKey(const DnnConvGeometry& g);

}  // namespace cuda
}  // namespace alpa
