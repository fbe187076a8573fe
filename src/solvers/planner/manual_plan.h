// Manual plans: a pipeline plan stated the way a practitioner states one (Megatron-LM style:
// data, tensor and pipeline degrees, microbatches, ZeRO stage, which mesh dim is which),
// predicted with the planner's own cost model so that it compares with PlanPipeline on equal
// terms; baseline_search.h searches a grid of them (the Megatron-LM baseline).
//
// How a spec becomes a plan:
//   - Graph: the model's microbatch graph for `microbatches` (global batch / microbatches).
//   - Stages: with layer markers, the units are the markers; a leading unit whose piece type
//     occurs once (the embedding) and a trailing one (the head) are not layers, the rest are
//     (the transformer blocks). pp stages get layers / pp consecutive layers each, the
//     embedding joining the first stage and the head the last. When pp does not divide the
//     layers, Alpa's layer clustering (ClusterLayers with num_layers = pp) splits the markers
//     by forward FLOPs instead. A graph without markers is always split by ClusterLayers.
//   - Interleaving (virtual_stages v > 1, Megatron-LM's virtual pipeline stages): the layers are
//     cut as above into pp * v stages, and stage s runs on device group s % pp (each group
//     runs v stages, the embedding's on group 0 and the head's on group pp - 1) under
//     interleaved 1F1B (pipeline_schedule.h): the plan's schedule, with virtual_stages v.
//   - Devices: device group g gets devices g * D / pp .. (g + 1) * D / pp - 1: whole hosts when a
//     group has at least a host's devices, else a slice of one host (groups that would straddle
//     hosts unevenly are rejected); stage s runs on group s (s % pp with interleaving). Its logical
//     mesh is (dp, tp) with tensor_inside_host (tp on mesh dim 1, which stays inside a host; the
//     batch on dim 0), else (tp, dp) (the batch on dim 1).
//   - Sharding: every distinct layer piece is auto-sharded on that mesh (unit_profile.h) with
//     the batch dim of its inputs forced onto the data-parallel dim (free when dp = 1; an input
//     whose dim 0 dp does not divide is a weight-shaped boundary value and is replicated over
//     it, since CheckSpec made dp divide the microbatch), ZeRO
//     forced (optimizer state sharded over every mesh dim that can split it) for zero_stage >= 1
//     and dp > 1, else off, and iteration_weight 1 / microbatches. ZeRO stage 2 is the stage 1
//     solve with its gradient chains sharded (gradient_sharding.h, shard_gradients), stage 3
//     the same on a solve with the weights sharded (zero_parameters). The solver
//     then picks the layout on the tensor-parallel dim: Megatron's hand partitioning, or whatever
//     the cost model says is cheaper there (with dp = 1 that may include splitting the batch; the
//     stage then reports the degrees the solver realised, as the planner does).
//   - Costs: pieces composed into stages exactly as the planner composes a stage candidate
//     (ComposeStage, stage_costs.h); iteration time T = sum (t_s + o_s) + (B - 1) max t_s
//     for Cost (with interleaving the schedule evaluated without transfers,
//     EvaluateSchedule), and for Plan the planner's prediction with the transfers between
//     stages (PredictPlanIteration, plan_transfers.h);
//     stage s holds min(B, pp - s) microbatches of activations (1F1B), or with interleaving
//     MicrobatchesInFlight's count, and a device the sum over its group's stages.
//   - Memory levels: when a stage does not fit the device memory, the piece types of every
//     such stage are solved again under a memory budget (their peak scaled by the device memory
//     over the stage's need, at most 8x lower per level), for at most options.memory_levels
//     rounds, as the planner's levels (stage_costs.h). A spec that fits keeps its first solves.
//     Only Plan does this; Cost (the baseline grid's ranking) uses the first solves, so that
//     a search does not multiply its solves, and reports a spec that needs levels infeasible.
// Options used: threads, intra_op_exact / time limit / gap, device_memory_bytes, memory_levels,
// clustering_delta (the ClusterLayers fallback), cancel and on_progress. The spec's remat wins
// over options.remat; num_layers does not apply.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "solvers/planner/planner.h"

