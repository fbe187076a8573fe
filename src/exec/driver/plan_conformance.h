// What runs is what was planned: checks the moves a run executed (its first step, per device)
// against the plan, from the plan's own data and the stage meshes, independently of the
// lowering.
//   - Every collective the programs ran on behalf of a planned collective is of the planned
//     kind, runs over the planned group (the stage's devices that differ from the running device
//     only on the collective's mesh dims of size > 1) and, when it ran as one instruction, moves
//     the planned bytes (the cost model's b: the local input, times the group size for
//     all-gather and all-to-all).
//   - Every planned collective over a mesh dim of size > 1 ran on every device of its stage,
//     the same number of times for every microbatch it ran in.
//   - Per device and microbatch, the bytes sent and received for each tensor that crosses stages
//     equal the plan's slice moves of that tensor from and to that device; for a transfer the
//     plan moves once per iteration (a tied weight's gradient contribution), per step, in one
//     message per slice move rather than one per microbatch.
//   - Every all-gather completing a transfer's local all-gather gathers a tensor that a transfer
//     into the stage lands, over the landing layout's extra mesh dims.
// Collectives and moves the plan does not list (resharding between two pieces of a stage, which
// the planner prices in the stage's latency; reductions before a partial-sum transfer; the
// loss's all-reduce; refreshing a tied weight's copy) are counted, not checked.
#pragma once

#include <cstdint>

#include "core/util/status.h"
#include "exec/driver/plan_run.h"

namespace alpa {

struct ConformanceSummary {
  int64_t planned_collectives = 0;   // planned collectives over mesh dims of size > 1
  int64_t executed_collectives = 0;  // collective instructions run for them (all devices)
  int64_t piece_edge_collectives = 0, extra_collectives = 0;
  // All-gathers completing a transfer's local all-gather (checked: an all-gather of a tensor a
  // transfer into the stage lands, over its landing layout's mesh dims).
  int64_t transfer_gathers = 0;
  int64_t planned_transfer_bytes = 0, sent_transfer_bytes = 0;  // per step, all devices
};

// Ok, or kInternal naming the device, the collective or the tensor that differs.
Status CheckExecutedAgainstPlan(const PipelinePlan& plan, const PlanRunReport& run,
                                ConformanceSummary* summary = nullptr);

}  // namespace alpa
