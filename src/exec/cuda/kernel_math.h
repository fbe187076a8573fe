// The per-element math of the CUDA backend's kernels, written once for the host and the device:
// loading an element of any storage dtype as double, rounding a double to a dtype exactly as the
// CPU interpreter's RoundToDType does, storing, and the elementwise ops of the IR. Compiled by
// nvcc as __host__ __device__ functions and by the host compiler as plain inline functions (no
// CUDA header needed), so that the unit tests check the kernels' arithmetic against the
// interpreter on machines without a GPU. It includes only the enums and float_math.h, so that
// the kernels compiled at run time (fused_source.h) include it as it is.
//
// Floats are rounded with integer operations on the double's bits (round to nearest even,
// straight from double: no double rounding through f32), which gives the same result on the
// host and the device whatever the FP environment.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstdint>
#include <cstring>
#endif

#include "core/ir/op_kind.h"
#include "core/util/dtype_enum.h"
#include "exec/cuda/float_math.h"

namespace alpa {
namespace cuda {

ALPA_HD bool IsNaN(double v) { return v != v; }
ALPA_HD bool IsInf(double v) { return v == Infinity() || v == -Infinity(); }

// The bit layout of a binary floating-point storage format.
struct FloatFormat {
  int mantissa_bits;  // explicit fraction bits
  int exponent_bits;
};
constexpr FloatFormat kF32Format{23, 8};
constexpr FloatFormat kF16Format{10, 5};
constexpr FloatFormat kBF16Format{7, 8};

// The bits of `v` rounded to nearest even into `f` (subnormals kept, overflow to inf, NaN to a
// quiet NaN of the same sign).
ALPA_HD uint32_t EncodeFloat(double v, FloatFormat f) {
  const uint64_t b = BitsOfDouble(v);
  const int mbits = f.mantissa_bits;
  const uint32_t exp_all = (1u << f.exponent_bits) - 1u;
  const uint32_t sign = static_cast<uint32_t>(b >> 63) << (mbits + f.exponent_bits);
  const int e_field = static_cast<int>((b >> 52) & 0x7ffULL);
  const uint64_t frac = b & ((1ULL << 52) - 1ULL);
  if (e_field == 0x7ff) {
    const uint32_t quiet = frac != 0 ? (1u << (mbits - 1)) : 0u;
    return sign | (exp_all << mbits) | quiet;
  }
  // Zero, or a double subnormal: far below half the smallest subnormal of every format.
  if (e_field == 0) return sign;
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const uint64_t significand = frac | (1ULL << 52);
  int biased = e_field - 1023 + bias;
  int shift = 52 - mbits;
  if (biased < 1) {  // a subnormal of the format: the last bit keeps the weight 2^(1-bias-mbits)
    shift += 1 - biased;
    biased = 0;
  }
  if (shift > 53) return sign;  // below half the smallest subnormal
  uint64_t kept = significand >> shift;
  const uint64_t rest = significand & ((1ULL << shift) - 1ULL);
  const uint64_t half = 1ULL << (shift - 1);
  if (rest > half || (rest == half && (kept & 1ULL) != 0)) ++kept;
  // `kept` holds the implicit bit of a normal value; a carry out of the mantissa moves into the
  // exponent (and a subnormal that rounds up becomes the smallest normal) by plain addition.
  const uint64_t bits = (biased > 0 ? static_cast<uint64_t>(biased - 1) << mbits : 0ULL) + kept;
  if (bits >= (static_cast<uint64_t>(exp_all) << mbits)) return sign | (exp_all << mbits);
  return sign | static_cast<uint32_t>(bits);
}

ALPA_HD double DecodeFloat(uint32_t bits, FloatFormat f) {
  const int mbits = f.mantissa_bits;
  const uint32_t exp_all = (1u << f.exponent_bits) - 1u;
  const bool negative = ((bits >> (mbits + f.exponent_bits)) & 1u) != 0;
  const uint32_t e_field = (bits >> mbits) & exp_all;
  const uint64_t mantissa = bits & ((1u << mbits) - 1u);
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  double magnitude = 0.0;
  if (e_field == exp_all) {
    magnitude = mantissa != 0 ? QuietNaN() : Infinity();
  } else if (e_field == 0) {
    // mantissa * 2^(1 - bias - mbits): an exact product with a power of two.
    const uint64_t scale_exp = static_cast<uint64_t>(1023 + 1 - bias - mbits);
    magnitude = static_cast<double>(mantissa) * DoubleOfBits(scale_exp << 52);
  } else {
    const uint64_t e = static_cast<uint64_t>(static_cast<int>(e_field) - bias + 1023);
    magnitude = DoubleOfBits((e << 52) | (mantissa << (52 - mbits)));
  }
  return negative ? -magnitude : magnitude;
}

// Truncates toward zero and wraps to a `bits`-wide two's complement integer; NaN is 0 and +-inf
// saturate (RoundToDType's rule).
ALPA_HD double WrapInteger(double v, int bits) {
  const double half = DoubleOfBits(static_cast<uint64_t>(1023 + bits - 1) << 52);  // 2^(bits-1)
  if (IsNaN(v)) return 0.0;
  if (IsInf(v)) return v > 0 ? half - 1.0 : -half;
  const double t = trunc(v);
  if (t >= -half && t < half) return t;
  const double full = 2.0 * half;
  double m = fmod(t, full);  // exact; in (-full, full)
  if (m < 0) m += full;
  if (m >= half) m -= full;
  return m;
}

// RoundToDType of the interpreter (exec/cpu/dtype_rounding.cc).
ALPA_HD double RoundTo(double v, DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return v;
    case DType::kF32:
      return DecodeFloat(EncodeFloat(v, kF32Format), kF32Format);
    case DType::kF16:
      return DecodeFloat(EncodeFloat(v, kF16Format), kF16Format);
    case DType::kBF16:
      return DecodeFloat(EncodeFloat(v, kBF16Format), kBF16Format);
    case DType::kS8:
      return WrapInteger(v, 8);
    case DType::kS32:
      return WrapInteger(v, 32);
    case DType::kS64:
      return WrapInteger(v, 64);
    case DType::kPred:
      return v != 0.0 ? 1.0 : 0.0;
  }
  return v;
}

// EncodeFloat(v, kBF16Format) in fewer steps where v lies in bf16's normal range: the double's
// top 16 bits of sign, exponent and fraction rounded to nearest even, then rebiased.
ALPA_HD uint16_t EncodeBf16(double v) {
  const uint64_t b = BitsOfDouble(v);
  const uint32_t e = static_cast<uint32_t>((b >> 52) & 0x7ffULL);
  if (e < 1023 - 126 || e > 1023 + 127) return static_cast<uint16_t>(EncodeFloat(v, kBF16Format));
  uint64_t kept = b >> 45;  // sign, 11 exponent bits, 7 fraction bits
  const uint64_t rest = b & ((1ULL << 45) - 1ULL);
  const uint64_t half = 1ULL << 44;
  if (rest > half || (rest == half && (kept & 1ULL) != 0)) ++kept;  // a carry enters the exponent
  const uint32_t sign = static_cast<uint32_t>(b >> 63) << 15;
  const uint32_t exponent = static_cast<uint32_t>((kept >> 7) & 0x7ffULL) - (1023 - 127);
  if (exponent >= 255) return static_cast<uint16_t>(sign | 0x7f80u);  // rounded past the largest
  return static_cast<uint16_t>(sign | (exponent << 7) | static_cast<uint32_t>(kept & 0x7fULL));
}

// Element `i` of memory holding `storage` elements, as double.
ALPA_HD double LoadElement(const void* data, DType storage, int64_t i) {
  switch (storage) {
    case DType::kF32:
      return static_cast<double>(static_cast<const float*>(data)[i]);
    case DType::kF16:
      return DecodeFloat(static_cast<const uint16_t*>(data)[i], kF16Format);
    case DType::kBF16: {  // the top half of an f32 (DecodeFloat's value, in fewer steps)
      const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(data)[i]) << 16;
      float f = 0.0f;
      memcpy(&f, &bits, sizeof(f));
      return static_cast<double>(f);
    }
    case DType::kF64:
      return static_cast<const double*>(data)[i];
    case DType::kS8:
      return static_cast<double>(static_cast<const int8_t*>(data)[i]);
    case DType::kS32:
      return static_cast<double>(static_cast<const int32_t*>(data)[i]);
    case DType::kS64:
      return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DType::kPred:
      return static_cast<const uint8_t*>(data)[i] != 0 ? 1.0 : 0.0;
  }
  return QuietNaN();
}

