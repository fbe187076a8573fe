// Auto-sharding a graph on one logical mesh (Alpa's intra-op pass, REFERENCE §2, §3, §7):
// strategies per op (op_strategies.h), resharding costs per edge (resharding.h), liveness from
// a memory-aware schedule, the sharding problem solved by the foundation's solver, and the
// result read back as per-op strategies, per-tensor specs and the collectives to insert.
//
// Problem construction (auto_sharding_problem.h has the details):
//   - constant and iota ops, and ops computed from them alone, are free: every device makes its
//     piece locally in whatever layout the consumer wants (no node, no cost, no memory);
//   - broadcast_in_dim is fused into its consumers (XLA does): the consumer's edge runs from the
//     broadcast's operand, with the wanted layout projected back onto the operand's dims;
//   - elementwise, layout, slice / pad / concatenate / reverse, windowed and reduce ops follow
//     their first non-free operand (they share its decision; their strategy is derived from the
//     operand's spec or reader layout, with partial sums passed through ops linear in them);
//   - dot_general, convolution, gather, scatter_add and parameters (weights, inputs, optimizer
//     state) enumerate their own strategies;
//   - a tensor (not a weight) read by several operand slots is resharded once, into a layout
//     chosen by a reader-layout node, which its readers read (and its followers follow);
//   - ZeRO off: optimizer-state parameters and the update ops of a weight follow the weight
//     (same spec), weights are read as stored and gradients all-reduced; ZeRO search: they choose
//     freely, aliased updates follow their parameter, so the solver may pick reduce-scatter +
//     sharded update + all-gather; ZeRO force: as search, and optimizer-state parameters must be
//     sharded on every mesh dim that can split them.
// Liveness: a greedy topological schedule that runs first the ready op that frees the most
// bytes (ties: graph order); persistent tensors (parameters, optimizer state, inputs, updated
// values and outputs) stay live to the end. Under a calibration with `single_reader_fusion`
// (libalpa's CUDA runner) the values its kernels keep on chip (the ones it does not price as
// memory traffic, core/ir/fusion.h PricedResults: fused elementwise chains, and with
// `fuse_attention` the attention cores and the views its attention kernels read through) hold
// no memory: a read of one keeps alive what it was made from instead (OpSharding::on_chip).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/cost_model.h"
#include "core/cluster/logical_mesh.h"
#include "core/cluster/sharding_spec.h"
#include "core/ir/graph.h"
#include "core/util/status.h"
#include "solvers/sharding/sharding_solver.h"

