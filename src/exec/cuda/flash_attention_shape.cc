// What the fused attention kernels compute (flash_attention.h), and the sizes of their f32 row
// buffers; shared by the GPU launchers and the host emulation.
#include <cstdint>
#include <limits>
#include <string>

#include "core/util/dtype.h"
#include "exec/cuda/flash_attention.h"
#include "exec/cuda/flash_attention_body.h"

namespace alpa {
namespace cuda {

bool AttentionViewPacked(const AttentionView& view, int64_t head_dim) {
  if (view.stride[3] != 1 || head_dim % kAttentionPack != 0) return false;
  for (int i = 0; i < 3; ++i) {
    if (view.stride[i] % kAttentionPack != 0) return false;
  }
  return reinterpret_cast<uintptr_t>(view.data) % (kAttentionPack * sizeof(uint16_t)) == 0;
}

std::string AttentionUnsupportedReason(const AttentionShape& shape) {
  if (shape.storage != DType::kBF16 && shape.storage != DType::kF16) {
    return std::string("storage ") + DTypeName(shape.storage) + " is not bf16 or f16";
  }
  if (shape.batch < 1 || shape.heads < 1) {
    return "batch " + std::to_string(shape.batch) + " and heads " + std::to_string(shape.heads) +
           " must be positive";
  }
  if (shape.q_seq < 1 || shape.k_seq < 1) {
    return "an empty sequence (q_seq " + std::to_string(shape.q_seq) + ", k_seq " +
           std::to_string(shape.k_seq) + ")";
  }
  if (shape.head_dim < kAttentionFragment || shape.head_dim > kAttentionMaxHeadDim ||
      shape.head_dim % kAttentionFragment != 0) {
    return "head_dim " + std::to_string(shape.head_dim) + " is not a multiple of " +
           std::to_string(kAttentionFragment) + " in [" + std::to_string(kAttentionFragment) +
           ", " + std::to_string(kAttentionMaxHeadDim) + "]";
  }
  if (shape.causal && shape.q_seq != shape.k_seq) {
    return "causal attention with q_seq " + std::to_string(shape.q_seq) + " != k_seq " +
           std::to_string(shape.k_seq);
  }
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  for (int64_t dim : {shape.batch, shape.heads, shape.q_seq, shape.k_seq}) {
    if (dim > kInt32Max) return "a dim of " + std::to_string(dim) + " is beyond int32";
  }
  // The grids are one dimension of blocks (x: at most 2^31 - 1); this also keeps every row
  // count and byte count of the buffers far within int64.
  const int64_t pairs = shape.batch * shape.heads;
  const int64_t longest = shape.q_seq > shape.k_seq ? shape.q_seq : shape.k_seq;
  if (pairs > kInt32Max || pairs * AttentionBlocksOf(longest) > kInt32Max) {
    return "batch * heads * (seq / " + std::to_string(kAttentionTile) + ") blocks are beyond int32";
  }
  return "";
}

// Both are 0 for a shape the kernels do not compute (its products may not fit).
int64_t AttentionLseBytes(const AttentionShape& shape) {
  if (!AttentionUnsupportedReason(shape).empty()) return 0;
  return shape.batch * shape.heads * shape.q_seq * static_cast<int64_t>(sizeof(float));
}

int64_t AttentionBackwardScratchBytes(const AttentionShape& shape) {
  return AttentionLseBytes(shape);
}

}  // namespace cuda
}  // namespace alpa
