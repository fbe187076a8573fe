// Optimizer updates as graph ops: SGD, momentum and Adam, with optional f32 master weights for
// half-precision parameters. They turn a graph with gradients into one whose outputs are the next
// parameters and optimizer state (aliasing the ones they replace).
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph_builder.h"
#include "core/util/status.h"

namespace alpa {

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

}  // namespace alpa
