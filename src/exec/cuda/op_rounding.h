// How the CUDA kernels round an op's result (host code, over the graph's ops): which kinds the
// interpreter leaves unrounded, and the OutputRounding of an op's launch.
#pragma once

#include "core/ir/graph.h"
#include "exec/cuda/kernel_math.h"

namespace alpa {
namespace cuda {

// Kinds whose results are operand values moved or picked unchanged: the interpreter does not
// round them (their operands already hold values of the dtype).
inline bool KeepsOperandValues(OpKind kind) {
  switch (kind) {
    case OpKind::kBroadcastInDim:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kConcatenate:
    case OpKind::kReverse:
    case OpKind::kSelect:
    case OpKind::kGather:
      return true;
    default:
      return false;
  }
}

// The rounding of op's result: to its dtype when the launch asks for it and the interpreter
// rounds that kind.
inline OutputRounding RoundingFor(const Op& op, bool round) {
  return OutputRounding{round && !KeepsOperandValues(op.kind) && op.dtype != DType::kF64, op.dtype};
}

}  // namespace cuda
}  // namespace alpa
