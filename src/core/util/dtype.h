// Element types of tensors. The numeric values are the ALPA_DTYPE_* constants of include/alpa.h.
#pragma once

#include <cstdint>
#include <string>

#include "core/util/dtype_enum.h"
#include "core/util/status.h"

namespace alpa {

// Bytes per element.
int64_t DTypeBytes(DType dtype);
// "f32", "f16", "bf16", "f64", "s8", "s32", "s64", "pred".
const char* DTypeName(DType dtype);
Result<DType> ParseDType(const std::string& name);
bool IsValidDType(int32_t value);
bool IsFloating(DType dtype);
bool IsInteger(DType dtype);  // s8, s32, s64 (not pred)

}  // namespace alpa
