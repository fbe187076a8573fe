// Pipeline schedules: the order in which one stage runs the forward and backward passes of
// the microbatches (REFERENCE §4, §5).
//   GPipe: every forward, then every backward in reverse order.
//   1F1B (PipeDream-flush, what Alpa and Megatron run): stage s of S first runs
//     w = min(S - s - 1, B) forwards (warm-up), then alternates one forward and one backward
//     while forwards remain, then the remaining backwards; backwards run in microbatch order.
//     It keeps at most min(S - s, B) microbatches of activations, which is what the planner's
//     memory model charges.
#pragma once

#include <cstdint>
#include <vector>

namespace alpa {

enum class PipelineScheduleKind : int32_t { kGPipe = 0, kOneFOneB = 1 };
enum class PipelineTaskKind : int32_t { kForward = 0, kBackward = 1 };

struct PipelineTask {
  PipelineTaskKind kind = PipelineTaskKind::kForward;
  int64_t microbatch = 0;
  bool operator==(const PipelineTask& o) const {
    return kind == o.kind && microbatch == o.microbatch;
  }
};

// The tasks of `stage` (0-based) among `stages` for `microbatches`, in order; empty when an
// argument is out of range (stages < 1, stage outside 0..stages-1, microbatches < 1).
std::vector<PipelineTask> StageSchedule(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                                        int64_t microbatches);

// The most microbatches whose activations `stage` holds at once under `kind`: GPipe holds
// every microbatch's (all forwards run before the first backward), 1F1B min(stages - stage,
// microbatches). 0 when an argument is out of range (as StageSchedule).
int64_t MicrobatchesInFlight(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                             int64_t microbatches);

}  // namespace alpa
