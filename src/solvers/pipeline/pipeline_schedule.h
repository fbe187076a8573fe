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
//   Interleaved 1F1B (Megatron-LM's virtual pipeline stages, Narayanan et al. SC'21): the S
//     stages run on P = S / v device groups, v >= 2 stages ("virtual stages", model chunks) per
//     group, stage s on group s % P (group g holds stages g, g + P, ..., g + (v - 1) P). A group
//     runs the tasks of all its stages in one order (GroupSchedule): its k-th forward is of
//     chunk (k / P) % v and microbatch (k / (P v)) P + k % P, its k-th backward of chunk
//     v - 1 - (k / P) % v and the same microbatch, so microbatches go through in rounds of P.
//     Group g first runs min((P - g - 1) 2 + (v - 1) P, B v) forwards (all B v when B == P),
//     then alternates one forward and one backward, then runs the remaining backwards. B must
//     be a multiple of P, and P >= 2. The bubble shrinks from 1F1B's (P - 1)(f + b) to (P - 1)(f +
//     b) / v for a group's f + b (its v stages' together), at the price of v times as many
//     transfers between groups and more microbatches in flight per group (MicrobatchesInFlight).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace alpa {

enum class PipelineScheduleKind : int32_t {
  kGPipe = 0,
  kOneFOneB = 1,
  kZeroBubbleH1 = 2,
  kInterleavedOneFOneB = 3
};
// kBackward: the whole backward, or under a schedule that splits it (SplitsBackward) the input
// gradient alone; kWeightGradient: the rest (the weight gradients), only under such schedules.
enum class PipelineTaskKind : int32_t { kForward = 0, kBackward = 1, kWeightGradient = 2 };

// Whether `kind` runs the weight gradients as tasks of their own (ZB-H1).
bool SplitsBackward(PipelineScheduleKind kind);
// "gpipe", "1f1b", "zb-h1", "interleaved-1f1b".
const char* PipelineScheduleName(PipelineScheduleKind kind);

// Whether `virtual_stages` (stages per device group) suits `kind`: 1 for every schedule but
// interleaved 1F1B, which needs at least 2.
bool VirtualStagesFit(PipelineScheduleKind kind, int32_t virtual_stages);

// The device groups of a pipeline of `stages` with `virtual_stages` stages per group:
// stages / virtual_stages (1F1B, GPipe, ZB-H1: a group per stage); and the group of `stage`:
// stage % groups. 0 / -1 when the arguments do not fit (virtual_stages < 1 or not dividing
// stages, stage out of range).
int32_t PipelineGroups(int32_t stages, int32_t virtual_stages);
int32_t StageGroup(int32_t stages, int32_t virtual_stages, int32_t stage);

// Why `kind` cannot run `stages` stages as `virtual_stages` per group over `microbatches`, or
// "" when it can: virtual_stages must fit the kind (VirtualStagesFit) and divide stages, and
// interleaved 1F1B needs at least 2 groups and microbatches a multiple of the groups.
std::string PipelineShapeProblem(PipelineScheduleKind kind, int32_t stages, int32_t virtual_stages,
                                 int64_t microbatches);

struct PipelineTask {
  PipelineTaskKind kind = PipelineTaskKind::kForward;
  int64_t microbatch = 0;
  bool operator==(const PipelineTask& o) const {
    return kind == o.kind && microbatch == o.microbatch;
  }
};

// One task of a device group: a PipelineTask of one of the group's stages.
struct GroupTask {
  PipelineTaskKind kind = PipelineTaskKind::kForward;
  int64_t microbatch = 0;
  int32_t stage = 0;
  bool operator==(const GroupTask& o) const {
    return kind == o.kind && microbatch == o.microbatch && stage == o.stage;
  }
};

// The tasks of device `group` (0-based, of PipelineGroups(stages, virtual_stages)) in the order
// the group runs them; empty when the arguments do not fit (PipelineShapeProblem, group out of
// range). With one stage per group: StageSchedule's tasks, all of stage `group`.
std::vector<GroupTask> GroupSchedule(PipelineScheduleKind kind, int32_t stages,
                                     int32_t virtual_stages, int32_t group, int64_t microbatches);

// The tasks of `stage` (0-based) among `stages` for `microbatches`, in order (under interleaved
// 1F1B: its own tasks of its group's order); empty when the arguments do not fit
// (PipelineShapeProblem, stage outside 0..stages-1).
std::vector<PipelineTask> StageSchedule(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                                        int64_t microbatches, int32_t virtual_stages = 1);

// The most microbatches whose activations `stage` holds at once under `kind`: GPipe holds
// every microbatch's (all forwards run before the first backward), 1F1B min(stages - stage,
// microbatches), ZB-H1 min(stages, microbatches) (a microbatch counts from its forward to its
// weight gradient), interleaved 1F1B the most of its forwards run before their backwards in its
// group's order (the stages of a group reach their peaks at different times, so the sum over a
// group bounds the group's peak from above). 0 when the arguments do not fit (as StageSchedule).
int64_t MicrobatchesInFlight(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                             int64_t microbatches, int32_t virtual_stages = 1);

// Of those, the most whose backward ran but whose weight gradient waits while another task runs
// (ZB-H1: min(stage, microbatches - 1); they keep what their weight gradients read); 0 for the
// schedules that do not split the backward.
int64_t WeightGradientsPending(PipelineScheduleKind kind, int32_t stages, int32_t stage,
                               int64_t microbatches, int32_t virtual_stages = 1);

}  // namespace alpa