namespace alpa {

struct ManualPlanSpec {
  int64_t data_parallel = 1, tensor_parallel = 1, pipeline_parallel = 1;
  int64_t microbatches = 1;
  // 0: off; 1: optimizer state (and with it the update) sharded over the data-parallel
  // devices (AutoShard's ZeroMode::kForce; gradients are reduce-scattered where the solver
  // finds that cheaper; every weight is read in the layout it is stored in, gather_parameters
  // off); 2: as 1, and the gradients the solve reduce-scatters are reduce-scattered every
  // microbatch and accumulated as shards (gradient_sharding.h); 3: as 2 on a solve whose
  // weights are sharded too, gathered where they are read in every microbatch's forward and
  // backward (AutoShardOptions::zero_parameters; DeepSpeed's stage 3). No effect when
  // data_parallel == 1.
  int32_t zero_stage = 0;
  bool tensor_inside_host = true;      // tp on the fast mesh dim (dim 1); else dp there
  Recompute remat = Recompute::kNone;  // per-layer recomputation in every stage
  // Stages per device group (Megatron-LM's virtual pipeline stages): 1, or v >= 2 for pp * v
  // stages run under interleaved 1F1B, stage s on device group s % pp.
  int32_t virtual_stages = 1;
};

// "dp=2 tp=2 pp=2 B=8 zero=1 remat=off" (remat=on / selective) (plus " vp=2" for virtual_stages
// above 1 and " tp-across-hosts" when not tensor_inside_host).
std::string ManualPlanSpecString(const ManualPlanSpec& spec);

// Predicted time and memory of a spec without building the plan.
struct ManualPlanCost {
  bool feasible = false;  // every stage fits the device memory
  // sum (t_s + o_s) + (B - 1) max t_s: the stage DP's formula, without the transfers between
  // stages (Plan's iteration_seconds adds them: PredictPlanIteration, plan_transfers.h).
  double iteration_seconds = 0, max_stage_latency = 0;
  int64_t peak_memory_bytes = 0;  // max over stages, at their in-flight counts
  int32_t worst_stage = -1;       // when infeasible: the stage most over the device memory
  int64_t worst_stage_bytes = 0;  // and the bytes it needs per device
};

// Evaluates specs of one model on one cluster, caching across specs what they share: the
// microbatch graph and its pieces per microbatch count, each piece type's intra-op solve per
// (microbatch count, mesh, batch dim, ZeRO), and the resharding between pieces. Not
// thread-safe; Prepare solves on options.threads threads.
class ManualPlanEvaluator {
 public:
  ManualPlanEvaluator(PlannerModel model, Cluster cluster, PlannerOptions options);
  ~ManualPlanEvaluator();
  ManualPlanEvaluator(const ManualPlanEvaluator&) = delete;
  ManualPlanEvaluator& operator=(const ManualPlanEvaluator&) = delete;

  // The number of layers pipeline stages split (transformer layers with markers, else the
  // clustering units) in the graph of `microbatches`.
  Result<int64_t> Layers(int64_t microbatches);
  // Whether selective recomputation reruns anything in that graph (it has attention cores).
  Result<bool> RecomputesSelectively(int64_t microbatches);
  // Solves in parallel every intra-op problem the specs need that is not cached yet. Specs that
  // are invalid are skipped (Cost / Plan report them); errors: cancellation, a graph build error.
  Status Prepare(const std::vector<ManualPlanSpec>& specs);
  // kInvalidArgument naming the field for a bad spec; a solve's error; not an error when the
  // plan does not fit (feasible = false). First solves only: no memory levels (Plan has them).
  Result<ManualPlanCost> Cost(const ManualPlanSpec& spec);
  // The plan; kInfeasible (naming the stage and the bytes it needs) when it does not fit.
  Result<PipelinePlan> Plan(const ManualPlanSpec& spec);
  int64_t solves() const;  // intra-op solves run so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One manual plan. Errors (kInvalidArgument, the message naming the field): a degree or
// microbatches < 1, data_parallel x tensor_parallel x pipeline_parallel != the cluster's devices,
// tensor_parallel not dividing the devices per host (tensor_inside_host), a stage that would
// straddle hosts unevenly, microbatches not dividing the global batch, data_parallel not
// dividing the microbatch size, zero_stage outside 0..3, pipeline_parallel above the layers;
// virtual_stages < 1, or above 1 with pipeline_parallel < 2, microbatches not a multiple of
// pipeline_parallel (PipelineShapeProblem) or pipeline_parallel x virtual_stages above the layers;
// kInfeasible when a stage does not fit the device memory (the message names the stage and the
// bytes it needs); the builder's and the solves' errors; kCancelled.
Result<PipelinePlan> EvaluateManualPlan(const PlannerModel& model, const Cluster& cluster,
                                        const ManualPlanSpec& spec,
                                        const PlannerOptions& options = {});

}  // namespace alpa
