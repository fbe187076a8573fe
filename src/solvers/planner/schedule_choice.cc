// The pipeline schedule of a plan (schedule_choice.h).
#include "solvers/planner/schedule_choice.h"

#include <algorithm>
#include <limits>

#include "core/util/wide_int.h"
#include "solvers/pipeline/pipeline_estimate.h"
#include "solvers/planner/plan_transfers.h"

namespace alpa {

int64_t ScheduledStageMemory(const StageMemory& memory, PipelineScheduleKind kind, int32_t stages,
                             int32_t stage, int64_t microbatches, int32_t virtual_stages) {
  return ClampToInt64(
      Int128{memory.With(MicrobatchesInFlight(kind, stages, stage, microbatches, virtual_stages))} +
      Int128{WeightGradientsPending(kind, stages, stage, microbatches, virtual_stages)} *
          memory.activation);
}

std::vector<int64_t> GroupSums(const std::vector<int64_t>& stage_bytes, int32_t virtual_stages) {
  const int32_t stages = static_cast<int32_t>(stage_bytes.size());
  const int32_t groups = std::max(1, PipelineGroups(stages, virtual_stages));
  std::vector<Int128> sums(static_cast<size_t>(std::min(groups, stages)), Int128{0});
  for (size_t s = 0; s < stage_bytes.size(); ++s) {
    sums[s % sums.size()] += Int128{stage_bytes[s]};
  }
  std::vector<int64_t> bytes;
  for (const Int128& b : sums) bytes.push_back(ClampToInt64(b));
  return bytes;
}

std::vector<int64_t> GroupMemoryBytes(const PipelinePlan& plan) {
  std::vector<int64_t> stage_bytes;
  for (const PlannedStage& st : plan.stages) stage_bytes.push_back(st.memory_bytes);
  return GroupSums(stage_bytes, plan.virtual_stages);
}

int64_t PlanPeakMemory(const PipelinePlan& plan) {
  int64_t peak = 0;
  for (int64_t b : GroupMemoryBytes(plan)) peak = std::max(peak, b);
  return peak;
}

void ApplySchedule(PipelinePlan& plan, PipelineScheduleKind kind,
                   const std::vector<StageMemory>& memory, int32_t virtual_stages) {
  plan.schedule = kind;
  plan.virtual_stages = virtual_stages;
  const int32_t stages = static_cast<int32_t>(plan.stages.size());
  for (int32_t s = 0; s < stages; ++s) {
    PlannedStage& st = plan.stages[static_cast<size_t>(s)];
    st.in_flight = MicrobatchesInFlight(kind, stages, s, plan.microbatches, virtual_stages);
    st.memory_bytes = ScheduledStageMemory(memory[static_cast<size_t>(s)], kind, stages, s,
                                           plan.microbatches, virtual_stages);
  }
  plan.peak_memory_bytes = PlanPeakMemory(plan);
  EstimatePlanIteration(plan);
}

bool ChooseZeroBubble(PipelinePlan& plan, const std::vector<StageMemory>& memory,
                      int64_t device_memory) {
  return ChooseZeroBubble(plan, memory, std::vector<int64_t>(plan.stages.size(), device_memory));
}

bool ChooseZeroBubble(PipelinePlan& plan, const std::vector<StageMemory>& memory,
                      const std::vector<int64_t>& stage_device_memory) {
  const int32_t stages = static_cast<int32_t>(plan.stages.size());
  if (stages < 2 || memory.size() != plan.stages.size() ||
      stage_device_memory.size() != plan.stages.size()) {
    return false;
  }
  for (int32_t s = 0; s < stages; ++s) {
    if (plan.stages[static_cast<size_t>(s)].remat == Recompute::kFull) return false;
    const int64_t bytes =
        ScheduledStageMemory(memory[static_cast<size_t>(s)], PipelineScheduleKind::kZeroBubbleH1,
                             stages, s, plan.microbatches);
    const int64_t device_memory = stage_device_memory[static_cast<size_t>(s)];
    if (device_memory > 0 && bytes > device_memory) return false;
  }
  // ZB-H1's prediction is its schedule evaluated; against 1F1B's evaluated too (its closed form
  // is loose with fewer microbatches than stages), so that only the schedule makes the gain.
  const PipelineScheduleKind before = plan.schedule;
  const double one_f_one_b = std::min(
      plan.iteration_seconds, EvaluateSchedule(PipelineScheduleKind::kOneFOneB,
                                               PlanEstimateStages(plan), plan.microbatches));
  ApplySchedule(plan, PipelineScheduleKind::kZeroBubbleH1, memory);
  if (plan.iteration_seconds < one_f_one_b) return true;
  ApplySchedule(plan, before, memory);
  return false;
}

}  // namespace alpa
