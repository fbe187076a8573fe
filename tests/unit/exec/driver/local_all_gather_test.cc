// Local all-gather (cross_mesh.h's PlanLocalAllGather): a stage whose devices hold the received
// activations replicated takes 1/k of them per device across the hosts and all-gathers the rest
// on its own mesh. A plan that chooses it runs equal to one device, every gather runs over the
// planned mesh dims, and a run whose plan does not list the gather is caught.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/driver/plan_conformance.h"
#include "exec/driver/plan_run.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/plan_transfers.h"

namespace alpa {
namespace {

const char* kGpt = "gpt:layers=2,hidden=64,heads=2,seq=16,vocab=64,batch=8,dtype=f32,adam_eps=1e-5";

struct GatherRun {
  PipelinePlan plan;
  PlanRunReport run;
};

// Two stages on two hosts of 4 devices each: data parallel 2 x tensor parallel 2 inside each
// host, 2 microbatches.
GatherRun RunAcrossHosts() {
  GatherRun g;
  Result<PlannerModel> model = PlannerModelFromSpec(kGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster = ParseClusterSpec("p3.16xlarge:hosts=2,devices_per_host=4");
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  ManualPlanSpec spec;
  spec.data_parallel = 2;
  spec.tensor_parallel = 2;
  spec.pipeline_parallel = 2;
  spec.microbatches = 2;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  g.plan = std::move(plan).value();
  PlanRunOptions options;
  options.check = true;
  Result<PlanRunReport> run = RunPlanOnThreads(g.plan, model.value().build(1).value(), options);
  EXPECT_TRUE(run.ok()) << run.status().message();
  g.run = std::move(run).value();
  return g;
}

TEST(LocalAllGatherRun, PlannedWhereFasterAndRunsEqualToOneDevice) {
  const GatherRun g = RunAcrossHosts();
  Result<Cluster> cluster = ParseClusterSpec("p3.16xlarge:hosts=2,devices_per_host=4");
  ASSERT_TRUE(cluster.ok());
  int64_t landings = 0;
  for (const CrossStageTransfer& t : g.plan.transfers) {
    if (!t.landing_spec) continue;
    ++landings;
    // Each replica receives its part once across the hosts: half the plain moves' bytes.
    int64_t landed = 0;
    for (const SliceMove& m : t.moves) landed += m.bytes;
    EXPECT_EQ(landed, t.bytes) << ToString(t.to_spec) << " landing " << ToString(*t.landing_spec);
    EXPECT_GT(t.gather_seconds, 0.0);
    EXPECT_DOUBLE_EQ(t.seconds, TransferSeconds(t.moves, cluster.value()) + t.gather_seconds);
    // Faster than sending every replica its whole tile (what the plan would do without it).
    const PlannedStage& from = g.plan.stages[static_cast<size_t>(t.from_stage)];
    const PlannedStage& to = g.plan.stages[static_cast<size_t>(t.to_stage)];
    const Op& op = g.plan.graph.op(t.tensor);
    Result<std::vector<SliceMove>> plain =
        PlanCrossMeshTransfer(op.shape, DTypeBytes(op.dtype), t.from_spec, from.logical_mesh,
                              from.devices, t.to_spec, to.logical_mesh, to.devices);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    EXPECT_LT(t.seconds, TransferSeconds(plain.value(), cluster.value()));
  }
  ASSERT_GT(landings, 0) << "no transfer of this plan lands on a replicated layout";
  EXPECT_TRUE(g.run.passed) << "sharded run differs from one device";
  ConformanceSummary summary;
  Status conforms = CheckExecutedAgainstPlan(g.plan, g.run, &summary);
  EXPECT_TRUE(conforms.ok()) << conforms.message();
  EXPECT_EQ(summary.sent_transfer_bytes, summary.planned_transfer_bytes);
  // One gather per landing transfer, microbatch and receiving device (4 of them).
  EXPECT_EQ(summary.transfer_gathers, landings * g.plan.microbatches * 4);
}

TEST(LocalAllGatherRun, AGatherThePlanDoesNotListIsCaught) {
  GatherRun g = RunAcrossHosts();
  int32_t tensor = -1;
  for (CrossStageTransfer& t : g.plan.transfers) {
    if (t.landing_spec && tensor < 0) {
      tensor = t.tensor;
      t.landing_spec.reset();
    }
  }
  ASSERT_GE(tensor, 0);
  Status conforms = CheckExecutedAgainstPlan(g.plan, g.run);
  EXPECT_FALSE(conforms.ok());
  EXPECT_NE(conforms.message().find("local all-gather of op " + std::to_string(tensor)),
            std::string::npos)
      << conforms.message();
}

}  // namespace
}  // namespace alpa
