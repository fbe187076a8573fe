#include "exec/cuda/storage_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/util/parallel.h"
#include "exec/cpu/interpreter.h"

namespace alpa {
namespace cuda {
namespace {

// The binary16 bits of a value that f16 represents exactly (RoundToDType(v, kF16) gives one).
uint16_t HalfBits(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return 0x7e00;
  const double a = std::fabs(v);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | 0x7c00);
  if (a == 0) return sign;
  int e = 0;
  std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1): the leading bit is 2^(e - 1)
  const int exponent = e - 1;
  if (exponent < -14) {  // subnormal: multiples of 2^-24
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::ldexp(a, 24)));
  }
  const uint16_t fraction = static_cast<uint16_t>(std::ldexp(a, 10 - exponent) - 1024.0);
  return static_cast<uint16_t>(sign | static_cast<uint16_t>((exponent + 15) << 10) | fraction);
}

double HalfValue(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f;
  const int fraction = bits & 0x3ff;
  if (exponent == 0x1f) return fraction != 0 ? std::nan("") : sign * HUGE_VAL;
  if (exponent == 0) return sign * std::ldexp(fraction, -24);
  return sign * std::ldexp(1024 + fraction, exponent - 25);
}

// The bfloat16 bits of a value that bf16 represents exactly: the upper half of its float.
uint16_t BFloatBits(double v) {
  if (std::isnan(v)) return 0x7fc0;
  const float f = static_cast<float>(v);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

double BFloatValue(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f = 0;
  std::memcpy(&f, &wide, sizeof(f));
  return static_cast<double>(f);
}

// v rounded to nearest even at mantissa bit `drop` of the double (dropping the `drop` low bits),
// for |v| in the normal range of the target format, where this is exactly RoundToDType; other
// values (zero, subnormal, overflow, inf, NaN) answer false and take RoundToDType's path.
bool RoundNormal(double v, int drop, int min_exponent, int max_exponent, double* rounded) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  const int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  if (exponent < min_exponent || exponent >= max_exponent) return false;
  const uint64_t half = (uint64_t{1} << (drop - 1)) - 1;
  bits += half + ((bits >> drop) & 1);
  bits &= ~((uint64_t{1} << drop) - 1);
  std::memcpy(rounded, &bits, sizeof(bits));
  // Rounding up past the largest finite value is overflow: RoundToDType's path says what.
  return static_cast<int>((bits >> 52) & 0x7ff) - 1023 < max_exponent;
}

// RoundToDType(v, dtype) for the float dtypes, with the common case (a normal value) in bit
// operations.
double RoundFloat(double v, DType dtype) {
  double r = 0;
  switch (dtype) {
    case DType::kF32:
      return RoundNormal(v, 29, -126, 128, &r) ? r : RoundToDType(v, dtype);
    case DType::kBF16:
      return RoundNormal(v, 45, -126, 128, &r) ? r : RoundToDType(v, dtype);
    case DType::kF16:
      return RoundNormal(v, 42, -14, 16, &r) ? r : RoundToDType(v, dtype);
    default:
      return RoundToDType(v, dtype);
  }
}

// Elements per task of the parallel encode and decode: big enough that starting a task is cheap
// beside its work.
constexpr int64_t kChunk = int64_t{1} << 18;

template <typename T>
void Put(std::vector<unsigned char>& bytes, int64_t i, T value) {
  std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof(T), &value, sizeof(T));
}

template <typename T>
T Take(const void* bytes, int64_t i) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(bytes) + static_cast<size_t>(i) * sizeof(T),
              sizeof(T));
  return value;
}

}  // namespace

namespace {

void EncodeRange(const double* values, int64_t begin, int64_t end, DType round_to, DType storage,
                 std::vector<unsigned char>& bytes) {
  for (int64_t i = begin; i < end; ++i) {
    // Rounded to the requested precision, then to the storage's (exact when it is wider).
    const double once = RoundFloat(values[i], round_to);
    const double v = storage == round_to ? once : RoundFloat(once, storage);
    switch (storage) {
      case DType::kF32:
        Put(bytes, i, static_cast<float>(v));
        break;
      case DType::kF16:
        Put(bytes, i, HalfBits(v));
        break;
      case DType::kBF16:
        Put(bytes, i, BFloatBits(v));
        break;
      case DType::kF64:
        Put(bytes, i, v);
        break;
      case DType::kS8:
        Put(bytes, i, static_cast<int8_t>(v));
        break;
      case DType::kS32:
        Put(bytes, i, static_cast<int32_t>(v));
        break;
      case DType::kS64:
        Put(bytes, i, static_cast<int64_t>(v));
        break;
      case DType::kPred:
        Put(bytes, i, static_cast<uint8_t>(v != 0 ? 1 : 0));
        break;
    }
  }
}

void DecodeRange(const void* bytes, int64_t begin, int64_t end, DType storage, double* values) {
  for (int64_t i = begin; i < end; ++i) {
    switch (storage) {
      case DType::kF32:
        values[i] = static_cast<double>(Take<float>(bytes, i));
        break;
      case DType::kF16:
        values[i] = HalfValue(Take<uint16_t>(bytes, i));
        break;
      case DType::kBF16:
        values[i] = BFloatValue(Take<uint16_t>(bytes, i));
        break;
      case DType::kF64:
        values[i] = Take<double>(bytes, i);
        break;
      case DType::kS8:
        values[i] = static_cast<double>(Take<int8_t>(bytes, i));
        break;
      case DType::kS32:
        values[i] = static_cast<double>(Take<int32_t>(bytes, i));
        break;
      case DType::kS64:
        values[i] = static_cast<double>(Take<int64_t>(bytes, i));
        break;
      case DType::kPred:
        values[i] = Take<uint8_t>(bytes, i) != 0 ? 1.0 : 0.0;
        break;
    }
  }
}

}  // namespace

void EncodeStorage(const double* values, int64_t count, DType round_to, DType storage,
                   std::vector<unsigned char>& bytes) {
  bytes.resize(static_cast<size_t>(count * DTypeBytes(storage)));
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  // The chunks write disjoint bytes, and nothing fails.
  (void)RunParallel(chunks, ResolveThreadCount(0), [&](int64_t c) {
    EncodeRange(values, c * kChunk, std::min(count, (c + 1) * kChunk), round_to, storage, bytes);
    return Status::Ok();
  });
}

void DecodeStorage(const void* bytes, int64_t count, DType storage, double* values) {
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  (void)RunParallel(chunks, ResolveThreadCount(0), [&](int64_t c) {
    DecodeRange(bytes, c * kChunk, std::min(count, (c + 1) * kChunk), storage, values);
    return Status::Ok();
  });
}

}  // namespace cuda
}  // namespace alpa
