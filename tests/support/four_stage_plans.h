// The plan the topology tests compare across clusters: a GPT whose activations are large next to
// its layers' work, planned on 4 pipeline stages with 8 microbatches.
#pragma once

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "solvers/planner/planner.h"

namespace alpa::testing {

// The planner's plan of that GPT on `cluster` with 4 stages of (in practice) 4 GPUs each on 16
// GPUs; `place_near_nics` is PlannerOptions::place_near_nics.
Result<PipelinePlan> PlanFourStages(const Cluster& cluster, bool place_near_nics = true);

}  // namespace alpa::testing
