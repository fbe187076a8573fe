// ZeRO-2 (gradient_sharding.h): the gradient chains of a ZeRO-1 solve, a ZeRO-2 stage's costs
// against its ZeRO-1 twin, the manual plan's zero_stage 2, the planner leaving the option off
// where nothing needs it, and the plan JSON carrying it.
#include "solvers/planner/gradient_sharding.h"

#include <gtest/gtest.h>

#include <string>

#include "core/cluster/cluster.h"
#include "exec/lower/lower_plan.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/plan_json.h"
#include "solvers/planner/plan_json_read.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/stage_costs.h"
#include "support/clusters.h"

namespace alpa {
namespace {

constexpr const char* kSmallGpt = "gpt:layers=4,hidden=256,heads=4,seq=64,vocab=1024,batch=16";

PlannerOptions Options() {
  PlannerOptions options;
  options.threads = 2;
  return options;
}

// dp 4 on one host of four devices, 4 microbatches, ZeRO stage `zero`.
PipelinePlan DataParallelPlan(int32_t zero) {
  Result<PlannerModel> model = PlannerModelFromSpec(kSmallGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return {};
  ManualPlanSpec spec;
  spec.data_parallel = 4;
  spec.microbatches = 4;
  spec.zero_stage = zero;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), testing::P3(1, 4), spec, Options());
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(plan).value() : PipelinePlan{};
}

bool IsRoot(OpKind kind) {
  return kind == OpKind::kDotGeneral || kind == OpKind::kConvolution ||
         kind == OpKind::kReduceSum || kind == OpKind::kScatterAdd;
}

TEST(GradientChains, EveryReduceScatteredWeightGradientOfAZeroOneSolve) {
  const PipelinePlan plan = DataParallelPlan(1);
  ASSERT_EQ(plan.stages.size(), 1u);
  int64_t chains = 0, saved = 0;
  for (const StagePiece& piece : plan.stages[0].pieces) {
    const Graph& g = piece.subgraph->graph;
    const AutoShardResult& r = *piece.sharding;
    const GradientSharding found = FindGradientChains(g, r);
    int64_t scattered_gradients = 0;
    for (const PlannedCollective& c : r.collectives) {
      scattered_gradients += c.gradient_sync && c.kind == CollectiveKind::kReduceScatter ? 1 : 0;
    }
    // Every weight gradient the solve reduce-scatters is a chain (the small GPT's are matmul,
    // bias and norm gradients, the embedding's a scatter-add).
    EXPECT_EQ(static_cast<int64_t>(found.chains.size()), scattered_gradients);
    for (const GradientChain& c : found.chains) {
      EXPECT_EQ(g.op(c.root).phase, Phase::kBackward);
      EXPECT_TRUE(IsRoot(g.op(c.root).kind)) << OpKindName(g.op(c.root).kind);
      EXPECT_EQ(c.chain.empty() ? c.root : c.chain.back(), c.tensor);
      EXPECT_TRUE(c.accumulate_spec.partial.empty()) << ToString(c.accumulate_spec);
      bool scatters = false;
      for (int32_t i : c.collectives) {
        const PlannedCollective& pc = r.collectives[static_cast<size_t>(i)];
        EXPECT_TRUE(pc.gradient_sync);
        EXPECT_EQ(pc.tensor, c.tensor);
        scatters = scatters || pc.kind == CollectiveKind::kReduceScatter;
      }
      EXPECT_TRUE(scatters);
    }
    chains += static_cast<int64_t>(found.chains.size());
    saved += found.saved_bytes;
    EXPECT_GT(found.moved_seconds, 0);
  }
  EXPECT_GT(chains, 0);
  EXPECT_GT(saved, 0);
}

TEST(GradientChains, NoneWithoutZero) {
  // ZeRO off: gradients are all-reduced, nothing is reduce-scattered.
  const PipelinePlan plan = DataParallelPlan(0);
  ASSERT_EQ(plan.stages.size(), 1u);
  for (const StagePiece& piece : plan.stages[0].pieces) {
    EXPECT_FALSE(FindGradientChains(piece.subgraph->graph, *piece.sharding).applies());
  }
}

TEST(GradientChains, TheSameInAPlanReadFromJson) {
  // The lowering finds the chains of a plan read back from JSON (whose ops carry no bytes): the
  // same chains as the planner's.
  const PipelinePlan plan = DataParallelPlan(2);
  ASSERT_EQ(plan.stages.size(), 1u);
  EXPECT_TRUE(plan.stages[0].shard_gradients);
  Result<std::string> text = PipelinePlanJson(plan, testing::P3(1, 4), kSmallGpt, 2);
  ASSERT_TRUE(text.ok()) << text.status().message();
  Result<PipelinePlan> back = ReadPipelinePlanJson(text.value(), nullptr);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back.value().stages.size(), 1u);
  EXPECT_TRUE(back.value().stages[0].shard_gradients);
  const std::vector<StagePiece>& a = plan.stages[0].pieces;
  const std::vector<StagePiece>& b = back.value().stages[0].pieces;
  ASSERT_EQ(a.size(), b.size());
  for (size_t p = 0; p < a.size(); ++p) {
    const GradientSharding x = FindGradientChains(a[p].subgraph->graph, *a[p].sharding);
    const GradientSharding y = FindGradientChains(b[p].subgraph->graph, *b[p].sharding);
    ASSERT_EQ(x.chains.size(), y.chains.size()) << "piece " << p;
    for (size_t c = 0; c < x.chains.size(); ++c) {
      EXPECT_EQ(x.chains[c].tensor, y.chains[c].tensor);
      EXPECT_EQ(x.chains[c].root, y.chains[c].root);
      EXPECT_EQ(x.chains[c].accumulate_spec, y.chains[c].accumulate_spec);
    }
  }
  // A plan written before ZeRO-2 (no "shard_gradients") reads as ZeRO-1 at most.
  std::string old = text.value();
  const std::string key = "\"shard_gradients\":true,";
  const size_t at = old.find(key);
  ASSERT_NE(at, std::string::npos);
  old.erase(at, key.size());
  Result<PipelinePlan> older = ReadPipelinePlanJson(old, nullptr);
  ASSERT_TRUE(older.ok()) << older.status().message();
  EXPECT_FALSE(older.value().stages[0].shard_gradients);
}

