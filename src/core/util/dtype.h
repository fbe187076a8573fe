// Element types of tensors. The numeric values are the ALPA_DTYPE_* constants of include/alpa.h.
#pragma once

#include <cstdint>
#include <string>

#include "core/util/status.h"

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

// Bytes per element.
int64_t DTypeBytes(DType dtype);
// "f32", "f16", "bf16", "f64", "s8", "s32", "s64", "pred".
const char* DTypeName(DType dtype);
Result<DType> ParseDType(const std::string& name);
bool IsValidDType(int32_t value);
bool IsFloating(DType dtype);
bool IsInteger(DType dtype);  // s8, s32, s64 (not pred)

}  // namespace alpa
