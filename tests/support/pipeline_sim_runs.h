// Running the pipeline simulator in tests: the result or a failed expectation, a plan's simulated
// iteration, and finding an event of the timeline.
#pragma once

#include <cstdint>

#include "core/cluster/cluster.h"
#include "exec/sim/pipeline_simulator.h"
#include "solvers/planner/planner.h"

namespace alpa::testing {

// SimulatePipeline's result; an empty one (and a failed expectation) on error.
PipelineSimResult Simulate(const PipelineSimInput& in);

// The simulated iteration seconds of `plan` on `cluster` under its own schedule, without a
// timeline; 0 (and a failed expectation) on error.
double SimulatedIterationSeconds(const PipelinePlan& plan, const Cluster& cluster);

// The first timeline event of `stage` of this kind and microbatch; nullptr when none.
const SimEvent* FindEvent(const PipelineSimResult& r, int32_t stage, SimEventKind kind,
                          int64_t microbatch);

}  // namespace alpa::testing
