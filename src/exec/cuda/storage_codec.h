// The bytes of a device buffer as the host writes and reads them: values held as doubles (the
// driver's and the communicator's form) encoded into a storage dtype's elements and back.
// Host code only (no CUDA calls), so that it is tested where no GPU exists.
//
// Storage layouts: f32 float, f16 / bf16 their IEEE / bfloat16 bits (uint16), f64 double, s8
// int8, s32 int32, s64 int64, pred one byte 0 / 1.
#pragma once

#include <cstdint>
#include <vector>

#include "core/util/dtype.h"

namespace alpa {
namespace cuda {

// values[0, count) rounded to `round_to` (RoundToDType; pass the storage dtype to round only as
// far as the storage needs) and then to `storage`, as `storage` elements appended to `bytes`
// (resized to count * DTypeBytes(storage)).
void EncodeStorage(const double* values, int64_t count, DType round_to, DType storage,
                   std::vector<unsigned char>& bytes);
// The same into `bytes`, which holds count * DTypeBytes(storage) bytes (e.g. pinned memory).
void EncodeStorageInto(const double* values, int64_t count, DType round_to, DType storage,
                       void* bytes);
// count elements of `storage` at `bytes` as doubles (exact).
void DecodeStorage(const void* bytes, int64_t count, DType storage, double* values);

}  // namespace cuda
}  // namespace alpa
