// The op kind and comparison enums alone, with no standard headers: the CUDA backend's kernels
// compiled at run time (exec/cuda/runtime_compiler.h) include this file as it is.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <cstdint>
#endif

namespace alpa {

// Op kinds; the values are the ALPA_OP_* constants of include/alpa.h (pinned, never reused).
enum class OpKind : int32_t {
  kParameter = 0,
  kConstant = 1,
  kIota = 2,
  // Elementwise unary.
  kNeg = 10,
  kAbs = 11,
  kExp = 12,
  kLog = 13,
  kTanh = 14,
  kSqrt = 15,
  kRsqrt = 16,
  kGelu = 17,
  kRelu = 18,
  kConvert = 19,
  // Elementwise binary / ternary.
  kAdd = 30,
  kSub = 31,
  kMul = 32,
  kDiv = 33,
  kMax = 34,
  kMin = 35,
  kPow = 36,
  kCompare = 37,
  kSelect = 38,
  // Contractions.
  kDotGeneral = 50,
  kConvolution = 51,
  // Data movement.
  kBroadcastInDim = 60,
  kReshape = 61,
  kTranspose = 62,
  kSlice = 63,
  kConcatenate = 64,
  kPad = 65,
  kReverse = 66,
  // Reductions.
  kReduceSum = 80,
  kReduceMax = 81,
  kReduceWindow = 82,
  kSelectAndScatter = 83,
  // Indexing.
  kGather = 90,
  kScatterAdd = 91,
};

enum class Comparison : int32_t { kEq = 0, kNe = 1, kLt = 2, kLe = 3, kGt = 4, kGe = 5 };

}  // namespace alpa
