// gather (a thread per result element) and scatter_add (the base copied into a double scratch,
// a thread per update element adding with atomics, then one rounding to the dtype), both with
// the masked variant of a split table axis (indexing_body.h), and the double-scratch conversions
// that select_and_scatter shares.
#include "exec/cuda/indexing_body.h"
#include "exec/cuda/kernel_launch.h"

namespace alpa {
namespace cuda {
namespace {

__global__ void LoadToDoubleKernel(const void* src, DType storage, double* acc, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    acc[i] = LoadElement(src, storage, i);
  }
}

__global__ void StoreFromDoubleKernel(const double* acc, void* out, DType storage, int64_t n,
                                      OutputRounding rounding) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    StoreElement(out, storage, i, FinishValue(acc[i], rounding));
  }
}

__global__ void GatherKernel(IndexingArgs a, const void* table, DType table_storage, void* out,
                             DType out_storage, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += step) {
    const int64_t offset = IndexedTableOffset(a, e);
    StoreElement(out, out_storage, e, offset < 0 ? 0.0 : LoadElement(table, table_storage, offset));
  }
}

__global__ void ScatterAddKernel(IndexingArgs a, const void* updates, DType updates_storage,
                                 double* acc, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += step) {
    const int64_t offset = IndexedTableOffset(a, e);
    if (offset >= 0) atomicAdd(acc + offset, LoadElement(updates, updates_storage, e));
  }
}

}  // namespace

Status LaunchLoadToDouble(const LaunchContext& ctx, const void* src, DType storage, double* acc,
                          int64_t n, const std::string& what) {
  if (n == 0) return Status::Ok();
  LoadToDoubleKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(src, storage, acc, n);
  return CheckLaunch(what);
}

Status LaunchStoreFromDouble(const LaunchContext& ctx, const double* acc, void* out, DType storage,
                             int64_t n, OutputRounding rounding, const std::string& what) {
  if (n == 0) return Status::Ok();
  StoreFromDoubleKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(acc, out, storage, n,
                                                                           rounding);
  return CheckLaunch(what);
}

Status LaunchGatherOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                      const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                      const OpLaunch& launch) {
  IndexingArgs a = IndexingArgsFor(graph, id, launch.axis_offset, launch.axis_size);
  a.indices = operands[1].data;
  a.index_storage = operands[1].storage;
  const int64_t n = out.elements();
  if (n == 0) return Status::Ok();
  GatherKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(
      a, operands[0].data, operands[0].storage, out.data, out.storage, n);
  return CheckLaunch(DescribeOp(graph, id));
}

Status LaunchScatterAddOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                          const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                          const OpLaunch& launch, OutputRounding rounding) {
  const std::string what = DescribeOp(graph, id);
  IndexingArgs a = IndexingArgsFor(graph, id, launch.axis_offset, launch.axis_size);
  a.indices = operands[1].data;
  a.index_storage = operands[1].storage;
  const int64_t n = out.elements();
  if (n == 0) return Status::Ok();
  ScratchPlan plan;
  plan.Add(static_cast<size_t>(n) * sizeof(double));
  Result<char*> scratch = ReserveScratch(ctx, plan, what);
  if (!scratch.ok()) return scratch.status();
  double* acc = reinterpret_cast<double*>(scratch.value());
  ALPA_RETURN_IF_ERROR(
      LaunchLoadToDouble(ctx, operands[0].data, operands[0].storage, acc, n, what));
  const int64_t updates = operands[2].elements();
  if (updates > 0) {
    ScatterAddKernel<<<BlocksFor(updates), kThreadsPerBlock, 0, ctx.stream>>>(
        a, operands[2].data, operands[2].storage, acc, updates);
    ALPA_RETURN_IF_ERROR(CheckLaunch(what));
  }
  return LaunchStoreFromDouble(ctx, acc, out.data, out.storage, n, rounding, what);
}

}  // namespace cuda
}  // namespace alpa
