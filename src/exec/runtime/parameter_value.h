// A parameter's whole initial value as a runner loads it: looked up and checked against the
// parameter op's shape, the same way whatever runs the program (the CPU runtime, the CUDA one).
#pragma once

#include <cstdint>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/runtime/device_runtime_types.h"

namespace alpa {

// value(tensor), checked: kInvalidArgument naming the tensor (and `device`) when there is no
// value or it has another shape or element count than the op.
Result<const HostTensor*> CheckedParameterValue(const ParameterValue& value, const Graph& graph,
                                                int32_t tensor, int32_t device);

}  // namespace alpa
