// Internal to autodiff: the per-kind VJP rules, split by family over vjp_rules.cc (elementwise,
// data movement, reductions, indexing; and the dispatcher AppendVjp), vjp_contraction.cc
// (dot_general, convolution) and vjp_window.cc (reduce_window, select_and_scatter).
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/graph_builder.h"

namespace alpa {
namespace vjp {

// One VJP request. `op` is a copy: the builder's op vector grows (and reallocates) while a rule
// appends ops, so a reference into it would dangle.
struct VjpArgs {
  GraphBuilder* b = nullptr;
  int32_t id = -1;  // the op being differentiated
  Op op;
  int32_t g = -1;            // cotangent of op's result (op's shape and dtype)
  std::vector<bool> needed;  // per operand: whether its cotangent is wanted
};

// Each rule writes one cotangent per operand into `out` (pre-sized, all -1); entries stay -1
// where the operand is not differentiable or not needed. Builder errors surface through the
// builder's status; the returned Status is for rule-level errors.
Status VjpDotGeneral(const VjpArgs& a, std::vector<int32_t>& out);
Status VjpConvolution(const VjpArgs& a, std::vector<int32_t>& out);
Status VjpReduceWindow(const VjpArgs& a, std::vector<int32_t>& out);
Status VjpSelectAndScatter(const VjpArgs& a, std::vector<int32_t>& out);

// Small helpers shared by the rule files.
Dims Iota(int64_t n, int64_t start = 0);
int64_t DilatedSize(int64_t size, int64_t dilation);  // (size - 1) * dilation + 1; 0 stays 0
bool HasZeroElements(const Dims& shape);

}  // namespace vjp
}  // namespace alpa
