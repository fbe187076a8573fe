// Checks the planner tests share on a finished pipeline plan (plan_checks.h).
#include "support/plan_checks.h"

#include <gtest/gtest.h>

#include <optional>

#include "solvers/auto_sharding/plan_check.h"

namespace alpa::testing {

void ExpectPiecesCheck(const PipelinePlan& plan) {
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlannedStage& st = plan.stages[s];
    for (const StagePiece& p : st.pieces) {
      const Status check =
          CheckShardingPlan(p.subgraph->graph, st.logical_mesh, *p.sharding, std::nullopt);
      EXPECT_TRUE(check.ok()) << "stage " << s << ": " << check.message();
    }
  }
}

}  // namespace alpa::testing
