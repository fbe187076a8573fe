// Checks the planner tests share on a finished pipeline plan.
#pragma once

#include "solvers/planner/planner.h"

namespace alpa::testing {

// Every piece of every stage passes the independent plan checker (CheckShardingPlan on the
// stage's logical mesh); a failure names the stage.
void ExpectPiecesCheck(const PipelinePlan& plan);

}  // namespace alpa::testing
