// The CUDA backend's kernels: every op of the IR (core/ir/graph.h) on device tensors, and the
// data movement the runner's instructions need. Each launch is enqueued on ctx.stream and
// returns without waiting for the GPU (a launch error is returned; errors of the kernel itself
// surface at the runner's next synchronisation).
//
// Numerics follow the CPU interpreter (exec/cpu/interpreter.h): elementwise math in double,
// sums accumulated in at least f32 (contractions on cuBLASLt with f32 accumulation), and the
// result rounded once to the op's dtype (round-to-nearest-even; integers wrap) when `round`.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/cuda/device_tensor.h"

namespace alpa {
namespace cuda {

// Per-launch facts of a kRun instruction beyond the op itself.
struct OpLaunch {
  // Round the result to the op's dtype; false keeps `out.storage`'s precision (partial sums).
  bool round = true;
  // Gather / scatter_add over a split table axis (Instruction::axis_offset / axis_size): this
  // device holds rows [axis_offset, axis_offset + local size) of axis_size; -1: not split.
  int64_t axis_offset = 0, axis_size = -1;
};

// Runs op `id` of `graph` (a validated local graph; not a parameter) on `operands` (one per
// operand, of the operand ops' shapes) into `out` (allocated by the caller with the op's shape).
// A tensor's storage is its op's dtype, or f32 for an f16 / bf16 value (kInvalidArgument naming
// the op and operand otherwise, or for a wrong shape or operand count). Every kind and dtype
// runs; kUnsupported naming the op for a rank beyond 8. dot_general, scatter_add and
// select_and_scatter use ctx.scratch (one Reserve per launch); dot_general of f32 / f16 / bf16
// uses ctx.blas and its workspace when set, else a kernel summing in double.
Status LaunchOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                const OpLaunch& launch);

// dst's box at `dst_offsets` (sizes `sizes`) = src's box at `src_offsets`, converting between
// the storage types (a store into a narrower float type rounds to nearest even; nothing else is
// rounded). kInvalidArgument when the box leaves either tensor or the ranks differ.
Status LaunchCopyBox(const LaunchContext& ctx, const DeviceTensor& src,
                     const std::vector<int64_t>& src_offsets, const DeviceTensor& dst,
                     const std::vector<int64_t>& dst_offsets, const std::vector<int64_t>& sizes);
// dst = dst + src (same shape), rounded to `round_to`'s precision when `round`.
Status LaunchAccumulate(const LaunchContext& ctx, const DeviceTensor& src, const DeviceTensor& dst,
                        DType round_to, bool round);
// dst = src * value (same shape), rounded to `round_to` when `round`.
Status LaunchScale(const LaunchContext& ctx, const DeviceTensor& src, const DeviceTensor& dst,
                   double value, DType round_to, bool round);
// dst = src converted to dst.storage (same shape), rounded to `round_to` when `round`.
Status LaunchConvert(const LaunchContext& ctx, const DeviceTensor& src, const DeviceTensor& dst,
                     DType round_to, bool round);

// How this thread's last dot_general ran: "cublaslt", "cublas" (cuBLASLt's heuristic offered no
// algorithm) or "kernel" (the double-precision kernel: f64, integers, a dim beyond int32, or
// neither cuBLAS offers one). For profiles (step_profile.h).
const char* LastDotGeneralPath();
// How this thread's last convolution ran: "cudnn" or "kernel" (the direct kernel: no cuDNN in
// the launch context, f64 or integers, an input dilation or a negative padding, more than 3
// spatial dims, or no cuDNN engine that keeps the numerics). For profiles and tests.
const char* LastConvolutionPath();

}  // namespace cuda
}  // namespace alpa
