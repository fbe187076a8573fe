// Interleaved 1F1B layouts of a planned pipeline (pipeline_schedule.h): the P stages of a
// 1F1B answer of the stage DP become P device groups (each keeps its stage's submesh) that run v
// stages each, the layers cut into P v chunks (chunk k on group k % P). Each chunk takes a
// candidate of the stage cost table for its layer range on its group's submesh, so its latency,
// overhead and memory are the intra-op solves' own. The planner builds each layout as a plan
// and keeps it where its prediction beats the 1F1B plan's (planner.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "solvers/planner/stage_costs.h"

namespace alpa {

// The most stages per device group the planner tries.
constexpr int32_t kMaxVirtualStages = 8;

struct InterleavedLayout {
  int32_t virtual_stages = 0;       // v >= 2
  std::vector<int32_t> candidates;  // P v stages, pipeline order: indices into the table
};

// The layouts for v = 2 .. max_virtual_stages of the answer `chosen` (candidate indices, in
// pipeline order, over `num_layers` layer groups with `microbatches` per iteration): none when
// it has fewer than 2 stages, microbatches is not a multiple of its stage count, or P v exceeds
// the layer groups. Chunks: the layer groups cut so that the largest chunk's latency (the sum of
// its layer groups' fastest single-group candidates on its device group's submesh) is least.
// Per device group, the candidates of its chunks with the least summed B t + o whose summed
// bytes (at the in-flight counts interleaving gives each chunk) fit the group's memory
// (group_memory: per stage of `chosen`, the bytes of its devices, 0 for no limit): a Pareto
// frontier of (bytes, seconds) over the group's chunks, at most 256 wide. A layout where some
// group fits no choice is left out.
std::vector<InterleavedLayout> InterleavedLayouts(const StageCostTable& table,
                                                  const std::vector<int32_t>& chosen,
                                                  int32_t num_layers, int64_t microbatches,
                                                  const std::vector<int64_t>& group_memory,
                                                  int32_t max_virtual_stages);

// A device group's submesh (an index into the table's submeshes) and pool.
struct GroupMesh {
  int32_t submesh = 0, pool = 0;
};

// The same for device groups given directly (InterleavedLayouts: the submeshes of a 1F1B answer).
std::vector<InterleavedLayout> GroupLayouts(const StageCostTable& table,
                                            const std::vector<GroupMesh>& groups,
                                            int32_t num_layers, int64_t microbatches,
                                            const std::vector<int64_t>& group_memory,
                                            int32_t max_virtual_stages);

// Megatron-LM's groupings of a one-type cluster of `devices`: for every submesh of the table whose
// copies tile the devices at least twice, that many groups of it (pool 0).
std::vector<std::vector<GroupMesh>> UniformGroupings(const StageCostTable& table, int64_t devices);

}  // namespace alpa
