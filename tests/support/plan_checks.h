// Checks the planner tests share on a finished pipeline plan.
#pragma once

#include <cstdint>
#include <string>

#include "solvers/planner/planner.h"

namespace alpa::testing {

// Every piece of every stage passes the independent plan checker (CheckShardingPlan on the
// stage's logical mesh); a failure names the stage.
void ExpectPiecesCheck(const PipelinePlan& plan);

// The byte count a planner message gives in parentheses after `phrase` ("... is 17.50 GiB
// (18786158515 bytes)"), or -1 when the phrase or the parentheses are missing.
int64_t BytesAfter(const std::string& message, const std::string& phrase);

}  // namespace alpa::testing
