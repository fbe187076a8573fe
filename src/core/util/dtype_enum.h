// The DType enum alone, with no standard headers: the CUDA backend's kernels compiled at run
// time (exec/cuda/runtime_compiler.h) include this file as it is. The numeric values are the
// ALPA_DTYPE_* constants of include/alpa.h.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <cstdint>
#endif

namespace alpa {

enum class DType : int32_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kF64 = 3,
  kS8 = 4,
  kS32 = 5,
  kS64 = 6,
  kPred = 7,  // boolean (compare results, select predicates); one byte
};
inline constexpr int32_t kNumDTypes = 8;

}  // namespace alpa
