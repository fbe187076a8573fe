// Running the pipeline simulator in tests (pipeline_sim_runs.h).
#include "support/pipeline_sim_runs.h"

#include <gtest/gtest.h>

#include <utility>

namespace alpa::testing {

PipelineSimResult Simulate(const PipelineSimInput& in) {
  Result<PipelineSimResult> r = SimulatePipeline(in);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : PipelineSimResult{};
}

const SimEvent* FindEvent(const PipelineSimResult& r, int32_t stage, SimEventKind kind,
                          int64_t microbatch) {
  for (const SimEvent& e : r.timeline) {
    if (e.stage == stage && e.kind == kind && e.microbatch == microbatch) return &e;
  }
  return nullptr;
}

}  // namespace alpa::testing
