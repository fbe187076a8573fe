// Optimizer specs in text: how a user outside the model zoo (the C ABI, the CLI's --train) names
// the optimizer that turns a forward graph into a training step.
#pragma once

#include <string>

#include "core/autodiff/optimizer.h"
#include "core/util/status.h"

namespace alpa {

// Parses "KIND[:key=value,...]" with KIND one of sgd, momentum, adam (the zoo's optimizer= choices)
// and the keys
//   lr=X              learning rate (> 0; default 0.001, the zoo's lr)
//   momentum=X        momentum only: the decay in [0, 1) (default 0.9)
//   beta1=X, beta2=X  adam only: the moment decays in [0, 1) (default 0.9, 0.999)
//   eps=X             adam only (alias adam_eps, the zoo's key): > 0 (default 1e-8)
//   master_weights=0|1  f32 master copies of f16 / bf16 parameters (default 1, the zoo's default
//                     for half dtypes; it changes nothing for f32 parameters).
// Errors (kInvalidArgument) name the unknown kind, the unknown or misplaced key, or the bad value.
Result<OptimizerConfig> ParseOptimizerSpec(const std::string& spec);

}  // namespace alpa
