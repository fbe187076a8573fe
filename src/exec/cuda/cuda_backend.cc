// The CUDA backend's entry points (cuda_backend.h).
#include "exec/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include "exec/cuda/cuda_runner.h"

namespace alpa {

int32_t CudaDeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error state
    if (why != nullptr) *why = std::string("no usable GPU: ") + cudaGetErrorString(e);
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "no GPU found";
  return count;
}

Result<std::unique_ptr<ProgramRunner>> CreateCudaRunner(const DeviceProgram& program,
                                                        const CudaBackendOptions& options) {
  Result<std::unique_ptr<CudaRunner>> runner = CudaRunner::Create(program, options);
  if (!runner.ok()) return runner.status();
  return std::unique_ptr<ProgramRunner>(std::move(runner).value());
}

}  // namespace alpa
