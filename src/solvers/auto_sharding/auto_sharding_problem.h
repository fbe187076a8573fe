// Building the sharding problem of a graph on a logical mesh (the construction rules are listed
// in auto_sharding.h): which ops are free, fused, followers or deciders, their strategies, the
// resharding edges, liveness and memory. Internal to the auto-sharding pass.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "core/ir/graph.h"
#include "core/problem/sharding_problem.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/auto_sharding/op_strategies.h"
#include "solvers/auto_sharding/spec_table.h"

namespace alpa {

enum class OpTreatment : int8_t { kFree, kFused, kDecide, kFollow };

// Where an operand's value comes from: the node op that produces it (through fused broadcasts),
// and, per dim of that op's result, the operand dim it becomes (-1: broadcast from size 1).
struct OperandSource {
  int32_t op = -1;                 // -1: a free value, made locally in any layout
  bool through_broadcast = false;  // false: the operand is `op`'s result itself
  std::vector<int32_t> dim_map;    // with through_broadcast
};

struct AutoShardModel {
  const Graph* graph = nullptr;
  LogicalMesh mesh;
  StrategyContext context;
  std::vector<OpTreatment> treatment;  // per op
  std::vector<int32_t> node;           // per op: problem node, or -1
  int32_t node_count_of_ops = 0;       // problem nodes standing for ops (the rest are layouts)
  std::vector<int32_t> leader;         // per op: the op it follows, or -1
  // Per op: a node op whose result stays on chip (OpSharding::on_chip): no usage, and its
  // readers keep what it is made from alive.
  std::vector<bool> on_chip;
  std::vector<int32_t> leader_operand;              // its operand slot, -1: same-shaped follow
  std::vector<std::vector<OperandSource>> sources;  // per op, per operand
  std::vector<IterationSpace> spaces;               // per op (node ops)
  // Deciders: the loop assignment of each strategy kept (after the options' restrictions).
  std::vector<std::vector<LoopAssignment>> decisions;
  // Per op: how many operand slots of node ops read it (through fused broadcasts).
  std::vector<int32_t> readers;
  // Per op read by two or more slots: the problem node choosing the layout its readers read
  // (the tensor is resharded once, into it), and that node's interned specs; -1 / empty
  // otherwise.
  std::vector<int32_t> layout_node;
  std::vector<std::vector<int32_t>> layout_specs;
  // Per op: a gradient, or a value that becomes one through layout ops and accumulation only
  // (its reductions are gradient synchronisations).
  std::vector<bool> gradient_like;
  // Per op, per strategy: the interned result spec, and (strategy-major, one per operand) the
  // layout the op wants, expressed on its source's result (projected through fused
  // broadcasts).
  std::vector<std::vector<int32_t>> result_spec;
  std::vector<std::vector<int32_t>> wanted_spec;
  std::vector<int32_t> tensor_type;  // per op: its result type in the reshard cache
  // Per op: the handover cost AddHandoffCosts added to each of its node's strategies (weighted;
  // empty for an op that is not handed off).
  std::vector<std::vector<double>> handoff_costs;
  std::vector<int32_t> schedule;  // op ids
  std::vector<int32_t> position;  // per op: index in schedule
  SpecTable specs;
  std::unique_ptr<ReshardCostCache> reshard;
  ShardingProblem problem;
};

Result<std::unique_ptr<AutoShardModel>> BuildAutoShardModel(const Graph& graph,
                                                            const LogicalMesh& mesh,
                                                            const Cluster* cluster,
                                                            const AutoShardOptions& options);

// Every layout a tensor's readers may read it in: each mesh dim of size > 1 splits one tensor
// dim (after the mesh dims before it on that dim) or is unused; splits must divide the dim. No
// partial sums: readers read a fully reduced value, so a partial sum is reduced once for all of
// them (all-reduce, or reduce-scatter onto a split they read). Reductions staged across mesh
// dims (reduce-scatter on one, all-reduce on the other, all-gather back) are not modelled, as in
// Alpa.
std::vector<ShardingSpec> TensorLayouts(const Dims& shape, const LogicalMesh& mesh);

// Whether follower `id` reads its leader through the leader's reader layout (and so follows
// that layout node), and the specs its strategies are derived from, index by index.
bool ReadsLeaderLayout(const AutoShardModel& model, int32_t id);
const std::vector<int32_t>& LeaderSpecs(const AutoShardModel& model, int32_t id);

// Per op: whether a node op of the update phase reads it (through fused broadcasts).
std::vector<bool> ReadByUpdate(const AutoShardModel& model);

// The full strategy `s` of node op `id` (recomputed from the same rules as the build).
Result<OpStrategy> ModelStrategy(const AutoShardModel& model, int32_t id, int32_t s);

// The last phase of BuildAutoShardModel (auto_sharding_edges.cc), once nodes, schedule and
// usages are in place: the resharding edges.
// Phase 4a: producer -> reader layout edges. A shared resharding counts once per iteration
// when it moves a gradient or feeds an update.
Status AddReaderLayoutEdges(AutoShardModel& model, const AutoShardOptions& options);
// Phase 4b: edges into each reader, from its operand's reader layout node or its producer.
Status AddOperandEdges(AutoShardModel& model, const AutoShardOptions& options);
// Phase 4c: the handover of options.handed_off_outputs. Each strategy of such an output (one
// without a reader layout node, whose readers here would reduce it first) that leaves it a
// partial sum costs the cheapest resharding into one of its reader layouts, weighted by
// iteration_weight when it is handed over once per iteration or is gradient-like here.
Status AddHandoffCosts(AutoShardModel& model, const AutoShardOptions& options);

}  // namespace alpa
