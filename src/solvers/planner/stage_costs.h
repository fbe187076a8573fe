// The stage cost table of the planner (REFERENCE §4) for one microbatch count B.
//
// Pieces: the graph's layer markers (or the layer groups when it has none). Each piece is cut
// out as a subgraph (subgraph.h); pieces that are the same computation (StructuralKey) form
// one type and are auto-sharded once per logical mesh, on all threads (unit_profile.h), with
// iteration_weight 1 / B so that gradient synchronisation is priced once per iteration.
//
// ZeRO (optimizer state and update sharded over the data-parallel devices) is a searched
// choice in every solve. Memory levels: level 0 solves without a memory budget; level l + 1
// is tried while a stage holding the pieces a stage on that mesh would hold (at least the
// largest layer group, and for meshes up to one host their share of the devices times all
// pieces) would exceed the cluster's device memory at level l (persistent and activation bytes
// times the pieces, plus the working bytes); its budget aims at making that stage fit (never
// cutting the peak by more than 8x per level). The cluster's and not the planner's device
// memory option is used, so that the cost table, and with it the smallest memory reported for
// an infeasible model, does not depend on the option. A type that stops early uses its last
// level at higher ones. A budget below the least peak of the piece's model (its level-0
// result's least_peak_memory_bytes) ends the levels without a solve: it is infeasible.
//
// A stage candidate is (layer groups i..j, submesh, logical mesh, level): its latency sums the
// pieces' per-microbatch latencies plus the resharding between consecutive pieces inside it
// (the producer's layout into the layout the reader's solve chose); its memory is
//     sum persistent + min(B, stages after + 1) * sum activations + max working.
// With rematerialization (a config flag, searched both ways unless the options fix it) the
// latency adds the pieces' forward latencies again, activations are the pieces' checkpoints
// (their forward inputs), and the working memory is the largest piece's activations plus
// temporaries, live while that piece is recomputed.
// ZeRO-2 (gradient_sharding.h), unless the options turn it off: a config whose pieces
// reduce-scatter gradients has a copy with shard_gradients (the same solves), whose candidates
// move those reduce-scatters into the per-microbatch latency and hold the gradient accumulators
// as shards; such a candidate is kept only where it fits more stages after it than its ZeRO-1
// twin (elsewhere the DP and the ranking would never prefer it).
// This composition is a feasible plan whose cost is exact for that plan; it is not proven
// optimal across piece boundaries (each piece is solved with its boundary layouts free).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "core/ir/graph.h"
#include "core/ir/recompute.h"
#include "core/util/status.h"
#include "core/util/wide_int.h"
#include "solvers/pipeline/layer_clustering.h"
#include "solvers/pipeline/stage_dp.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/planner_limits.h"
#include "solvers/planner/subgraph.h"
#include "solvers/planner/unit_profile.h"

