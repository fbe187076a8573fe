// The float path's per-element math, for the host, the device and the kernels compiled at run
// time (fused elementwise chains: fused_source.h): the bits of floats, bf16 rounding, loads and
// stores of f32 / bf16 / pred elements as float, and the elementwise ops that run in float.
// It includes nothing but the enums (and, outside the run-time compiler, <cstdint>, <cstring>
// and <cmath>), so that the run-time compiler takes it as it is: kernel_math.h builds the double
// path on it, and every caller of the float path shares these functions.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstdint>
#include <cstring>
#endif

#include "core/ir/float_path.h"
#include "core/ir/op_kind.h"
#include "core/util/dtype_enum.h"

#if defined(__CUDACC__)
#define ALPA_HD __host__ __device__ inline
#else
#define ALPA_HD inline
#endif

namespace alpa {
namespace cuda {

ALPA_HD uint64_t BitsOfDouble(double v) {
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(bits));
  return bits;
}

ALPA_HD double DoubleOfBits(uint64_t bits) {
  double v = 0.0;
  memcpy(&v, &bits, sizeof(v));
  return v;
}

ALPA_HD double Infinity() { return DoubleOfBits(0x7ff0000000000000ULL); }
ALPA_HD double QuietNaN() { return DoubleOfBits(0x7ff8000000000000ULL); }
// How a computed value becomes an output element: rounded once to the op's dtype (`round`),
// then stored at the output's storage precision (which equals the dtype, or is f32 for a value
// a later reduction completes).
struct OutputRounding {
  bool round = true;
  DType round_to = DType::kF32;
};

ALPA_HD bool ApplyCompare(Comparison c, double x, double y) {
  switch (c) {
    case Comparison::kEq:
      return x == y;
    case Comparison::kNe:
      return x != y;
    case Comparison::kLt:
      return x < y;
    case Comparison::kLe:
      return x <= y;
    case Comparison::kGt:
      return x > y;
    case Comparison::kGe:
      return x >= y;
  }
  return false;
}

// +, -, *, /, max and min (NaN-propagating: the quiet NaN) and compare (1 or 0) in T: the
// double path's ApplyBinary and the float path's arithmetic; other kinds give NaN.
template <typename T>
ALPA_HD T ApplyArithmetic(OpKind kind, Comparison c, T x, T y) {
  const T nan = static_cast<T>(QuietNaN());
  switch (kind) {
    case OpKind::kAdd:
      return x + y;
    case OpKind::kSub:
      return x - y;
    case OpKind::kMul:
      return x * y;
    case OpKind::kDiv:
      return x / y;
    case OpKind::kMax:
      return x != x || y != y ? nan : (x > y ? x : y);
    case OpKind::kMin:
      return x != x || y != y ? nan : (x < y ? x : y);
    case OpKind::kCompare:
      return ApplyCompare(c, x, y) ? static_cast<T>(1) : static_cast<T>(0);
    default:
      return nan;
  }
}

// ---- The float path of the exact elementwise ops ----
//
// For +, -, *, / and sqrt of values held in f32 or bf16, the float result rounded to bf16 or
// kept in f32 equals the double result rounded the same way (a double rounding through a format
// of p' >= 2p + 2 bits is innocuous: 24 >= 2 * 8 + 2 for bf16, 53 >= 2 * 24 + 2 for f32), and
// neg, abs, max, min, relu, compare, select and convert between those types are exact. So these
// ops run in float with 32-bit integer rounding, bit for bit the double path's result, several
// times faster on a GPU. NaN results are the positive quiet NaN, as the double path stores them.

ALPA_HD float FloatOfBits(uint32_t bits) {
  float f = 0.0f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

ALPA_HD uint32_t BitsOfFloat(float f) {
  uint32_t bits = 0;
  memcpy(&bits, &f, sizeof(bits));
  return bits;
}

// The bf16 bits of f rounded to nearest even (EncodeFloat's result for a float value).
ALPA_HD uint16_t Bf16BitsOf(float f) {
  const uint32_t u = BitsOfFloat(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7fc0u);
  }
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Whether the float path holds values of `storage` exactly.
ALPA_HD float LoadFloat(const void* data, DType storage, int64_t i) {
  switch (storage) {
    case DType::kF32:
      return static_cast<const float*>(data)[i];
    case DType::kBF16:
      return FloatOfBits(static_cast<uint32_t>(static_cast<const uint16_t*>(data)[i]) << 16);
    default:  // kPred
      return static_cast<const uint8_t*>(data)[i] != 0 ? 1.0f : 0.0f;
  }
}

ALPA_HD float RoundFloatTo(float v, DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return FloatOfBits(static_cast<uint32_t>(Bf16BitsOf(v)) << 16);
    case DType::kPred:
      return v != 0.0f ? 1.0f : 0.0f;
    default:  // kF32
      return v;
  }
}

ALPA_HD void StoreFloat(void* data, DType storage, int64_t i, float v) {
  switch (storage) {
    case DType::kF32:
      static_cast<float*>(data)[i] = v;
      return;
    case DType::kBF16:
      static_cast<uint16_t*>(data)[i] = Bf16BitsOf(v);
      return;
    default:  // kPred
      static_cast<uint8_t*>(data)[i] = v != 0.0f ? 1 : 0;
      return;
  }
}

ALPA_HD float FloatNaN() { return FloatOfBits(0x7fc00000u); }

ALPA_HD float FloatUnary(OpKind kind, float x) {
  switch (kind) {
    case OpKind::kNeg:
      return -x;
    case OpKind::kAbs:
      return fabsf(x);
    case OpKind::kSqrt:
      return sqrtf(x);
    case OpKind::kRelu:
      return x != x ? x : (x > 0.0f ? x : 0.0f);
    case OpKind::kExp:
      return expf(x);
    case OpKind::kLog:
      return logf(x);
    case OpKind::kTanh:
      return tanhf(x);
    case OpKind::kGelu: {
      // 0.5 x (1 + tanh u) as x sigmoid(2u): no cancellation where tanh u nears -1. The same
      // infinities and NaNs as the double path (gelu(-inf) is NaN in both).
      const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
      return x / (1.0f + expf(-2.0f * u));
    }
    case OpKind::kRsqrt:
      return 1.0f / sqrtf(x);
    default:  // kConvert: the rounding converts
      return x;
  }
}

// A float-path op's result for operand values x, y, z (those it has), rounded as `rounding`
// says; a NaN result is the positive quiet NaN.
ALPA_HD float FloatOpValue(OpKind kind, Comparison comparison, int32_t operand_count,
                           OutputRounding rounding, float x, float y, float z) {
  float v = 0.0f;
  if (kind == OpKind::kSelect) {
    v = x != 0.0f ? y : z;
  } else if (operand_count == 1) {
    v = FloatUnary(kind, x);
  } else {
    v = ApplyArithmetic<float>(kind, comparison, x, y);
  }
  if (v != v) v = FloatNaN();
  if (rounding.round) v = RoundFloatTo(v, rounding.round_to);
  return v;
}

}  // namespace cuda
}  // namespace alpa
