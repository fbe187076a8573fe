// One piece of an executable plan JSON (plan_json_read.h): its subgraph checked against the one
// cut from the plan's graph, and its auto-sharding read back. Not part of any API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/planner/plan_json_fields.h"
#include "solvers/planner/subgraph.h"

namespace alpa::plan_json_fields {

// `piece` is the piece object at `path` ({"layer_marker", "ops", "solve_status",
// "executable"}); `sub` the piece as the planner cuts it. Errors (kInvalidArgument naming the
// element): a stored op count, origin or boundary that differs from `sub`'s, a sharding whose
// op count differs from the subgraph's, a mesh shape other than the stage's, a spec invalid
// for its tensor's shape on the mesh, an op id out of range (schedule, collectives); kParse
// for missing fields and wrong types.
Result<AutoShardResult> ReadPieceSharding(const Json& piece, const std::string& path,
                                          const Subgraph& sub,
                                          const std::vector<int64_t>& mesh_shape);

}  // namespace alpa::plan_json_fields
