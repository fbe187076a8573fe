// The local computation of a sharded op: the same op on one device's pieces of its operands,
// with the attributes that name sizes rewritten for the local shapes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {

// A graph whose last op is op `id` of `graph` reading placeholder parameters of
// `operand_shapes` (one per operand, the operand ops' dtypes), producing `result_shape`. A slice
// over a split dim takes the whole local dim. The local type is re-inferred and must equal
// `result_shape`: kInternal naming the op otherwise (the layouts do not fit the op).
Result<Graph> BuildLocalOp(const Graph& graph, int32_t id, const std::vector<Dims>& operand_shapes,
                           const Dims& result_shape);

}  // namespace alpa
