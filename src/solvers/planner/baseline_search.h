// The Megatron-LM baseline (`alpa baseline`): a grid search over the manual plans a
// practitioner would try (manual_plan.h), each predicted with the planner's cost model, so
// that the planner's plan can be compared with the best hand-tuned 3-D parallel configuration.
//
// The grid (D devices, H per host, batch N):
//   - tp: powers of two dividing H (tensor parallelism inside a host, on mesh dim 1);
//   - pp: divisors of D / tp that divide the model's layers (its transformer layers; the
//     clustering units for a graph without markers, then split by FLOPs) and give every stage
//     whole hosts or an even slice of one;
//   - dp = D / (tp * pp);
//   - microbatches B: powers of two dividing N, from pp (fewer would leave stages idle) up to
//     options.max_microbatches (1024), with dp dividing N / B; options.microbatches fixes B;
//   - ZeRO stage 0, 1, 2 or 3 (1-3 only when dp > 1, 2 unless options.search_zero2 is off, 3
//     unless options.search_zero3 is off; stages 1 and 2 share their solves);
//   - remat off and on (options.remat fixes it);
//   - with options.search_interleaving, interleaved 1F1B with v = 2..4 stages per device group
//     where pp >= 2, B is a multiple of pp and pp v divides the layers (else one stage per group).
// Microbatch counts are evaluated from the largest down, and a configuration (dp, tp, pp, ZeRO,
// remat) that does not fit the device memory with B microbatches is not tried with fewer
// (larger microbatches hold more activations; counted in `pruned`).
// On p3.16xlarge with GPT (32 layers, batch 1024) that is 10 (tp, pp) pairs on one host and 14
// on two, times up to 11 B, 4 ZeRO and 2 remat choices. Intra-op solves are shared between grid
// points (ManualPlanEvaluator caches them per piece type, B, mesh, batch dim and ZeRO; remat and
// the stage count only change the composition) and run on options.threads threads.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/planner.h"

namespace alpa {

struct BaselineSearchResult {
  PipelinePlan best;  // the fastest feasible configuration's plan
  ManualPlanSpec spec;
  int64_t evaluated = 0, feasible = 0;  // grid points
  int64_t pruned = 0;                   // grid points skipped (see above)
  // Every evaluated grid point and its iteration time (infinity when it does not fit the
  // device memory), fastest first (ties in grid order): the prediction with the transfers for
  // the points ranked again (at least the 8 fastest by the schedule formula, and every point
  // whose formula value is below the best prediction), the formula's value, a lower bound of
  // the prediction, for the rest, which is never below the best point's prediction.
  std::vector<std::pair<ManualPlanSpec, double>> table;
  int64_t intra_op_solves = 0;
  double search_seconds = 0;
};

// The grid above, in search order (tp, then pp, then B, ZeRO, remat ascending).
Result<std::vector<ManualPlanSpec>> MegatronBaselineGrid(ManualPlanEvaluator& evaluator,
                                                         const PlannerModel& model,
                                                         const Cluster& cluster,
                                                         const PlannerOptions& options);

// Errors: kInvalidArgument for bad options or an empty grid; kInfeasible when no grid point fits
// the device memory (the message names the least memory-hungry one and what it needs); the
// builder's and the solves' errors; kCancelled.
Result<BaselineSearchResult> SearchMegatronBaseline(const PlannerModel& model,
                                                    const Cluster& cluster,
                                                    const PlannerOptions& options = {});

}  // namespace alpa
