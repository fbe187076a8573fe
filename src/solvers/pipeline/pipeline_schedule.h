// Pipeline schedules: the order in which one stage runs the forward and backward passes of
// the microbatches (REFERENCE §4, §5).
//   GPipe: every forward, then every backward in reverse order.
//   1F1B (PipeDream-flush, what Alpa and Megatron run): stage s of S first runs
//     w = min(S - s - 1, B) forwards (warm-up), then alternates one forward and one backward
//     while forwards remain, then the remaining backwards; backwards run in microbatch order.
//     It keeps at most min(S - s, B) microbatches of activations, which is what the planner's
//     memory model charges.
//   ZB-H1 (zero-bubble pipeline parallelism, Qi et al. 2024, its handcrafted schedule H1): the
//     backward splits into B (the input gradient, which the previous stage waits for) and W (the
//     weight gradient, which nobody waits for). Stage s runs 1F1B's warm-up, then per forward
//     F, B and a W, but keeps the W of its s most recent B pending (stage 0 none, the last
//     stage S - 1); after its last B it runs the pending W. The late stages thus fill the
//     drain with weight gradients while the input gradients travel back, and the bubble
//     shrinks from 1F1B's (S - 1)(f + b + w) to (S - 1)(f + b - w) when B >= S. Every stage
//     holds min(S, B) microbatches from F to W (1F1B's stage 0 figure on every stage).
#pragma once

#include <cstdint>
#include <vector>

namespace alpa {

enum class PipelineScheduleKind : int32_t { kGPipe = 0, kOneFOneB = 1, kZeroBubbleH1 = 2 };
// kBackward: the whole backward, or under a schedule that splits it (SplitsBackward) the input
// gradient alone; kWeightGradient: the rest (the weight gradients), only under such schedules.
enum class PipelineTaskKind : int32_t { kForward = 0, kBackward = 1, kWeightGradient = 2 };

// Whether `kind` runs the weight gradients as tasks of their own (ZB-H1).
bool SplitsBackward(PipelineScheduleKind kind);
// "gpipe", "1f1b", "zb-h1".
const char* PipelineScheduleName(PipelineScheduleKind kind);

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
// microbatches), ZB-H1 min(stages, microbatches) (a microbatch counts from its forward to its
// weight gradient). 0 when an argument is out of range (as StageSchedule).
int64_t MicrobatchesInFlight(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                             int64_t microbatches);

// Of those, the most whose backward ran but whose weight gradient waits while another task runs
// (ZB-H1: min(stage, microbatches - 1); they keep what their weight gradients read); 0 for the
// schedules that do not split the backward.
int64_t WeightGradientsPending(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                               int64_t microbatches);

}  // namespace alpa
