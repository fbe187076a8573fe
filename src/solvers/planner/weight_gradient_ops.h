// Which backward ops of a piece compute weight gradients only: what a schedule that splits the
// backward (ZB-H1, pipeline_schedule.h) may run after the input gradient has left.
#pragma once

#include <vector>

#include "core/ir/graph.h"

namespace alpa {

// Per op of `graph` (a piece's subgraph, subgraph.h), 1 for a backward op that no per-microbatch
// backward output depends on: an output of backward phase that is not accumulated into a weight's
// gradient (AccumulatedIntoGradient) is an input gradient another piece or stage waits for, and
// every backward op it reads, directly or not, runs before it leaves (the B task); the other
// backward ops are the W task. A graph with no such output (the first piece, a whole model) is
// all W. Forward and update ops are 0.
std::vector<char> WeightGradientOps(const Graph& graph);

}  // namespace alpa