TEST(ZeroTwo, ManualPlanHoldsGradientShardsAndScattersEveryMicrobatch) {
  const PipelinePlan one = DataParallelPlan(1);
  const PipelinePlan two = DataParallelPlan(2);
  ASSERT_EQ(one.stages.size(), 1u);
  ASSERT_EQ(two.stages.size(), 1u);
  const PlannedStage& a = one.stages[0];
  const PlannedStage& b = two.stages[0];
  EXPECT_TRUE(a.zero);
  EXPECT_FALSE(a.shard_gradients);
  EXPECT_TRUE(b.zero);
  EXPECT_TRUE(b.shard_gradients);
  // The same solves; the reduce-scatters move from the iteration into every microbatch.
  double moved = 0;
  int64_t saved = 0, transient = 0;
  for (const StagePiece& piece : b.pieces) {
    const GradientSharding g = FindGradientChains(piece.subgraph->graph, *piece.sharding);
    moved += g.moved_seconds;
    saved += g.saved_bytes;
    transient = std::max(transient, g.transient_bytes);
  }
  EXPECT_NEAR(b.latency, a.latency + moved, 1e-12 + 1e-9 * a.latency);
  EXPECT_NEAR(b.iteration_overhead, a.iteration_overhead - moved, 1e-12 + 1e-9 * a.latency);
  EXPECT_GT(two.iteration_seconds, one.iteration_seconds);
  // Memory: the accumulators held as shards.
  Result<StageMemory> ma = PlannedStageMemoryModel(a);
  Result<StageMemory> mb = PlannedStageMemoryModel(b);
  ASSERT_TRUE(ma.ok() && mb.ok());
  EXPECT_EQ(mb.value().persistent, ma.value().persistent - saved);
  EXPECT_EQ(mb.value().With(b.in_flight), b.memory_bytes);
  EXPECT_LT(b.memory_bytes, a.memory_bytes);
}

// Reduce-scatter instructions of device 0's program, in backward tasks and in the update.
std::pair<int64_t, int64_t> ReduceScatters(const PipelinePlan& plan) {
  Result<ProgramSet> set = LowerPlan(plan);
  EXPECT_TRUE(set.ok()) << set.status().message();
  if (!set.ok()) return {-1, -1};
  const DeviceProgram& program = set.value().programs[0];
  int64_t backward = 0, update = 0;
  for (const ProgramTask& task : program.tasks) {
    for (int64_t i = task.begin; i < task.end; ++i) {
      if (program.code[static_cast<size_t>(i)].kind != InstructionKind::kReduceScatter) continue;
      if (task.kind == ProgramTaskKind::kBackward) ++backward;
      if (task.kind == ProgramTaskKind::kUpdate) ++update;
    }
  }
  return {backward, update};
}

