// Eight consecutive elements of f32, bf16 or pred storage moved as one or two 16-byte words
// (pred: one 8-byte word) and held as floats: the packed paths of the elementwise and reduction
// kernels. Device code, for .cu files; `first` must be a multiple of 8 and the data 16-byte
// aligned.
#pragma once

#include "exec/cuda/float_math.h"

namespace alpa {
namespace cuda {

constexpr int64_t kPack = 8;

__device__ inline void LoadEight(const void* data, DType storage, int64_t first,
                                 float (&v)[kPack]) {
  if (storage == DType::kF32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(data) + first);
    const float4 lo = p[0], hi = p[1];
    v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
    v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
  } else if (storage == DType::kBF16) {
    const uint4 w = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(data) + first);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    for (int j = 0; j < 4; ++j) {
      v[2 * j] = FloatOfBits(words[j] << 16);
      v[2 * j + 1] = FloatOfBits(words[j] & 0xffff0000u);
    }
  } else {  // kPred
    const uint2 w = *reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(data) + first);
    for (int j = 0; j < 4; ++j) {
      v[j] = ((w.x >> (8 * j)) & 0xffu) != 0 ? 1.0f : 0.0f;
      v[4 + j] = ((w.y >> (8 * j)) & 0xffu) != 0 ? 1.0f : 0.0f;
    }
  }
}

__device__ inline void StoreEight(void* data, DType storage, int64_t first,
                                  const float (&v)[kPack]) {
  if (storage == DType::kF32) {
    float4* p = reinterpret_cast<float4*>(static_cast<float*>(data) + first);
    p[0] = make_float4(v[0], v[1], v[2], v[3]);
    p[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else if (storage == DType::kBF16) {
    uint32_t words[4];
    for (int j = 0; j < 4; ++j) {
      words[j] = static_cast<uint32_t>(Bf16BitsOf(v[2 * j])) |
                 (static_cast<uint32_t>(Bf16BitsOf(v[2 * j + 1])) << 16);
    }
    *reinterpret_cast<uint4*>(static_cast<uint16_t*>(data) + first) =
        make_uint4(words[0], words[1], words[2], words[3]);
  } else {  // kPred
    uint32_t lo = 0, hi = 0;
    for (int j = 0; j < 4; ++j) {
      lo |= (v[j] != 0.0f ? 1u : 0u) << (8 * j);
      hi |= (v[4 + j] != 0.0f ? 1u : 0u) << (8 * j);
    }
    *reinterpret_cast<uint2*>(static_cast<uint8_t*>(data) + first) = make_uint2(lo, hi);
  }
}

}  // namespace cuda
}  // namespace alpa
