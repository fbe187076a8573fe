// The simulated-time backend: every instruction of a device program (program.h) priced by the
// cost model (cost_model.h) on the device and links it runs on, from the instruction's own local
// shapes and group, not from the plan's figures.
//
//   run             the local op's roofline: its FLOPs on the local shapes, and the memory
//                   traffic of the results and reads that the fusion model charges (fusion.h's
//                   PricedResults and ChargedReads over the op's piece, as the piece's intra-op
//                   solve prices it)
//   all-reduce, all-gather, reduce-scatter, all-to-all
//                   the collective formula on the stage's logical mesh (DeriveLogicalMesh) over
//                   the mesh dims its group spans (every dim: the flattened mesh), with the
//                   cost model's b: the local input bytes, times the group size for all-gather
//                   and all-to-all
//   send, recv      0 here: the pipeline simulator moves a task's messages over its links, and
//                   program_simulation.h prices the messages of the update (TransferSeconds)
//   slice, copy, zero, scale, accumulate, feed
//                   bookkeeping: the bytes read and written at the device's memory bandwidth
//                   (an elementwise roofline). The cost model leaves these to fusion (a slice
//                   is computed by its reader, a gradient accumulated by the matmul that makes
//                   it, as Megatron-LM's fused accumulation does), so they are reported but not
//                   simulated
//   run of an op the solve made free or fused (constants and what they alone feed, broadcasts
//   fused into their readers), free, report-loss
//                   0
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "core/util/status.h"
#include "exec/program/program.h"
#include "solvers/planner/planner.h"

namespace alpa {

// What an instruction's time counts as.
enum class PricedPart : int32_t {
  kCompute = 0,      // run
  kCollective = 1,   // collectives inside the stage
  kTransfer = 2,     // messages sent once per iteration (program_simulation.h)
  kBookkeeping = 3,  // slice, copy, zero, scale, accumulate, feed: reported, not simulated
};
inline constexpr int32_t kPricedParts = 4;
// "compute", "collective", "transfer", "bookkeeping" (inline: plan_simulation_json.cc, which the
// plan reader's fuzzer builds alone, names the parts too).
inline const char* PricedPartName(PricedPart part) {
  switch (part) {
    case PricedPart::kCompute:
      return "compute";
    case PricedPart::kCollective:
      return "collective";
    case PricedPart::kTransfer:
      return "transfer";
    case PricedPart::kBookkeeping:
      return "bookkeeping";
  }
  return "?";
}

struct InstructionPrice {
  double seconds = 0;
  PricedPart part = PricedPart::kCompute;
};

// Seconds per priced part, summed over some instructions.
struct PricedSeconds {
  double part[kPricedParts] = {0, 0, 0, 0};
  // Of the simulated seconds: those of instructions the plan does not list (a partial-sum
  // loss's all-reduce, a tied weight's refreshed copy), and, in the update task, those of
  // backward work the lowering defers to run once on the sums over the microbatches (the plan
  // prices it in every microbatch's backward).
  double not_in_plan = 0, deferred_backward = 0;
  // Of the collective seconds: the all-gathers completing a transfer's local all-gather, which
  // the plan prices in the transfer (CrossStageTransfer::gather_seconds), not in the stage.
  double transfer_gather = 0;
  // What the simulator runs: compute, collectives and transfers (not bookkeeping).
  double simulated() const { return part[0] + part[1] + part[2]; }
  void Add(const InstructionPrice& p) { part[static_cast<int32_t>(p.part)] += p.seconds; }
};

// One stage's priced tasks (program_simulation.h), on its slowest device for each, beside the
// plan's figures for the same.
struct ProgramStagePrice {
  PricedSeconds forward, backward, update;
  int32_t forward_device = -1, backward_device = -1, update_device = -1;
  int64_t instructions = 0;  // of the lowered programs, summed over the stage's devices
  // The plan's: PlannedStage::forward_latency, latency - forward_latency, iteration_overhead.
  double planned_forward = 0, planned_backward = 0, planned_overhead = 0;
  // Of those, what the plan charges its parameter ops (weights, data and activations from other
  // pieces) in each task: the solve prices each as writing its value, which no instruction does
  // (ProgramPricer::ParameterCharges; under full recomputation the backward's include the
  // forward's again).
  double parameter_forward = 0, parameter_backward = 0, parameter_update = 0;
};

class ProgramPricer {
 public:
  // `plan` is the plan the programs were lowered from (kept by reference: it must outlive the
  // pricer), `cluster` the one it was planned for. kInvalidArgument when a stage's mesh does not
  // fit the cluster.
  static Result<ProgramPricer> Create(const PipelinePlan& plan, const Cluster& cluster);

  // kInternal naming the instruction when it does not fit the plan (a kRun of an op that is not
  // in its stage's pieces, a group outside the stage).
  Result<InstructionPrice> Price(const DeviceProgram& program, const Instruction& in) const;

  // What the intra-op solves of `stage` charge its pieces' parameter ops, per phase (forward,
  // backward, update): the roofline of writing each one's shard, as op_strategies.h prices every
  // op. No instruction stands for it: a weight is in memory, an activation arrives by a message.
  std::array<double, 3> ParameterCharges(int32_t stage) const;

  // The instructions of `task` of `program`, summed.
  Result<PricedSeconds> PriceTask(const DeviceProgram& program, const ProgramTask& task) const;

 private:
  // Per stage: its mesh and, per piece, the fusion model's charged results and reads and the
  // attention kernels' share of their products (PricedTraffic).
  struct StagePricing {
    Cluster cluster;  // of its devices' type: its pool's in a mixed cluster
    LogicalMesh mesh;
    std::vector<int64_t> logical_of_device;  // physical id -> logical index, -1 outside
    std::vector<std::vector<bool>> materialized;
    std::vector<std::vector<std::vector<bool>>> charged;
    std::vector<std::vector<double>> attention_work;
  };

  ProgramPricer() = default;
  Result<InstructionPrice> PriceRun(const StagePricing& st, const DeviceProgram& program,
                                    const Instruction& in) const;
  Result<InstructionPrice> PriceCollective(const StagePricing& st, const DeviceProgram& program,
                                           const Instruction& in) const;
  InstructionPrice PriceBookkeeping(const StagePricing& st, const DeviceProgram& program,
                                    const Instruction& in) const;

  const PipelinePlan* plan_ = nullptr;
  std::vector<StagePricing> stages_;
};

}  // namespace alpa
