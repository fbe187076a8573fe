// The zero-bubble schedule ZB-H1 as a searched option of the planner: the weight-gradient ops of
// a piece, the plan that takes it where it pays and fits, leaves it where it does not fit or
// cannot help, and the plan JSON that carries it.
#include <gtest/gtest.h>

#include <string>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/plan_json.h"
#include "solvers/planner/plan_json_read.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/schedule_choice.h"
#include "solvers/planner/stage_costs.h"
#include "solvers/planner/subgraph.h"
#include "solvers/planner/weight_gradient_ops.h"
#include "support/clusters.h"

namespace alpa {
namespace {

constexpr const char* kGpt =
    "gpt:layers=4,hidden=128,heads=4,seq=8,vocab=64,batch=8,dtype=f32,adam_eps=1e-5";

PlannerModel Model() {
  Result<PlannerModel> model = PlannerModelFromSpec(kGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : PlannerModel{};
}

// Four one-device stages and four microbatches: 1F1B idles (S - 1)(f + b) per stage.
PlannerOptions DeepPipeline(bool zero_bubble) {
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 4;
  options.pipeline_stages = 4;
  options.search_zero_bubble = zero_bubble;
  return options;
}

TEST(ZeroBubble, WeightGradientOpsFeedNoInputGradient) {
  Result<PipelinePlan> plan = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(false));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  int32_t pieces_with_both = 0;
  for (const PlannedStage& st : plan.value().stages) {
    for (const StagePiece& piece : st.pieces) {
      const Graph& g = piece.subgraph->graph;
      const std::vector<char> weight = WeightGradientOps(g);
      const std::vector<char> accumulated = AccumulatedIntoGradient(g);
      ASSERT_EQ(weight.size(), static_cast<size_t>(g.size()));
      int64_t w = 0, b = 0;
      for (int32_t l = 0; l < g.size(); ++l) {
        const Op& op = g.op(l);
        if (op.phase != Phase::kBackward) {
          EXPECT_FALSE(weight[static_cast<size_t>(l)]) << op.name;
          continue;
        }
        if (op.kind == OpKind::kParameter) continue;
        (weight[static_cast<size_t>(l)] ? w : b) += 1;
        // An input-gradient op reads no weight-gradient op.
        if (!weight[static_cast<size_t>(l)]) {
          for (int32_t u : op.operands) EXPECT_FALSE(weight[static_cast<size_t>(u)]) << op.name;
        }
      }
      // Every per-microbatch gradient the piece hands on is an input gradient; every weight's
      // gradient of the piece that no input gradient reads is a weight-gradient op.
      for (int32_t out : g.outputs) {
        const Op& op = g.op(out);
        if (op.phase == Phase::kBackward && !accumulated[static_cast<size_t>(out)]) {
          EXPECT_FALSE(weight[static_cast<size_t>(out)]) << op.name;
        }
        if (op.role == TensorRole::kGradient) {
          EXPECT_TRUE(weight[static_cast<size_t>(out)]) << op.name;
        }
      }
      if (w > 0 && b > 0) ++pieces_with_both;
    }
  }
  // The transformer layers after the first piece have both parts.
  EXPECT_GE(pieces_with_both, 3);
}

TEST(ZeroBubble, PlannerTakesItWhereItPays) {
  Result<PipelinePlan> off = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(false));
  Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(true));
  ASSERT_TRUE(off.ok()) << off.status().message();
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_EQ(off.value().schedule, PipelineScheduleKind::kOneFOneB);
  ASSERT_EQ(on.value().schedule, PipelineScheduleKind::kZeroBubbleH1);
  ASSERT_EQ(on.value().stages.size(), 4u);
  // Faster than the same stages under 1F1B, by at most 1F1B's bubble.
  EXPECT_LT(on.value().iteration_seconds, off.value().iteration_seconds);
  EXPECT_GT(on.value().iteration_seconds, 0.5 * off.value().iteration_seconds);
  for (size_t s = 0; s < 4; ++s) {
    const PlannedStage& st = on.value().stages[s];
    EXPECT_GT(st.weight_gradient_latency, 0) << "stage " << s;
    EXPECT_LE(st.weight_gradient_latency, st.latency - st.forward_latency) << "stage " << s;
    // Every stage holds min(S, B) microbatches, and more memory than under 1F1B past stage 0.
    EXPECT_EQ(st.in_flight, 4) << "stage " << s;
    if (s > 0) {
      EXPECT_GT(st.memory_bytes, off.value().stages[s].memory_bytes) << "stage " << s;
    }
  }
}

