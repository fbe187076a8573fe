// A closed-form prediction of one 1F1B iteration that counts the transfers between consecutive
// stages (the stage DP's objective, stage_dp.h, leaves them out, as Alpa's does).
//
// The schedule (pipeline_schedule.h) as a timed event graph: per stage s two events per slot j,
// F_s(j + k_s - 1) then B_s(j), with k_s = min(B, S - s) microbatches in flight. Its edges:
//   F_s -> B_s       f_s, same slot              (the stage runs the backward after the forward)
//   B_s -> F_s       b_s, next slot              (and the next forward after the backward)
//   F_s -> F_{s+1}   f_s + c_s, k_s - k_{s+1} slots later   (the activation, then its transfer)
//   B_{s+1} -> B_s   b_{s+1} + d_s, same slot    (the gradient, then its transfer)
// with f, b the forward and backward seconds per microbatch and c, d the forward and backward
// transfer seconds between s and s + 1. Its steady-state period (seconds per microbatch) is the
// largest cycle ratio (weight / slots). Every simple cycle is a range a..z of stages (forward
// along the F row, back along the B row), so
//     P = max over a <= z of [sum_{a..z} (f + b) + sum_{a..z-1} (c + d)] / (1 + k_a - k_z)
// (a = z: f_a + b_a, the stage itself; 1 + k_a - k_z = z - a + 1 when B >= S). Stage 0's last
// backward then ends at
//     T_0 = sum_s (f_s + b_s) + sum_s (c_s + d_s) + (B - 1) P
// (the first microbatch through and back, then B - 1 periods). Each stage runs its
// once-per-iteration work o_s (gradient synchronisation, the update) on its own devices after its
// own last backward, which ends at least sum_{r<s} (b_r + d_r) before stage 0's (the last
// microbatch's gradient still has to travel back), so the overheads overlap and
//     T = T_0 + max_s (o_s - sum_{r<s} (b_r + d_r)),
// an upper bound that is exact when the last microbatch's backward drains without waiting. The
// stage DP (stage_dp.h) charges sum_s o_s instead; with no transfers and one stage, or with o
// only on stage 0, T is the DP's objective exactly. Link contention
// between transfers and the exact fill and drain are the simulator's business
// (exec/sim); this form is what the planner ranks plans by and reports.
#pragma once

#include <cstdint>
#include <vector>

#include "solvers/pipeline/pipeline_schedule.h"

namespace alpa {

struct PipelineEstimateStage {
  double forward = 0, backward = 0;  // seconds per microbatch
  double iteration_overhead = 0;     // seconds once per iteration (gradient sync, update)
  // Transfers to the next stage per microbatch: activations forward, gradients back.
  double to_next = 0, from_next = 0;
  // Of backward, what a schedule that splits it (ZB-H1) runs as the weight-gradient task.
  double weight = 0;
};

struct PipelineEstimate {
  double iteration_seconds = 0;  // T
  double period_seconds = 0;     // P
  // The range a..z of stages whose cycle sets P (a == z: one stage's own latency).
  int32_t bottleneck_first = -1, bottleneck_last = -1;
};

// All zeros when `stages` is empty or microbatches < 1.
PipelineEstimate EstimateOneFOneB(const std::vector<PipelineEstimateStage>& stages,
                                  int64_t microbatches);

// The same model evaluated task by task rather than in closed form: every device group runs
// GroupSchedule(kind)'s tasks in order (a group per stage unless virtual_stages > 1 under
// interleaved 1F1B), each as soon as the group's previous one ended and its input
// arrived (a forward: the previous stage's forward of the microbatch plus to_next; a backward:
// the next stage's backward plus its from_next; a weight gradient: nothing); under a schedule
// that splits the backward (SplitsBackward) the backward takes backward - weight and the weight
// gradient weight, else the backward takes backward. Each group then runs its stages'
// iteration_overhead one after another, and the result is when the last one ends. Exact for
// this model (no link contention); 1F1B's closed form is an upper bound of it where it has a
// steady state, and loose with fewer microbatches than stages. O(stages x microbatches); 0 when
// `stages` is empty, microbatches < 1 or the schedule does not fit (PipelineShapeProblem).
double EvaluateSchedule(PipelineScheduleKind kind, const std::vector<PipelineEstimateStage>& stages,
                        int64_t microbatches, int32_t virtual_stages = 1);

// ZB-H1 (pipeline_schedule.h): iteration_seconds from EvaluateSchedule; the period is 1F1B's
// closed form's (the same work per microbatch on every stage).
PipelineEstimate EstimateZeroBubbleH1(const std::vector<PipelineEstimateStage>& stages,
                                      int64_t microbatches);

// Interleaved 1F1B over stages.size() / virtual_stages device groups (pipeline_schedule.h):
// iteration_seconds from EvaluateSchedule; the period is the busiest group's forward and
// backward seconds per microbatch (its stages' together), bottleneck_first = bottleneck_last =
// that group. All zeros when virtual_stages does not divide the stages.
PipelineEstimate EstimateInterleaved(const std::vector<PipelineEstimateStage>& stages,
                                     int64_t microbatches, int32_t virtual_stages);

// The estimate for `kind`: 1F1B's closed form, ZB-H1's or interleaved 1F1B's evaluation (GPipe
// is not estimated: 1F1B's figures).
PipelineEstimate EstimatePipeline(PipelineScheduleKind kind,
                                  const std::vector<PipelineEstimateStage>& stages,
                                  int64_t microbatches, int32_t virtual_stages = 1);

}  // namespace alpa
