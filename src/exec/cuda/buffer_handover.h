// Moves that need no kernel: a copy (kCopy), or a reshape, whose source buffer nothing reads
// after it and which is freed next, hands its memory to the target instead of being copied
// (the optimizer's new state into its persistent buffer, a contraction's output into the shape
// of the next op). The runner swaps the two buffers' memory: the source's kFree then frees what
// the target held, and the bytes live at every instruction are those of the copy.
#pragma once

#include <vector>

#include "core/util/dtype.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/program/program.h"

namespace alpa {
namespace cuda {

// Per instruction of `program` run with `fusion`: 1 where the runner may hand the source's
// memory to the target. Only where both buffers have the same element count, storage and dtype
// (so the move would not change a bit), the source is not persistent, its kFree follows within a
// few instructions (and is not deferred past a fused group), and no instruction or fused group in
// between reads or writes it.
std::vector<char> PlanHandovers(const DeviceProgram& program, const std::vector<DType>& storage,
                                const FusionPlan& fusion);

}  // namespace cuda
}  // namespace alpa
