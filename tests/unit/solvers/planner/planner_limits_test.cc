// The planner's work limits (planner_limits.h): clusters, models, graphs and estimated solves
// beyond a limit are refused before the work starts, with a message that names the limit and
// the option that raises it; 0 removes a limit; the estimate is reported before the solves.
#include "solvers/planner/planner_limits.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>

#include "models/planner_model.h"
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

TEST(PlannerLimits, ClusterOverHostLimitIsRefusedAtOnceNamingTheOption) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<PipelinePlan> plan = PlanPipeline(SmallGpt(), P3(4096));
  EXPECT_LT(SecondsSince(t0), 5.0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(),
            "planner: the cluster has 4096 hosts, more than the limit of 1024; raise the limit "
            "with the plan option max_hosts (CLI --max-hosts; 0: no limit)");
}

TEST(PlannerLimits, ClusterOverDeviceLimitIsRefused) {
  PlannerLimits limits;
  limits.max_devices = 15;
  const Status st = CheckClusterLimits(P3(2), limits);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "planner: the cluster has 16 devices, more than the limit of 15; raise the limit "
            "with the plan option max_devices (CLI --max-devices; 0: no limit)");
  limits.max_devices = 16;
  EXPECT_TRUE(CheckClusterLimits(P3(2), limits).ok());
}

TEST(PlannerLimits, ZeroRemovesALimit) {
  PlannerLimits limits;
  limits.max_hosts = 0;
  limits.max_devices = 0;
  EXPECT_TRUE(CheckClusterLimits(P3(4096), limits).ok());
  limits.max_layers = 0;
  EXPECT_TRUE(CheckModelLayerLimit(1000000, limits).ok());
}

// The zoo spec's layer count is checked before its graph (a million layers) is built.
TEST(PlannerLimits, ModelOverLayerLimitIsRefusedBeforeBuilding) {
  Result<PlannerModel> model = PlannerModelFromSpec("gpt:layers=1000000,batch=16");
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model.value().layers, 1000000);
  PlannerModel guarded = model.value();
  bool built = false;
  guarded.build = [&](int64_t) -> Result<Graph> {
    built = true;
    return InvalidArgument("must not be built");
  };
  const auto t0 = std::chrono::steady_clock::now();
  Result<PipelinePlan> plan = PlanPipeline(guarded, P3(1));
  EXPECT_LT(SecondsSince(t0), 5.0);
  EXPECT_FALSE(built);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "planner: the model has 1000000 layers, more than the limit of 4096; raise the limit "
            "with the plan option max_layers (CLI --max-layers; 0: no limit)");
}

TEST(PlannerLimits, GraphOverOpLimitIsRefused) {
  PlannerOptions options;
  options.limits.max_graph_ops = 10;
  Result<PipelinePlan> plan = PlanPipeline(SmallGpt(), P3(1), options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("ops, more than the limit of 10; raise the limit with "
                                         "the plan option max_graph_ops (CLI --max-graph-ops"),
            std::string::npos)
      << plan.status().message();
}

// The estimate is reported before any solve, and a plan over the solve limit is refused then.
TEST(PlannerLimits, EstimatedSolvesAreReportedAndLimited) {
  PlannerOptions options;
  options.microbatches = 4;
  options.threads = 2;
  PlannerWorkEstimate seen;
  bool intra_op_report_without_estimate = false;
  int64_t total = 0;
  options.on_progress = [&](const PlannerProgress& p) {
    const std::string phase = p.phase;
    if (phase == "estimate") seen = p.estimate;
    if (phase == "intra-op") {
      if (seen.solves == 0 || p.estimate.solves != seen.solves)
        intra_op_report_without_estimate = true;
      total = p.total;
    }
    return true;
  };
  Result<PipelinePlan> plan = PlanPipeline(SmallGpt(), P3(2), options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_FALSE(intra_op_report_without_estimate);
  EXPECT_GT(seen.piece_types, 0);
  // p3.16xlarge x 2: submeshes (1,1), (1,2), (1,4), (1,8), (2,8); 1 + 1 + 2 + 3 + 4 meshes
  // (one host's (1, D) is (D, 1) transposed, not solved twice).
  EXPECT_EQ(seen.logical_meshes, 11);
  EXPECT_EQ(seen.solves_per_count, seen.piece_types * seen.logical_meshes);
  EXPECT_EQ(seen.solves_per_count, total);  // one task per (piece type, mesh)
  EXPECT_EQ(seen.microbatch_counts, 1);     // B fixed
  EXPECT_EQ(seen.solves, seen.solves_per_count);
  EXPECT_GE(seen.max_solves_per_count, seen.solves_per_count);
  EXPECT_GE(plan.value().stats.intra_op_solves, seen.solves);
  EXPECT_LE(plan.value().stats.intra_op_solves, seen.max_solves_per_count);

  options.limits.max_intra_op_solves = seen.solves - 1;
  Result<PipelinePlan> refused = PlanPipeline(SmallGpt(), P3(2), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(
                "planning needs an estimated " + std::to_string(seen.solves) +
                " intra-op solves (" + std::to_string(seen.piece_types) +
                " layer piece types x 11 logical meshes x 1 microbatch counts), more than the "
                "limit of " +
                std::to_string(seen.solves - 1) +
                "; raise the limit with the plan option max_intra_op_solves"),
            std::string::npos)
      << refused.status().message();
}

TEST(PlannerLimits, NegativeLimitsAndTimeLimitsAreInvalid) {
  PlannerOptions options;
  options.limits.max_layers = -1;
  Result<PipelinePlan> plan = PlanPipeline(SmallGpt(), P3(1), options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("max_layers must be >= 0"), std::string::npos);
  for (double bad : {-1.0, std::nan("")}) {
    PlannerOptions timed;
    timed.time_limit_seconds = bad;
    Result<PipelinePlan> r = PlanPipeline(SmallGpt(), P3(1), timed);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("time_limit_seconds must be >= 0"), std::string::npos);
  }
}

TEST(PlannerLimits, SaturatingProduct) {
  EXPECT_EQ(SaturatingProduct(3, 4), 12);
  EXPECT_EQ(SaturatingProduct(0, 4), 0);
  EXPECT_EQ(SaturatingProduct(int64_t{1} << 40, int64_t{1} << 40), INT64_MAX);
}

}  // namespace
}  // namespace alpa
