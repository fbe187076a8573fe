// The pipeline schedule of a plan: 1F1B, or ZB-H1 (pipeline_schedule.h) where the user lets the
// planner search it, every stage fits its larger memory and the prediction is faster.
#pragma once

#include <cstdint>
#include <vector>

#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/stage_costs.h"

namespace alpa {

// A stage's bytes per device under `kind`: its model with MicrobatchesInFlight microbatches,
// plus one activation's worth per weight gradient left pending (WeightGradientsPending; the
// bound on the output gradients such a microbatch keeps for it). Saturates at INT64_MAX.
int64_t ScheduledStageMemory(const StageMemory& memory, PipelineScheduleKind kind, int32_t stages,
                             int32_t stage, int64_t microbatches, int32_t virtual_stages = 1);

// Per device group of `plan` (PipelineGroups(stages, plan.virtual_stages): a group per stage
// unless interleaved), the bytes per device: the sum of its stages' memory_bytes (each stage's
// model counts its own working memory at its own peak in flight, so the sum bounds the group's
// peak from above). Saturates at INT64_MAX.
std::vector<int64_t> GroupMemoryBytes(const PipelinePlan& plan);
// The same from per-stage bytes (pipeline order) with `virtual_stages` stages per group.
std::vector<int64_t> GroupSums(const std::vector<int64_t>& stage_bytes, int32_t virtual_stages);
// The largest of those: what PipelinePlan::peak_memory_bytes holds.
int64_t PlanPeakMemory(const PipelinePlan& plan);

// Makes `plan` a plan for `kind` with `virtual_stages` stages per device group: its stages'
// in_flight and memory_bytes (from `memory`, one model per stage), its peak and its prediction
// (EstimatePlanIteration: the once-per-iteration transfers must already be charged, as
// PredictPlanIteration leaves them).
void ApplySchedule(PipelinePlan& plan, PipelineScheduleKind kind,
                   const std::vector<StageMemory>& memory, int32_t virtual_stages = 1);

// ZB-H1 for `plan` (a 1F1B plan, predicted) when it has several stages, none recomputes whole
// pieces (the weight gradients would keep recomputed values the model does not count), every
// stage fits `device_memory` under it and its prediction is faster; else the plan stays as it
// is. Returns whether it switched.
bool ChooseZeroBubble(PipelinePlan& plan, const std::vector<StageMemory>& memory,
                      int64_t device_memory);
// The same with each stage's own device memory (aligned with plan.stages; a mixed cluster's
// stages fit their pools' devices).
bool ChooseZeroBubble(PipelinePlan& plan, const std::vector<StageMemory>& memory,
                      const std::vector<int64_t>& stage_device_memory);

}  // namespace alpa
