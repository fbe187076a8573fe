// The lowering: a pipeline plan -> one program per device (program.h).
//
// Per stage, every device of the stage's logical mesh runs the SPMD partition of the stage's
// pieces: each op's local computation on its pieces of the operands (local_op.h), the plan's
// collectives on the edges between ops (in list order, then local slices and zero-fills), the
// resharding between two pieces of the stage (PlanReshard, as the planner prices it), and the
// plan's cross-stage transfers as point-to-point sends and receives of exactly its slice moves.
//
// The step: the stage's tasks in schedule order (pipeline_schedule.h), a forward task
// running the pieces' forward ops in order, a backward task their backward ops in reverse piece
// order (with rematerialization, the forward ops again first). Under interleaved 1F1B a device
// runs every stage of its device group in one program: each stage's set-up, the group's tasks
// in GroupSchedule's order, each lowered as its stage's, then each stage's update. Per-microbatch
// values that the update reads (gradients) are summed over the microbatches and scaled by 1 / B
// (every microbatch graph's loss is a mean over its share of the batch), the collectives on their
// edges into the update run once on the sum, then each piece's update ops run and their results
// replace the parameters and optimizer state. A transfer the plan moves once per iteration (a
// tied weight's gradient contribution) is summed over the microbatches on the sender and sent
// once, at the update. A parameter held by several pieces (a tied embedding) is refreshed from
// the piece that updates it. Every buffer is freed after its last
// use. The data inputs of microbatch k are fed (kFeed) as the device's tile of that microbatch.
#pragma once

#include <cstdint>
#include <functional>

#include "core/util/status.h"
#include "exec/program/program.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/planner.h"

namespace alpa {

struct LowerOptions {
  PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB;
  // The same model's graph for the whole batch (microbatches = 1), when known. With several
  // microbatches, a microbatch's value that the whole-batch op computes as a sum over the batch
  // (a weight gradient) is then kept unrounded until the sum over microbatches is complete,
  // so that the executed step rounds where the one-device step rounds (Instruction::round).
  const Graph* whole_batch = nullptr;
  // Threads lowering the devices' programs (each on its own; the result does not depend on
  // the count): 0 = one per hardware thread.
  int32_t threads = 0;
};

// Errors: kInvalidArgument for a plan without stages or pieces, for a plan of several stages per
// device group (PipelinePlan::virtual_stages > 1) under another schedule than interleaved 1F1B,
// for interleaved 1F1B on a plan of one stage per group, for a schedule that does not fit the
// plan's stages and microbatches (PipelineShapeProblem) and for stages of one group on different
// devices; kUnsupported for what the executor cannot run yet (naming the op; a value moving
// between two stages of one device group); kInternal when the plan's layouts do not fit together
// (a planner bug: the message names the op or edge).
Result<ProgramSet> LowerPlan(const PipelinePlan& plan, const LowerOptions& options = {});

// The same, handing each device's program to `take` as soon as it is lowered (one call at a
// time, from the lowering's threads, devices in no fixed order) instead of keeping it: memory
// then holds a few programs rather than every device's (a plan on thousands of devices has tens
// of millions of instructions). The set's programs are left without code (device, stage and
// planned memory only); take's error ends the lowering with it.
Result<ProgramSet> LowerPlanEach(const PipelinePlan& plan, const LowerOptions& options,
                                 const std::function<Status(DeviceProgram&)>& take);

}  // namespace alpa
