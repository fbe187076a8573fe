// Which instructions of a device program the CUDA runner replaces by the fused attention kernels
// (flash_attention.h): the attention cores whose [batch, heads, q_seq, k_seq] scores the
// program would otherwise write, read and keep between the forward and the backward.
//
// A region is matched on the program's instructions, by what each value means: every buffer of
// the region gets a label per dim (batch 0 / 1, query position, key position, head dim) from the
// products that read Q, K and V, and each op must keep the labels the attention's algebra
// gives. The forward is
//   S = Q K^T (dot_general, head dim contracted), S *= c (a constant, optional),
//   S = select(causal mask, S, fill) (optional: iota / compare / broadcast, key <= query kept,
//   fill at most -1000), P = exp(S - bcast(max_k S)) / bcast(sum_k exp(...)), O = P V;
// the backward, as autodiff writes it (core/autodiff):
//   dP = dO V^T, dV = P^T dO, T = dP / bcast(L), dE = (T + bcast(sum_k -(T * P))) * E,
//   dE = select(mask, dE, 0), dE *= c, dQ = dE K, dK = dE^T Q
// (E the exp, L its row sum). Where Q, K and V are slices of one buffer (the fused QKV product:
// reshape(slice(X)) dropping a unit dim) read by the region alone, the kernels read them in X;
// where dQ, dK and dV go only through transposes, unit reshapes and zero pads into a sum that
// assembles one buffer from them (the QKV product's input gradient), the kernels write them
// there: the slices, pads and sums are replaced too. A region without such a backward (inference,
// or a forward that recomputation repeats) is replaced in its forward only. Every intermediate
// value must be read by the region alone, computed in full by this device (no collective in
// between: products of a contracted dim split over devices are partial sums) and rounded; Q, K, V,
// O, dO, dQ, dK, dV must share one bf16 / f16 storage and fit the kernels
// (AttentionUnsupportedReason). Anything else runs op by op, as before.
//
// Host code: the plan is made and tested without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "core/util/dtype.h"
#include "exec/cuda/flash_attention.h"
#include "exec/program/program.h"

namespace alpa {
namespace cuda {

// A buffer seen as [batch 0, batch 1, seq, head_dim]: element (b, h, s, d) at element
// offset + b * stride[0] + h * stride[1] + s * stride[2] + d * stride[3] of the buffer.
struct AttentionOperand {
  int32_t buffer = -1;
  int64_t offset = 0;
  int64_t stride[4] = {0, 0, 0, 0};
};

struct AttentionRegion {
  AttentionShape shape;
  AttentionOperand q, k, v, o;  // the forward's inputs and output
  // The backward's (buffer -1: a forward-only region).
  AttentionOperand d_o, dq, dk, dv;
  int32_t forward_at = -1;   // the instruction the forward kernel runs in place of (P V)
  int32_t backward_at = -1;  // the instruction the backward kernels run in place of, or -1
  // Every instruction the region replaces (forward_at and backward_at included), ascending.
  std::vector<int32_t> members;
  bool has_backward() const { return backward_at >= 0; }
};

// Whether the runner fuses attention: only with ALPA_CUDA_FLASH_ATTENTION=1 in the environment
// (the kernels have not run on a GPU yet: opt in until they have).
bool AttentionFusionEnabled();

// Whether PlanAttention keeps only regions the kernels compute (their storage and shape), or
// every region it finds (kAny: what the matcher sees in any program, f32 ones included, for
// tests of the matching itself).
enum class AttentionKernelFit { kRequired, kAny };

// The attention regions of `program`, whose buffers are kept in `storage` (storage_policy.h), in
// program order.
std::vector<AttentionRegion> PlanAttention(const DeviceProgram& program,
                                           const std::vector<DType>& storage,
                                           AttentionKernelFit fit = AttentionKernelFit::kRequired);

// The buffers the region's forward (backward) kernels read; and those they write (each once).
std::vector<int32_t> AttentionForwardReads(const AttentionRegion& region);
std::vector<int32_t> AttentionBackwardReads(const AttentionRegion& region);
std::vector<int32_t> AttentionWrites(const AttentionRegion& region, bool backward);

}  // namespace cuda
}  // namespace alpa
