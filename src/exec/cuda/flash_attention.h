// Fused attention on the GPU (FlashAttention-2's algorithm): O = softmax(scale Q K^T, causal)
// V without the [q_seq, k_seq] scores in device memory, and its gradients dQ, dK, dV.
//
// Tensors are 4-d views [batch, heads, seq, head_dim] of buffers with arbitrary element strides
// (the layouts the replaced dot_generals read and write: attention_plan.h). Inputs and outputs
// are in one 16-bit float storage (bf16 or f16); products run on tensor cores with f32
// accumulation, the softmax in f32, and each output is rounded once to the storage.
//
// Masked scores (causal: key index > query index) count as exact zeros of the softmax: the
// graphs this replaces fill them with a large negative value (at most -1000), whose exp
// underflows to zero in f32 against the row's unmasked maximum.
//
// The kernels' code is written once (flash_attention_body.h) for two targets: the GPU, and the
// host, where each thread block runs as host threads (so the kernels' tiling, indexing and
// synchronisation are tested without a GPU: RunAttention*OnHost).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/cuda/device_tensor.h"

namespace alpa {
namespace cuda {

// A [batch, heads, seq, head_dim] view: element (b, h, s, d) at data + b * stride[0] +
// h * stride[1] + s * stride[2] + d * stride[3] (elements of the view's storage).
struct AttentionView {
  void* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};
};

// Whether the kernels read `view`'s rows 16 bytes at a time: head_dim contiguous (stride[3] 1),
// the other strides multiples of 8 elements and the address 16-byte aligned; else one element
// at a time (the same values either way).
bool AttentionViewPacked(const AttentionView& view, int64_t head_dim);

struct AttentionShape {
  int64_t batch = 1, heads = 1, q_seq = 0, k_seq = 0, head_dim = 0;
  DType storage = DType::kBF16;  // of every view: bf16 or f16
  float scale = 1.0f;            // applied to Q K^T before the mask and the softmax
  bool causal = false;           // key j of query i is masked when j > i (q_seq == k_seq)
};

// Whether the kernels compute `shape`: "" when they do, else the reason (the storage is not
// bf16 / f16, head_dim is not a multiple of 16 or above 128, an empty or causal-mismatched
// sequence, a dim beyond int32).
std::string AttentionUnsupportedReason(const AttentionShape& shape);

struct AttentionForwardArgs {
  AttentionShape shape;
  AttentionView q, k, v;  // read
  AttentionView o;        // written
  // Written: per (batch, head, query) row, at lse[(b * heads + h) * q_seq + i], the log of the
  // row's softmax denominator plus its maximum (natural log, of the scaled scores).
  float* lse = nullptr;
};

struct AttentionBackwardArgs {
  AttentionShape shape;
  AttentionView q, k, v, o, d_o;  // read (o and lse: the forward's)
  const float* lse = nullptr;
  AttentionView dq, dk, dv;  // written
  // Scratch of AttentionBackwardScratchBytes(shape): per row, the sum of dO * O.
  void* scratch = nullptr;
};

// Bytes of AttentionForwardArgs::lse (f32 per query row), and of the backward's scratch; 0 for
// a shape AttentionUnsupportedReason refuses.
int64_t AttentionLseBytes(const AttentionShape& shape);
int64_t AttentionBackwardScratchBytes(const AttentionShape& shape);

// Enqueue the kernels on `stream` (no wait). kInvalidArgument with the reason for a shape the
// kernels do not compute; the CUDA error of a failed launch.
Status LaunchAttentionForward(const AttentionForwardArgs& args, cudaStream_t stream);
Status LaunchAttentionBackward(const AttentionBackwardArgs& args, cudaStream_t stream);

// The same kernels run on the host (every block in turn, its threads as host threads), on
// host memory: what the GPU computes, for tests without a GPU.
Status RunAttentionForwardOnHost(const AttentionForwardArgs& args);
Status RunAttentionBackwardOnHost(const AttentionBackwardArgs& args);

}  // namespace cuda
}  // namespace alpa