namespace alpa {

enum class ZeroMode : int32_t { kOff = 0, kSearch = 1, kForce = 2 };

// The mesh dim(s) the batch dim of every input is forced onto.
inline constexpr int32_t kBatchDimFree = -2;  // no constraint
inline constexpr int32_t kBatchDimAllMeshDims = -1;

// An output of the graph that another solve's graph reads (AutoShardOptions::
// handed_off_outputs).
struct HandedOffOutput {
  int32_t op = -1;
  // Accumulated over the microbatches and handed over once per iteration (a contribution to a
  // weight's gradient): its handover is weighted by iteration_weight.
  bool once_per_iteration = false;
};

struct AutoShardResult;
class SharedReshardCosts;

struct AutoShardOptions {
  CostMode cost_mode = CostMode::kRealUnits;
  // Every weight replicated and every input split on its batch dim over all mesh dims.
  bool force_data_parallel = false;
  // Inputs' dim 0 split over this mesh dim (or all of them), when not kBatchDimFree.
  int32_t batch_mesh_dim = kBatchDimFree;
  // With batch_mesh_dim set: an input whose dim 0 the batch mesh dim(s) cannot split (the
  // split does not divide it) is replicated over them instead of being an error. For callers
  // that have checked the batch divides already (the manual plan checks that the data-parallel
  // degree divides the microbatch), so such an input is a weight-shaped value crossing a piece
  // boundary (a tied embedding, its gradient) rather than the batch.
  bool replicate_indivisible_inputs = false;
  // With batch_mesh_dim set and this > 0: only inputs whose dim 0 has this size are forced
  // (the batch); the others are laid out freely.
  int64_t batch_size = 0;
  ZeroMode zero = ZeroMode::kOff;
  // With zero == kForce: the parameters too are laid out with the fewest copies (ZeRO-3: each
  // device holds a shard of every weight, gathered where the forward and backward read it).
  bool zero_parameters = false;
  // With zero != kOff: a weight may be stored split and all-gathered where the forward and
  // backward read it, per microbatch (ZeRO-3 / FSDP, chosen per weight where a memory budget
  // makes it pay). false reads every weight in the layout it is stored in (ZeRO-1/2 at most),
  // unless zero_parameters forces the gathers.
  bool gather_parameters = true;
  bool allow_all_gather = true;                // resharding may use all-gathers
  bool allow_all_to_all = true;                // resharding may use all-to-alls
  std::optional<int64_t> memory_budget_bytes;  // per device; none: no memory constraint
  // Weight of the once-per-iteration costs (the update phase, and every collective on a
  // gradient-like value: with gradient accumulation over B microbatches they run once while
  // the rest runs B times) against the per-microbatch ones. The pipeline planner passes 1 / B;
  // 1 (the default) prices one step of a graph that is the whole batch. The result's objective
  // is the weighted one; its per-op costs and collectives are not weighted.
  double iteration_weight = 1.0;
  // Outputs that another solve's graph reads: a planner piece's boundary outputs, which the
  // reading piece takes as inputs, never as partial sums. A strategy that leaves such an
  // output a partial sum pays, in the objective only, the cheapest resharding of it into a
  // layout without partial sums, so that the solve sees what its layout costs the reader
  // (alone, a piece leaves a tied embedding's gradient a partial sum over every mesh dim,
  // across hosts, for free). The result reports it as handoff_cost, outside the objective, the
  // per-op costs and the collectives: the caller prices the actual handover between the two
  // solves' layouts.
  std::vector<HandedOffOutput> handed_off_outputs;
  // A solve of the same graph structure (the same ops, e.g. at another batch size) on a mesh of
  // the same shape: the solve starts from its layouts (warm_start.h), and where that start is
  // feasible the local search does solve.warm_start_effort of its work. Ignored (a cold start)
  // when the structure differs.
  std::shared_ptr<const AutoShardResult> warm_start;
  // Resharding prices shared with other solves (shared_reshard_costs.h): the planner's solves
  // of one call price each move once per mesh rather than once per solve. Null: this solve's
  // own cache only. Must outlive the solve.
  SharedReshardCosts* shared_reshard_costs = nullptr;
  SolveOptions solve;  // time limit, threads, cancel, progress
};

// One collective to insert, in execution order.
struct PlannedCollective {
  CollectiveKind kind = CollectiveKind::kAllReduce;  // never kSendRecv here
  std::vector<int32_t> mesh_dims;
  double bytes = 0;     // the cost model's b
  double cost = 0;      // in the run's cost units
  int32_t tensor = -1;  // the op whose result it moves
  // The op that needs it (== tensor for a collective inside an op; -1 when it lays the tensor
  // out for all its readers, see OpSharding::reader_layout).
  int32_t consumer = -1;
  int32_t operand = -1;    // which operand of `consumer` it feeds (-1 otherwise)
  bool inside_op = false;  // part of the op's strategy, not a resharding
  // Part of the gradient synchronisation or the optimizer update: reduces a gradient (or a
  // value that becomes one through layout ops and accumulation), or feeds an update-phase op
  // (ZeRO's all-gather of the new weights). Combinable into one bucket per kind and mesh dims.
  bool gradient_sync = false;
  std::string description;
};

// Counts by kind; gradient synchronisations over the same mesh dims and kind are one bucket
// in `combined` (what a runtime does: one fused all-reduce / reduce-scatter per mesh dims).
struct CollectiveCounts {
  int64_t all_reduce = 0, all_gather = 0, reduce_scatter = 0, all_to_all = 0;
  int64_t total() const { return all_reduce + all_gather + reduce_scatter + all_to_all; }
};

struct OpSharding {
  bool free = false;   // computed locally in any layout (constants and what they feed alone)
  bool fused = false;  // a broadcast fused into its consumers
  // Computed inside its readers' kernels and never written to memory (see Liveness above): it
  // holds no bytes (memory_bytes 0), and a read of it is a read of the values it is made from
  // (through other on-chip values). Never a parameter, an update or an output.
  bool on_chip = false;
  int32_t strategy = -1;  // index into the op's strategy list (-1 for free / fused ops)
  int32_t node = -1;      // sharding-problem node
  int32_t follows = -1;   // the op whose decision it shares, -1 when it decides itself
  std::string strategy_name;
  ShardingSpec result;                 // meaningful unless free / fused
  std::vector<ShardingSpec> operands;  // the layouts the op reads (after resharding)
  // For a result read by several operand slots: the layout it is resharded into once (by the
  // collectives with consumer -1), from which each reader reshards further if it must.
  std::optional<ShardingSpec> reader_layout;
  double compute_cost = 0, communication_cost = 0;
  int64_t memory_bytes = 0;
};

struct AutoShardStats {
  int32_t ops = 0, free_ops = 0, fused_ops = 0, follower_ops = 0, deciding_ops = 0;
  int32_t on_chip_ops = 0;  // node ops whose results stay on chip (OpSharding::on_chip)
  int64_t strategies = 0;   // summed over nodes
  int64_t edges = 0;        // after merging parallel edges
  double build_seconds = 0, solve_seconds = 0;
  SolveStats solver;  // nodes / edges before and after normalization and reductions
};

struct AutoShardResult {
  SolveStatus status = SolveStatus::kNoSolution;
  std::string message;
  std::vector<int32_t> mesh_shape;  // of the logical mesh solved on
  std::vector<OpSharding> ops;      // one per graph op
  std::vector<int32_t> schedule;    // op ids in execution order
  std::vector<PlannedCollective> collectives;
  CollectiveCounts counts;  // gradient syncs combined
  CollectiveCounts counts_uncombined;
  // compute + communication + resharding, the once-per-iteration part weighted by
  // iteration_weight (the options' value, kept here).
  long double objective = 0;
  double iteration_weight = 1.0;
  // What the solve minimised beyond the objective: the handover of the partial sums the plan
  // leaves in AutoShardOptions::handed_off_outputs (weighted as there).
  long double handoff_cost = 0;
  // A lower bound on objective + handoff_cost.
  long double lower_bound = 0;
  long double compute_cost = 0, communication_cost = 0, resharding_cost = 0;
  // The solver's answer: per sharding-problem node its strategy and how many it had (what a
  // warm start of the same structure at another size reuses, warm_start.h).
  std::vector<int32_t> node_strategies, node_strategy_counts;
  int64_t peak_memory_bytes = 0;  // per device, over the schedule
  int64_t peak_memory_time = 0;   // schedule position of the peak
  // The least peak any plan of this model reaches (every live tensor at its smallest shard,
  // whatever the budget): a memory budget below it has no plan, and the solve says so
  // (kInfeasible) without searching. Set whenever the model was built.
  int64_t least_peak_memory_bytes = 0;
  AutoShardStats stats;
};

// Auto-shards a validated graph on `mesh`. `cluster` supplies the device for the roofline and
// may be null only with CostMode::kAlpaCompatible (then compute costs are Alpa's penalties).
// Errors: an invalid graph or mesh, a bad option (kInvalidArgument naming it). A memory budget
// that no plan meets gives status kInfeasible in the result (not an error), with the smallest
// peak found without the budget in the message.
Result<AutoShardResult> AutoShard(const Graph& graph, const LogicalMesh& mesh,
                                  const Cluster* cluster, const AutoShardOptions& options);

// The result as JSON (docs/auto-sharding.md): objective and its split, collectives (counts by
// kind, combined and not, and the ordered list), peak_memory_bytes, tensors (name, role, spec),
// ops (name, kind, strategy), stats.
std::string AutoShardResultJson(const Graph& graph, const AutoShardResult& result);

}  // namespace alpa