// Stores `v` as element `i` of memory holding `storage` elements, rounded to the storage type
// (RoundTo's rule: the store of a value already of that type is exact).
ALPA_HD void StoreElement(void* data, DType storage, int64_t i, double v) {
  switch (storage) {
    case DType::kF32: {
      const uint32_t bits = EncodeFloat(v, kF32Format);
      float f = 0.0f;
      memcpy(&f, &bits, sizeof(f));
      static_cast<float*>(data)[i] = f;
      return;
    }
    case DType::kF16:
      static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(EncodeFloat(v, kF16Format));
      return;
    case DType::kBF16:
      static_cast<uint16_t*>(data)[i] = EncodeBf16(v);
      return;
    case DType::kF64:
      static_cast<double*>(data)[i] = v;
      return;
    case DType::kS8:
      static_cast<int8_t*>(data)[i] = static_cast<int8_t>(WrapInteger(v, 8));
      return;
    case DType::kS32:
      static_cast<int32_t*>(data)[i] = static_cast<int32_t>(WrapInteger(v, 32));
      return;
    case DType::kS64: {
      // Saturation gives 2^63 - 1, which is 2^63 in double: stored as the largest int64 (it
      // loads back as 2^63), whether v is that rounded value or still unrounded (+inf).
      const double two63 = DoubleOfBits(0x43e0000000000000ULL);
      const double w = v == two63 ? two63 : WrapInteger(v, 64);
      static_cast<int64_t*>(data)[i] =
          w >= two63 ? static_cast<int64_t>(0x7fffffffffffffffLL) : static_cast<int64_t>(w);
      return;
    }
    case DType::kPred:
      static_cast<uint8_t*>(data)[i] = v != 0.0 ? 1 : 0;
      return;
  }
}

