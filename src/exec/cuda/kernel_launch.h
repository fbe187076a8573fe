// Internal to the CUDA kernels (kernels.h): launch geometry, error checks, and the launchers
// of each concern, which LaunchOp (launch_op.cc) dispatches to. Each launcher enqueues its work
// on ctx.stream and returns the launch's error, if any.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/cuda/device_tensor.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/strided_index.h"

namespace alpa {
namespace cuda {

constexpr int32_t kThreadsPerBlock = 256;
// Grid-stride loops cover what lies beyond this many blocks.
constexpr int64_t kMaxBlocks = 1 << 20;

// Blocks of a grid-stride loop over n items (at least one; capped, the loop covers the rest).
inline unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), kMaxBlocks));
}

// kInternal naming `what` and the CUDA error; Ok for cudaSuccess.
inline Status CudaStatus(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::Ok();
  return InternalError(what + ": CUDA error " + std::to_string(static_cast<int>(e)) + " (" +
                       cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")");
}

// The error of the last kernel launch on this thread (a bad configuration, no device...).
inline Status CheckLaunch(const std::string& what) {
  return CudaStatus(cudaGetLastError(), what + " (kernel launch)");
}

// Carves 256-byte-aligned pieces out of one Scratch reservation (a launch reserves once).
class ScratchPlan {
 public:
  // Reserves room for `bytes` more; returns the piece's offset.
  size_t Add(size_t bytes) {
    const size_t at = total_;
    total_ += (bytes + 255) / 256 * 256;
    return at;
  }
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};

// f32, f16 and bf16: the element types cuBLASLt and cuDNN run on (with f32 accumulation).
inline bool IsBlasFloat(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

// Reserves plan.total() bytes of ctx.scratch (`what` names the op for errors).
Result<char*> ReserveScratch(const LaunchContext& ctx, const ScratchPlan& plan,
                             const std::string& what);

// ---- elementwise.cu ----
Status LaunchElementwise(const LaunchContext& ctx, const ElementwiseArgs& args, int64_t n,
                         const std::string& what);
// out[i] = FinishValue(value) for i < n.
Status LaunchFill(const LaunchContext& ctx, void* out, DType storage, int64_t n, double value,
                  OutputRounding rounding, const std::string& what);
// out[i] = (i / stride) % size.
Status LaunchIota(const LaunchContext& ctx, void* out, DType storage, int64_t n, int64_t stride,
                  int64_t size, OutputRounding rounding, const std::string& what);

// ---- movement.cu ----
Status LaunchStridedCopy(const LaunchContext& ctx, const CopyArgs& args, const std::string& what);
// Copies `t` into `dst` (dense) as `type`, its dims in the order `permutation` (empty: as it is):
// an operand rearranged or converted for a library call (cuBLASLt, cuDNN).
Status LaunchArrange(const LaunchContext& ctx, const DeviceTensor& t, const Dims& permutation,
                     void* dst, DType type, const std::string& what);
Status LaunchMovementOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                        const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                        OutputRounding rounding);

// ---- box.cu ----
// dst[i] = FinishValue(src[i]) (storage conversion), dst[i] = FinishValue(src[i] * scale), or
// dst[i] = FinishValue(dst[i] + src[i]), for i < n.
enum class BoxMode : int32_t { kConvert = 0, kScale = 1, kAccumulate = 2 };
Status LaunchBoxElementwise(const LaunchContext& ctx, BoxMode mode, const void* src,
                            DType src_storage, void* dst, DType dst_storage, int64_t n,
                            double scale, OutputRounding rounding, const std::string& what);

// ---- reduce.cu ----
Status LaunchReduceOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                      const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                      OutputRounding rounding);
Status LaunchReduceWindowOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                            const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                            OutputRounding rounding);
Status LaunchSelectAndScatterOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                                const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                                OutputRounding rounding);

// ---- indexing.cu ----
// acc[i] = src[i] as double (i < n).
Status LaunchLoadToDouble(const LaunchContext& ctx, const void* src, DType storage, double* acc,
                          int64_t n, const std::string& what);
// out[i] = FinishValue(acc[i]) (i < n).
Status LaunchStoreFromDouble(const LaunchContext& ctx, const double* acc, void* out, DType storage,
                             int64_t n, OutputRounding rounding, const std::string& what);
Status LaunchGatherOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                      const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                      const OpLaunch& launch);
Status LaunchScatterAddOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                          const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                          const OpLaunch& launch, OutputRounding rounding);

// ---- contraction.cu ----
Status LaunchDotGeneralOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                          const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                          OutputRounding rounding);

// ---- convolution.cu ----
Status LaunchConvolutionOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                           const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                           OutputRounding rounding);

}  // namespace cuda
}  // namespace alpa
