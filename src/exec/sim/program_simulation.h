// The simulator on the executor's device programs: a plan lowered to programs (lower_plan.h),
// every instruction priced by the cost model (program_pricing.h), run by the pipeline simulator
// (pipeline_simulator.h) under the lowering's own schedule. So prediction, simulation and
// execution share one schedule, and the simulation prices what runs (the collectives the
// lowering emits, its reshardings and bookkeeping), not the plan's own figures.
//
// Compact programs. Every microbatch's forward (backward) task runs the same instructions on
// other buffers, so the plan is lowered for min(B, 2) microbatches and the last one's tasks stand
// for every microbatch (from the second on, a backward also adds its gradients to the sums: the
// steady state). The simulator then runs the stage's schedule for all B microbatches over them.
// This keeps the programs small whatever B is (a full lowering of gpt-350m at B = 512 has 5.7
// million instructions per device).
//
// Per stage, on its slowest device (bookkeeping reported, not simulated: program_pricing.h):
//   forward_seconds, backward_seconds  the priced instructions of one forward / backward task
//                                      (under ZB-H1 the backward is both of its tasks, input
//                                      gradient and weight gradient, on the same device)
//   weight_gradient_seconds            of those, the weight-gradient task's (0 under 1F1B and
//                                      GPipe, whose programs have no such task)
//   gradient_sync_seconds              the setup (zeroed accumulators) and the update task:
//                                      gradient synchronisation, optimizer, refreshed copies,
//                                      plus the messages the stage receives there (a tied
//                                      weight's gradient, its refreshed copy): per tensor the
//                                      TransferSeconds of its moves, as the planner times them
//   update_seconds                     0
//   activation_bytes, persistent_bytes from the plan, as SimInputFromPlan
// Transfers: the sends of that microbatch's forward (backward) tasks, one transfer per
// (receiving stage, tensor), each device's sends to one peer a move.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/sim/pipeline_simulator.h"
#include "exec/sim/program_pricing.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/planner.h"

namespace alpa {

struct ProgramSimulationInput {
  PipelineSimInput input;
  std::vector<ProgramStagePrice> stages;
  int64_t lowered_microbatches = 0;
};

// `whole_batch`: the model's graph for the whole batch (LowerOptions::whole_batch), or null.
// Errors: the lowering's (kUnsupported for a plan the executor cannot run), the pricer's,
// kUnsupported for an interleaved plan (virtual_stages > 1: a device's programs serve several
// stages, which the pricing here does not tell apart), and kInvalidArgument from
// SimInputFromPlan and ValidatePipelineSimInput.
Result<ProgramSimulationInput> SimInputFromPrograms(const PipelinePlan& plan,
                                                    const Graph* whole_batch,
                                                    const Cluster& cluster,
                                                    PipelineScheduleKind schedule);

}  // namespace alpa
