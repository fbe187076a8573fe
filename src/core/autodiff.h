// Reverse-mode automatic differentiation over the graph IR, and optimizer updates: turns a
// forward graph with a scalar loss into one training step (forward + backward + update).
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/graph_builder.h"

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

enum class OptimizerKind : int32_t { kSgd = 0, kMomentum = 1, kAdam = 2 };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  double learning_rate = 1e-3;
  double momentum = 0.9;  // SGD with momentum
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  // Mixed precision: parameters in half precision (their dtype in the forward graph) get an
  // f32 master copy (optimizer state); the update runs in f32 and the new half-precision
  // parameter is the converted master weight.
  bool master_weights = false;
};

// Appends update ops (Phase::kUpdate) for each (parameter, gradient) pair: optimizer-state
// parameters (TensorRole::kOptimizerState) and, for every state and every parameter, an op with
// alias_of = the parameter op it replaces. Every update op is added to the graph outputs (the
// new state parameters themselves are inputs of the step, not outputs).
//   sgd:       w' = w - lr g
//   momentum:  state "<p>.momentum" v (fed 0): v' = momentum v + g; w' = w - lr v'
//   adam:      states "<p>.m", "<p>.v" (fed 0) and one shared f32 scalar "optimizer.step" t
//              (fed 0; layer -1, as every layer uses it): t' = t + 1,
//              m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g^2,
//              w' = w - lr (m' / (1 - b1^t')) / (sqrt(v' / (1 - b2^t')) + eps)
//   master weights (f16 / bf16 parameters only): state "<p>.master" (f32, fed p's value); the
//              rule above runs on it in f32 and p' = convert(master', p's dtype).
// Update and state ops take the parameter's layer; update ops are named "<target>.next".
Status AppendOptimizer(GraphBuilder& builder, const std::vector<int32_t>& parameters,
                       const std::vector<int32_t>& gradients, const OptimizerConfig& config);

// Forward graph (outputs[0] = scalar loss) -> training step: backward w.r.t. every parameter op
// with TensorRole::kParameter, then the optimizer. The loss stays outputs[0].
Result<Graph> BuildTrainingGraph(Graph forward, const OptimizerConfig& config);

}  // namespace alpa
