// Running the pipeline simulator in tests (pipeline_sim_runs.h).
#include "support/pipeline_sim_runs.h"

#include <gtest/gtest.h>

#include <utility>

#include "exec/sim/plan_simulation.h"

namespace alpa::testing {

PipelineSimResult Simulate(const PipelineSimInput& in) {
  Result<PipelineSimResult> r = SimulatePipeline(in);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : PipelineSimResult{};
}

double SimulatedIterationSeconds(const PipelinePlan& plan, const Cluster& cluster) {
  Result<PipelineSimInput> in = SimInputFromPlan(plan, cluster, plan.schedule);
  EXPECT_TRUE(in.ok()) << in.status().message();
  if (!in.ok()) return 0;
  in.value().record_timeline = false;
  return Simulate(in.value()).iteration_seconds;
}

const SimEvent* FindEvent(const PipelineSimResult& r, int32_t stage, SimEventKind kind,
                          int64_t microbatch) {
  for (const SimEvent& e : r.timeline) {
    if (e.stage == stage && e.kind == kind && e.microbatch == microbatch) return &e;
  }
  return nullptr;
}

}  // namespace alpa::testing
