// Elementwise kernels: unary, binary and select ops (kernel_math.h's ElementwiseAt), and the
// sources constant and iota. One thread per element in a grid-stride loop.
#include "exec/cuda/kernel_launch.h"

namespace alpa {
namespace cuda {
namespace {

__global__ void ElementwiseKernel(ElementwiseArgs args, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    ElementwiseAt(args, i);
  }
}

__global__ void FillKernel(void* out, DType storage, int64_t n, double value) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    StoreElement(out, storage, i, value);
  }
}

__global__ void IotaKernel(void* out, DType storage, int64_t n, int64_t stride, int64_t size,
                           OutputRounding rounding) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    StoreElement(out, storage, i, FinishValue(static_cast<double>((i / stride) % size), rounding));
  }
}

}  // namespace

Status LaunchElementwise(const LaunchContext& ctx, const ElementwiseArgs& args, int64_t n,
                         const std::string& what) {
  if (n == 0) return Status::Ok();
  ElementwiseKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(args, n);
  return CheckLaunch(what);
}

Status LaunchFill(const LaunchContext& ctx, void* out, DType storage, int64_t n, double value,
                  OutputRounding rounding, const std::string& what) {
  if (n == 0) return Status::Ok();
  FillKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(out, storage, n,
                                                                FinishValue(value, rounding));
  return CheckLaunch(what);
}

Status LaunchIota(const LaunchContext& ctx, void* out, DType storage, int64_t n, int64_t stride,
                  int64_t size, OutputRounding rounding, const std::string& what) {
  if (n == 0) return Status::Ok();
  IotaKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(out, storage, n, stride, size,
                                                                rounding);
  return CheckLaunch(what);
}

}  // namespace cuda
}  // namespace alpa
