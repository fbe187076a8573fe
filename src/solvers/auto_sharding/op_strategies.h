// Sharding strategies of one op on a logical mesh (REFERENCE §3), built from the op's iteration
// space (iteration_space.h).
//
// A strategy is a loop assignment: per loop dim, the mesh dims it is split over (major first),
// plus `pass_partial`, the mesh dims over which a partial-sum operand flows through a linear op
// unreduced. From it follow
//   the result spec   each result dim takes its loop's mesh dims; partial over the mesh dims of
//                     split sum-reduced loops and over pass_partial (a partial sum is resolved by
//                     resharding, once per tensor: all-reduce, or reduce-scatter onto a split
//                     that the readers want, which is what ZeRO does to gradients);
//   operand specs     each operand dim takes its loop's mesh dims; operands the op is linear in
//                     are partial over pass_partial (the others are not partial);
//   in-op collectives an all-reduce (max) over every mesh dim of a split max-reduced loop, on
//                     the result shard;
//   compute cost      real units: the roofline time of the op's FLOPs and bytes divided by the
//                     work split (product of the split mesh dims); Alpa units: 0, except that
//                     dot_general and convolution left redundant on a mesh dim of size > 1 pay
//                     Alpa's recompute penalty, an all-reduce of the operand bytes on that dim;
//   memory            the result shard's bytes.
// Uneven splits are never produced: a loop dim is only split where it divides every tensor dim
// on it.
//
// Enumeration (EnumerateOpStrategies) tries every assignment of the mesh dims of size > 1 to a
// loop dim or to none (several mesh dims on one loop in increasing order). Followers
// derive their assignment from a neighbour's spec instead (AssignmentFromSpec), so that they can
// share the neighbour's decision (XLA auto-sharding's follow rule).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/cost_model.h"
#include "core/cluster/logical_mesh.h"
#include "core/cluster/sharding_spec.h"
#include "core/ir/graph.h"
#include "core/util/status.h"
#include "solvers/auto_sharding/iteration_space.h"

namespace alpa {

struct LoopAssignment {
  std::vector<std::vector<int32_t>> loop_mesh_dims;  // per loop dim, major first
  std::vector<int32_t> pass_partial;                 // increasing
  // With pass_partial: the one operand that is partial (mul, div, ...), or -1 for every linear
  // operand at once (add, sub, concatenate: a sum of partial sums).
  int32_t partial_operand = -1;
  bool operator==(const LoopAssignment& o) const {
    return loop_mesh_dims == o.loop_mesh_dims && pass_partial == o.pass_partial &&
           partial_operand == o.partial_operand;
  }
};

// A collective inside an op (not a resharding between ops).
struct OpCollective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int32_t mesh_dim = 0;
  double bytes = 0;  // the cost model's b: the result shard
  double cost = 0;
};

struct OpStrategy {
  LoopAssignment assignment;
  ShardingSpec result;
  std::vector<ShardingSpec> operands;  // one per operand
  double compute_cost = 0;
  double communication_cost = 0;  // sum of collectives' costs
  std::vector<OpCollective> collectives;
  int64_t memory_bytes = 0;  // result shard bytes per device
  int64_t work_split = 1;    // devices the op's work is divided over
};

struct StrategyContext {
  const Graph* graph = nullptr;
  const LogicalMesh* mesh = nullptr;
  // Needed in real units (the roofline); may be null in Alpa units.
  const Cluster* cluster = nullptr;
  CostMode cost_mode = CostMode::kRealUnits;
  // Per op of *graph: whether its result is written to memory (core/ir/fusion.h); empty: every
  // result is (each op pays for reading its operands and writing its result).
  std::vector<bool> materialized;
  // Per op and operand slot, with `materialized`: whether the op's fusion pays for that read
  // (core/ir/fusion.h ChargedReads); empty: every materialised operand is paid for.
  std::vector<std::vector<bool>> charged_reads;
  // Per op: above 0 for a product the runner's attention kernels compute, the share of its flops
  // they do (core/ir/attention_core.h AttentionProductWork), priced in ComputeClass::kAttention;
  // empty: every dot_general is a matmul.
  std::vector<double> attention_work;
};

// What `calibration`'s fusion keys price for `graph`: StrategyContext's `materialized`
// (core/ir/fusion.h PricedResults) and `charged_reads` (ChargedReads), both empty when nothing is
// fused; and `attention_work` (AttentionProductWork) with fuse_attention where the calibration
// measured the runner's attention kernels (attention_efficiency above 0), else empty.
struct PricedTraffic {
  std::vector<bool> materialized;
  std::vector<std::vector<bool>> charged_reads;
  std::vector<double> attention_work;
};
PricedTraffic TrafficPricedBy(const Graph& graph, const Calibration& calibration);

// The roofline class the cost model prices an op of `kind` in: dot_general matmul, convolution,
// elementwise ops elementwise, the rest other.
ComputeClass ComputeClassOf(OpKind kind);

// The flops op `id` of `graph` is priced at and their roofline class: its OpFlops in
// ComputeClassOf, or, for `attention_work` above 0 (its entry in PricedTraffic), that share of
// them in ComputeClass::kAttention.
struct PricedFlops {
  double flops = 0;
  ComputeClass cls = ComputeClass::kOther;
};
PricedFlops FlopsPricedFor(const Graph& graph, int32_t id, double attention_work);
// Entry `id` of PricedTraffic::attention_work (0 where it is empty).
double AttentionWorkOf(const std::vector<double>& attention_work, size_t id);

// The strategy of `assignment` for op `id` with iteration space `space`. Fails (kInvalidArgument)
// when a split does not divide its loop or a mesh dim is used twice.
Result<OpStrategy> MakeOpStrategy(const StrategyContext& ctx, int32_t id,
                                  const IterationSpace& space, const LoopAssignment& assignment);

// Every strategy of op `id` (see the top of this file); never empty (the replicated assignment
// is always valid), in a deterministic order with the replicated one first.
Result<std::vector<OpStrategy>> EnumerateOpStrategies(const StrategyContext& ctx, int32_t id,
                                                      const IterationSpace& space);

// Loop assignment that makes tensor `dims_to_loops` (a result_dims or operand_dims map of
// `space`) laid out as `spec`: each split tensor dim's mesh dims go to its loop; mesh dims that
// cannot be carried (dim mapped to -1, or the split does not divide the loop) are dropped; the
// spec's partial dims become pass_partial with PartialSums::kPass. Used by followers.
enum class PartialSums { kDrop, kPass };
LoopAssignment AssignmentFromSpec(const IterationSpace& space,
                                  const std::vector<int32_t>& dims_to_loops,
                                  const ShardingSpec& spec, const LogicalMesh& mesh,
                                  PartialSums partial_sums);

// "S0 R S1 = S0 R x R S1 @all-reduce(1)": the result spec, the operand specs of ops with two or
// more operands (and of dot_general), and the in-op collectives.
std::string StrategyName(const Graph& graph, int32_t id, const OpStrategy& strategy);

}  // namespace alpa
