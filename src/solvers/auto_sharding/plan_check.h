// An independent checker for auto-sharding plans (every solver result is checked by an
// independent evaluator). It re-derives everything from the op semantics of core/ir/graph.h and
// the sharding-spec meaning of core/cluster/sharding_spec.h, and shares no code with the strategy
// enumeration (solvers/auto_sharding/op_strategies*, solvers/auto_sharding/iteration_space*) or
// with resharding (core/cluster/resharding*): a bug there cannot hide itself here.
//
// What CheckShardingPlan checks, in this order (the first violation is returned):
//   0. structure: one OpSharding per op, the mesh matches, free ops read only free values,
//      fused ops are broadcast_in_dim, on-chip ops are computed ops other than parameters,
//      updates and outputs, every collective is well formed;
//   1. every op that is neither free nor fused has a result spec and one operand spec per
//      operand, each valid for its tensor's shape on the mesh;
//   2. per op: from the operand layouts it reads, its local computation followed by its in-op
//      collectives (inside_op, consumer == the op; they act on the op's result, in list order)
//      yields exactly the claimed result spec (rules per kind in plan_check.cc);
//   3. per edge (producer -> operand k of a consumer, looking through fused broadcasts): the
//      producer's result spec, transformed by the edge's collectives in list order, differs from
//      what the consumer reads only by local work (free slices at the minor end of a dim,
//      zero-filled partial sums); every non-inside collective belongs to a real edge. A tensor
//      with a reader layout is first taken into it by its shared collectives (consumer -1), with
//      only local work left over, and each edge starts from that layout;
//   4. memory: peak per-device bytes over result.schedule (RecomputePlanMemory: liveness, with
//      updates donated into their parameters' buffers where that is possible) equals
//      result.peak_memory_bytes (and is reached at result.peak_memory_time), and is within the
//      budget when one is given;
//   5. objective: sum of ops' compute + communication costs plus the costs of the resharding
//      (non-inside) collectives equals result.objective within 1e-6 relative.
//
// Mesh dims of size 1 are ignored in the semantic checks (2, 3): a split into one piece or a sum
// of one addend does not change what a device holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "solvers/auto_sharding/auto_sharding.h"

namespace alpa {

// Ok, or kInvalidArgument with a message naming the op (DescribeOp) or edge and what is wrong.
// An invalid graph gives ValidateGraph's error (kInvalidGraph). A result without a plan
// (status infeasible, invalid input or no solution) is kInvalidArgument.
Status CheckShardingPlan(const Graph& graph, const std::vector<int64_t>& mesh_shape,
                         const AutoShardResult& result, std::optional<int64_t> memory_budget_bytes);

// The per-device memory of a plan over its schedule, recomputed as check 4 does: every op that
// is neither free nor fused nor on chip holds TensorBytes / ShardCount(result spec) bytes from
// its schedule position (0 for parameters) to the last position of an op reading it (through
// fused broadcasts, and through on-chip values: reading one reads what it is made from);
// parameters, graph outputs and updates (alias_of >= 0) stay to the end of the
// schedule. An update is donated (writes into its parameter's buffer, as JAX's donated train
// state and Alpa do) and holds no bytes of its own when that is physically possible: no op
// reads the parameter at a later position, the update's shard is no larger than the
// parameter's, and no other update of that parameter was donated; otherwise it holds its bytes
// like any other value (and copied_updates says why). peak_time is the first position where
// the peak is reached. The graph must be valid. Errors (kInvalidArgument): a schedule that is
// not a topological order of every such op, an invalid result spec.
struct PlanMemory {
  int64_t peak_bytes = 0;
  int64_t peak_time = 0;
  std::vector<int64_t> usage;               // bytes per device at each schedule position
  std::vector<std::string> copied_updates;  // updates that could not be donated, and why
};
Result<PlanMemory> RecomputePlanMemory(const Graph& graph, const std::vector<int64_t>& mesh_shape,
                                       const AutoShardResult& result);

}  // namespace alpa
