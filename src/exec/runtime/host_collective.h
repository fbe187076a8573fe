// A collective instruction (kAllReduce, kAllGather, kReduceScatter, kAllToAll) over host values:
// the chunk layout every backend uses with the communicator (exec/comm), which moves doubles.
// The CPU runtime runs it on its buffers; the CUDA backend stages its device buffers through it.
#pragma once

#include <cstdint>

#include "core/util/status.h"
#include "exec/comm/communicator.h"
#include "exec/cpu/interpreter.h"
#include "exec/program/program.h"

namespace alpa {

// out = the collective `in` of `src` (this device's input, of in.in[0]'s shape) with `device`'s
// position in in.group; `out` must have the shape of in.out's buffer and its elements. Leaves
// rounding to the caller (in.round). A communicator error is returned as is.
Status RunCollectiveOnHost(Communicator& comm, const Instruction& in, int32_t device,
                           const HostTensor& src, HostTensor& out);

}  // namespace alpa
