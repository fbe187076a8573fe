// Reverse-mode automatic differentiation over the graph IR: the backward pass of a forward graph
// with a scalar loss, and the whole training step (forward + backward + the optimizer update of
// core/autodiff/optimizer.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/autodiff/optimizer.h"
#include "core/ir/graph.h"
#include "core/ir/graph_builder.h"

namespace alpa {

// Appends to `builder` the backward pass of the forward ops: the gradient of the scalar
// `loss` (shape [], floating) with respect to each op in `wrt` (usually the parameter ops).
// Backward ops get Phase::kBackward and the layer of the forward op they differentiate; the
// returned gradient ops get TensorRole::kGradient. An op in `wrt` that the loss does not
// depend on gets a zero constant. Returns one gradient op id per entry of `wrt`.
// Errors: loss not a floating scalar, a wrt op that is not floating (kInvalidArgument); an op
// kind with no VJP rule (kUnsupported, naming it). The builder's phase and layer are restored.
// Non-smooth points: abs' (0) = +1, relu' (0) = 0, max / min ties go to x, reduce_max ties share
// the cotangent equally, reduce_window max / select_and_scatter follow the first maximum.
Result<std::vector<int32_t>> AppendBackward(GraphBuilder& builder, int32_t loss,
                                            const std::vector<int32_t>& wrt);

// Appends the VJP of one op: given the cotangent `grad` of op `id`'s result, returns one
// cotangent per operand (-1 where the operand is not differentiable, e.g. integer indices or
// predicates). Exposed for the per-op gradient checks.
Result<std::vector<int32_t>> AppendVjp(GraphBuilder& builder, int32_t id, int32_t grad);
// The same, appending cotangents only for the operands with needed[i] (one flag per operand);
// the others come back -1. AppendBackward uses it to skip e.g. the gradient of data inputs.
Result<std::vector<int32_t>> AppendVjp(GraphBuilder& builder, int32_t id, int32_t grad,
                                       const std::vector<bool>& needed);

// Forward graph (outputs[0] = scalar loss) -> training step: backward w.r.t. every parameter op
// with TensorRole::kParameter, then the optimizer. The loss stays outputs[0].
// Errors (kInvalidArgument): no outputs, a loss that is not a floating scalar, an op already in
// the backward or update phase (named), no parameter op with role parameter; an invalid graph
// (kInvalidGraph, naming the op).
Result<Graph> BuildTrainingGraph(Graph forward, const OptimizerConfig& config);

}  // namespace alpa
