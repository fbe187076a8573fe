// Multi-output fusion: a fused group whose results one later group alone reads is merged into
// that group (the optimizer's update of one weight: the new second and first moments, each a
// group of its own read only by the new master weight's, which only the bf16 copy's group reads,
// become one kernel that reads the gradient, the moments and the master weight once and writes
// each new value once). The merged kernel runs at the later root. A result the copy into its
// persistent buffer moves (the new state) is stored there directly, in place of the old value
// the kernel read at the same element (only where every read of that buffer in the kernel is of
// that same element); a result only the later group read stays in registers. A merge is made
// only where both groups are elementwise over the same number of elements, within the limits of
// one kernel (core/ir/fusion.h: inputs, nodes, stores), where nothing between the two roots
// writes what the earlier group reads (but such a copy), and where the inputs it keeps alive
// until the later root (freed between the two) hold no more bytes than the results it never
// stores. The rule looks at what reads each value, not at the order the program runs its ops
// in, so that the planner's model (core/ir/fusion.h SingleReaderFusion) replays it on a graph.
// The merged kernel computes every value as the two kernels did, bit for bit. Host code.
#pragma once

#include <vector>

#include "exec/cuda/attention_plan.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/program/program.h"

namespace alpa {
namespace cuda {

// Merges `groups` (PlanFusion's, in program order of their roots) where the rules above allow,
// with `attention`'s regions run by their kernels; returns the groups left, in the same order.
std::vector<FusedGroup> MergeGroupsIntoTheirReaders(const DeviceProgram& program,
                                                    const std::vector<DType>& storage,
                                                    std::vector<FusedGroup> groups,
                                                    const std::vector<AttentionRegion>& attention);

// Whether the runner merges: unless ALPA_CUDA_MULTI_OUTPUT=0 is in the environment.
bool GroupMergingEnabled();

}  // namespace cuda
}  // namespace alpa
