// The microbatch search screens its counts on the one-dimensional logical meshes, then plans the
// best of them (and close neighbours) on every mesh (PlannerOptions::screen_microbatch_counts):
// the plan is the one of the search that plans every count on every mesh, for a fraction of the
// intra-op solves.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/planner_model.h"
#include "solvers/planner/planner.h"
#include "support/clusters.h"
#include "support/plan_checks.h"

namespace alpa {
namespace {

struct Searched {
  PipelinePlan screened, exhaustive;
};

Searched PlanBothWays(const std::string& spec, const Cluster& cluster,
                      PlannerOptions options = {}) {
  Result<PlannerModel> model = PlannerModelFromSpec(spec);
  EXPECT_TRUE(model.ok()) << model.status().message();
  options.threads = 2;
  Result<PipelinePlan> screened = PlanPipeline(model.value(), cluster, options);
  EXPECT_TRUE(screened.ok()) << screened.status().message();
  options.screen_microbatch_counts = false;
  Result<PipelinePlan> exhaustive = PlanPipeline(model.value(), cluster, options);
  EXPECT_TRUE(exhaustive.ok()) << exhaustive.status().message();
  return {std::move(screened).value(), std::move(exhaustive).value()};
}

// A GPT and a Wide-ResNet on two p3.16xlarge hosts: 5 one-dimensional logical meshes of 11.
TEST(MicrobatchScreening, FindsThePlanOfTheExhaustiveSearchWithFewerSolves) {
  for (const std::string spec : {"gpt:layers=4,hidden=512,heads=8,seq=256,vocab=2048,batch=64",
                                 "wresnet:layers=50,channels=32,width=2,batch=64"}) {
    const Cluster cluster = testing::P3(2);
    const Searched s = PlanBothWays(spec, cluster);
    EXPECT_EQ(s.screened.iteration_seconds, s.exhaustive.iteration_seconds) << spec;
    EXPECT_EQ(s.screened.microbatches, s.exhaustive.microbatches) << spec;
    EXPECT_LT(s.screened.stats.intra_op_solves, s.exhaustive.stats.intra_op_solves) << spec;
    // Every count tried was screened; the plan's count was planned on every mesh, and at most
    // it and its two neighbours were.
    const PlannerStats& st = s.screened.stats;
    EXPECT_GE(st.microbatches_tried.size(), 3u) << spec;
    EXPECT_GE(st.microbatches_full.size(), 1u) << spec;
    EXPECT_LE(st.microbatches_full.size(), 3u) << spec;
    for (int64_t b : st.microbatches_full) {
      EXPECT_NE(std::find(st.microbatches_tried.begin(), st.microbatches_tried.end(), b),
                st.microbatches_tried.end())
          << spec << ": " << b;
    }
    EXPECT_NE(std::find(st.microbatches_full.begin(), st.microbatches_full.end(),
                        s.screened.microbatches),
              st.microbatches_full.end())
        << spec;
    // The exhaustive search plans every count it tries on every mesh.
    EXPECT_EQ(s.exhaustive.stats.microbatches_full, s.exhaustive.stats.microbatches_tried) << spec;
    testing::ExpectPiecesCheck(s.screened);
    testing::ExpectPiecesCheck(s.exhaustive);
  }
}

// One pinned stage spans both hosts: the one-dimensional meshes would rank the counts wrongly
// there (tensor parallelism inside hosts and data parallelism across them need the
// two-dimensional ones), so the search runs again on every mesh, as without screening.
TEST(MicrobatchScreening, AStageSpanningHostsIsSearchedOnEveryMesh) {
  PlannerOptions options;
  options.pipeline_stages = 1;
  const Searched s = PlanBothWays("gpt:layers=4,hidden=512,heads=8,seq=256,vocab=2048,batch=64",
                                  testing::P3(2), options);
  ASSERT_EQ(s.screened.stages.size(), 1u);
  EXPECT_EQ(s.screened.stages[0].submesh.hosts, 2);
  EXPECT_EQ(s.screened.iteration_seconds, s.exhaustive.iteration_seconds);
  EXPECT_EQ(s.screened.microbatches, s.exhaustive.microbatches);
  EXPECT_EQ(s.screened.stats.microbatches_full, s.exhaustive.stats.microbatches_tried);
  EXPECT_GT(s.screened.stats.microbatches_tried.size(), 0u);
}

// With fewer layer groups than hosts some stage must span hosts: the counts are not screened.
TEST(MicrobatchScreening, FewerLayerGroupsThanHostsAreNotScreened) {
  const Searched s =
      PlanBothWays("gpt:layers=2,hidden=256,heads=4,seq=64,vocab=1024,batch=64", testing::P3(4));
  EXPECT_EQ(s.screened.stats.microbatches_full, s.screened.stats.microbatches_tried);
  EXPECT_EQ(s.screened.stats.microbatches_tried, s.exhaustive.stats.microbatches_tried);
  EXPECT_EQ(s.screened.iteration_seconds, s.exhaustive.iteration_seconds);
}

// A fixed count is planned once, on every mesh.
TEST(MicrobatchScreening, AFixedCountIsNotScreened) {
  Result<PlannerModel> model =
      PlannerModelFromSpec("gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=16");
  ASSERT_TRUE(model.ok()) << model.status().message();
  PlannerOptions options;
  options.microbatches = 4;
  Result<PipelinePlan> plan = PlanPipeline(model.value(), testing::P3(1), options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan.value().stats.microbatches_tried, std::vector<int64_t>{4});
  EXPECT_EQ(plan.value().stats.microbatches_full, std::vector<int64_t>{4});
}

}  // namespace
}  // namespace alpa
