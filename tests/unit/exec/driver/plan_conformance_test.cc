// What runs is what was planned, for the transfers the plan moves once per iteration: GPT's head
// (last stage) adds its part of the tied embedding's gradient into the first stage's, a
// transfer the planner marks once per iteration; the executor sends it once, at the update, and
// the conformance check holds runs to that count.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/driver/plan_conformance.h"
#include "exec/driver/plan_run.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"

namespace alpa {
namespace {

const char* kGpt = "gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5";
constexpr int64_t kMicrobatches = 4;

struct TiedRun {
  PipelinePlan plan;
  PlanRunReport run;
  int32_t tensor = -1;  // the once-per-iteration transfer's tensor
};

// Two stages of 2 devices (tensor parallel), 4 microbatches, one step.
TiedRun RunTiedGpt() {
  TiedRun t;
  Result<PlannerModel> model = PlannerModelFromSpec(kGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster = ParseClusterSpec("p3.16xlarge:hosts=1,devices_per_host=4");
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  ManualPlanSpec spec;
  spec.tensor_parallel = 2;
  spec.pipeline_parallel = 2;
  spec.microbatches = kMicrobatches;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  t.plan = std::move(plan).value();
  for (const CrossStageTransfer& tr : t.plan.transfers) {
    if (tr.once_per_iteration) t.tensor = tr.tensor;
  }
  PlanRunOptions options;
  options.check = true;
  Result<PlanRunReport> run = RunPlanOnThreads(t.plan, model.value().build(1).value(), options);
  EXPECT_TRUE(run.ok()) << run.status().message();
  t.run = std::move(run).value();
  return t;
}

// The sends and receives of `tensor` per device, as (device, microbatch).
std::vector<std::pair<size_t, int64_t>> Moves(const PlanRunReport& run, int32_t tensor,
                                              InstructionKind kind) {
  std::vector<std::pair<size_t, int64_t>> out;
  for (size_t d = 0; d < run.first_step.size(); ++d) {
    for (const ExecutedMove& m : run.first_step[d].moves) {
      if (m.kind == kind && m.tensor == tensor) out.push_back({d, m.microbatch});
    }
  }
  return out;
}

TEST(PlanConformanceTest, TiedGradientMovesOncePerIterationAndEqualsOneDevice) {
  const TiedRun t = RunTiedGpt();
  ASSERT_GE(t.tensor, 0) << "the plan moves no tied-weight gradient between stages";
  EXPECT_TRUE(t.run.passed);
  size_t planned_moves = 0;
  for (const CrossStageTransfer& tr : t.plan.transfers) {
    if (tr.tensor == t.tensor) planned_moves += tr.moves.size();
  }
  // One message per slice move in the step, at the update (microbatch -1), not one per
  // microbatch.
  const auto sends = Moves(t.run, t.tensor, InstructionKind::kSend);
  const auto receives = Moves(t.run, t.tensor, InstructionKind::kRecv);
  EXPECT_EQ(sends.size(), planned_moves);
  EXPECT_EQ(receives.size(), planned_moves);
  for (const auto& [device, mb] : sends) EXPECT_EQ(mb, -1) << "device " << device;
  ConformanceSummary summary;
  Status conforms = CheckExecutedAgainstPlan(t.plan, t.run, &summary);
  EXPECT_TRUE(conforms.ok()) << conforms.message();
  EXPECT_EQ(summary.sent_transfer_bytes, summary.planned_transfer_bytes);
}

TEST(PlanConformanceTest, TiedGradientSentPerMicrobatchIsReported) {
  TiedRun t = RunTiedGpt();
  ASSERT_GE(t.tensor, 0);
  // The moves as a per-microbatch lowering would run them: one message per microbatch.
  for (StepReport& report : t.run.first_step) {
    std::vector<ExecutedMove> moves;
    for (const ExecutedMove& m : report.moves) {
      if (m.tensor != t.tensor || m.microbatch != -1) {
        moves.push_back(m);
        continue;
      }
      for (int64_t mb = 0; mb < kMicrobatches; ++mb) {
        ExecutedMove copy = m;
        copy.microbatch = mb;
        moves.push_back(copy);
      }
    }
    report.moves = std::move(moves);
  }
  Status conforms = CheckExecutedAgainstPlan(t.plan, t.run);
  EXPECT_FALSE(conforms.ok());
  EXPECT_NE(conforms.message().find("once per iteration"), std::string::npos) << conforms.message();
}

TEST(PlanConformanceTest, PlanThatMovesTheGradientPerMicrobatchDisagreesWithTheRun) {
  TiedRun t = RunTiedGpt();
  ASSERT_GE(t.tensor, 0);
  for (CrossStageTransfer& tr : t.plan.transfers) {
    if (tr.tensor == t.tensor) tr.once_per_iteration = false;
  }
  Status conforms = CheckExecutedAgainstPlan(t.plan, t.run);
  EXPECT_FALSE(conforms.ok());
  EXPECT_NE(conforms.message().find("op " + std::to_string(t.tensor)), std::string::npos)
      << conforms.message();
}

}  // namespace
}  // namespace alpa
