// A memory-aware execution order of a graph's ops, for liveness in the sharding problem.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace alpa {

// A topological order that, among the ready ops, runs first the one whose result adds the
// fewest bytes net of the operands it is the last reader of (in graph order); ties go to the
// smaller op id. An op with alias_of >= 0 (an update written into its parameter's buffer) runs
// after every other reader of that parameter. `bytes[op]` is what an op's result occupies (0 for
// ops that take no memory). Deterministic.
std::vector<int32_t> MemoryAwareSchedule(const Graph& graph, const std::vector<int64_t>& bytes);

}  // namespace alpa
