// What a runner loads from the driver, looked up and checked the same way whatever runs the
// program (the CPU runtime, the CUDA one): a parameter's whole initial value, and a data input's
// value for a microbatch.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/runtime/device_runtime_types.h"

namespace alpa {

// value(tensor), checked: kInvalidArgument naming the tensor (and `device`) when there is no
// value or it has another shape or element count than the op.
Result<const HostTensor*> CheckedParameterValue(const ParameterValue& value, const Graph& graph,
                                                int32_t tensor, int32_t device);

// input(tensor, microbatch), checked: kInvalidArgument naming the tensor and the microbatch when
// there is none, or naming the shapes when the box (offsets, sizes) lies outside it.
Result<const HostTensor*> CheckedMicrobatchInput(const MicrobatchInput& input, const Graph& graph,
                                                 int32_t tensor, int64_t microbatch,
                                                 const std::vector<int64_t>& offsets,
                                                 const std::vector<int64_t>& sizes);

}  // namespace alpa
