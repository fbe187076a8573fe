// FusedKernels: NVRTC's cubin loaded as a CUDA library; each kernel taken by name.
#include "exec/cuda/fused_kernels.h"

#include <algorithm>

#include "core/util/parallel.h"
#include "exec/cuda/fused_source.h"
#include "exec/cuda/kernel_launch.h"
#include "exec/cuda/runtime_compiler.h"

namespace alpa {
namespace cuda {
namespace {

// The kernels' parameter (fused_source.h's AlpaFusedInputs).
struct FusedInputs {
  const void* p[kMaxFusedGroupInputs];
};
struct FusedStores {
  void* p[kMaxFusedGroupStores];
};

}  // namespace

Result<std::unique_ptr<FusedKernels>> FusedKernels::Load(const std::vector<FusedGroup>& groups,
                                                         const std::string& what) {
  int device = 0;
  ALPA_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), what + ": the current GPU"));
  cudaDeviceProp props{};
  ALPA_RETURN_IF_ERROR(
      CudaStatus(cudaGetDeviceProperties(&props, device), what + ": the GPU's properties"));
  for (const FusedGroup& g : groups) {
    if (g.stores.size() > static_cast<size_t>(kMaxFusedGroupStores) ||
        g.inputs.size() > static_cast<size_t>(kMaxFusedGroupInputs)) {
      return InternalError(what + ": the fused group at instruction " + std::to_string(g.root) +
                           " has " + std::to_string(g.inputs.size()) + " inputs and " +
                           std::to_string(g.stores.size()) + " stores, over a kernel's limits");
    }
  }
  const FusedSource source = FusedKernelsSource(groups);
  std::vector<std::string> cubins(source.units.size());
  ALPA_RETURN_IF_ERROR(
      RunParallel(static_cast<int64_t>(source.units.size()), ResolveThreadCount(0), [&](int64_t u) {
        Result<std::string> cubin =
            CompileToCubin(source.units[static_cast<size_t>(u)], props.major, props.minor, what);
        if (!cubin.ok()) return cubin.status();
        cubins[static_cast<size_t>(u)] = std::move(cubin).value();
        return Status::Ok();
      }));
  std::unique_ptr<FusedKernels> k(new FusedKernels());
  std::vector<cudaKernel_t> kernels(source.units.size(), nullptr);
  for (size_t u = 0; u < source.units.size(); ++u) {
    cudaLibrary_t library = nullptr;
    ALPA_RETURN_IF_ERROR(CudaStatus(
        cudaLibraryLoadData(&library, cubins[u].data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
        what + ": loading a fused kernel"));
    k->libraries_.push_back(library);
    ALPA_RETURN_IF_ERROR(CudaStatus(cudaLibraryGetKernel(&kernels[u], library, kFusedKernelName),
                                    what + ": the fused kernel"));
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    k->kernels_.push_back(kernels[source.kernel_of_group[i]]);
    k->packed_.push_back(FusedKernelPacks(groups[i]) ? 1 : 0);
    k->elements_.push_back(groups[i].elements);
    k->rows_.push_back(groups[i].row > 0 ? 1 : 0);
    k->stores_.push_back(static_cast<int32_t>(groups[i].stores.size()));
  }
  return k;
}

FusedKernels::~FusedKernels() {
  for (cudaLibrary_t library : libraries_) (void)cudaLibraryUnload(library);
}

Status FusedKernels::Launch(size_t index, const std::vector<const void*>& inputs,
                            const std::vector<void*>& outputs, cudaStream_t stream,
                            const std::string& what) const {
  const int64_t n = elements_[index];
  if (n == 0) return Status::Ok();
  if (inputs.size() > static_cast<size_t>(kMaxFusedGroupInputs) ||
      outputs.size() != static_cast<size_t>(stores_[index]) + 1) {
    return InternalError(what + ": a fused kernel of " + std::to_string(inputs.size()) +
                         " inputs given " + std::to_string(outputs.size()) + " outputs for " +
                         std::to_string(stores_[index] + 1));
  }
  FusedInputs in{};
  std::copy(inputs.begin(), inputs.end(), in.p);
  FusedStores st{};
  std::copy(outputs.begin() + 1, outputs.end(), st.p);
  void* out = outputs.front();
  long long count = packed_[index] ? n / 8 : n;
  void* args[] = {&out, &in, &st, &count};
  // A reduction runs a warp per output.
  const int64_t threads = rows_[index] ? count * 32 : count;
  return CudaStatus(
      cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[index]), dim3(BlocksFor(threads)),
                       dim3(kThreadsPerBlock), args, 0, stream),
      what + " (fused kernel launch)");
}

}  // namespace cuda
}  // namespace alpa
