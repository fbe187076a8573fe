// Sharded equals one device on thread devices: every case of the shared list
// (support/plan_equivalence_cases.h), lowered to device programs and run on threads of this
// process with real collectives for 3 steps, gives the loss and every parameter and optimizer
// state of the one-device interpreter within tolerance, and what runs is what was planned. The
// same cases run as 8 MPI processes in mpi_plan_equivalence_checks.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>

#include "exec/driver/plan_run.h"
#include "support/plan_equivalence_cases.h"

namespace alpa::testing {

void PrintTo(const EquivalenceCase& c, std::ostream* os) { *os << c.name; }

namespace {

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
  std::printf("memory %s: measured / planned peak, worst device %.3f\n", c.name.c_str(),
              WorstMemoryRatio(run.value()));
}

INSTANTIATE_TEST_SUITE_P(Zoo, PlanEquivalenceTest, ::testing::ValuesIn(EquivalenceCases()),
                         [](const ::testing::TestParamInfo<EquivalenceCase>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace alpa::testing
