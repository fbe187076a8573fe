// The CUDA backend of the executor: runs a device's program (exec/program) on a GPU, with the
// buffers in device memory, the ops as CUDA kernels and cuBLASLt / cuDNN calls on one compute
// stream, and the moves between devices through a communicator (exec/comm, or NCCL).
//
// Built with ALPA_WITH_CUDA=ON; in a build without it (cuda_backend_without_cuda.cc) every entry
// answers kUnsupported "built without CUDA" and CudaDeviceCount() is 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/util/status.h"
#include "exec/program/program.h"
#include "exec/runtime/program_runner.h"

namespace alpa {

struct CudaBackendOptions {
  // The GPU this runner uses; -1: program.device modulo the GPUs this process sees (several
  // devices of a plan may share one GPU, each with its own stream).
  int32_t gpu = -1;
  // f32 contractions on tensor cores in TF32 (10-bit mantissa): faster, less exact. Off by
  // default so that f32 plans match the interpreter within f32 tolerances.
  bool allow_tf32 = false;
};

// GPUs this process can use; 0 when there is none, with the reason in *why when given ("no CUDA
// driver", "built without CUDA", ...).
int32_t CudaDeviceCount(std::string* why = nullptr);

// A runner for `program` (which must outlive it) on a GPU. kUnsupported when there is no GPU or
// the build has no CUDA; kUnsupported naming the op for what the backend cannot run.
Result<std::unique_ptr<ProgramRunner>> CreateCudaRunner(const DeviceProgram& program,
                                                        const CudaBackendOptions& options);

}  // namespace alpa
