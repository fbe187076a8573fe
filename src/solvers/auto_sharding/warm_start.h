// A solve's starting assignment taken from another solve of the same graph structure on the
// same logical mesh (the planner's piece at another microbatch size). Internal to the
// auto-sharding pass.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/auto_sharding/auto_sharding_problem.h"

namespace alpa {

// One strategy per problem node of `model`, or empty when `from` is not a solve of a graph of
// the same ops on the same mesh shape with the same problem nodes (then the solve starts cold).
// A node with as many strategies as in `from` takes `from`'s choice (the same enumeration); a
// deciding op's node whose strategies differ (a split the new shapes allow or forbid) takes
// the strategy with the result layout, and then the operand layouts, `from` chose; any other
// node (or a choice of infinite cost) its cheapest allowed strategy; a follower its root's
// choice. The solver drops a start that breaks a constraint.
std::vector<int32_t> WarmStartAssignment(const Graph& graph, const AutoShardModel& model,
                                         const AutoShardResult& from);

}  // namespace alpa
