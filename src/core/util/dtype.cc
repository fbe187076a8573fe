#include "core/util/dtype.h"

namespace alpa {

int64_t DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kS32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF64:
    case DType::kS64:
      return 8;
    case DType::kS8:
    case DType::kPred:
      return 1;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kF64:
      return "f64";
    case DType::kS8:
      return "s8";
    case DType::kS32:
      return "s32";
    case DType::kS64:
      return "s64";
    case DType::kPred:
      return "pred";
  }
  return "?";
}

Result<DType> ParseDType(const std::string& name) {
  for (int32_t i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    if (name == DTypeName(d)) return d;
  }
  return InvalidArgument("unknown dtype \"" + name +
                         "\" (expected f32, f16, bf16, f64, s8, s32, s64 or pred)");
}

bool IsValidDType(int32_t value) { return value >= 0 && value < kNumDTypes; }

bool IsFloating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
         dtype == DType::kF64;
}

bool IsInteger(DType dtype) {
  return dtype == DType::kS8 || dtype == DType::kS32 || dtype == DType::kS64;
}

}  // namespace alpa
