// The planner's time limit (PlannerOptions::time_limit_seconds): the search returns the best
// plan found when it expires (a valid plan: stages tile the cluster), or kTimeout when there is
// none yet, within a loose bound of the limit; the progress reports the limit.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "models/planner_model.h"
#include "solvers/planner/plan_json.h"
#include "solvers/planner/planner.h"
#include "support/clusters.h"

namespace alpa {
namespace {

constexpr const char* kSmallGpt = "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=16";

using testing::P3;

PlannerModel SmallGpt() {
  Result<PlannerModel> model = PlannerModelFromSpec(kSmallGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : PlannerModel{};
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A limit that expires before any solve: kTimeout, saying so, at once.
TEST(PlannerTimeLimit, NothingSolvedIsATimeout) {
  PlannerOptions options;
  options.threads = 2;
  options.time_limit_seconds = 1e-9;
  const auto t0 = std::chrono::steady_clock::now();
  Result<PipelinePlan> plan = PlanPipeline(SmallGpt(), P3(2), options);
  EXPECT_LT(SecondsSince(t0), 5.0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kTimeout);
  EXPECT_NE(plan.status().message().find("planning time limit of 1e-09 s reached before any "
                                         "plan was found"),
            std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("--time-limit"), std::string::npos);
}

// 256 hosts: about a thousand logical meshes per piece type, far more than a second of solves
// on a few cores. With a 1 s limit the search stops and returns the best plan so far.
TEST(PlannerTimeLimit, ExpiredLimitReturnsTheBestPlanSoFar) {
  PlannerOptions options;
  options.threads = 2;
  options.time_limit_seconds = 1.0;
  bool saw_time_limit_phase = false, limit_in_progress = true;
  options.on_progress = [&](const PlannerProgress& p) {
    if (std::string(p.phase) == "time limit") saw_time_limit_phase = true;
    if (p.time_limit_seconds != 1.0) limit_in_progress = false;
    return true;
  };
  const Cluster cluster = P3(256);
  const auto t0 = std::chrono::steady_clock::now();
  Result<PipelinePlan> plan = PlanPipeline(SmallGpt(), cluster, options);
  const double seconds = SecondsSince(t0);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  // Loose: the stage DP and the plan's read-back run after the limit on the meshes solved.
  EXPECT_LT(seconds, 15.0);
  EXPECT_TRUE(limit_in_progress);
  const PipelinePlan& p = plan.value();
  EXPECT_TRUE(p.stats.time_limit_reached);
  EXPECT_TRUE(saw_time_limit_phase);
  // The screening pass (one-dimensional meshes only) may finish a few counts; the limit stops the
  // pass over every mesh at its first count.
  EXPECT_GE(p.stats.microbatches_tried.size(), 1u);
  EXPECT_LE(p.stats.microbatches_full.size(), 1u);
  // A whole plan: the stages cover the layers in order and tile the cluster's devices.
  std::set<int64_t> devices;
  int32_t next_layer = 0;
  for (const PlannedStage& st : p.stages) {
    EXPECT_EQ(st.first_layer, next_layer);
    next_layer = st.last_layer + 1;
    for (int64_t d : st.devices) EXPECT_TRUE(devices.insert(d).second);
  }
  EXPECT_EQ(next_layer, p.clustering.num_layers);
  EXPECT_EQ(static_cast<int64_t>(devices.size()), cluster.num_devices());
  EXPECT_GT(p.iteration_seconds, 0);
  EXPECT_NE(PipelinePlanJson(p, cluster, kSmallGpt, 0).value().find("\"time_limit_reached\":true"),
            std::string::npos);
}

// A limit that is not reached changes nothing: the same plan as without one.
TEST(PlannerTimeLimit, UnreachedLimitGivesTheUnlimitedPlan) {
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 4;
  Result<PipelinePlan> free_plan = PlanPipeline(SmallGpt(), P3(1), options);
  options.time_limit_seconds = 600;
  Result<PipelinePlan> timed_plan = PlanPipeline(SmallGpt(), P3(1), options);
  ASSERT_TRUE(free_plan.ok() && timed_plan.ok());
  EXPECT_FALSE(timed_plan.value().stats.time_limit_reached);
  EXPECT_EQ(free_plan.value().iteration_seconds, timed_plan.value().iteration_seconds);
  EXPECT_EQ(free_plan.value().stages.size(), timed_plan.value().stages.size());
}

}  // namespace
}  // namespace alpa
