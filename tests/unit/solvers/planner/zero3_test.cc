// ZeRO-3 (weights held as shards over the data-parallel devices and gathered where read): the
// planner's extra memory level that takes it where nothing else fits, left off where memory
// does not bind, the option that turns it off, the manual plan's zero_stage 3, the stage flag
// in the plan JSON, and the memory levels aiming at the device memory the caller asked for.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/plan_json.h"
#include "solvers/planner/plan_json_read.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/stage_costs.h"
#include "support/clusters.h"

namespace alpa {
namespace {

// Weights large enough against its activations that holding them as shards matters.
constexpr const char* kGpt =
    "gpt:layers=4,hidden=128,heads=4,seq=8,vocab=64,batch=8,dtype=f32,adam_eps=1e-5";
constexpr int64_t kMiB = int64_t{1} << 20;

PlannerModel Model() {
  Result<PlannerModel> model = PlannerModelFromSpec(kGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : PlannerModel{};
}

// One data-parallel stage on four devices, 2 microbatches.
PlannerOptions DataParallelOptions() {
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 2;
  options.pipeline_stages = 1;
  options.max_tensor_parallel = 1;
  return options;
}

bool AnyPieceGathersWeights(const PlannedStage& stage) {
  for (const StagePiece& piece : stage.pieces) {
    if (GathersWeights(*piece.subgraph, *piece.sharding)) return true;
  }
  return false;
}

TEST(ZeroThree, PlannerGathersWeightsWhereOnlyThatFits) {
  // 4 MiB per device: the stage's weights and Adam state do not fit with ZeRO-1 or 2 and any
  // recomputation; held as shards (a quarter each) and gathered per use, they do.
  PlannerOptions options = DataParallelOptions();
  options.device_memory_bytes = 4 * kMiB;
  Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), options);
  ASSERT_TRUE(on.ok()) << on.status().message();
  ASSERT_EQ(on.value().stages.size(), 1u);
  const PlannedStage& stage = on.value().stages[0];
  EXPECT_TRUE(stage.shard_parameters);
  EXPECT_TRUE(AnyPieceGathersWeights(stage));
  EXPECT_EQ(stage.data_parallel, 4);
  EXPECT_LE(on.value().peak_memory_bytes, 4 * kMiB);

  options.search_zero3 = false;
  Result<PipelinePlan> off = PlanPipeline(Model(), testing::P3(1, 4), options);
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.status().code(), StatusCode::kInfeasible) << off.status().message();
}

TEST(ZeroThree, PlannerLeavesItOffWhereAPlanFitsWithout) {
  // The device's 16 GiB, and 5 MiB (which ZeRO-1 with recomputation fits): no weight is
  // gathered, and the search runs no extra solve for it.
  for (const std::optional<int64_t> memory : {std::optional<int64_t>{}, std::optional{5 * kMiB}}) {
    PlannerOptions options = DataParallelOptions();
    options.device_memory_bytes = memory;
    Result<PipelinePlan> on = PlanPipeline(Model(), testing::P3(1, 4), options);
    options.search_zero3 = false;
    Result<PipelinePlan> off = PlanPipeline(Model(), testing::P3(1, 4), options);
    ASSERT_TRUE(on.ok()) << on.status().message();
    ASSERT_TRUE(off.ok()) << off.status().message();
    for (const PlannedStage& st : on.value().stages) {
      EXPECT_FALSE(st.shard_parameters);
      EXPECT_FALSE(AnyPieceGathersWeights(st));
    }
    EXPECT_EQ(on.value().iteration_seconds, off.value().iteration_seconds);
    EXPECT_EQ(on.value().stats.intra_op_solves, off.value().stats.intra_op_solves);
  }
}

TEST(ZeroThree, MemoryLevelsAimAtTheRequestedDeviceMemory) {
  // 8 MiB asked for (the cluster's devices have 16 GiB): the memory levels shrink the stage to
  // it. They used to aim at the cluster's 16 GiB, leave every solve at level 0, and find no
  // plan below 13 MiB.
  PlannerOptions options = DataParallelOptions();
  options.search_zero3 = false;
  options.device_memory_bytes = 8 * kMiB;
  Result<PipelinePlan> plan = PlanPipeline(Model(), testing::P3(1, 4), options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_LE(plan.value().peak_memory_bytes, 8 * kMiB);
  EXPECT_TRUE(plan.value().stages[0].zero);
}

PipelinePlan ManualDataParallel(int32_t zero) {
  ManualPlanSpec spec;
  spec.data_parallel = 4;
  spec.microbatches = 2;
  spec.zero_stage = zero;
  PlannerOptions options;
  options.threads = 2;
  Result<PipelinePlan> plan = EvaluateManualPlan(Model(), testing::P3(1, 4), spec, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(plan).value() : PipelinePlan{};
}

TEST(ZeroThree, ManualStageThreeShardsWeightsGradientsAndState) {
  const PipelinePlan one = ManualDataParallel(1);
  const PipelinePlan three = ManualDataParallel(3);
  ASSERT_EQ(one.stages.size(), 1u);
  ASSERT_EQ(three.stages.size(), 1u);
  // ZeRO-1 reads every weight in the layout it is stored in.
  EXPECT_FALSE(one.stages[0].shard_parameters);
  EXPECT_FALSE(AnyPieceGathersWeights(one.stages[0]));
  // ZeRO-3 (DeepSpeed's stage 3): weights gathered, gradients held as shards, state sharded.
  EXPECT_TRUE(three.stages[0].zero);
  EXPECT_TRUE(three.stages[0].shard_gradients);
  EXPECT_TRUE(three.stages[0].shard_parameters);
  EXPECT_TRUE(AnyPieceGathersWeights(three.stages[0]));
  EXPECT_LT(three.peak_memory_bytes, one.peak_memory_bytes);
  // The gathers run every microbatch: the step costs more than ZeRO-1's.
  EXPECT_GT(three.stages[0].latency, one.stages[0].latency);
}

TEST(ZeroThree, PlanJsonCarriesTheStageFlag) {
  const PipelinePlan plan = ManualDataParallel(3);
  ASSERT_EQ(plan.stages.size(), 1u);
  Result<std::string> text = PipelinePlanJson(plan, testing::P3(1, 4), kGpt, 2);
  ASSERT_TRUE(text.ok()) << text.status().message();
  Result<PipelinePlan> back = ReadPipelinePlanJson(text.value(), nullptr);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back.value().stages[0].shard_parameters);
  // A plan written before the flag reads as not sharding weights.
  std::string old = text.value();
  const std::string key = "\"shard_parameters\":true,";
  const size_t at = old.find(key);
  ASSERT_NE(at, std::string::npos);
  old.erase(at, key.size());
  Result<PipelinePlan> older = ReadPipelinePlanJson(old, nullptr);
  ASSERT_TRUE(older.ok()) << older.status().message();
  EXPECT_FALSE(older.value().stages[0].shard_parameters);
}

}  // namespace
}  // namespace alpa
