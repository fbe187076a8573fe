// Checks the planner tests share on a finished pipeline plan (plan_checks.h).
#include "support/plan_checks.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

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

int64_t BytesAfter(const std::string& message, const std::string& phrase) {
  const size_t at = message.find(phrase);
  if (at == std::string::npos) return -1;
  const size_t open = message.find('(', at);
  return open == std::string::npos ? -1 : std::stoll(message.substr(open + 1));
}

}  // namespace alpa::testing
