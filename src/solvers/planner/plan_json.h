// The pipeline plan as JSON (docs/planner.md has the schema).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "solvers/planner/planner.h"

namespace alpa {

inline constexpr int32_t kPlanJsonSummary = 0;
inline constexpr int32_t kPlanJsonDetailed = 1;
inline constexpr int32_t kPlanJsonExecutable = 2;

// detail 0 (kPlanJsonSummary): summary (stages, transfers with their move counts, compile
// split); detail 1 (kPlanJsonDetailed): also every stage's per-op strategies and collectives and
// every transfer's slice moves; detail 2 (kPlanJsonExecutable): also the planned graph, the
// clustering and every piece's subgraph boundary and auto-sharding (per-op layouts, schedule,
// collectives), everything ReadPipelinePlanJson (plan_json_read.h) needs to rebuild the plan.
// `model` names the model ("" when unknown). Errors: only at detail 2, a graph that does not
// validate (kInvalidGraph).
// A stage's (or a manual spec's) recomputation as the plan JSON writes it: false (none), true
// (full) or "selective".
nlohmann::json RecomputeJson(Recompute remat);

Result<std::string> PipelinePlanJson(const PipelinePlan& plan, const Cluster& cluster,
                                     const std::string& model, int32_t detail);

}  // namespace alpa
