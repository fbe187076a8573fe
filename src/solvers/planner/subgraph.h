// Cutting a training graph into pieces the planner solves on their own: the ops of a set of
// layer groups as a standalone graph, with what they read from elsewhere turned into inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {

struct Subgraph {
  Graph graph;
  std::vector<int32_t> origin;  // per op of `graph`: its op id in the full graph
  // Ops of `graph` that stand for tensors computed outside the selection (activations and
  // gradients of other groups): parameters with role kInput, in first-use order.
  std::vector<int32_t> boundary_inputs;
  // Ops of `graph` whose results the rest of the full graph reads (besides the full graph's
  // own outputs, which stay outputs here).
  std::vector<int32_t> boundary_outputs;
  // Per boundary output: whether it is a weight's gradient or added into one of its shape in
  // the full graph (accumulated over microbatches, handed over once per iteration).
  std::vector<char> boundary_output_accumulated;
};

// Whether op `id` of `graph` is a weight's gradient (role kGradient) or a term of a sum of
// backward adds of its own shape that is one: a value accumulated over microbatches. Readers
// are the ops after `id` (graphs are in topological order).
bool AccumulatedIntoGradient(const Graph& graph, int32_t id);
// The same for every op at once (one entry per op, 1 where it holds), in time linear in the
// graph.
std::vector<char> AccumulatedIntoGradient(const Graph& graph);

// The ops with op_group[id] in [first, last], in graph order, plus:
//   - parameters they read (or, for update ops, replace) from other groups, copied as they are (a
//   tied weight is held by every
//     group that reads it, as Megatron keeps the embedding on the first and the last stage);
//   - constants and iotas they read, and ops computed from such ops alone, copied (each piece
//     computes them itself: an XLA import defines a constant's broadcast, such as a causal
//     mask, once, in the first layer that reads it; these are not boundary outputs either);
//   - ops of no group (op_group -1: global optimizer state such as Adam's step counter) that
//     they read, directly or through other such ops, copied;
//   - any other tensor they read becomes a kInput parameter of the same shape and dtype.
// Outputs: the full graph's outputs that were selected, then every selected op read outside the
// selection. op_group must have one entry per op. Errors: kInvalidArgument when the range is
// empty or selects no op.
Result<Subgraph> ExtractSubgraph(const Graph& graph, const std::vector<int32_t>& op_group,
                                 int32_t first, int32_t last);

// A key equal for two graphs exactly when they are the same computation: every field but op
// names, sources and layer markers (a byte string; compare keys, do not parse them).
std::string StructuralKey(const Graph& graph);

}  // namespace alpa
