// Pipeline schedules (pipeline_schedule.h).
#include "solvers/pipeline/pipeline_schedule.h"

#include <algorithm>

namespace alpa {

bool SplitsBackward(PipelineScheduleKind kind) {
  return kind == PipelineScheduleKind::kZeroBubbleH1;
}

const char* PipelineScheduleName(PipelineScheduleKind kind) {
  switch (kind) {
    case PipelineScheduleKind::kGPipe:
      return "gpipe";
    case PipelineScheduleKind::kOneFOneB:
      return "1f1b";
    case PipelineScheduleKind::kZeroBubbleH1:
      return "zb-h1";
  }
  return "?";
}

namespace {

// ZB-H1 (pipeline_schedule.h): 1F1B's order with the weight gradient of each backward run right
// after it, except that `stage` keeps its `stage` most recent ones pending until the end.
std::vector<PipelineTask> ZeroBubbleH1(int32_t stages, int32_t stage, int64_t microbatches) {
  std::vector<PipelineTask> tasks;
  tasks.reserve(static_cast<size_t>(3 * microbatches));
  const int64_t warmup = std::min<int64_t>(stages - stage - 1, microbatches);
  int64_t forward = 0, backward = 0, weight = 0;
  auto run_backward = [&] {
    tasks.push_back({PipelineTaskKind::kBackward, backward++});
    if (backward - weight > stage) tasks.push_back({PipelineTaskKind::kWeightGradient, weight++});
  };
  for (; forward < warmup; ++forward) tasks.push_back({PipelineTaskKind::kForward, forward});
  while (forward < microbatches) {
    tasks.push_back({PipelineTaskKind::kForward, forward++});
    run_backward();
  }
  while (backward < microbatches) run_backward();
  while (weight < microbatches) tasks.push_back({PipelineTaskKind::kWeightGradient, weight++});
  return tasks;
}

}  // namespace

std::vector<PipelineTask> StageSchedule(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                                        int64_t microbatches) {
  std::vector<PipelineTask> tasks;
  if (stages < 1 || stage < 0 || stage >= stages || microbatches < 1) return tasks;
  if (kind == PipelineScheduleKind::kZeroBubbleH1) return ZeroBubbleH1(stages, stage, microbatches);
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
  if (kind == PipelineScheduleKind::kZeroBubbleH1) return std::min<int64_t>(stages, microbatches);
  return std::min<int64_t>(stages - stage, microbatches);
}

int64_t WeightGradientsPending(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                               int64_t microbatches) {
  if (stages < 1 || stage < 0 || stage >= stages || microbatches < 1) return 0;
  if (kind != PipelineScheduleKind::kZeroBubbleH1) return 0;
  return std::min<int64_t>(stage, microbatches - 1);
}

}  // namespace alpa
