// Convolutions on cuDNN: the forward and backward-data convolutions of cuDNN's graph API
// (backend descriptors; dnn_convolution_geometry.h says which op is which), one execution plan
// per geometry, data types and alignments, made on first use and kept for the runner's life.
// Engines are taken from cuDNN's heuristics (mode A, then the fallback list) and only those whose
// numerics stay within the kernels' contract (kernels.h: sums in at least f32, the result rounded
// once): no FFT or Winograd transforms, no reduced-precision reductions, no non-deterministic
// engines, and for f32 no TF32 tensor cores unless the runner allows them
// (CudaBackendOptions::allow_tf32). A geometry no engine takes is remembered as such, and the
// caller (convolution.cu) runs its direct kernel instead.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/util/dtype.h"
#include "core/util/status.h"
#include "exec/cuda/dnn_convolution_geometry.h"

struct cudnnContext;

namespace alpa {
namespace cuda {

// What an execution plan is made for, in the op's terms (its input, kernel and result; which
// of cuDNN's tensors each is depends on the geometry's direction).
struct DnnConvRequest {
  DnnConvGeometry geometry;
  DType type = DType::kF32;         // the input's and kernel's elements: f32, f16 or bf16
  DType result_type = DType::kF32;  // the result's: `type` or f32
  // Per tensor, the largest power of two (at most 16) that divides the pointers the plan will
  // run on: at least the element's size.
  int64_t input_alignment = 16, kernel_alignment = 16, result_alignment = 16;
  bool allow_tf32 = false;
};

struct DnnConvPlan;  // the descriptors of one execution plan (dnn_convolution.cc)

class DnnConvolutions {
 public:
  // A cuDNN handle on the current GPU, cuDNN loaded on the first call (dnn_loader.h).
  // kUnsupported saying why when it cannot be made (no cuDNN 9 to load: the loader's message
  // with what to install; no GPU or a sub-library missing: cuDNN's status and message).
  static Result<std::unique_ptr<DnnConvolutions>> Create();
  ~DnnConvolutions();
  DnnConvolutions(const DnnConvolutions&) = delete;
  DnnConvolutions& operator=(const DnnConvolutions&) = delete;

  // The plan for `request`, made on the first call and kept; nullptr when no engine keeps the
  // numerics (also kept). kInternal naming `what` when a descriptor cannot be made.
  Result<const DnnConvPlan*> PlanFor(const DnnConvRequest& request, const std::string& what);
  // Device bytes the plan needs as workspace.
  static int64_t WorkspaceBytes(const DnnConvPlan& plan);
  // result = the op on `stream` (asynchronous), with `workspace` of WorkspaceBytes; `kernel` as
  // the geometry has it (backward data: dims 0 and 1 swapped).
  Status Run(const DnnConvPlan& plan, cudaStream_t stream, const void* input, const void* kernel,
             void* result, void* workspace, const std::string& what);

 private:
  explicit DnnConvolutions(cudnnContext* handle);

  cudnnContext* handle_ = nullptr;
  std::map<std::string, std::unique_ptr<DnnConvPlan>> plans_;  // by request; nullptr: none
};

// Builds and finalizes the tensor, convolution and operation descriptors of `request`: cuDNN's
// own check of the geometry and types, which needs no GPU (the operation graph and its plans
// do). kUnsupported when cuDNN cannot be loaded; kInternal with cuDNN's message naming `what`
// when it refuses a descriptor.
Status CheckDnnConvolutionOperation(const DnnConvRequest& request, const std::string& what);

// Whether the runner uses cuDNN for convolutions: unless ALPA_CUDA_CUDNN=0 is in the
// environment (then every convolution runs the direct kernel).
bool DnnConvolutionsEnabled();

}  // namespace cuda
}  // namespace alpa
