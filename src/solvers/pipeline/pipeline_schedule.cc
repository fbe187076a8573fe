// Pipeline schedules (pipeline_schedule.h).
#include "solvers/pipeline/pipeline_schedule.h"

#include <algorithm>

namespace alpa {

std::vector<PipelineTask> StageSchedule(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                                        int64_t microbatches) {
  std::vector<PipelineTask> tasks;
  if (stages < 1 || stage < 0 || stage >= stages || microbatches < 1) return tasks;
  tasks.reserve(static_cast<size_t>(2 * microbatches));
  if (kind == PipelineScheduleKind::kGPipe) {
    for (int64_t m = 0; m < microbatches; ++m) tasks.push_back({PipelineTaskKind::kForward, m});
    for (int64_t m = microbatches - 1; m >= 0; --m) {
      tasks.push_back({PipelineTaskKind::kBackward, m});
    }
    return tasks;
  }
  const int64_t warmup = std::min<int64_t>(stages - stage - 1, microbatches);
  int64_t forward = 0, backward = 0;
  for (; forward < warmup; ++forward) tasks.push_back({PipelineTaskKind::kForward, forward});
  while (forward < microbatches) {
    tasks.push_back({PipelineTaskKind::kForward, forward++});
    tasks.push_back({PipelineTaskKind::kBackward, backward++});
  }
  while (backward < microbatches) tasks.push_back({PipelineTaskKind::kBackward, backward++});
  return tasks;
}

int64_t MicrobatchesInFlight(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                             int64_t microbatches) {
  if (stages < 1 || stage < 0 || stage >= stages || microbatches < 1) return 0;
  if (kind == PipelineScheduleKind::kGPipe) return microbatches;
  return std::min<int64_t>(stages - stage, microbatches);
}

}  // namespace alpa
