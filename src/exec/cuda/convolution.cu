// convolution as a direct kernel: a thread per output element summing in double in the
// interpreter's order (channels, then kernel positions), any spatial rank up to 6, strides,
// padding, both dilations and feature groups. Exact against the interpreter but not fast: the
// models the planner targets are transformers, whose convolutions (if any) are small.
#include "exec/cuda/contraction_body.h"
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

}  // namespace

Status LaunchConvolutionOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
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
  if (n == 0) return Status::Ok();
  ConvolutionKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(c, n);
  return CheckLaunch(DescribeOp(graph, id));
}

}  // namespace cuda
}  // namespace alpa
