// Test oracle for the stage DP: the same objective as SolveStageDp (solvers/pipeline/stage_dp.h),
// found by enumerating every partition of the layers into consecutive ranges and every choice of
// candidate per range. Exponential: for small instances only (kUnsupported above 64 layers).
// Shares nothing with the DP but the input checks; ties: the fewest stages, then the first plan
// found.
#pragma once

#include "core/util/status.h"
#include "solvers/pipeline/stage_dp.h"

namespace alpa::testing {

Result<StageDpResult> SolveStageDpBruteForce(const StageDpInput& input);

}  // namespace alpa::testing
