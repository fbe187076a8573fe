// Reading an executable plan JSON (PipelinePlanJson at kPlanJsonExecutable, what `alpa plan -o`
// writes; docs/planner.md) back into the in-memory plan that LowerPlan (exec/lower) and the
// simulator consume.
#pragma once

#include <string>
#include <string_view>

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "solvers/planner/planner.h"

namespace alpa {

// Rebuilds the plan: the graph (validated), the clustering, every stage with its pieces (each
// piece's subgraph cut from the graph by the clustering as the planner cuts it, and checked
// against the stored op ids and boundary; its auto-sharding checked against the subgraph and
// the stage's mesh), the transfers with their slice moves, the prediction and compile
// statistics. Writing the result again at kPlanJsonExecutable gives the same bytes.
// `cluster_out` / `model_out` (optional) receive the plan's cluster and model name.
// Errors name the element by its JSON path: kParse for text that is not JSON, a missing field
// or a wrong type, an unknown "format" or "version", a plan written at detail 0 or 1 (no
// "graph"); kInvalidGraph for a graph that does not validate; kInvalidArgument for content that
// does not fit together (ids out of range, a spec invalid for its tensor on the stage mesh, a
// collective naming a missing op, a device in two stages, a stage whose mesh and device list
// differ in size, a piece that differs from the one cut from the graph); kOutOfMemory.
Result<PipelinePlan> ReadPipelinePlanJson(std::string_view text, Cluster* cluster_out,
                                          std::string* model_out = nullptr);

}  // namespace alpa