namespace alpa {

struct StageMeshConfig {
  int32_t submesh = 0;  // index into StageCostTable::submeshes
  LogicalMesh mesh;
  int32_t level = 0;
  // Recomputation: kFull keeps only the pieces' forward inputs per microbatch and reruns each
  // piece's forward before its backward; kSelective reruns only the attention cores
  // (core/ir/recompute.h).
  Recompute remat = Recompute::kNone;
  // ZeRO-2: gradients reduce-scattered per microbatch and accumulated as shards
  // (gradient_sharding.h); only on configs whose pieces have gradient chains.
  bool shard_gradients = false;
};

// Memory of a stage per device: the larger of its forward-backward peak, persistent + in
// flight * activation + working, and its update peak, persistent + update (the update runs
// after every microbatch's backward, when no activations are held).
struct StageMemory {
  int64_t persistent = 0, activation = 0, working = 0, update = 0;
  // Bytes with `in_flight` microbatches' activations held; saturates at INT64_MAX (which fits
  // no device) rather than wrapping for huge models or microbatch counts.
  int64_t With(int64_t in_flight) const {
    const Int128 forward_backward = Int128{persistent} + Int128{in_flight} * activation + working;
    const Int128 bytes = std::max(forward_backward, Int128{persistent} + update);
    return ClampToInt64(bytes);
  }
};

// One edge between two pieces: `producer` (local op of piece a) read as boundary input
// `reader` of piece b.
struct PieceEdge {
  int32_t a = 0, b = 0;
  int32_t producer = 0, reader = 0;
  bool forward = false;  // a forward tensor (its resharding is part of the forward)
};

// The pieces of a graph under a layer clustering (the layer markers when the clustering used
// them, else the layer groups), cut out as subgraphs and grouped into types, with the edges
// between them. BuildStageCosts and the manual-plan evaluator (manual_plan.h) share it.
struct StagePieces {
  std::vector<int32_t> piece_marker;       // per piece: its layer marker (or group)
  std::vector<int32_t> op_piece;           // per op: its piece, or -1
  std::vector<int32_t> group_first_piece;  // per layer group, plus one past the end
  std::vector<std::shared_ptr<const Subgraph>> piece_graph;
  std::vector<int32_t> piece_type;             // per piece
  std::vector<int32_t> type_rep;               // per type: its first piece
  std::vector<std::vector<int32_t>> local_of;  // per piece: full-graph op -> local op, or -1
  std::vector<PieceEdge> edges;                // in reader order
};

// Which piece each op belongs to: the layer markers when the clustering used them, else the
// layer groups. Fills piece_marker, op_piece and group_first_piece only. `clustering` must be
// of `graph` (op_layer one entry per op, first_unit one per group).
void AssignStagePieces(const Graph& graph, const LayerClustering& clustering, StagePieces& pieces);

// AssignStagePieces, then every piece cut out (on `threads` threads). Errors: ExtractSubgraph's.
Result<StagePieces> CutStagePieces(const Graph& graph, const LayerClustering& clustering,
                                   int32_t threads = 1);

// The resharding cost (seconds per microbatch) of edge `e` on `mesh`: the producer's layout
// (its reader layout when it has one) into the layout the reader's solve chose; 0 when the
// producer is free or fused (made locally in any layout). Errors: PlanReshard's.
Result<double> PieceEdgeReshardSeconds(const StagePieces& pieces, const PieceEdge& e,
                                       const UnitProfile& producer, const UnitProfile& reader,
                                       const LogicalMesh& mesh);

// A stage composed of pieces (their profiles in order, all on one mesh) and the resharding
// between them (each edge inside the stage: its cost and whether it is a forward tensor), as
// the header comment says; exactly what BuildStageCosts gives a candidate when the edges come
// in StageEdgeOrder.
struct StageEdgeCost {
  double seconds = 0;
  bool forward = false;
};
struct ComposedStage {
  double latency = 0, forward_latency = 0, iteration_overhead = 0;
  // Of latency, the weight-gradient task's part (the pieces' weight_gradient_latency; under
  // ZeRO-2 also the per-microbatch reduce-scatters, which run with the accumulation).
  double weight_gradient_latency = 0;
  StageMemory memory;
};
// With shard_gradients (ZeRO-2, gradient_sharding.h) each piece's zero2_moved_seconds move
// from the iteration overhead into the latency, its gradient accumulators shrink by
// zero2_saved_bytes and its working memory grows by zero2_transient_bytes.
ComposedStage ComposeStage(const std::vector<const UnitProfile*>& pieces,
                           const std::vector<StageEdgeCost>& edges, Recompute remat,
                           bool shard_gradients);

// ComposeStage grown one piece and one edge at a time, so that the stages of every layer range
// starting at one group cost one step each: the pieces' terms and the edges' seconds are summed
// apart, each in the order added, and the latencies are their sums.
class StageComposer {
 public:
  StageComposer(Recompute remat, bool shard_gradients)
      : remat_(remat), shard_gradients_(shard_gradients) {}
  void AddPiece(const UnitProfile& u);
  void AddEdge(const StageEdgeCost& e);
  ComposedStage Composed() const;