TEST(ZeroTwo, TheLoweringScattersEveryMicrobatch) {
  // The small GPT's gradient reduce-scatters all leave the update (ZeRO-1) for each of the 4
  // microbatches' backward (ZeRO-2).
  const PipelinePlan one = DataParallelPlan(1);
  const PipelinePlan two = DataParallelPlan(2);
  const auto [backward1, update1] = ReduceScatters(one);
  const auto [backward2, update2] = ReduceScatters(two);
  EXPECT_GT(update1, 0);
  EXPECT_EQ(update2, 0);
  EXPECT_EQ(backward2 - backward1, 4 * update1);
}

TEST(ZeroTwo, ComposeStageMovesTimeAndBytes) {
  UnitProfile u;
  u.latency = 1.0;
  u.iteration_overhead = 0.5;
  u.persistent_bytes = 1000;
  u.activation_bytes = 100;
  u.working_bytes = 10;
  u.zero2_moved_seconds = 0.25;
  u.zero2_saved_bytes = 300;
  u.zero2_transient_bytes = 40;
  const ComposedStage one = ComposeStage({&u, &u}, {}, Recompute::kNone, false);
  const ComposedStage two = ComposeStage({&u, &u}, {}, Recompute::kNone, true);
  EXPECT_DOUBLE_EQ(one.latency, 2.0);
  EXPECT_DOUBLE_EQ(two.latency, 2.5);
  EXPECT_DOUBLE_EQ(one.iteration_overhead, 1.0);
  EXPECT_DOUBLE_EQ(two.iteration_overhead, 0.5);
  EXPECT_EQ(one.memory.persistent, 2000);
  EXPECT_EQ(two.memory.persistent, 1400);
  EXPECT_EQ(one.memory.working, 10);
  EXPECT_EQ(two.memory.working, 50);
}

TEST(ZeroTwo, PlannerLeavesItOffWhereEverythingFits) {
  // A small GPT on four V100s fits with room to spare: ZeRO-2 would only add reduce-scatters,
  // so the plan is the one without the option.
  Result<PlannerModel> model = PlannerModelFromSpec(kSmallGpt);
  ASSERT_TRUE(model.ok()) << model.status().message();
  PlannerOptions options = Options();
  options.microbatches = 4;
  Result<PipelinePlan> on = PlanPipeline(model.value(), testing::P3(1, 4), options);
  options.search_zero2 = false;
  Result<PipelinePlan> off = PlanPipeline(model.value(), testing::P3(1, 4), options);
  ASSERT_TRUE(on.ok() && off.ok());
  for (const PlannedStage& st : on.value().stages) EXPECT_FALSE(st.shard_gradients);
  EXPECT_EQ(on.value().iteration_seconds, off.value().iteration_seconds);
  EXPECT_EQ(on.value().stats.candidates, off.value().stats.candidates);
}

TEST(ZeroTwo, PlannerTakesItWhereItLetsAStageFit) {
  // The search narrowed to one data-parallel stage without recomputation or memory levels: on a
  // device memory just below what its best plan without ZeRO-2 needs, only ZeRO-2 (the same
  // solves, gradients held as shards) fits.
  Result<PlannerModel> model = PlannerModelFromSpec(kSmallGpt);
  ASSERT_TRUE(model.ok()) << model.status().message();
  PlannerOptions options = Options();
  options.microbatches = 4;
  options.pipeline_stages = 1;
  options.max_tensor_parallel = 1;
  options.remat = RematMode::kOff;
  options.memory_levels = 0;
  options.search_zero2 = false;
  Result<PipelinePlan> roomy = PlanPipeline(model.value(), testing::P3(1, 4), options);
  ASSERT_TRUE(roomy.ok()) << roomy.status().message();
  options.device_memory_bytes = roomy.value().peak_memory_bytes - 1;
  Result<PipelinePlan> off = PlanPipeline(model.value(), testing::P3(1, 4), options);
  options.search_zero2 = true;
  Result<PipelinePlan> on = PlanPipeline(model.value(), testing::P3(1, 4), options);
  ASSERT_TRUE(on.ok()) << on.status().message();
  ASSERT_EQ(on.value().stages.size(), 1u);
  EXPECT_TRUE(on.value().stages[0].shard_gradients);
  EXPECT_LE(on.value().peak_memory_bytes, *options.device_memory_bytes);
  // Without the option nothing fits, or only a slower plan.
  if (off.ok()) {
    EXPECT_LT(on.value().iteration_seconds, off.value().iteration_seconds);
  } else {
    EXPECT_EQ(off.status().code(), StatusCode::kInfeasible) << off.status().message();
  }
}

}  // namespace
}  // namespace alpa
