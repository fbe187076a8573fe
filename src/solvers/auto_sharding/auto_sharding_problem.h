// Building the sharding problem of a graph on a logical mesh (the construction rules are listed
// in auto_sharding.h): which ops are free, fused, followers or deciders, their strategies, the
// resharding edges, liveness and memory. Internal to the auto-sharding pass.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/logical_mesh.h"
#include "core/op_strategies.h"
#include "core/sharding_problem.h"
#include "solvers/auto_sharding/auto_sharding.h"
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
  std::vector<OpTreatment> treatment;               // per op
  std::vector<int32_t> node;                        // per op: problem node, or -1
  std::vector<int32_t> op_of_node;                  // per node
  std::vector<int32_t> leader;                      // per op: the op it follows, or -1
  std::vector<int32_t> leader_operand;              // its operand slot, -1: same-shaped follow
  std::vector<std::vector<OperandSource>> sources;  // per op, per operand
  std::vector<IterationSpace> spaces;               // per op (node ops)
  // Deciders: the loop assignment of each strategy kept (after the options' restrictions).
  std::vector<std::vector<LoopAssignment>> decisions;
  // Per op: how many operand slots of node ops read it (through fused broadcasts). A follower
  // that reduces reduces inside the op (all-reduce) unless exactly one slot reads it, so that a
  // partial sum is never resolved twice.
  std::vector<int32_t> readers;
  // Per op: a gradient, or a value that becomes one through layout ops and accumulation only
  // (its reductions are gradient synchronisations).
  std::vector<bool> gradient_like;
  // Per op, per strategy: the interned result spec, and (strategy-major, one per operand) the
  // layout the op wants, expressed on its source's result (projected through fused
  // broadcasts).
  std::vector<std::vector<int32_t>> result_spec;
  std::vector<std::vector<int32_t>> wanted_spec;
  std::vector<int32_t> tensor_type;  // per op: its result type in the reshard cache
  std::vector<int32_t> schedule;     // op ids
  std::vector<int32_t> position;     // per op: index in schedule
  SpecTable specs;
  std::unique_ptr<ReshardCostCache> reshard;
  ShardingProblem problem;
  std::vector<std::pair<int32_t, int32_t>> edge_origin;  // per edge: (consumer op, operand)
};

Result<std::unique_ptr<AutoShardModel>> BuildAutoShardModel(const Graph& graph,
                                                            const LogicalMesh& mesh,
                                                            const Cluster* cluster,
                                                            const AutoShardOptions& options);

// The full strategy `s` of node op `id` (recomputed from the same rules as the build).
Result<OpStrategy> ModelStrategy(const AutoShardModel& model, int32_t id, int32_t s);

}  // namespace alpa