 private:
  Recompute remat_;
  bool shard_gradients_;
  double latency_ = 0, forward_latency_ = 0, weight_gradient_latency_ = 0, iteration_overhead_ = 0;
  double edge_seconds_ = 0, forward_edge_seconds_ = 0;
  int64_t persistent_ = 0, activation_ = 0, working_ = 0, update_ = 0;
};

// The order ComposeStage sums a stage's edges in, the one in which a range growing a group at a
// time meets them: by their later piece (max(a, b)), then by their index in StagePieces::edges.
// Returns the indices of `edges` (of one stage) in that order.
std::vector<size_t> StageEdgeOrder(const std::vector<PieceEdge>& edges);

// The memory model of a placed stage (its pieces' solutions composed as ComposeStage does, with
// the stage's remat): what the planner charged it, at any number of microbatches in flight.
// Errors: ProfileUnitMemory's.
Result<StageMemory> PlannedStageMemoryModel(const PlannedStage& stage);

// The most stages that may follow a stage of this memory on devices of `device_memory` bytes
// when B microbatches run (1F1B keeps min(B, after + 1) in flight), capped at `cap`; -1 when
// none.
int32_t MaxStagesAfter(const StageMemory& memory, int64_t device_memory, int64_t microbatches,
                       int32_t cap);

// The data-parallel degree of a piece as plans report it: the product of the mesh dims its
// first batched forward input (data or a boundary activation) is split over on dim 0; 1 when
// it has none.
int64_t DataParallelDegree(const Subgraph& sub, const AutoShardResult& r,
                           const std::vector<int64_t>& mesh_shape);

// The mesh dims that split the batch of that input (empty when it has none or splits nothing).
std::vector<int32_t> BatchMeshDims(const Subgraph& sub, const AutoShardResult& r);

// ZeRO-1: whether some optimizer state is split over a mesh dim that also splits the batch.
bool ShardsOptimizerState(const Subgraph& sub, const AutoShardResult& r);

// ZeRO-3 / FSDP: whether some weight is stored in a layout its readers gather it from (a
// resharding collective on the weight outside the gradient synchronisation and the update).
bool GathersWeights(const Subgraph& sub, const AutoShardResult& r);

// Whether a piece solved on `mesh_shape` over `submesh` keeps its tensor parallelism inside
// hosts: every mesh dim of size > 1 that does not split the batch is the last dim and its groups
// lie in one host (devices are numbered host by host, the last dim fastest). True on one host.
bool TensorParallelInsideHosts(const SubmeshShape& submesh, const std::vector<int64_t>& mesh_shape,
                               const std::vector<int32_t>& batch_dims);

struct StageCostTable {
  int64_t microbatches = 1;
  int64_t device_memory = 0;
  std::vector<SubmeshShape> submeshes;
  std::vector<StageMeshConfig> configs;    // StageCandidate::config indexes this
  std::vector<int32_t> piece_marker;       // per piece: its layer marker (or group)
  std::vector<int32_t> op_piece;           // per op: its piece, or -1
  std::vector<int32_t> group_first_piece;  // per layer group, plus one past the end
  std::vector<std::shared_ptr<const Subgraph>> piece_graph;
  std::vector<int32_t> piece_type;
  // [type][mesh index][level]; a mesh index is a config index at level 0 divided out (see
  // Solution()).
  std::vector<std::vector<std::vector<UnitProfile>>> solutions;
  std::vector<int32_t> mesh_of_config;  // per config: its mesh index
  // Per config: the index of its ZeRO-2 copy (shard_gradients), or -1.
  std::vector<int32_t> zero2_config;
  // Every (layer group range, config) that no other one of the same range and submesh
  // dominates (latency, overhead, persistent + working and activation memory all at least as
  // good); max_stages_after < 0 where it never fits.
  std::vector<StageCandidate> candidates;
  int64_t pruned = 0;                         // dominated candidates dropped
  std::vector<StageMemory> candidate_memory;  // aligned with candidates
  // Aligned with candidates: the forward part of their latency (the pieces' forward latencies
  // plus the resharding of forward tensors between them; with remat the forward counted once).
  std::vector<double> candidate_forward_latency;
  // Aligned with candidates: ComposedStage::weight_gradient_latency.
  std::vector<double> candidate_weight_gradient_latency;
  int64_t solves = 0, proven = 0;
  // The deadline stopped the intra-op solves early: the configs cover only the logical meshes
  // on which every piece type got its level-0 solve.
  bool time_limit_reached = false;
  // The pins (PlannerOptions::pipeline_stages, max_tensor_parallel,
  // tensor_parallel_inside_host) left no logical mesh for this microbatch count: the table has
  // no candidates.
  bool pinned_out = false;

