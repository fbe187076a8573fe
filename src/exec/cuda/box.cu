// The runner's data movement beside the ops: box copies between tensors (LaunchCopyBox, on the
// strided-copy kernel), accumulation of partial results, scaling and storage conversion.
#include "exec/cuda/kernel_launch.h"

namespace alpa {
namespace cuda {
namespace {

__global__ void BoxElementwiseKernel(BoxMode mode, const void* src, DType src_storage, void* dst,
                                     DType dst_storage, int64_t n, double scale,
                                     OutputRounding rounding) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    double v = LoadElement(src, src_storage, i);
    if (mode == BoxMode::kScale) v *= scale;
    if (mode == BoxMode::kAccumulate) v = LoadElement(dst, dst_storage, i) + v;
    StoreElement(dst, dst_storage, i, FinishValue(v, rounding));
  }
}

Status SameShape(const DeviceTensor& src, const DeviceTensor& dst, const char* what) {
  if (src.shape != dst.shape) {
    return InvalidArgument(std::string(what) + ": source " + ShapeString(src.shape) +
                           " and destination " + ShapeString(dst.shape) + " differ in shape");
  }
  if (src.elements() > 0 && (src.data == nullptr || dst.data == nullptr)) {
    return InvalidArgument(std::string(what) + ": a tensor of " + ShapeString(src.shape) +
                           " has no memory");
  }
  return Status::Ok();
}

}  // namespace

Status LaunchBoxElementwise(const LaunchContext& ctx, BoxMode mode, const void* src,
                            DType src_storage, void* dst, DType dst_storage, int64_t n,
                            double scale, OutputRounding rounding, const std::string& what) {
  if (n == 0) return Status::Ok();
  BoxElementwiseKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(
      mode, src, src_storage, dst, dst_storage, n, scale, rounding);
  return CheckLaunch(what);
}

Status LaunchCopyBox(const LaunchContext& ctx, const DeviceTensor& src,
                     const std::vector<int64_t>& src_offsets, const DeviceTensor& dst,
                     const std::vector<int64_t>& dst_offsets, const std::vector<int64_t>& sizes) {
  Result<StridedWalk> walk = BoxWalk(src.shape, src_offsets, dst.shape, dst_offsets, sizes);
  if (!walk.ok()) return walk.status();
  if (walk.value().count > 0 && (src.data == nullptr || dst.data == nullptr)) {
    return InvalidArgument("box copy of " + ShapeString(sizes) + ": a tensor has no memory");
  }
  CopyArgs args;
  args.src = src.data;
  args.src_storage = src.storage;
  args.dst = dst.data;
  args.dst_storage = dst.storage;
  args.walk = walk.value();
  return LaunchStridedCopy(ctx, args, "box copy of " + ShapeString(sizes));
}

Status LaunchAccumulate(const LaunchContext& ctx, const DeviceTensor& src, const DeviceTensor& dst,
                        DType round_to, bool round) {
  ALPA_RETURN_IF_ERROR(SameShape(src, dst, "accumulate"));
  return LaunchBoxElementwise(ctx, BoxMode::kAccumulate, src.data, src.storage, dst.data,
                              dst.storage, dst.elements(), 0.0,
                              ForStorage(OutputRounding{round, round_to}, dst.storage),
                              "accumulate of " + ShapeString(dst.shape));
}

Status LaunchScale(const LaunchContext& ctx, const DeviceTensor& src, const DeviceTensor& dst,
                   double value, DType round_to, bool round) {
  ALPA_RETURN_IF_ERROR(SameShape(src, dst, "scale"));
  return LaunchBoxElementwise(ctx, BoxMode::kScale, src.data, src.storage, dst.data, dst.storage,
                              dst.elements(), value,
                              ForStorage(OutputRounding{round, round_to}, dst.storage),
                              "scale of " + ShapeString(dst.shape));
}

Status LaunchConvert(const LaunchContext& ctx, const DeviceTensor& src, const DeviceTensor& dst,
                     DType round_to, bool round) {
  ALPA_RETURN_IF_ERROR(SameShape(src, dst, "convert"));
  return LaunchBoxElementwise(ctx, BoxMode::kConvert, src.data, src.storage, dst.data, dst.storage,
                              dst.elements(), 0.0,
                              ForStorage(OutputRounding{round, round_to}, dst.storage),
                              "convert of " + ShapeString(dst.shape));
}

}  // namespace cuda
}  // namespace alpa
