// Deterministic synthetic training data: initial parameters and optimizer state, and each
// step's data inputs, as a function of (seed, step, op, element) only, so that every process of a
// distributed run and the one-device reference produce identical values without talking.
#pragma once

#include <cstdint>
#include <map>

#include "exec/cpu/interpreter.h"

namespace alpa {

// Weights (role parameter): uniform in +-sqrt(3 / fan-in) (fan-in: dim 0 of a matrix, the
// product of the non-output dims of a convolution kernel); rank-1 weights are 1 when named
// "*.g" / "*.gamma" / "*.scale" (norm scales), else 0. Optimizer state: zeros, except "<p>.master"
// (an f32 master copy), which starts as p's value. Keyed by op id.
std::map<int32_t, HostTensor> InitialParameters(const Graph& graph, uint64_t seed);

// The data inputs (role input parameters) of step `step`: floats standard normal; integers
// uniform in [0, IntegerInputRange).
std::map<int32_t, HostTensor> StepInputs(const Graph& graph, uint64_t seed, int64_t step);

// The values an integer input may take: the rows of the table it indexes (gather), or the size
// of the iota it is compared with (one-hot labels), looking through converts, reshapes and
// broadcasts; 2 when neither is found.
int64_t IntegerInputRange(const Graph& graph, int32_t id);

}  // namespace alpa
