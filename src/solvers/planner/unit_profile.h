// One piece of a pipeline stage (a layer group's subgraph) auto-sharded on one logical mesh,
// reduced to what the stage DP needs: time per microbatch, time once per iteration, and
// memory per device split by how it scales with the microbatches in flight.
#pragma once

#include <cstdint>
#include <memory>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "core/ir/graph.h"
#include "core/util/status.h"
#include "solvers/auto_sharding/auto_sharding.h"

namespace alpa {

struct UnitProfile {
  // Seconds per microbatch: forward and backward compute, their collectives and reshardings.
  double latency = 0;
  // The forward part of `latency` (what rematerialization runs again in the backward).
  double forward_latency = 0;
  // Seconds once per iteration: gradient synchronisation (all-reduce / reduce-scatter of
  // gradients, ZeRO's all-gathers of new weights) and the optimizer update.
  double iteration_overhead = 0;
  // Bytes per device: weights, optimizer state and gradient accumulators (held all iteration).
  int64_t persistent_bytes = 0;
  // Bytes per device per microbatch in flight: forward results the backward reads.
  int64_t activation_bytes = 0;
  // Bytes per device at the peak beyond the two above (temporaries of one microbatch).
  int64_t working_bytes = 0;
  // Bytes per device per microbatch in flight under rematerialization: the forward inputs of
  // the piece (activations from other pieces and data), from which its forward is recomputed.
  int64_t checkpoint_bytes = 0;
  std::shared_ptr<const AutoShardResult> sharding;
};

// The memory part of a profile, per device, by what the bytes hold.
struct UnitMemory {
  int64_t parameters = 0, optimizer_state = 0, gradients = 0;  // held all iteration
  int64_t activations = 0;  // forward results the backward reads (per microbatch in flight)
  int64_t checkpoints = 0;  // forward inputs (per microbatch in flight under remat)
  int64_t working = 0;      // the rest of the solve's peak (temporaries of one microbatch)
  int64_t persistent() const { return parameters + optimizer_state + gradients; }
};

// The memory of `result` (an auto-sharding of `graph`) split as UnitMemory says; what
// ProfileUnit reports.
UnitMemory ProfileUnitMemory(const Graph& graph, const AutoShardResult& result);

// Auto-shards `graph` (a subgraph from ExtractSubgraph) on `mesh` and profiles the result.
// Errors as AutoShard's; kInfeasible when a memory budget cannot be met, kInternal naming
// the mesh for any other result without an assignment.
Result<UnitProfile> ProfileUnit(const Graph& graph, const LogicalMesh& mesh, const Cluster& cluster,
                                const AutoShardOptions& options);

}  // namespace alpa
