// Running the pipeline simulator in tests: the result or a failed expectation, and finding an
// event of the timeline.
#pragma once

#include <cstdint>

#include "exec/sim/pipeline_simulator.h"

namespace alpa::testing {

// SimulatePipeline's result; an empty one (and a failed expectation) on error.
PipelineSimResult Simulate(const PipelineSimInput& in);

// The first timeline event of `stage` of this kind and microbatch; nullptr when none.
const SimEvent* FindEvent(const PipelineSimResult& r, int32_t stage, SimEventKind kind,
                          int64_t microbatch);

}  // namespace alpa::testing
