// The planner is deterministic: the same model, cluster and options give the same plan (its
// whole detailed JSON, timings aside) run after run and whatever the thread count, since the
// intra-op solves are independent tasks whose results land in fixed slots.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/planner_model.h"
#include "solvers/planner/plan_json.h"
#include "solvers/planner/planner.h"
#include "support/clusters.h"

namespace alpa {
namespace {

constexpr const char* kSmallGpt = "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=16";

// The detailed plan JSON with the wall-clock statistics (the only clock-dependent fields)
// zeroed.
std::string PlanJsonWithoutTimings(PipelinePlan plan, const Cluster& cluster) {
  plan.stats.clustering_seconds = 0;
  plan.stats.intra_op_seconds = 0;
  plan.stats.dp_seconds = 0;
  plan.stats.total_seconds = 0;
  return PipelinePlanJson(plan, cluster, kSmallGpt, 1).value();
}

TEST(PlannerDeterminism, SamePlanOnEveryRunAndThreadCount) {
  Result<PlannerModel> model = PlannerModelFromSpec(kSmallGpt);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Cluster cluster = testing::P3(1);
  std::vector<std::string> plans;
  // Thread counts 1, 2 and 4, and 4 again: another run with the same count.
  for (int32_t threads : {1, 2, 4, 4}) {
    PlannerOptions options;  // the defaults, as `alpa plan` runs them, at one B (for time)
    options.microbatches = 4;
    options.threads = threads;
    Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster, options);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    plans.push_back(PlanJsonWithoutTimings(std::move(plan).value(), cluster));
  }
  for (size_t k = 1; k < plans.size(); ++k) {
    EXPECT_EQ(plans[k], plans[0]) << "plan " << k << " differs from the first";
  }
}

// With the microbatch search, every count after the first starts its solves from the last
// count's solutions (warm starts): the plan still does not depend on the thread count, and it
// is the plan of cold solves.
TEST(PlannerDeterminism, TheMicrobatchSearchWithWarmStartsIsDeterministicAndFindsTheColdPlan) {
  Result<PlannerModel> model = PlannerModelFromSpec(kSmallGpt);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Cluster cluster = testing::P3(1);
  std::vector<std::string> plans;
  double warm_seconds = 0;
  for (int32_t threads : {1, 2}) {
    PlannerOptions options;
    options.threads = threads;
    Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster, options);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_GE(plan.value().stats.microbatches_tried.size(), 2u);
    warm_seconds = plan.value().iteration_seconds;
    plans.push_back(PlanJsonWithoutTimings(std::move(plan).value(), cluster));
  }
  EXPECT_EQ(plans[1], plans[0]);
  PlannerOptions cold_options;
  cold_options.intra_op_warm_start = false;
  Result<PipelinePlan> cold = PlanPipeline(model.value(), cluster, cold_options);
  ASSERT_TRUE(cold.ok()) << cold.status().message();
  EXPECT_DOUBLE_EQ(warm_seconds, cold.value().iteration_seconds);
}

}  // namespace
}  // namespace alpa
