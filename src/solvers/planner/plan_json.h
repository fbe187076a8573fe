// The pipeline plan as JSON (docs/planner.md has the schema).
#pragma once

#include <cstdint>
#include <string>

#include "core/cluster/cluster.h"
#include "solvers/planner/planner.h"

namespace alpa {

// detail 0: summary (stages, transfers with their move counts, compile split); detail >= 1:
// also every stage's per-op strategies and collectives and every transfer's slice moves.
// `model` names the model ("" when unknown).
std::string PipelinePlanJson(const PipelinePlan& plan, const Cluster& cluster,
                             const std::string& model, int32_t detail);

}  // namespace alpa
