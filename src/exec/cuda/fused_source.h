// The CUDA source of fused elementwise kernels (fusion_plan.h), compiled at run time
// (runtime_compiler.h). Each group becomes one kernel, `alpa_fused` in a unit of its own, taking
// (void* out, AlpaFusedInputs in, AlpaFusedStores st, long long count) with `in.p[k]` group
// input k and `st.p[k]` the buffer of its store k (a merged group's, written after every value
// is computed, so that a buffer both read and stored at the same element is read first). Its
// per-element math is float_math.h's (FloatOpValue, RoundFloatTo, LoadFloat), evaluated node by
// node as FusedValueAt does on the host, with the group's shapes and dtypes written in as
// constants; a reduction group sums in double with kernel_math.h's CombineReduce and stores its
// result with FinishValue / StoreElement, a warp per output (`count` is the outputs). A packed
// kernel (FusedKernelPacks) takes 8 elements per thread (`count` is elements / 8) and needs every
// input and the output 16-byte aligned; the other takes one element per thread.
#pragma once

#include <string>
#include <vector>

#include "exec/cuda/fusion_plan.h"

namespace alpa {
namespace cuda {

// Whether group g's kernel is the packed one: its elements a multiple of 8 and every broadcast
// input read along its last dim in runs of 8 (the same element, or 8 consecutive ones).
bool FusedKernelPacks(const FusedGroup& g);

// The name of the kernel in every translation unit of a FusedSource.
constexpr const char* kFusedKernelName = "alpa_fused";

// The kernels of a program's groups, one translation unit each (compiled separately, in
// parallel, and cached by their text). Groups that differ only in their buffers (the same chain
// in every layer and microbatch) share one kernel.
struct FusedSource {
  std::vector<std::string> units;
  std::vector<size_t> kernel_of_group;  // per group: the index of its unit
};
FusedSource FusedKernelsSource(const std::vector<FusedGroup>& groups);

}  // namespace cuda
}  // namespace alpa
