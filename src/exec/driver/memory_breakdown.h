// Memory per device, measured against planned, by component.
//
// Measured: a device program's live bytes (elements times dtype bytes) walked instruction by
// instruction exactly as the runtime allocates them (a buffer is live from the instruction that
// first writes it to its kFree; parameters, optimizer state and the persistent gradient
// accumulators are live throughout, as in every step after the first), and the live buffers at
// the peak split by what they hold.
//
// Planned: the planner's model of the device's stage (stage_costs.h), rebuilt from the plan's
// pieces and their auto-sharding solutions: persistent bytes (parameters, optimizer state,
// gradients), plus the larger of the forward-backward peak (activations per microbatch in
// flight times the microbatches the schedule keeps in flight, and the largest piece's working
// memory) and the update's peak, plus under ZB-H1 one activation per weight gradient pending;
// under interleaved 1F1B the sum of that over the stages of the device's group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/program/program.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/unit_profile.h"

namespace alpa {

struct MeasuredMemory {
  int64_t peak_bytes = 0;
  int64_t peak_instruction = -1;  // index into the program's code (-1: before the first)
  // Live bytes at the peak by what the buffers hold:
  int64_t parameters = 0, optimizer_state = 0;
  int64_t gradient_accumulators = 0;    // the other persistent buffers
  int64_t activations = 0;              // forward values a later backward instruction reads
  int64_t activation_microbatches = 0;  // distinct microbatches among them
  int64_t free_values = 0;  // values of free and fused ops (constants, masks, broadcasts)
  int64_t forward_temporaries = 0, backward_temporaries = 0, update_temporaries = 0;
  int64_t communicated = 0;  // of the non-persistent ones: written by a collective or a receive
  // The peak of the same walk without the values of free and fused ops, which the CPU runtime
  // materialises (whole, then sliced) where a compiler fuses them into their readers and the
  // planner counts nothing.
  int64_t peak_without_free_values = 0;
};

// The program's memory over one step (after the first). `graph` is the program set's graph;
// `free_op` per op of it: whether its plan pieces compute it as a free or fused op.
MeasuredMemory MeasureProgramMemory(const DeviceProgram& program, const Graph& graph,
                                    const std::vector<char>& free_op);

// Per op of the plan's graph: whether a piece computes it as a free or fused op.
std::vector<char> FreeOpsOfPlan(const PipelinePlan& plan);

struct PlannedMemory {
  UnitMemory persistent;   // parameters, optimizer_state, gradients summed over the pieces
  int64_t activation = 0;  // per microbatch in flight (checkpoints under remat)
  int64_t in_flight = 0;   // microbatches the schedule keeps in flight on the stage
  // Of those, the weight gradients a schedule that splits the backward keeps pending
  // (WeightGradientsPending); each charged one activation more (the output gradients it keeps).
  int64_t weight_gradients_pending = 0;
  int64_t working = 0;
  int64_t update = 0;  // beyond persistent at the update's peak
  // max(persistent + in_flight * activation + working, persistent + update)
  //   + weight_gradients_pending * activation (saturating; the planner's model)
  int64_t total() const;
};

// The planner's memory model of `stage` of `plan` under `schedule`, from the pieces' solutions
// as the planner made them. Errors: PlannedStageMemoryModel's; kInvalidArgument when the model
// does not give the plan's memory_bytes at its in_flight (a plan read from JSON, whose pieces
// do not carry their solves' bytes per op).
Result<PlannedMemory> PlannedStageMemory(const PipelinePlan& plan, int32_t stage,
                                         PipelineScheduleKind schedule);

// The same for each of the stages a device runs (DeviceProgram::stages: several under
// interleaved 1F1B, whose device's planned memory is the sum of theirs, PlannedTotal).
// kInvalidArgument for a stage the plan does not have; PlannedStageMemory's errors.
Result<std::vector<PlannedMemory>> PlannedDeviceMemory(const PipelinePlan& plan,
                                                       const std::vector<int32_t>& stages,
                                                       PipelineScheduleKind schedule);
// The sum of the stages' totals (saturating).
int64_t PlannedTotal(const std::vector<PlannedMemory>& stages);

// One table row: measured components, planned components, the ratio. With several stages,
// each stage's planned components in parentheses, then their sum.
std::string MemoryBreakdownRow(const MeasuredMemory& measured, const PlannedMemory& planned);
std::string MemoryBreakdownRow(const MeasuredMemory& measured,
                               const std::vector<PlannedMemory>& stages);
// Its header.
std::string MemoryBreakdownHeader();

}  // namespace alpa
