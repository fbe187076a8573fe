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
                             int32_t stage, int64_t microbatches);

// Makes `plan` a plan for `kind`: its stages' in_flight and memory_bytes (from `memory`, one
// model per stage), its peak and its prediction (EstimatePlanIteration: the once-per-iteration
// transfers must already be charged, as PredictPlanIteration leaves them).
void ApplySchedule(PipelinePlan& plan, PipelineScheduleKind kind,
                   const std::vector<StageMemory>& memory);

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
