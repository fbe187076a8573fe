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
    case PipelineScheduleKind::kInterleavedOneFOneB:
      return "interleaved-1f1b";
  }
  return "?";
}

bool VirtualStagesFit(PipelineScheduleKind kind, int32_t virtual_stages) {
  return kind == PipelineScheduleKind::kInterleavedOneFOneB ? virtual_stages >= 2
                                                            : virtual_stages == 1;
}

int32_t PipelineGroups(int32_t stages, int32_t virtual_stages) {
  if (stages < 1 || virtual_stages < 1 || stages % virtual_stages != 0) return 0;
  return stages / virtual_stages;
}

int32_t StageGroup(int32_t stages, int32_t virtual_stages, int32_t stage) {
  const int32_t groups = PipelineGroups(stages, virtual_stages);
  if (groups == 0 || stage < 0 || stage >= stages) return -1;
  return stage % groups;
}

std::string PipelineShapeProblem(PipelineScheduleKind kind, int32_t stages, int32_t virtual_stages,
                                 int64_t microbatches) {
  if (stages < 1) return "the pipeline has no stages";
  if (microbatches < 1) return "the pipeline has no microbatches";
  if (!VirtualStagesFit(kind, virtual_stages)) {
    return std::string(PipelineScheduleName(kind)) + " runs " +
           (kind == PipelineScheduleKind::kInterleavedOneFOneB ? "at least 2 stages"
                                                               : "one stage") +
           " per device group, not " + std::to_string(virtual_stages);
  }
  if (stages % virtual_stages != 0) {
    return std::to_string(stages) + " stages do not split into groups of " +
           std::to_string(virtual_stages) + " virtual stages";
  }
  const int32_t groups = stages / virtual_stages;
  if (kind == PipelineScheduleKind::kInterleavedOneFOneB && groups < 2) {
    return std::string(PipelineScheduleName(kind)) + " needs at least 2 device groups; " +
           std::to_string(stages) + " stages in groups of " + std::to_string(virtual_stages) +
           " make 1";
  }
  if (kind == PipelineScheduleKind::kInterleavedOneFOneB && microbatches % groups != 0) {
    return std::string(PipelineScheduleName(kind)) + " runs microbatches in rounds of the " +
           std::to_string(groups) + " device groups; " + std::to_string(microbatches) +
           " microbatches are not a multiple";
  }
  return "";
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

// Interleaved 1F1B (pipeline_schedule.h) for `group` of `groups` with `chunks` stages each.
std::vector<GroupTask> InterleavedOneFOneB(int32_t groups, int32_t chunks, int32_t group,
                                           int64_t microbatches) {
  const int64_t p = groups, v = chunks, total = microbatches * v;
  // The k-th forward's / backward's microbatch and stage.
  auto microbatch = [&](int64_t k) { return (k / (p * v)) * p + k % p; };
  auto forward_stage = [&](int64_t k) { return static_cast<int32_t>(((k / p) % v) * p + group); };
  auto backward_stage = [&](int64_t k) {
    return static_cast<int32_t>((v - 1 - (k / p) % v) * p + group);
  };
  const int64_t warmup =
      microbatches == p ? total : std::min<int64_t>((p - group - 1) * 2 + (v - 1) * p, total);
  std::vector<GroupTask> tasks;
  tasks.reserve(static_cast<size_t>(2 * total));
  int64_t forward = 0, backward = 0;
  auto run_forward = [&] {
    tasks.push_back({PipelineTaskKind::kForward, microbatch(forward), forward_stage(forward)});
    ++forward;
  };
  auto run_backward = [&] {
    tasks.push_back({PipelineTaskKind::kBackward, microbatch(backward), backward_stage(backward)});
    ++backward;
  };
  while (forward < warmup) run_forward();
  while (forward < total) {
    run_forward();
    run_backward();
  }
  while (backward < total) run_backward();
  return tasks;
}

// One stage's own tasks under a schedule of a stage per group.
std::vector<PipelineTask> SingleStageSchedule(PipelineScheduleKind kind, int32_t stages,
                                              int32_t stage, int64_t microbatches) {
  std::vector<PipelineTask> tasks;
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

bool Fits(PipelineScheduleKind kind, int32_t stages, int32_t virtual_stages, int32_t stage,
          int64_t microbatches) {
  return stage >= 0 && stage < stages &&
         PipelineShapeProblem(kind, stages, virtual_stages, microbatches).empty();
}

}  // namespace

std::vector<GroupTask> GroupSchedule(PipelineScheduleKind kind, int32_t stages,
                                     int32_t virtual_stages, int32_t group, int64_t microbatches) {
  const int32_t groups = PipelineGroups(stages, virtual_stages);
  if (!Fits(kind, stages, virtual_stages, group, microbatches) || group >= groups) return {};
  if (kind == PipelineScheduleKind::kInterleavedOneFOneB) {
    return InterleavedOneFOneB(groups, virtual_stages, group, microbatches);
  }
  std::vector<GroupTask> tasks;
  for (const PipelineTask& t : SingleStageSchedule(kind, stages, group, microbatches)) {
    tasks.push_back({t.kind, t.microbatch, group});
  }
  return tasks;
}

std::vector<PipelineTask> StageSchedule(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                                        int64_t microbatches, int32_t virtual_stages) {
  if (!Fits(kind, stages, virtual_stages, stage, microbatches)) return {};
  if (kind != PipelineScheduleKind::kInterleavedOneFOneB) {
    return SingleStageSchedule(kind, stages, stage, microbatches);
  }
  std::vector<PipelineTask> tasks;
  for (const GroupTask& t : GroupSchedule(
           kind, stages, virtual_stages, StageGroup(stages, virtual_stages, stage), microbatches)) {
    if (t.stage == stage) tasks.push_back({t.kind, t.microbatch});
  }
  return tasks;
}

int64_t MicrobatchesInFlight(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                             int64_t microbatches, int32_t virtual_stages) {
  if (!Fits(kind, stages, virtual_stages, stage, microbatches)) return 0;
  if (kind == PipelineScheduleKind::kInterleavedOneFOneB) {
    int64_t held = 0, most = 0;
    for (const PipelineTask& t : StageSchedule(kind, stages, stage, microbatches, virtual_stages)) {
      held += t.kind == PipelineTaskKind::kForward ? 1 : -1;
      most = std::max(most, held);
    }
    return most;
  }
  if (kind == PipelineScheduleKind::kGPipe) return microbatches;
  if (kind == PipelineScheduleKind::kZeroBubbleH1) return std::min<int64_t>(stages, microbatches);
  return std::min<int64_t>(stages - stage, microbatches);
}

int64_t WeightGradientsPending(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                               int64_t microbatches, int32_t virtual_stages) {
  if (!Fits(kind, stages, virtual_stages, stage, microbatches)) return 0;
  if (kind != PipelineScheduleKind::kZeroBubbleH1) return 0;
  return std::min<int64_t>(stage, microbatches - 1);
}

}  // namespace alpa
