// Tensors in GPU memory as the CUDA backend's kernels see them, and what a kernel launch needs.
// Shared by the kernels (kernels.h) and the runner that owns the buffers (cuda_runner.h).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {

class DnnConvolutions;  // dnn_convolution.h

// A dense row-major tensor in device memory. `storage` is the element type of the memory: the
// op's dtype, or f32 for a 16-bit float value the program keeps unrounded (a partial sum that a
// later reduction completes: Instruction::round false).
struct DeviceTensor {
  void* data = nullptr;
  Dims shape;
  DType storage = DType::kF32;

  int64_t elements() const { return ElementCountOf(shape); }
};

// Device memory that a launch may use for its own temporaries until the next launch on the
// same stream (everything of one runner runs in order on one compute stream, so reuse is safe).
class Scratch {
 public:
  virtual ~Scratch() = default;
  // At least `bytes` bytes, 256-byte aligned; kResourceExhausted (or the CUDA error) on failure.
  virtual Result<void*> Reserve(size_t bytes) = 0;
};

struct LaunchContext {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t blas = nullptr;
  void* blas_workspace = nullptr;  // for cuBLASLt's algorithms
  size_t blas_workspace_bytes = 0;
  // cuBLAS for the GEMMs cuBLASLt's heuristic offers no algorithm for (cublasGemmStridedBatchedEx).
  cublasHandle_t gemm = nullptr;
  bool allow_tf32 = false;
  Scratch* scratch = nullptr;
  // cuDNN for convolutions (dnn_convolution.h); null: the direct kernel.
  DnnConvolutions* dnn = nullptr;
};

}  // namespace cuda
}  // namespace alpa
