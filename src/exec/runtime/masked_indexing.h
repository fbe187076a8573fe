// gather and scatter_add on a device that holds rows [offset, offset + local) of the table axis
// (of `size` rows in all): indices are clamped into the whole axis as the IR says, and an index
// outside the device's rows contributes nothing (a zero row for gather: the result is this
// device's addend of a partial sum).
#pragma once

#include <cstdint>

#include "exec/cpu/interpreter.h"

namespace alpa {

void MaskedGather(const Op& op, const HostTensor& x, const HostTensor& indices, int64_t offset,
                  int64_t size, HostTensor& out);
void MaskedScatterAdd(const Op& op, const HostTensor& x, const HostTensor& indices,
                      const HostTensor& updates, int64_t offset, int64_t size, HostTensor& out);

}  // namespace alpa
