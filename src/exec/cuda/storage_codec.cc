#include "exec/cuda/storage_codec.h"

#include <algorithm>

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
      for (int64_t i = begin; i < end; ++i) out[i] = EncodeBf16(values[i]);
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
