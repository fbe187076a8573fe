// The fused elementwise kernels of one program (fusion_plan.h), compiled for the current GPU
// (fused_source.h, runtime_compiler.h), loaded, and launched on a stream.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "exec/cuda/fusion_plan.h"

namespace alpa {
namespace cuda {

class FusedKernels {
 public:
  // Compiles and loads the kernels of `groups` on the calling thread's GPU (already selected).
  // kInternal naming `what` with the compiler's log or the CUDA error.
  static Result<std::unique_ptr<FusedKernels>> Load(const std::vector<FusedGroup>& groups,
                                                    const std::string& what);
  ~FusedKernels();
  FusedKernels(const FusedKernels&) = delete;
  FusedKernels& operator=(const FusedKernels&) = delete;

  // Enqueues group `index` on `stream`: `inputs` in the order of its FusedGroup::inputs,
  // `outputs` its root's buffer and then its stores' (FusedGroupWrites). Returns the launch's
  // error naming `what`.
  Status Launch(size_t index, const std::vector<const void*>& inputs,
                const std::vector<void*>& outputs, cudaStream_t stream,
                const std::string& what) const;

 private:
  FusedKernels() = default;

  std::vector<cudaLibrary_t> libraries_;  // one per distinct kernel
  std::vector<cudaKernel_t> kernels_;     // per group
  std::vector<char> packed_;
  std::vector<int64_t> elements_;
  std::vector<char> rows_;       // a reduction group
  std::vector<int32_t> stores_;  // per group: its stores (outputs besides the root's)
};

}  // namespace cuda
}  // namespace alpa
