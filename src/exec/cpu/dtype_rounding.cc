// RoundToDType: emulates the storage precision of each dtype on values held as double, so that
// mixed-precision graphs behave like hardware (f16 overflow, bf16's short mantissa, wrapping
// integers).
#include <cmath>
#include <limits>

#include "exec/cpu/interpreter.h"

namespace alpa {
namespace {

// Round half to even of a non-negative value, independent of the FP rounding mode (global state).
double RoundHalfEven(double x) {
  double r = std::floor(x);
  double diff = x - r;
  if (diff > 0.5 || (diff == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  return r;
}

// Rounds to a binary float format with `mantissa_bits` explicit fraction bits, smallest normal
// exponent `min_exp` (2^min_exp) and largest finite value `max_finite`; values whose rounded
// magnitude exceeds max_finite become inf, values below the normal range round to subnormals.
double RoundToFloatFormat(double v, int mantissa_bits, int min_exp, double max_finite) {
  if (!std::isfinite(v) || v == 0.0) return v;
  double a = std::fabs(v);
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1): the leading bit is 2^(e-1)
  int exp = e - 1 < min_exp ? min_exp : e - 1;
  int q = exp - mantissa_bits;  // the weight of the last mantissa bit
  double r = std::ldexp(RoundHalfEven(std::ldexp(a, -q)), q);
  if (r > max_finite) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, v);
}

// Truncates toward zero and wraps to a `bits`-wide two's complement integer. NaN becomes 0 and
// +-inf saturate (wrapping infinity has no meaning; XLA's convert saturates too).
double WrapInteger(double v, int bits) {
  const double half = std::ldexp(1.0, bits - 1);
  if (std::isnan(v)) return 0.0;
  if (std::isinf(v)) return v > 0 ? half - 1.0 : -half;
  double t = std::trunc(v);
  if (t >= -half && t < half) return t;
  const double full = 2.0 * half;
  double m = std::fmod(t, full);  // exact; in (-full, full)
  if (m < 0) m += full;
  if (m >= half) m -= full;
  return m;
}

}  // namespace

double RoundToDType(double value, DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return value;
    case DType::kF32:
      // The hardware cast rounds to nearest even; values at or beyond FLT_MAX take the slow path
      // because a double -> float cast out of range is undefined behaviour.
      if (std::fabs(value) <= static_cast<double>(std::numeric_limits<float>::max())) {
        return static_cast<double>(static_cast<float>(value));
      }
      return RoundToFloatFormat(value, 23, -126,
                                static_cast<double>(std::numeric_limits<float>::max()));
    case DType::kF16:
      return RoundToFloatFormat(value, 10, -14, 65504.0);
    case DType::kBF16:
      return RoundToFloatFormat(value, 7, -126, std::ldexp(255.0, 120));  // (2 - 2^-7) * 2^127
    case DType::kS8:
      return WrapInteger(value, 8);
    case DType::kS32:
      return WrapInteger(value, 32);
    case DType::kS64:
      return WrapInteger(value, 64);
    case DType::kPred:
      return value != 0.0 ? 1.0 : 0.0;
  }
  return value;
}

}  // namespace alpa
