// The elementwise op kinds and storage types libalpa's CUDA runner computes in float (its float
// path: fused chains and generated kernels) rather than in double. Shared by the runner's kernels
// (exec/cuda/float_math.h, also compiled at run time, so this header includes nothing but the
// op kinds) and the cost model's replay of its fusion (core/ir/single_reader_fusion.cc).
#pragma once

#include "core/ir/op_kind.h"
#include "core/util/dtype_enum.h"

#if defined(__CUDACC__)
#define ALPA_FLOAT_PATH_HD __host__ __device__ inline
#else
#define ALPA_FLOAT_PATH_HD inline
#endif

namespace alpa {

// The storage types the float path loads and stores.
ALPA_FLOAT_PATH_HD bool FloatPathStorage(DType storage) {
  return storage == DType::kF32 || storage == DType::kBF16 || storage == DType::kPred;
}

// Kinds whose float result has the bits of the double path's once stored in f32 or bf16.
ALPA_FLOAT_PATH_HD bool FloatPathKind(OpKind kind) {
  switch (kind) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kMax:
    case OpKind::kMin:
    case OpKind::kCompare:
    case OpKind::kSelect:
    case OpKind::kNeg:
    case OpKind::kAbs:
    case OpKind::kSqrt:
    case OpKind::kRelu:
    case OpKind::kConvert:
      return true;
    default:
      return false;
  }
}

// exp, log, tanh and rsqrt, whose float functions are within 2 ulps of f32 (CUDA's and the
// host's): a result stored as bf16 is then within one bf16 ulp of the double path's (equal
// unless the exact value lies within 2 f32 ulps of a rounding boundary, about one in 2^15).
// gelu too: as x * sigmoid(2u) its float error stays below 2^-16 relative for every |x| < 10
// (the error of u times 2|u|), far inside one bf16 ulp (2^-8). The runner takes them in float
// only where the result ends in bf16.
ALPA_FLOAT_PATH_HD bool ApproximateFloatKind(OpKind kind) {
  return kind == OpKind::kExp || kind == OpKind::kLog || kind == OpKind::kTanh ||
         kind == OpKind::kRsqrt || kind == OpKind::kGelu;
}

}  // namespace alpa
