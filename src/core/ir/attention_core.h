// The attention cores of a graph: the [batch, heads, q_seq, k_seq] score-sized values between
// the score product (Q K^T) and the products that read the probabilities (P V, and in the
// backward pass dP = dO V^T and the products that read dS). A fused attention kernel
// (Megatron's fused softmax, FlashAttention) keeps them on chip: the cost model's
// `fuse_attention` calibration charges no memory traffic for them.
#pragma once

#include <vector>

#include "core/ir/graph.h"

namespace alpa {

// Per op: true when its result is part of an attention core. A core starts at a forward
// dot_general with batch dims whose operands are both computed values (not parameters) and
// whose result has more elements than each operand (s_q * s_k against s * d), and spans the
// ops of every phase connected to it through values of the same element count (elementwise
// ops, selects, converts, broadcasts, reshapes, transposes and dot_generals). It counts only
// when a softmax reads it (a reduce_max or reduce_sum of a core value) and a dot_general with
// a smaller result reads it (the P V product); other graphs have no cores.
std::vector<bool> AttentionCoreValues(const Graph& graph);

// Per op: 0 unless it is a product of a core (a dot_general in it, or reading it: Q K^T, P V and
// their backward products); for a product, the share of its flops the CUDA runner's fused
// attention kernels compute: 1, or 0.5 for a core holding a select (a causal mask: the kernels
// skip the key blocks above the diagonal: 528 of 1,024 blocks of 64 keys at 2,048 keys; `alpa
// calibrate` measures the kernels on such a core, so its efficiency holds the diagonal's share).
std::vector<double> AttentionProductWork(const Graph& graph);

// Per op: true when the CUDA runner's fused attention kernels (exec/cuda/attention_plan.h)
// replace it beside the cores `core` (AttentionCoreValues): a reshape of a slice that only a
// core's product reads (Q, K, V read in the fused QKV product); from a backward product of
// a core (dQ, dK, dV), its chain of one-reader transposes, reshapes and a pad into adds that sum
// such chains (written into the QKV product's gradient: every add but the last); the forward's
// product (O) and its one-reader transpose where a reshape reads that alone (O written in the
// reshape's layout); and a transpose that only backward products of a core read (dO), with the
// reshape before it that it alone reads (dO read in the reshape's operand).
std::vector<bool> AttentionKernelViews(const Graph& graph, const std::vector<bool>& core);

}  // namespace alpa