  // The profile piece p uses under config c.
  const UnitProfile& Solution(int32_t piece, int32_t config) const;
};

// Drops the candidates that another one of the same layer range and submesh dominates (the
// first of equal ones stays), setting `pruned`: replacing a dominated stage by its dominator
// never makes a plan slower or infeasible, whatever the device memory, so the DP's optimum is
// unchanged.
void PruneDominatedCandidates(StageCostTable& t);

// The recomputation choices `mode` allows: kSearch gives none and full, and selective where
// `selective_applies` (some piece has an attention core to rerun; elsewhere selective is none).
std::vector<Recompute> RecomputeChoices(RematMode mode, bool selective_applies);

// The intra-op work of one microbatch count before it starts (planner_limits.h): level-0 solves
// are piece types x logical meshes; stage candidates at most configs (meshes x levels x
// recomputation choices) x layer-group ranges.
PlannerWorkEstimate EstimateIntraOpWork(const PlannerOptions& options, int64_t piece_types,
                                        int64_t logical_meshes, int64_t microbatch_counts,
                                        int32_t groups);

// The level-0 intra-op solutions of the microbatch counts solved so far, from which the next
// count's solves start (AutoShardOptions::warm_start): a piece's best layouts rarely change
// with the microbatch size, so a warm solve does kWarmStartEffort of a cold one's local
// search. Keyed by the piece (its layer marker and op count) and the logical mesh (shape and
// forced batch dim); the latest count's solution of a key replaces the earlier one.
struct IntraOpWarmStarts {
  using Key = std::tuple<int32_t, int32_t, std::vector<int64_t>, int32_t>;
  std::map<Key, std::shared_ptr<const AutoShardResult>> solutions;
};
inline constexpr double kWarmStartEffort = 0.25;

// The memory levels solved at a microbatch count per piece and logical mesh (the warm-start
// key): a later pass of the microbatch search over the same count, on more logical meshes,
// takes these rather than solving them again (the same solves would give the same answers).
struct IntraOpSolutions {
  std::map<std::pair<int64_t, IntraOpWarmStarts::Key>, std::vector<UnitProfile>> levels;
};

// The planned work (table entries) up to which an intra-op solve of the local search tries the
// exact block elimination first (SolveOptions::heuristic_elimination_work), and ends proven
// where it solves. Wide-ResNet's convolution blocks solve exactly in a few milliseconds, faster
// than the local search and never worse (wresnet-13b on 64 GPUs plans in 0.68x the time, every
// Alpa-suite row with the same or a better prediction); the transformer layers' cores exceed it
// and go straight to the local search, as before.
inline constexpr double kIntraOpEliminationWork = 1e7;

// What one planning call gives BuildStageCosts beyond its options.
struct StageCostRun {
  PlannerProgress progress_base;  // the planner's phase / timing fields for progress reports
  // No intra-op solve starts after it (nor a memory level); each solve's own time limit ends
  // at it at the latest.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  int64_t microbatch_counts = 1;  // counts the planner may try (for the estimate)
  // Sequences per microbatch (0: unknown). Where a tensor-parallel pin forces the batch onto a
  // mesh dim, only inputs whose dim 0 is this size are forced; other inputs of a piece are
  // weight-shaped values crossing a piece boundary (a tied embedding) and stay free.
  int64_t microbatch_size = 0;
  // Called with the work estimate once the pieces and logical meshes are known, before any
  // solve; an error (a limit, a cancellation) is returned as it is.
  std::function<Status(const PlannerWorkEstimate&)> before_solves;
  // Read by the solves and updated with this count's solutions after them; null: every solve
  // starts cold.
  IntraOpWarmStarts* warm_starts = nullptr;
  // Resharding prices every solve of the call shares (AutoShardOptions::shared_reshard_costs);
  // null: each solve prices its own moves.
  SharedReshardCosts* shared_reshard_costs = nullptr;
  // Only the one-dimensional logical meshes (D, 1) of each submesh: the microbatch search's
  // screening pass (planner.h).
  bool one_dimensional_meshes = false;
  // Levels an earlier pass solved, taken instead of solving; a screening pass
  // (one_dimensional_meshes) keeps its solved levels here. Null: none.
  IntraOpSolutions* solved = nullptr;
  // With PlannerOptions::search_zero3: whether the stage DP finds a plan among a table's
  // candidates. Where it does not, every piece type whose stage would not fit for its weights,
  // gradients and optimizer state alone gains one more level on each mesh that splits the
  // batch: the solve with every weight held as shards and gathered where read (ZeRO-3), and
  // the candidates are composed again. Unset: no such level.
  std::function<bool(const StageCostTable&)> fits;
};

// Logical meshes are solved on from the largest submesh down (every piece type on one mesh
// before the next), so that a deadline leaves whole meshes, the one spanning the cluster first.
// Errors: cancellation (kCancelled), kTimeout when the deadline came before every piece type
// was solved on some logical mesh, an intra-op solve error, before_solves' error.
Result<StageCostTable> BuildStageCosts(const Graph& graph, const LayerClustering& clustering,
                                       const Cluster& cluster, const PlannerOptions& options,
                                       int64_t microbatches, int64_t device_memory,
                                       const StageCostRun& run);

}  // namespace alpa