ALPA_HD double FinishValue(double v, OutputRounding r) {
  return r.round ? RoundTo(v, r.round_to) : v;
}

// `r` for results stored into `storage`: a rounding to the storage type itself is left to the
// store, which rounds the same way (one encoding per element instead of two).
ALPA_HD OutputRounding ForStorage(OutputRounding r, DType storage) {
  if (r.round && r.round_to == storage) r.round = false;
  return r;
}

// x * scale in double, rounded by `r` and stored in `storage` (f32, bf16 or pred), loaded back:
// what the scale kernel (box.cu) stores for element x, as a fused kernel's kScale node computes
// it (fusion_plan.h).
ALPA_HD float ScaledFloat(float x, double scale, OutputRounding r, DType storage) {
  unsigned char stored[8] = {};
  StoreElement(stored, storage, 0, FinishValue(static_cast<double>(x) * scale, r));
  return LoadFloat(stored, storage, 0);
}

// ---- The elementwise ops, in double, as the interpreter computes them ----

ALPA_HD double Gelu(double x) {
  const double k = sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

ALPA_HD double ApplyUnary(OpKind kind, double x) {
  switch (kind) {
    case OpKind::kNeg:
      return -x;
    case OpKind::kAbs:
      return fabs(x);
    case OpKind::kExp:
      return exp(x);
    case OpKind::kLog:
      return log(x);
    case OpKind::kTanh:
      return tanh(x);
    case OpKind::kSqrt:
      return sqrt(x);
    case OpKind::kRsqrt:
      return 1.0 / sqrt(x);
    case OpKind::kGelu:
      return Gelu(x);
    case OpKind::kRelu:
      return IsNaN(x) ? x : (x > 0.0 ? x : 0.0);  // max(x, 0) propagates NaN
    case OpKind::kConvert:
      return x;  // the rounding to the target dtype converts
    default:
      return QuietNaN();
  }
}

// x^y. An integral power of an integer whose result stays an exact integer below 2^53 is
// multiplied out: exact, as the host's pow gives it, where the device's pow may be an ulp off
// (which the truncation to an integer dtype would turn into an off-by-one).
ALPA_HD double Power(double x, double y) {
  const double exact_limit = DoubleOfBits(0x4340000000000000ULL);  // 2^53
  if (x == trunc(x) && y == trunc(y) && y >= 0.0 && y <= 64.0 && fabs(x) < exact_limit) {
    double result = 1.0, base = x;
    bool exact = true;
    for (int64_t e = static_cast<int64_t>(y); e > 0 && exact;) {
      if ((e & 1) != 0) {
        result *= base;
        exact = fabs(result) < exact_limit;
      }
      e >>= 1;
      if (e > 0 && exact) {
        base *= base;
        exact = fabs(base) < exact_limit;
      }
    }
    if (exact) return result;
  }
  return pow(x, y);
}

// Integer division is formed in double and truncated (and saturated on division by zero) by the
// rounding to the integer dtype, as in the interpreter.
ALPA_HD double ApplyBinary(OpKind kind, Comparison c, double x, double y) {
  return kind == OpKind::kPow ? Power(x, y) : ApplyArithmetic<double>(kind, c, x, y);
}

// max that propagates NaN, keeping the earlier value on ties (the interpreter's reduce_max).
ALPA_HD double MaxPropagatingNaN(double acc, double v) {
  if (IsNaN(acc)) return acc;
  return IsNaN(v) || v > acc ? v : acc;
}

ALPA_HD double ReduceIdentity(bool is_max) { return is_max ? -Infinity() : 0.0; }

// Combines a partial result with a later one (max keeps the earlier on ties, like the
// interpreter's left-to-right loop).
ALPA_HD double CombineReduce(bool is_max, double earlier, double later) {
  return is_max ? MaxPropagatingNaN(earlier, later) : earlier + later;
}

// One element of an elementwise op (unary, binary, select; up to three operands of one shape).
struct ElementwiseArgs {
  OpKind kind = OpKind::kAdd;
  Comparison comparison = Comparison::kEq;
  int32_t operand_count = 0;
  const void* in[3] = {nullptr, nullptr, nullptr};
  DType in_storage[3] = {DType::kF32, DType::kF32, DType::kF32};
  void* out = nullptr;
  DType out_storage = DType::kF32;
  OutputRounding rounding;
};

ALPA_HD void ElementwiseAt(const ElementwiseArgs& a, int64_t i) {
  const double x = LoadElement(a.in[0], a.in_storage[0], i);
  double v = 0.0;
  if (a.kind == OpKind::kSelect) {
    v = x != 0.0 ? LoadElement(a.in[1], a.in_storage[1], i)
                 : LoadElement(a.in[2], a.in_storage[2], i);
  } else if (a.operand_count == 1) {
    v = ApplyUnary(a.kind, x);
  } else {
    v = ApplyBinary(a.kind, a.comparison, x, LoadElement(a.in[1], a.in_storage[1], i));
  }
  StoreElement(a.out, a.out_storage, i, FinishValue(v, a.rounding));
}

// The precision a result ends in: its rounding's dtype, else its storage's.
ALPA_HD DType FinalPrecision(const ElementwiseArgs& a) {
  return a.rounding.round ? a.rounding.round_to : a.out_storage;
}

// Whether FloatElementwiseAt(a, i) may stand for ElementwiseAt(a, i): the same bits for the
// exact kinds, within one ulp of bf16 for the approximate kinds ending in bf16.
ALPA_HD bool UsesFloatPath(const ElementwiseArgs& a) {
  const bool approximate = ApproximateFloatKind(a.kind) && FinalPrecision(a) == DType::kBF16;
  if (!(FloatPathKind(a.kind) || approximate) || !FloatPathStorage(a.out_storage)) return false;
  for (int32_t k = 0; k < a.operand_count; ++k) {
    if (!FloatPathStorage(a.in_storage[k])) return false;
  }
  return !a.rounding.round || FloatPathStorage(a.rounding.round_to);
}

// A float-path op's result for operand values x, y, z (those it has), rounded as stored.
ALPA_HD float FloatElementwiseValue(const ElementwiseArgs& a, float x, float y, float z) {
  return FloatOpValue(a.kind, a.comparison, a.operand_count, a.rounding, x, y, z);
}

// Elements first, first + stride, ... (count of them, at most kFloatSpan) of a float-path op:
// every load first, then the math, then every store, so that the loads of a thread overlap.
constexpr int32_t kFloatSpan = 4;

ALPA_HD void FloatElementwiseSpan(const ElementwiseArgs& a, int64_t first, int64_t stride,
                                  int32_t count) {
  float x[kFloatSpan] = {}, y[kFloatSpan] = {}, z[kFloatSpan] = {};
  for (int32_t k = 0; k < kFloatSpan; ++k) {
    if (k >= count) break;
    const int64_t i = first + k * stride;
    x[k] = LoadFloat(a.in[0], a.in_storage[0], i);
    if (a.operand_count > 1) y[k] = LoadFloat(a.in[1], a.in_storage[1], i);
    if (a.operand_count > 2) z[k] = LoadFloat(a.in[2], a.in_storage[2], i);
  }
  for (int32_t k = 0; k < kFloatSpan; ++k) {
    if (k >= count) break;
    StoreFloat(a.out, a.out_storage, first + k * stride,
               FloatElementwiseValue(a, x[k], y[k], z[k]));
  }
}

ALPA_HD void FloatElementwiseAt(const ElementwiseArgs& a, int64_t i) {
  FloatElementwiseSpan(a, i, 1, 1);
}

}  // namespace cuda
}  // namespace alpa
