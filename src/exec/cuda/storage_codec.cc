#include "exec/cuda/storage_codec.h"

#include <algorithm>
#include <cstring>

#include "core/util/parallel.h"
#include "exec/cuda/kernel_math.h"

namespace alpa {
namespace cuda {
namespace {

// Elements per task of the parallel encode and decode: big enough that starting a task is cheap
// beside its work.
constexpr int64_t kChunk = int64_t{1} << 18;

// fn(begin, end) over [0, count) in chunks, on every hardware thread. The chunks touch disjoint
// elements, and nothing fails.
template <typename F>
void ForChunks(int64_t count, const F& fn) {
  (void)RunParallel((count + kChunk - 1) / kChunk, ResolveThreadCount(0), [&](int64_t c) {
    fn(c * kChunk, std::min(count, (c + 1) * kChunk));
    return Status::Ok();
  });
}

// EncodeBf16(v) without branches for doubles whose bf16 is normal, zero or infinite (the
// rounding to nearest even by adding half minus one plus the kept part's last bit, then
// rebiasing); sets `odd` for the rest (NaN, infinities and values below bf16's normal range),
// which the caller encodes with EncodeBf16. Several times faster on large feeds.
inline uint16_t EncodeNormalBf16(double v, bool& odd) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(b));
  const uint64_t e = (b >> 52) & 0x7ffULL;
  odd |= (e != 0) & ((e < 1023 - 126) | (e == 0x7ffULL));
  const uint64_t kept = ((b + ((uint64_t{1} << 44) - 1) + ((b >> 45) & 1ULL)) >> 45) & 0x7ffffULL;
  const uint32_t sign = static_cast<uint32_t>(b >> 63) << 15;
  const uint32_t exponent = static_cast<uint32_t>((kept >> 7) & 0x7ffULL);
  const uint32_t mantissa = static_cast<uint32_t>(kept & 0x7fULL);
  const uint32_t normal = sign | ((exponent - (1023 - 127)) << 7) | mantissa;
  const uint32_t bits =
      exponent <= 1023 - 127 ? sign : (exponent >= 1023 + 128 ? sign | 0x7f80u : normal);
  return static_cast<uint16_t>(bits);
}

}  // namespace

// The kernels' own element codec (kernel_math.h): RoundTo is RoundToDType in bit operations, and
// StoreElement rounds to the storage type (exact when the value is already of that type), so a
// value rounded to the storage's own dtype needs only the store's rounding.
void EncodeStorage(const double* values, int64_t count, DType round_to, DType storage,
                   std::vector<unsigned char>& bytes) {
  bytes.resize(static_cast<size_t>(count * DTypeBytes(storage)));
  EncodeStorageInto(values, count, round_to, storage, bytes.data());
}

void EncodeStorageInto(const double* values, int64_t count, DType round_to, DType storage,
                       void* bytes) {
  if (round_to == DType::kBF16 && storage == DType::kBF16) {  // the common feed: one loop
    uint16_t* out = static_cast<uint16_t*>(bytes);
    ForChunks(count, [&](int64_t begin, int64_t end) {
      bool odd = false;
      for (int64_t i = begin; i < end; ++i) out[i] = EncodeNormalBf16(values[i], odd);
      if (!odd) return;
      for (int64_t i = begin; i < end; ++i) {
        bool one = false;
        (void)EncodeNormalBf16(values[i], one);
        if (one) out[i] = EncodeBf16(values[i]);
      }
    });
    return;
  }
  ForChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      StoreElement(bytes, storage, i,
                   round_to == storage ? values[i] : RoundTo(values[i], round_to));
    }
  });
}

void DecodeStorage(const void* bytes, int64_t count, DType storage, double* values) {
  ForChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) values[i] = LoadElement(bytes, storage, i);
  });
}

}  // namespace cuda
}  // namespace alpa