TEST(ZeroBubble, PlannerLeavesItWhereItDoesNotFit) {
  // The 1F1B plan's peak as the device memory: the later stages would hold more under ZB-H1.
  Result<PipelinePlan> off = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(false));
  ASSERT_TRUE(off.ok()) << off.status().message();
  PlannerOptions options = DeepPipeline(true);
  options.device_memory_bytes = off.value().peak_memory_bytes;
  Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), options);
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_EQ(on.value().schedule, PipelineScheduleKind::kOneFOneB);
  EXPECT_LE(on.value().peak_memory_bytes, off.value().peak_memory_bytes);
}

TEST(ZeroBubble, PlannerLeavesItWhereOneStageHasNoBubble) {
  PlannerOptions options = DeepPipeline(true);
  options.pipeline_stages = 1;
  Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), options);
  options.search_zero_bubble = false;
  Result<PipelinePlan> off = PlanPipeline(Model(), testing::P3(1, 4), options);
  ASSERT_TRUE(on.ok()) << on.status().message();
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(on.value().schedule, PipelineScheduleKind::kOneFOneB);
  EXPECT_EQ(on.value().iteration_seconds, off.value().iteration_seconds);
}

TEST(ZeroBubble, ChoiceNeedsEveryStageToFit) {
  Result<PipelinePlan> off = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(false));
  ASSERT_TRUE(off.ok()) << off.status().message();
  std::vector<StageMemory> memory;
  int64_t needed = 0;
  for (size_t s = 0; s < off.value().stages.size(); ++s) {
    Result<StageMemory> m = PlannedStageMemoryModel(off.value().stages[s]);
    ASSERT_TRUE(m.ok()) << m.status().message();
    memory.push_back(m.value());
    needed = std::max(needed, ScheduledStageMemory(m.value(), PipelineScheduleKind::kZeroBubbleH1,
                                                   4, static_cast<int32_t>(s), 4));
  }
  PipelinePlan plan = off.value();
  EXPECT_FALSE(ChooseZeroBubble(plan, memory, needed - 1));
  EXPECT_EQ(plan.schedule, PipelineScheduleKind::kOneFOneB);
  EXPECT_EQ(plan.iteration_seconds, off.value().iteration_seconds);
  EXPECT_EQ(plan.peak_memory_bytes, off.value().peak_memory_bytes);
  EXPECT_TRUE(ChooseZeroBubble(plan, memory, needed));
  EXPECT_EQ(plan.schedule, PipelineScheduleKind::kZeroBubbleH1);
  EXPECT_EQ(plan.peak_memory_bytes, needed);
  // Back to 1F1B: the plan as the planner made it.
  ApplySchedule(plan, PipelineScheduleKind::kOneFOneB, memory);
  EXPECT_EQ(plan.iteration_seconds, off.value().iteration_seconds);
  EXPECT_EQ(plan.peak_memory_bytes, off.value().peak_memory_bytes);
}

TEST(ZeroBubble, PlanJsonCarriesTheSchedule) {
  Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), DeepPipeline(true));
  ASSERT_TRUE(on.ok()) << on.status().message();
  Result<std::string> text = PipelinePlanJson(on.value(), testing::P3(1, 4), kGpt, 2);
  ASSERT_TRUE(text.ok()) << text.status().message();
  Result<PipelinePlan> back = ReadPipelinePlanJson(text.value(), nullptr);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().schedule, PipelineScheduleKind::kZeroBubbleH1);
  for (size_t s = 0; s < on.value().stages.size(); ++s) {
    EXPECT_DOUBLE_EQ(back.value().stages[s].weight_gradient_latency,
                     on.value().stages[s].weight_gradient_latency);
  }
  std::string bad = text.value();
  const size_t at = bad.find("\"zb-h1\"");
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, 7, "\"zb-h2\"");
  Result<PipelinePlan> refused = ReadPipelinePlanJson(bad, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("schedule"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace alpa
