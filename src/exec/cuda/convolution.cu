// convolution. f32 / f16 / bf16 run on cuDNN with f32 accumulation (dnn_convolution.h) where a
// cuDNN operation computes the op (dnn_convolution_geometry.h: its forward convolution, or its
// backward-data convolution for the input-dilated ops of input gradients; 1 to 3 spatial dims):
// operands whose storage differs (an f32 partial sum beside a 16-bit value) are converted to f32
// on the way, and the result is rounded once to the op's dtype. Everything else (f64, integers,
// other geometries, no cuDNN engine that keeps the numerics, ALPA_CUDA_CUDNN=0) runs a direct
// kernel: a thread per output element summing in
// double in the interpreter's order (channels, then kernel positions), any spatial rank up to 6,
// strides, padding, both dilations and feature groups; exact against the interpreter, not fast.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "exec/cuda/contraction_body.h"
#include "exec/cuda/dnn_convolution.h"
#include "exec/cuda/kernel_launch.h"

namespace alpa {
namespace cuda {
namespace {

__global__ void ConvolutionKernel(ConvArgs c, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    ConvOutputAt(c, i);
  }
}

thread_local const char* last_convolution_path = "none";

Status LaunchConvolutionKernel(const LaunchContext& ctx, const Graph& graph, int32_t id,
                               const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                               OutputRounding rounding) {
  Result<ConvArgs> args = ConvArgsFor(graph, id);
  if (!args.ok()) return args.status();
  ConvArgs c = args.value();
  c.x = operands[0].data;
  c.x_storage = operands[0].storage;
  c.w = operands[1].data;
  c.w_storage = operands[1].storage;
  c.out = out.data;
  c.out_storage = out.storage;
  c.rounding = rounding;
  const int64_t n = out.elements();
  ConvolutionKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(c, n);
  return CheckLaunch(DescribeOp(graph, id));
}

// The largest power of two, at most 16, dividing the address.
int64_t AlignmentOf(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int64_t alignment = 16;
  while (alignment > 1 && a % static_cast<uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

// The kernel's dims with the first two swapped (the backward-data geometry's filter).
Dims SwappedKernelDims(size_t rank) {
  Dims permutation(rank);
  for (size_t i = 0; i < rank; ++i) permutation[i] = static_cast<int64_t>(i);
  std::swap(permutation[0], permutation[1]);
  return permutation;
}

// Runs the convolution on cuDNN; false (nothing enqueued) when cuDNN cannot take it.
Result<bool> LaunchDnnConvolution(const LaunchContext& ctx, const Graph& graph, int32_t id,
                                  const std::vector<DeviceTensor>& operands,
                                  const DeviceTensor& out, OutputRounding rounding) {
  const DeviceTensor& input = operands[0];
  const DeviceTensor& kernel = operands[1];
  if (ctx.dnn == nullptr || !IsBlasFloat(graph.op(id).dtype) || !IsBlasFloat(input.storage) ||
      !IsBlasFloat(kernel.storage) || !IsBlasFloat(out.storage)) {
    return false;
  }
  Result<DnnConvGeometry> geometry = DnnConvGeometryFor(graph, id);
  if (!geometry.ok()) return false;
  const std::string what = DescribeOp(graph, id);
  const bool forward = geometry.value().direction == DnnConvDirection::kForward;
  DnnConvRequest request;
  request.geometry = geometry.value();
  // Both operands in one type: the 16-bit type when both hold it, else f32 (copied into scratch,
  // as the backward-data geometry's kernel always is, its first two dims swapped). The result in
  // the output's storage when cuDNN can write it (that type, or f32), else f32 in scratch.
  request.type = input.storage == kernel.storage ? input.storage : DType::kF32;
  const bool input_copy = input.storage != request.type;
  const bool kernel_copy = kernel.storage != request.type || !forward;
  const bool direct = out.storage == request.type || out.storage == DType::kF32;
  request.result_type = direct ? out.storage : DType::kF32;
  request.allow_tf32 = ctx.allow_tf32;
  // Scratch pieces are 256-byte aligned.
  request.input_alignment = input_copy ? 16 : AlignmentOf(input.data);
  request.kernel_alignment = kernel_copy ? 16 : AlignmentOf(kernel.data);
  request.result_alignment = direct ? AlignmentOf(out.data) : 16;
  Result<const DnnConvPlan*> plan = ctx.dnn->PlanFor(request, what);
  if (!plan.ok()) return plan.status();
  if (plan.value() == nullptr) return false;

  const size_t in_bytes = static_cast<size_t>(DTypeBytes(request.type));
  ScratchPlan pieces;
  const size_t input_at =
      input_copy ? pieces.Add(static_cast<size_t>(input.elements()) * in_bytes) : 0;
  const size_t kernel_at =
      kernel_copy ? pieces.Add(static_cast<size_t>(kernel.elements()) * in_bytes) : 0;
  const size_t result_at = direct ? 0 : pieces.Add(static_cast<size_t>(out.elements()) * 4);
  const int64_t workspace_bytes = DnnConvolutions::WorkspaceBytes(*plan.value());
  const size_t workspace_at =
      workspace_bytes > 0 ? pieces.Add(static_cast<size_t>(workspace_bytes)) : 0;
  char* scratch = nullptr;
  if (pieces.total() > 0) {
    Result<char*> reserved = ReserveScratch(ctx, pieces, what);
    if (!reserved.ok()) return reserved.status();
    scratch = reserved.value();
  }
  const void* input_data = input.data;
  const void* kernel_data = kernel.data;
  if (input_copy) {
    ALPA_RETURN_IF_ERROR(LaunchArrange(ctx, input, {}, scratch + input_at, request.type, what));
    input_data = scratch + input_at;
  }
  if (kernel_copy) {
    const Dims permutation = forward ? Dims{} : SwappedKernelDims(kernel.shape.size());
    ALPA_RETURN_IF_ERROR(
        LaunchArrange(ctx, kernel, permutation, scratch + kernel_at, request.type, what));
    kernel_data = scratch + kernel_at;
  }
  void* result = direct ? out.data : scratch + result_at;
  void* workspace = workspace_bytes > 0 ? scratch + workspace_at : nullptr;
  ALPA_RETURN_IF_ERROR(
      ctx.dnn->Run(*plan.value(), ctx.stream, input_data, kernel_data, result, workspace, what));
  // The f32 result rounded once to the dtype (or converted to the output's storage).
  const bool needs_rounding = rounding.round && rounding.round_to != request.result_type;
  if (!direct || needs_rounding) {
    ALPA_RETURN_IF_ERROR(LaunchBoxElementwise(ctx, BoxMode::kConvert, result, request.result_type,
                                              out.data, out.storage, out.elements(), 0.0, rounding,
                                              what));
  }
  return true;
}

}  // namespace

const char* LastConvolutionPath() { return last_convolution_path; }

Status LaunchConvolutionOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                           const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                           OutputRounding rounding) {
  last_convolution_path = "kernel";
  if (out.elements() == 0) return Status::Ok();
  Result<bool> on_dnn = LaunchDnnConvolution(ctx, graph, id, operands, out, rounding);
  if (!on_dnn.ok()) return on_dnn.status();
  if (on_dnn.value()) {
    last_convolution_path = "cudnn";
    return Status::Ok();
  }
  return LaunchConvolutionKernel(ctx, graph, id, operands, out, rounding);
}

}  // namespace cuda
}  // namespace alpa
