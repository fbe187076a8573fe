// Elementwise kernels: unary, binary and select ops, and the sources constant and iota, in
// grid-stride loops. Ops of f32 / bf16 / pred values that the float path covers (kernel_math.h's
// UsesFloatPath) run in float, eight elements per thread in 16-byte words where the sizes and
// pointers allow, else four per thread; the rest run ElementwiseAt in double, one per thread.
// A constant writes its stored bits, in 16-byte words where it can.
#include "exec/cuda/kernel_launch.h"
#include "exec/cuda/packed_elements.h"

namespace alpa {
namespace cuda {
namespace {

__global__ void ElementwiseKernel(ElementwiseArgs args, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    ElementwiseAt(args, i);
  }
}

// A block takes kFloatSpan * blockDim consecutive elements at a time; thread t elements t,
// t + blockDim, ... of them (each load instruction of a warp reads consecutive elements).
__global__ void FloatElementwiseKernel(ElementwiseArgs args, int64_t n) {
  const int64_t tile = static_cast<int64_t>(blockDim.x) * kFloatSpan;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * tile; base < n;
       base += static_cast<int64_t>(gridDim.x) * tile) {
    const int64_t first = base + threadIdx.x;
    if (first >= n) break;
    const int64_t left = (n - first + blockDim.x - 1) / blockDim.x;
    const int64_t count = left < kFloatSpan ? left : kFloatSpan;
    FloatElementwiseSpan(args, first, blockDim.x, static_cast<int32_t>(count));
  }
}

// The packed float path: thread g takes elements 8g .. 8g + 7 (packed_elements.h), for n a
// multiple of 8 and every pointer 16-byte aligned (PacksEight).
__global__ void PackedFloatElementwiseKernel(ElementwiseArgs a, int64_t groups) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += step) {
    const int64_t first = g * kPack;
    float x[kPack] = {}, y[kPack] = {}, z[kPack] = {}, v[kPack];
    LoadEight(a.in[0], a.in_storage[0], first, x);
    if (a.operand_count > 1) LoadEight(a.in[1], a.in_storage[1], first, y);
    if (a.operand_count > 2) LoadEight(a.in[2], a.in_storage[2], first, z);
    for (int k = 0; k < kPack; ++k) v[k] = FloatElementwiseValue(a, x[k], y[k], z[k]);
    StoreEight(a.out, a.out_storage, first, v);
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

bool PacksEight(const ElementwiseArgs& a, int64_t n) {
  if (n % kPack != 0 || !Aligned16(a.out)) return false;
  for (int32_t k = 0; k < a.operand_count; ++k) {
    if (!Aligned16(a.in[k])) return false;
  }
  return true;
}

// Every element gets the same stored bits.
template <typename T>
__global__ void FillKernel(T* out, int64_t n, T bits) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = bits;
  }
}

template <typename T>
void LaunchFillBits(const LaunchContext& ctx, void* out, int64_t n, const unsigned char* element) {
  T bits;
  memcpy(&bits, element, sizeof(T));
  FillKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(static_cast<T*>(out), n, bits);
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
  if (UsesFloatPath(args) && PacksEight(args, n)) {
    PackedFloatElementwiseKernel<<<BlocksFor(n / kPack), kThreadsPerBlock, 0, ctx.stream>>>(
        args, n / kPack);
  } else if (UsesFloatPath(args)) {
    FloatElementwiseKernel<<<BlocksFor((n + kFloatSpan - 1) / kFloatSpan), kThreadsPerBlock, 0,
                             ctx.stream>>>(args, n);
  } else {
    ElementwiseKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(args, n);
  }
  return CheckLaunch(what);
}

Status LaunchFill(const LaunchContext& ctx, void* out, DType storage, int64_t n, double value,
                  OutputRounding rounding, const std::string& what) {
  if (n == 0) return Status::Ok();
  // The stored element, made once on the host.
  unsigned char element[8] = {};
  StoreElement(element, storage, 0, FinishValue(value, rounding));
  const int64_t width = DTypeBytes(storage);
  if ((n * width) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
    // 16-byte words of the repeated element.
    unsigned char word[16];
    for (int k = 0; k < 16; ++k) word[k] = element[k % width];
    LaunchFillBits<uint4>(ctx, out, n * width / 16, word);
    return CheckLaunch(what);
  }
  switch (width) {
    case 1:
      LaunchFillBits<uint8_t>(ctx, out, n, element);
      break;
    case 2:
      LaunchFillBits<uint16_t>(ctx, out, n, element);
      break;
    case 4:
      LaunchFillBits<uint32_t>(ctx, out, n, element);
      break;
    default:
      LaunchFillBits<uint64_t>(ctx, out, n, element);
      break;
  }
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
