// The model zoo as the planner's input: a zoo spec becomes a PlannerModel whose builder makes the
// training step of one microbatch (the spec's `batch` split B ways) for any microbatch count B.
#pragma once

#include <string>

#include "core/util/status.h"
#include "solvers/planner/planner.h"

namespace alpa {

// A zoo spec as a PlannerModel (its `batch` key is the global batch). kInvalidArgument when the
// spec does not parse or has no integer `batch`; the builder fails when B does not divide it.
Result<PlannerModel> PlannerModelFromSpec(const std::string& spec);

}  // namespace alpa
