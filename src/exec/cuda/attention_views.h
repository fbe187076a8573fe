// The views through which the fused attention kernels read Q, K and V and write their gradients
// (attention_plan.h): in the fused QKV product X where Q, K and V are reshape(slice(X)) read by the
// region alone, and into the sum that assembles the QKV product's gradient where dQ, dK and dV
// reach it through transposes, unit reshapes and zero pads that tile it; and O and dO in the
// [batch, seq, heads, head_dim] layout the projections around the attention use.
#pragma once

#include "exec/cuda/attention_matcher.h"
#include "exec/cuda/attention_plan.h"

namespace alpa {
namespace cuda {

// Moves region r's Q, K, V operands (and, with `backward`, dQ, dK, dV) onto those buffers and
// adds the ops they replace to r.members (sorted); each side is all or nothing, and r is left as
// it was where the program does not have them so.
void LookThroughQkv(const Matcher& m, bool backward, AttentionRegion& r);

// Moves region r's output O onto the buffer the program transposes it into (and reshapes that
// into: [batch, seq, heads * head_dim], the output projection's input), where the transpose is
// O's one reader; and, with `backward`, dO onto the buffer the program transposes it from
// (through a reshape) where the region alone reads the transposed dO. Adds the transposes and
// reshapes to r.members (sorted); each of O and dO moves or stays on its own.
void LookThroughOutput(const Matcher& m, bool backward, AttentionRegion& r);

}  // namespace cuda
}  // namespace alpa
