// The stage DP's objective leaves the transfers between stages out, so the planner also ranks,
// by the full prediction (transfers included), the DP's best answers without each logical mesh
// its first answer uses.
#include <gtest/gtest.h>

#include <string>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/planner.h"

namespace alpa {
namespace {

// gpt-6.7b on two p3.16xlarge hosts with the V100 calibration (bench/calibration/v100-p3.json),
// pinned to 4 stages of 512 microbatches. The DP's own answer puts [4, 1] tp-4 stages whose
// replicated boundary, crossing the hosts, costs twice a [2, 2] stage's split one per
// microbatch; the stage latencies it compares differ by 1 %. The plan must be no slower than
// the same search capped at tp 2 (which has only the [2, 2] stages) and than Megatron's
// dp 2 x tp 2 x pp 4.
TEST(PlannerAlternatives, NoSlowerThanTheSearchCappedAtTensorParallel2) {
  Result<Cluster> cluster = MakePresetCluster("p3.16xlarge", 2);
  ASSERT_TRUE(cluster.ok());
  Result<Calibration> v100 = ReadCalibrationFile(
      std::string(ALPA_CALIBRATION_DIR) + "/v100-p3.json", cluster.value().calibration);
  ASSERT_TRUE(v100.ok()) << v100.status().message();
  cluster.value().calibration = v100.value();
  Result<PlannerModel> model = PlannerModelFromSpec("gpt-6.7b");
  ASSERT_TRUE(model.ok()) << model.status().message();
  PlannerOptions options;
  options.threads = 2;
  // The solver's deterministic work budget, not the wall clock, ends each solve (sanitizer
  // builds run it several times slower than the default 0.5 s cap allows).
  options.intra_op_time_limit_seconds = 60;
  options.pipeline_stages = 4;
  options.microbatches = 512;
  Result<PipelinePlan> free = PlanPipeline(model.value(), cluster.value(), options);
  options.max_tensor_parallel = 2;
  Result<PipelinePlan> capped = PlanPipeline(model.value(), cluster.value(), options);
  ASSERT_TRUE(free.ok()) << free.status().message();
  ASSERT_TRUE(capped.ok()) << capped.status().message();
  EXPECT_LE(free.value().iteration_seconds, capped.value().iteration_seconds * (1 + 1e-9));

  ManualPlanSpec megatron;
  megatron.data_parallel = 2;
  megatron.tensor_parallel = 2;
  megatron.pipeline_parallel = 4;
  megatron.microbatches = 512;
  options.max_tensor_parallel = 0;
  options.pipeline_stages = 0;
  Result<PipelinePlan> grid = EvaluateManualPlan(model.value(), cluster.value(), megatron, options);
  ASSERT_TRUE(grid.ok()) << grid.status().message();
  EXPECT_LE(free.value().iteration_seconds, grid.value().iteration_seconds);
}

}  // namespace
}  // namespace alpa
