// How the CUDA kernels round an op's result (host code, over the graph's ops): the
// OutputRounding of an op's launch, unrounded for the kinds the interpreter leaves unrounded
// (exec/cpu/interpreter.h's KeepsOperandValues).
#pragma once

#include "core/ir/graph.h"
#include "exec/cpu/interpreter.h"
#include "exec/cuda/kernel_math.h"

namespace alpa {
namespace cuda {

// The rounding of op's result: to its dtype when the launch asks for it and the interpreter
// rounds that kind.
inline OutputRounding RoundingFor(const Op& op, bool round) {
  return OutputRounding{round && !KeepsOperandValues(op.kind) && op.dtype != DType::kF64, op.dtype};
}

}  // namespace cuda
}  // namespace alpa
