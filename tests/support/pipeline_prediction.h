// An independent recomputation of a plan's predicted iteration time (pipeline_estimate.h), for
// tests: the 1F1B event graph's largest cycle ratio found by bisection with Bellman-Ford
// (a positive cycle of weight - P * slots exists iff P is below the ratio), not by the closed
// form over stage ranges the library uses.
#pragma once

#include <vector>

#include "solvers/planner/planner.h"

namespace alpa::testing {

struct PredictionStage {
  double forward = 0, backward = 0, overhead = 0, to_next = 0, from_next = 0;
};

// T = sum (f + b) + sum (to_next + from_next) + (B - 1) * P + the latest end of a stage's
// overhead o after stage 0's last backward (each stage's starts after its own last backward).
double PredictIterationByBisection(const std::vector<PredictionStage>& stages,
                                   long long microbatches, double* period = nullptr);

// The stages and per-microbatch transfers of a plan (once-per-iteration transfers are already
// in the receivers' overheads), then the above.
double PredictPlanByBisection(const PipelinePlan& plan, double* period = nullptr);

}  // namespace alpa::testing
