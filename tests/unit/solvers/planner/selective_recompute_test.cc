// Selective recomputation as a search dimension: between keeping every activation and
// recomputing the whole forward, the planner picks it where it fits and full recomputation
// would be slower, and leaves it where the memory is ample, too tight, or there is no attention.
#include <gtest/gtest.h>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/stage_costs.h"

namespace alpa {
namespace {

// Attention-heavy: 16 heads of 16 over a sequence of 1,024, so the scores dominate memory.
constexpr const char* kLongGpt = "gpt:layers=4,hidden=256,heads=16,seq=1024,vocab=1024,batch=8";

PipelinePlan Plan(const char* spec, RematMode remat, int64_t device_memory = 0) {
  Result<PlannerModel> model = PlannerModelFromSpec(spec);
  Result<Cluster> cluster = ParseClusterSpec("p3.16xlarge:hosts=1,devices_per_host=1");
  EXPECT_TRUE(model.ok() && cluster.ok());
  if (!model.ok() || !cluster.ok()) return {};
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 1;
  options.remat = remat;
  if (device_memory > 0) options.device_memory_bytes = device_memory;
  Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster.value(), options);
  EXPECT_TRUE(plan.ok()) << spec << ": " << plan.status().message();
  return plan.ok() ? std::move(plan).value() : PipelinePlan{};
}

Recompute OnlyChoice(const PipelinePlan& plan) {
  EXPECT_EQ(plan.stages.size(), 1u);
  return plan.stages.empty() ? Recompute::kNone : plan.stages[0].remat;
}

TEST(SelectiveRecompute, SitsBetweenKeepingAndFullRecomputation) {
  const PipelinePlan off = Plan(kLongGpt, RematMode::kOff);
  const PipelinePlan full = Plan(kLongGpt, RematMode::kOn);
  const PipelinePlan selective = Plan(kLongGpt, RematMode::kSelective);
  ASSERT_EQ(OnlyChoice(selective), Recompute::kSelective);
  // Slower than keeping everything, faster than rerunning the whole forward.
  EXPECT_GT(selective.iteration_seconds, off.iteration_seconds);
  EXPECT_LT(selective.iteration_seconds, full.iteration_seconds);
  // Holds far fewer activations than keeping them, more than full recomputation.
  EXPECT_LT(selective.stages[0].activation_bytes, off.stages[0].activation_bytes / 4);
  EXPECT_GT(selective.stages[0].activation_bytes, full.stages[0].activation_bytes);
  EXPECT_LT(selective.peak_memory_bytes, off.peak_memory_bytes);
  EXPECT_GT(selective.peak_memory_bytes, full.peak_memory_bytes);
  // The GPU runs the rerun ops: hardware FLOPs between the two.
  EXPECT_GT(selective.flops_per_iteration, off.flops_per_iteration);
  EXPECT_LT(selective.flops_per_iteration, full.flops_per_iteration);
}

TEST(SelectiveRecompute, TheSearchPicksItWhereItFitsAndFullRecomputationWouldBeSlower) {
  const PipelinePlan off = Plan(kLongGpt, RematMode::kOff);
  const PipelinePlan full = Plan(kLongGpt, RematMode::kOn);
  const PipelinePlan selective = Plan(kLongGpt, RematMode::kSelective);
  ASSERT_FALSE(off.stages.empty() || full.stages.empty() || selective.stages.empty());
  // Between selective's and no recomputation's peaks: selective wins.
  const int64_t tight = (selective.peak_memory_bytes + off.peak_memory_bytes) / 2;
  const PipelinePlan chosen = Plan(kLongGpt, RematMode::kSearch, tight);
  EXPECT_EQ(OnlyChoice(chosen), Recompute::kSelective);
  EXPECT_DOUBLE_EQ(chosen.iteration_seconds, selective.iteration_seconds);
  EXPECT_LE(chosen.peak_memory_bytes, tight);
}

TEST(SelectiveRecompute, TheSearchLeavesItWhereMemoryIsAmpleOrTooTight) {
  const PipelinePlan off = Plan(kLongGpt, RematMode::kOff);
  const PipelinePlan full = Plan(kLongGpt, RematMode::kOn);
  const PipelinePlan selective = Plan(kLongGpt, RematMode::kSelective);
  ASSERT_FALSE(off.stages.empty() || full.stages.empty() || selective.stages.empty());
  EXPECT_EQ(OnlyChoice(Plan(kLongGpt, RematMode::kSearch, 2 * off.peak_memory_bytes)),
            Recompute::kNone);
  const int64_t tighter = (full.peak_memory_bytes + selective.peak_memory_bytes) / 2;
  EXPECT_EQ(OnlyChoice(Plan(kLongGpt, RematMode::kSearch, tighter)), Recompute::kFull);
}

TEST(SelectiveRecompute, WithoutAttentionItIsNotSearchedAndForcedItIsNoRecomputation) {
  EXPECT_EQ(RecomputeChoices(RematMode::kSearch, false),
            (std::vector<Recompute>{Recompute::kNone, Recompute::kFull}));
  EXPECT_EQ(RecomputeChoices(RematMode::kSearch, true),
            (std::vector<Recompute>{Recompute::kNone, Recompute::kFull, Recompute::kSelective}));
  const char* mlp = "mlp:layers=4,hidden=64,batch=16";
  const PipelinePlan off = Plan(mlp, RematMode::kOff);
  const PipelinePlan selective = Plan(mlp, RematMode::kSelective);
  ASSERT_FALSE(off.stages.empty() || selective.stages.empty());
  EXPECT_DOUBLE_EQ(selective.iteration_seconds, off.iteration_seconds);
  EXPECT_EQ(selective.peak_memory_bytes, off.peak_memory_bytes);
  EXPECT_EQ(selective.flops_per_iteration, off.flops_per_iteration);
}

}  // namespace
}  // namespace alpa
