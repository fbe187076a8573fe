// One piece of a pipeline stage (a layer group's subgraph) auto-sharded on one logical mesh,
// reduced to what the stage DP needs: time per microbatch, time once per iteration, and
// memory per device split by how it scales with the microbatches in flight.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "core/ir/graph.h"
#include "core/util/status.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/planner/subgraph.h"

namespace alpa {

struct UnitProfile {
  // Seconds per microbatch: forward and backward compute, their collectives and reshardings.
  double latency = 0;
  // The forward part of `latency` (what rematerialization runs again in the backward).
  double forward_latency = 0;
  // The part of forward_latency that selective recomputation runs again (its ops, with the
  // collectives and reshardings that feed them; core/ir/recompute.h).
  double selective_latency = 0;
  // The part of latency a schedule that splits the backward (ZB-H1) runs as the weight-gradient
  // task: the ops of WeightGradientOps (weight_gradient_ops.h) and the collectives they read.
  double weight_gradient_latency = 0;
  // Seconds once per iteration: gradient synchronisation (all-reduce / reduce-scatter of
  // gradients, ZeRO's all-gathers of new weights) and the optimizer update.
  double iteration_overhead = 0;
  // Bytes per device: weights, optimizer state and gradient accumulators (held all iteration).
  int64_t persistent_bytes = 0;
  // Bytes per device per microbatch in flight: forward results the backward reads.
  int64_t activation_bytes = 0;
  // Bytes per device beyond the two above at the forward and backward peak (temporaries of
  // one microbatch).
  int64_t working_bytes = 0;
  // Bytes per device beyond persistent_bytes at the update's peak. The update runs once all
  // microbatches' backwards are done, when no activations are held, so a stage's memory takes
  // the larger of its forward-backward and its update peaks (stage_costs.h).
  int64_t update_bytes = 0;
  // Bytes per device per microbatch in flight under rematerialization: the forward inputs of
  // the piece (activations from other pieces and data), from which its forward is recomputed.
  int64_t checkpoint_bytes = 0;
  // Under selective recomputation: bytes per device per microbatch in flight (activation_bytes
  // less the recomputed values, plus what the recomputation reads and the backward does not),
  // and the recomputed values' bytes (live while one microbatch's backward runs).
  int64_t selective_activation_bytes = 0;
  int64_t recomputed_bytes = 0;
  // ZeRO-2 (gradient_sharding.h): seconds of iteration_overhead that run per microbatch
  // instead, gradient bytes held as shards instead, and the most one gradient holds at full
  // size per microbatch while it is laid out. Zero when no gradient qualifies.
  double zero2_moved_seconds = 0;
  int64_t zero2_saved_bytes = 0, zero2_transient_bytes = 0;
  std::shared_ptr<const AutoShardResult> sharding;

  // The solve's own peak beyond persistent and activation bytes (one microbatch, nothing else
  // on the device): the larger of the two peaks.
  int64_t one_microbatch_working() const {
    return std::max(working_bytes, update_bytes - activation_bytes);
  }
  // The solve's peak with one microbatch in flight (what a memory budget bounds).
  int64_t one_microbatch_peak() const {
    return persistent_bytes + activation_bytes + one_microbatch_working();
  }
};

// The memory part of a profile, per device, by what the bytes hold.
struct UnitMemory {
  int64_t parameters = 0, optimizer_state = 0, gradients = 0;  // held all iteration
  int64_t activations = 0;  // forward results the backward reads (per microbatch in flight)
  int64_t checkpoints = 0;  // forward inputs (per microbatch in flight under remat)
  // Under selective recomputation: what stays per microbatch in flight, and what is rerun.
  int64_t selective_activations = 0;
  int64_t recomputed = 0;
  // Beyond persistent and activations at the largest usage at a forward or backward op's
  // schedule position (temporaries of one microbatch).
  int64_t working = 0;
  // Beyond persistent at the largest usage at an update op's position.
  int64_t update = 0;
  int64_t persistent() const { return parameters + optimizer_state + gradients; }
};

// The memory of `result` (an auto-sharding of `graph`) split as UnitMemory says, from its usage
// over its schedule (RecomputePlanMemory); what ProfileUnit reports. Errors:
// RecomputePlanMemory's (a result that is not a plan of `graph`).
Result<UnitMemory> ProfileUnitMemory(const Graph& graph, const AutoShardResult& result);

// Sets the zero2_ fields of `profile` from the gradient chains of `result` (an auto-sharding of
// `graph`).
void SetZero2Figures(const Graph& graph, const AutoShardResult& result, UnitProfile& profile);

// The outputs of piece `sub` that other pieces read, for AutoShardOptions::handed_off_outputs:
// its boundary outputs that accumulate into a weight's gradient (a tied weight's contribution
// from another layer), handed over once per iteration. Activations and their gradients are
// left to the pieces' edges, whose layouts both solves choose per microbatch.
std::vector<HandedOffOutput> HandedOffOutputs(const Subgraph& sub);

// Auto-shards `graph` (a subgraph from ExtractSubgraph) on `mesh` and profiles the result.
// Errors as AutoShard's; kInfeasible when a memory budget cannot be met, kInternal naming
// the mesh for any other result without an assignment.
Result<UnitProfile> ProfileUnit(const Graph& graph, const LogicalMesh& mesh, const Cluster& cluster,
                                const AutoShardOptions& options);

}  // namespace alpa
