// The attention `alpa calibrate` times (calibration.h): the CUDA runner's fused attention kernels
// (flash_attention.h) on a causal GPT attention in bf16, forward and backward, so that the
// calibration's `attention` efficiency is what the runner reaches on the products of an
// attention core, as the planner prices them (core/ir/attention_core.h AttentionProductWork:
// the products' flops, half of them under the causal mask).
// Host code: the case is made and checked without a GPU; calibration.cu times it.
#pragma once

#include <cstdint>
#include <string>

#include "core/util/status.h"
#include "exec/cuda/flash_attention.h"

namespace alpa {
namespace cuda {

struct AttentionCalibrationCase {
  std::string name;  // "attention causal bf16 [batch 4, heads 32, seq 2048, head_dim 128]"
  AttentionShape shape;
  // The flops the planner prices the core's forward products (Q K^T, P V) and backward products
  // (dO V^T, P^T dO, dS K, dS^T Q) at: each 2 * batch * heads * seq^2 * head_dim, times 0.5.
  double forward_flops = 0;
  double backward_flops = 0;
};

// The case at `batch` sequences of 2,048 tokens, 32 heads of 128 (the GPT layer of bench/gpu).
// InvalidArgument for a batch that is not in [1, 64].
Result<AttentionCalibrationCase> AttentionCalibrationCaseFor(int64_t batch);

}  // namespace cuda
}  // namespace alpa
