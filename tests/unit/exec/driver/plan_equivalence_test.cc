// Sharded equals one device on thread devices: every case of the shared list
// (support/plan_equivalence_cases.h), lowered to device programs and run on threads of this
// process with real collectives for 3 steps, gives the loss and every parameter and optimizer
// state of the one-device interpreter within tolerance, and what runs is what was planned. The
// same cases run as 8 MPI processes in mpi_plan_equivalence_checks.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "exec/driver/memory_breakdown.h"
#include "exec/driver/plan_run.h"
#include "support/plan_equivalence_cases.h"

namespace alpa::testing {

void PrintTo(const EquivalenceCase& c, std::ostream* os) { *os << c.name; }

namespace {

// Measured against planned memory, per device at the last step (asserted; the MPI test reports
// only the ratio). Returns the row of the device farthest from the plan.
std::string CheckMemoryAgainstPlan(const EquivalenceCase& c, const PipelinePlan& plan,
                                   const PlanRunReport& run) {
  // Measured against planned memory, per device at the last step. The walk over the program
  // (memory_breakdown.h) must find the runtime's peak, so that its split by component accounts
  // for exactly what was measured, and the planner's model must give the planned bytes. The
  // bounds are docs/executor.md's ("Memory: measured against planned"): without the free ops'
  // values, which this CPU runtime materialises and a compiler fuses, a device never holds more
  // than 11 % above the plan; the plan overestimates by at most 15 % when every gradient is
  // accumulated over several microbatches without rematerialization, and by at most 35 % with
  // one microbatch (gradients appear during the backward) or with rematerialization.
  const StepSummary& last = run.steps.back();
  const ProgramSet& programs = run.programs;
  const std::vector<char> free_op = FreeOpsOfPlan(plan);
  bool remat = false;
  for (const PlannedStage& st : plan.stages) remat = remat || st.remat != Recompute::kNone;
  double least = plan.microbatches > 1 && !remat ? 0.85 : 0.65;
  // The tightest: the last stage of a remat GPT at toy sizes, whose backward temporaries (the
  // loss's and the recomputed attention's) the model's working memory undercounts by 13 KB of
  // 69 (1.099 before the softmax's row maximum was marked stop_gradient, 1.101 after: both sides
  // fell by the same 1.1 KB).
  double most = 1.11;
  if (c.schedule == PipelineScheduleKind::kZeroBubbleH1) {
    // ZB-H1 (docs/executor.md): the model charges a whole activation per pending weight
    // gradient, which holds only its output gradients and the input-gradient part's values
    // (measured 0.57 to 0.86 of the plan without remat). Under remat the rerun forward values
    // stay until the weight gradient, which the model's checkpoints do not count (up to 1.61).
    least = 0.5;
    if (remat) most = 1.7;
  }
  // Interleaved 1F1B (docs/executor.md): a device's plan is the sum of its stages' models, each
  // with its own working memory and update peak, which the device reaches one at a time
  // (measured 0.76 to 0.89 of the plan).
  if (c.schedule == PipelineScheduleKind::kInterleavedOneFOneB) least = 0.65;
  double worst = 1;
  std::string worst_row;
  for (size_t d = 0; d < last.peak_bytes.size(); ++d) {
    if (last.peak_bytes[d] < 0 || last.planned_bytes[d] <= 0) continue;
    const DeviceProgram& program = programs.programs[d];
    const MeasuredMemory measured = MeasureProgramMemory(program, programs.graph, free_op);
    EXPECT_EQ(measured.peak_bytes, last.peak_bytes[d]) << "device " << d;
    Result<std::vector<PlannedMemory>> stage_models =
        PlannedDeviceMemory(plan, program.stages, c.schedule);
    EXPECT_TRUE(stage_models.ok()) << stage_models.status().message();
    if (!stage_models.ok()) continue;
    const std::vector<PlannedMemory>& planned = stage_models.value();
    EXPECT_EQ(PlannedTotal(planned), last.planned_bytes[d]) << "device " << d;
    const double planned_bytes = static_cast<double>(last.planned_bytes[d]);
    const double ratio = static_cast<double>(last.peak_bytes[d]) / planned_bytes;
    const double without_free =
        static_cast<double>(measured.peak_without_free_values) / planned_bytes;
    const std::string row =
        "device " + std::to_string(d) + ": " + MemoryBreakdownRow(measured, planned);
    EXPECT_LE(without_free, most) << row;
    EXPECT_GE(without_free, least) << row;
    if (worst_row.empty() || std::fabs(ratio - 1) > std::fabs(worst - 1)) {
      worst = ratio;
      worst_row = row;
    }
  }
  return "worst device " + std::to_string(worst) + "\n  " + worst_row;
}

class PlanEquivalenceTest : public ::testing::TestWithParam<EquivalenceCase> {};

TEST_P(PlanEquivalenceTest, ShardedEqualsOneDevice) {
  const EquivalenceCase& c = GetParam();
  Result<PlannedCase> planned = PlanEquivalenceCase(c);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const PipelinePlan& plan = planned.value().plan;
  Result<PlanRunReport> run =
      RunPlanOnThreads(plan, planned.value().whole, EquivalenceRunOptions(c));
  ASSERT_TRUE(run.ok()) << run.status().message();
  Status checked = CheckEquivalenceRun(plan, run.value());
  EXPECT_TRUE(checked.ok()) << checked.message();
  const std::string memory = CheckMemoryAgainstPlan(c, plan, run.value());
  std::printf("memory %s: measured / planned peak, %s\n", c.name.c_str(), memory.c_str());
  int64_t landings = 0;
  for (const CrossStageTransfer& t : plan.transfers) landings += t.landing_spec ? 1 : 0;
  std::printf("transfers %s: %lld of %zu with a local all-gather\n", c.name.c_str(),
              static_cast<long long>(landings), plan.transfers.size());
}

INSTANTIATE_TEST_SUITE_P(Zoo, PlanEquivalenceTest, ::testing::ValuesIn(EquivalenceCases()),
                         [](const ::testing::TestParamInfo<EquivalenceCase>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace alpa::testing
