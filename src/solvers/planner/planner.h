// The pipeline planner: Alpa's two-level search (REFERENCE §4). For a number of microbatches B
// it builds the training graph of one microbatch, clusters it into layers, auto-shards every
// distinct layer piece on every logical mesh of every submesh shape (stage_costs.h), composes
// stage candidates from those pieces, and runs the stage DP (stage_dp.h). Without a fixed B
// it tries the divisors of the global batch nearest to the powers of two (microbatch_counts.h),
// from the largest allowed down in steps of two rungs (about 4x) while the plan improves, then the
// neighbours (half, twice) of the best, at most three counts in all (each costs every intra-op
// solve again; up to two more while the counts so far took at most 1,000 intra-op solves). The DP's
// answer and its best answers with fewer stages are ranked by the prediction with the transfers
// between stages (plan_transfers.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/cross_mesh.h"
#include "core/cluster/logical_mesh.h"
#include "core/cluster/sharding_spec.h"
#include "core/ir/graph.h"
#include "core/ir/recompute.h"
#include "core/util/status.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/pipeline/layer_clustering.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/planner_limits.h"
#include "solvers/planner/subgraph.h"

namespace alpa {

struct PlannerProgress {
  // "build", "cluster", "estimate" (the work of this B, before its solves), "intra-op", "dp",
  // "time limit" (the deadline stopped the search; the best plan so far is returned)
  const char* phase = "";
  int64_t microbatches = 0;
  int64_t done = 0, total = 0;    // intra-op solves finished / scheduled for this B
  double seconds = 0;             // since the planner started
  double time_limit_seconds = 0;  // the call's time limit (0: none)
  PlannerWorkEstimate estimate;   // of the latest B estimated (zeros before the first)
};

// Recomputation per stage: searched (none, full, and selective where the graph has attention
// cores), or fixed to none (kOff), full (kOn) or selective.
enum class RematMode : int32_t { kSearch = 0, kOff = 1, kOn = 2, kSelective = 3 };

struct PlannerOptions {
  // Layer groups L (0: as many as the graph has layers, at most DefaultLayerGroupCap).
  int32_t num_layers = 0;
  double clustering_delta = 0.5;
  int64_t microbatches = 0;         // B; 0: search
  int64_t max_microbatches = 1024;  // the search's largest B
  int32_t threads = 0;              // 0: all hardware threads
  // Each intra-op solve: by default the sharding solver's local search alone (deterministic
  // work budget; within a few percent of the optimum on the benchmark models, several times
  // faster); with intra_op_exact, GLPK then proves optimality within the relative gap or stops
  // at the time limit.
  bool intra_op_exact = false;
  double intra_op_time_limit_seconds = 0.5;
  double intra_op_relative_gap = 0.01;
  // Each microbatch count after the first starts its solves from the previous count's
  // solutions with a quarter of the local search's work (stage_costs.h, IntraOpWarmStarts);
  // false: every solve starts cold (for comparisons).
  bool intra_op_warm_start = true;
  // Memory levels per (piece, logical mesh) beyond the unconstrained solve: each halves the
  // previous level's peak as a budget (stage_costs.h says when they are skipped).
  int32_t memory_levels = 3;
  // Rematerialization (gradient checkpointing per layer piece) per stage: searched, or fixed.
  RematMode remat = RematMode::kSearch;
  // ZeRO-2 (gradients reduce-scattered per microbatch, accumulated as shards) as a stage
  // option where it lets a stage fit (stage_costs.h); false: stages are ZeRO-1 at most.
  bool search_zero2 = true;
  // The microbatch search screens its counts on the one-dimensional logical meshes first and
  // plans only the best of them (and its close neighbours) on every mesh (PlanPipeline); false:
  // every count tried is planned on every mesh (several times the intra-op solves, for
  // comparisons; the C++ API only).
  bool screen_microbatch_counts = true;
  // ZeRO-3 (weights held as shards over the data-parallel devices, all-gathered where read each
  // microbatch) as a per-weight choice of the intra-op solves, which take it where a memory
  // level's budget makes the gathers pay (AutoShardOptions::gather_parameters); false: every
  // weight is read in the layout it is stored in.
  bool search_zero3 = true;
  // ZB-H1 (pipeline_schedule.h: the backward split into input and weight gradients, the weight
  // gradients of later stages filling the drain) as the schedule of a plan where every stage fits
  // its memory under it (each holds min(stages, B) microbatches, plus an activation's worth per
  // pending weight gradient) and it is predicted faster than 1F1B (schedule_choice.h). The stage
  // DP still places stages by 1F1B's objective; every plan it ranks is tried under both. False:
  // 1F1B.
  bool search_zero_bubble = false;
  // Interleaved 1F1B (pipeline_schedule.h: each device group runs v stages, the bubble shrinking
  // by v at the price of v times the transfers between groups and more microbatches in flight)
  // as the schedule of a plan: the submeshes of the best 1F1B plan become the device groups, v =
  // 2 .. kMaxVirtualStages (interleave_choice.h), where every group fits its memory and the
  // prediction is faster. False: one stage per submesh.
  bool search_interleaving = false;
  // Where the cluster's NICs sit next to some devices of a host only (cluster.h's NicLocality):
  // the stages inside a host reordered so that those sending to or receiving from other hosts sit
  // next to the NICs, where that is predicted faster (nic_placement.h). False: stages stay where
  // PlaceSubmeshes packs them. No effect on clusters without NIC locality.
  bool place_near_nics = true;
  // Pins: what the user knows, each pruning the search.
  // Exactly this many pipeline stages (0: searched). Submeshes too large to leave every other
  // stage a device, and layer ranges too long to leave every other stage a layer group, are
  // neither solved nor offered to the stage DP.
  int32_t pipeline_stages = 0;
  // A stage's tensor-parallel degree at most this (0: no limit): logical meshes whose second
  // (inside-host) dim exceeds it are not solved, and on the rest the batch is split over the
  // first dim, so tensor parallelism gets the second dim alone.
  int64_t max_tensor_parallel = 0;
  // Tensor parallelism inside a host: on a submesh of several hosts the batch is split over the
  // first mesh dim (the one that spans hosts), so tensor parallelism gets the second, which
  // stays inside a host.
  bool tensor_parallel_inside_host = false;
  // Not a pin: a plan whose tensor parallelism crosses hosts (a stage of several hosts whose
  // batch split does not span them all) must be predicted this fraction faster than the best
  // plan from the same intra-op solves without such stages (the stage DP and its ranking run
  // again without them). Its collectives sit on the critical path of every layer and share the
  // hosts' NICs with the pipeline's sends and the gradient synchronisation, which the cost model
  // prices apart; Megatron-LM (SC'21) keeps tensor parallelism inside a server for that reason.
  // 0: the faster prediction wins; infinity: inside hosts wherever such a plan fits.
  double tensor_parallel_across_hosts_margin = 0.05;
  // Device memory the plan must fit in; none: the cluster's.
  std::optional<int64_t> device_memory_bytes;
  // The whole call's wall-clock limit in seconds (0 or infinity: none). When it expires no
  // intra-op solve starts (one running ends at it), the microbatch counts not yet started are
  // skipped, and the stage DP runs on the logical meshes that every piece type was solved on:
  // the best plan so far is returned (stats.time_limit_reached), or kTimeout when there is none.
  double time_limit_seconds = 0;
  PlannerLimits limits;  // refusals before the work starts (planner_limits.h)
  std::function<bool(const PlannerProgress&)> on_progress;  // false cancels
  const std::atomic<bool>* cancel = nullptr;
};

// The model to plan: a builder of the microbatch graph for a microbatch count.
struct PlannerModel {
  std::function<Result<Graph>(int64_t microbatches)> build;
  // The batch the microbatches split; 0: the graph is fixed (one microbatch is what `build`
  // returns whatever B is), so B is options.microbatches or 1.
  int64_t global_batch = 0;
  // The model's layer count when known before building (a zoo spec's `layers`), checked
  // against options.limits.max_layers before the first build; 0: unknown.
  int64_t layers = 0;
};

// One layer piece of a stage: its subgraph and its auto-sharding on the stage's mesh.
struct StagePiece {
  int32_t piece = 0;  // the graph's layer marker (or layer group when the graph has none)
  std::shared_ptr<const Subgraph> subgraph;
  std::shared_ptr<const AutoShardResult> sharding;
};

struct PlannedStage {
  int32_t first_layer = 0, last_layer = 0;  // layer groups, inclusive
  SubmeshShape submesh;
  std::vector<int64_t> logical_mesh;
  std::vector<int64_t> devices;        // physical ids: host * devices_per_host + local index
  int32_t memory_level = 0;            // 0: unconstrained intra-op solves
  Recompute remat = Recompute::kNone;  // forward values recomputed in the backward
  double latency = 0;                  // seconds per microbatch, forward + backward
  double forward_latency = 0;          // its forward part (with remat: the forward once)
  // The part of latency a schedule that splits the backward (ZB-H1) runs as the weight-gradient
  // task: the ops of WeightGradientOps (weight_gradient_ops.h) and their collectives. 0 when
  // unknown (a plan file without it): the whole backward then runs as the input gradient.
  double weight_gradient_latency = 0;
  double iteration_overhead = 0;  // seconds per iteration: gradient sync and update
  int64_t in_flight = 0;          // microbatches whose activations it holds (1F1B)
  int64_t memory_bytes = 0;       // per device, at its peak
  int64_t activation_bytes = 0;   // of memory_bytes: per device per microbatch in flight
  int64_t data_parallel = 1, tensor_parallel = 1;  // degrees (product = devices)
  bool zero = false;  // optimizer state sharded over the data-parallel devices
  // ZeRO-2: gradients reduce-scattered every microbatch and accumulated as shards
  // (gradient_sharding.h); implies zero.
  bool shard_gradients = false;
  // ZeRO-3 (FSDP): some weights held as shards over the data-parallel devices and all-gathered
  // where the forward and backward read them. The intra-op solve chooses it per weight, where a
  // memory level's budget makes the per-microbatch all-gathers pay (planner); a manual plan's
  // zero_stage 3 forces it on every weight.
  bool shard_parameters = false;
  std::vector<StagePiece> pieces;
};

// A tensor one stage sends another per microbatch (activations forward, gradients backward).
struct CrossStageTransfer {
  int32_t from_stage = 0, to_stage = 0;
  int32_t tensor = -1;              // op id in the plan's graph
  int64_t bytes = 0;                // the whole tensor
  ShardingSpec from_spec, to_spec;  // on the two stages' logical meshes
  // Estimate: TransferSeconds (plan_transfers.h) of its moves, plus gather_seconds.
  double seconds = 0;
  // Cross-mesh resharding (cross_mesh.h): which device of from_stage sends which slice to which
  // device of to_stage (physical ids). Every device of to_stage receives its whole tile, so the
  // bytes sum to `bytes` times the destination's replication. A producer that is free or fused
  // has no layout of its own (from_spec default-constructed): its stage holds the tensor whole
  // on every device, and the moves are planned from R...R.
  std::vector<SliceMove> moves;
  // Local all-gather (cross_mesh.h's PlanLocalAllGather), when predicted faster: the moves
  // deliver this layout (to_spec split further over mesh dims to_spec replicates), and the
  // receiving stage all-gathers it over those mesh dims into to_spec, in gather_seconds (the
  // cost model's all-gather on the receiving stage's logical mesh). Absent: the moves deliver
  // to_spec itself.
  std::optional<ShardingSpec> landing_spec;
  double gather_seconds = 0;
  // A gradient contribution the receiver accumulates (the head's part of a tied embedding's
  // gradient): summed locally over the microbatches and sent once per iteration, before the
  // receiver's gradient synchronisation, rather than per microbatch.
  bool once_per_iteration = false;
};

struct PlannerStats {
  double clustering_seconds = 0, intra_op_seconds = 0, dp_seconds = 0, total_seconds = 0;
  int64_t pieces = 0, distinct_pieces = 0;  // of the chosen B's graph
  int64_t intra_op_solves = 0;              // all B tried
  int64_t intra_op_proven = 0;              // of those, proven optimal within the gap
  int64_t candidates = 0;                   // stage candidates given to the DP (chosen B)
  int64_t pruned_candidates = 0;            // dropped as dominated (chosen B)
  std::vector<int64_t> microbatches_tried;
  // Of those, the counts planned on every logical mesh; the others were screened on the
  // one-dimensional meshes only (the search's first pass, PlanPipeline).
  std::vector<int64_t> microbatches_full;
  bool time_limit_reached = false;  // the plan is the best found before the time limit
};

struct PipelinePlan {
  int64_t microbatches = 1;
  // The schedule the plan is made for (PlannerOptions::schedule): its prediction, the stages'
  // in_flight and memory assume it, and alpa run runs it unless told otherwise.
  PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB;
  // Stages per device group (pipeline_schedule.h): 1, or under interleaved 1F1B v >= 2, stage s
  // then running on the devices of stage s % (stages / v) (the same device list, in the same
  // order).
  int32_t virtual_stages = 1;
  Graph graph;  // the microbatch graph planned
  LayerClustering clustering;
  std::vector<PlannedStage> stages;  // pipeline order
  std::vector<CrossStageTransfer> transfers;
  // The prediction: 1F1B with the per-microbatch transfers between stages
  // (EstimateOneFOneB, pipeline_estimate.h); what the planner ranks plans by.
  double iteration_seconds = 0;
  double period_seconds = 0;  // its steady-state seconds per microbatch
  // sum_i (t_i + o_i) + (B - 1) * max_j t_j: the stage DP's objective (no transfers), with
  // once-per-iteration transfers in the o_i.
  double schedule_seconds = 0;
  double max_stage_latency = 0;
  int64_t peak_memory_bytes = 0;  // max over stages
  long double flops_per_iteration = 0;
  double tflops_per_device = 0;  // flops_per_iteration / iteration_seconds / devices / 1e12
  PlannerStats stats;
};

// Where each op of plan.graph is computed: its stage, the piece within the stage, and its id in
// that piece's subgraph; all -1 for ops of no layer (copied into every piece that reads them).
struct PlanOpSite {
  int32_t stage = -1, piece = -1, local = -1;
};
std::vector<PlanOpSite> PlanOpSites(const PipelinePlan& plan);

// The most layer groups the planner makes by default (PlannerOptions::num_layers = 0): 16 (Alpa's
// setting) on clusters of up to 96 hosts, then one per 6 hosts up to 64, so that on the largest
// clusters pipelines are deep enough to keep tensor parallelism inside hosts (Megatron-LM runs its
// 1T model on 384 DGX hosts as 64 stages; docs/planner.md has the measurements). A mixed cluster
// gets twice that (at least 32): stages on devices of unequal speed balance only as finely as
// the layers are cut (gpt-39b on 4 A100 + 8 V100 hosts: 0.93x the predicted time of 16 groups,
// in the same planning time).
int32_t DefaultLayerGroupCap(const Cluster& cluster);

// The device memory a plan on `cluster` (or on one of its pools, or the devices of a stage:
// DevicesCluster) must fit: options.device_memory_bytes where given, else the cluster's.
int64_t MemoryToFit(const PlannerOptions& options, const Cluster& cluster);

// Errors: kInvalidArgument (bad options: microbatches < 0 or not dividing the global batch,
// num_layers < 0, ...; a bad cluster; a model, graph, cluster or work estimate over
// options.limits), the builder's errors, kInfeasible when no plan fits the device memory (the
// message gives the smallest device memory that would fit, when one exists and the time limit
// left time to find it; when the training state alone exceeds the cluster's memory, the call
// says so before any solve, with the least memory per device and the fewest devices it needs:
// training_state_bound.h), kTimeout when the time limit came before any plan, kCancelled.
Result<PipelinePlan> PlanPipeline(const PlannerModel& model, const Cluster& cluster,
                                  const PlannerOptions& options = {});

}  // namespace alpa
