// The CUDA backend in a build without CUDA (ALPA_WITH_CUDA=OFF): there is no GPU to run on.
#include "exec/cuda/cuda_backend.h"

namespace alpa {

int32_t CudaDeviceCount(std::string* why) {
  if (why != nullptr) *why = "libalpa was built without CUDA (ALPA_WITH_CUDA=OFF)";
  return 0;
}

Result<std::unique_ptr<ProgramRunner>> CreateCudaRunner(const DeviceProgram&,
                                                        const CudaBackendOptions&) {
  return Status(StatusCode::kUnsupported,
                "the CUDA backend needs libalpa built with ALPA_WITH_CUDA=ON");
}

}  // namespace alpa
