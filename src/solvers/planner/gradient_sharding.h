// ZeRO-2 (gradients sharded over the data-parallel devices) as a variant of a ZeRO-1 solve.
//
// Under ZeRO-1 the intra-op solve may reduce-scatter a weight's gradient before a sharded
// optimizer update: with gradient accumulation over B microbatches the executor sums each
// microbatch's gradient at its full (partial-sum) size and reduce-scatters the sum once per
// iteration. ZeRO-2 reduce-scatters every microbatch's gradient instead and accumulates only
// the shard: the same layouts and collectives, B times the gradient synchronisation's
// reduce-scatters, and the gradient accumulators held at their reduce-scattered size.
//
// A gradient qualifies (a chain) when its reduce-scatter runs on a tensor t reached from an
// accumulation root (a backward dot_general, convolution, reduce_sum or scatter_add) through
// ops linear in their one computed operand (neg, convert, reshape, transpose, slice,
// broadcast_in_dim, reverse; mul and div by free values), each value read once and by the next
// op of the chain only, none of them a graph output, with no collective on the root or between
// the ops; and t's collectives into the layout its readers read (its reader layout, or its one
// reader's operand layout) are all gradient synchronisations, one of them a reduce-scatter.
// Per microbatch the chain then runs after the root, the collectives lay t out, and the shard
// is summed; the update reads the sum. Anything else keeps the ZeRO-1 accumulation.
// The planner prices a ZeRO-2 stage from these chains (stage_costs.h), the lowering runs them
// (exec/lower), so that both agree on what is sharded.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster/sharding_spec.h"
#include "core/ir/graph.h"
#include "solvers/auto_sharding/auto_sharding.h"

namespace alpa {

struct GradientChain {
  int32_t root = -1;           // the accumulation root (summed per microbatch under ZeRO-1)
  std::vector<int32_t> chain;  // the ops after the root, in order; t is the last (or the root)
  int32_t tensor = -1;         // t: the value whose gradient synchronisation moves per microbatch
  // The layout t is summed in: its reader layout, or its one reader's operand layout.
  ShardingSpec accumulate_spec;
  bool reader_layout = false;           // accumulate_spec is t's reader layout (else an edge's)
  int32_t consumer = -1, operand = -1;  // the edge's reader and operand slot (else -1)
  std::vector<int32_t> collectives;     // indices into the result's collectives, moved
};

struct GradientSharding {
  std::vector<GradientChain> chains;
  // Seconds per iteration that run per microbatch instead: the moved collectives and the
  // chain's update-phase ops.
  double moved_seconds = 0;
  // Bytes per device: the gradients held over the iteration that are held as shards instead
  // (their full bytes less the shards'), and the most one chain's gradients hold at full size
  // while a microbatch's gradient is laid out (its other values are transient under ZeRO-1 too).
  int64_t saved_bytes = 0;
  int64_t transient_bytes = 0;
  bool applies() const { return !chains.empty(); }
};

// The chains of `result` (an auto-sharding of `graph` on a mesh of `mesh_shape`) and what they
// move, as the header comment says. Empty when nothing qualifies (no reduce-scattered gradient).
GradientSharding FindGradientChains(const Graph& graph, const AutoShardResult& result);

}  // namespace alpa
