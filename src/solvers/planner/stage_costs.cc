// The stage cost table (stage_costs.h).
#include "solvers/planner/stage_costs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "core/cluster/resharding.h"
#include "core/util/parallel.h"

namespace alpa {
namespace {

// Whether candidate a is at least as good as b in every respect: latency, overhead, and
// memory at any number of microbatches in flight and any device memory.
bool AtLeastAsGood(const StageCandidate& a, const StageMemory& ma, const StageCandidate& b,
                   const StageMemory& mb) {
  return a.latency <= b.latency && a.iteration_overhead <= b.iteration_overhead &&
         ma.persistent + ma.working <= mb.persistent + mb.working &&
         ma.persistent + ma.update <= mb.persistent + mb.update && ma.activation <= mb.activation;
}

}  // namespace

std::vector<int32_t> BatchMeshDims(const Subgraph& sub, const AutoShardResult& r) {
  for (int32_t v = 0; v < sub.graph.size(); ++v) {
    const Op& op = sub.graph.op(v);
    if (op.kind == OpKind::kParameter && op.role == TensorRole::kInput && !op.shape.empty() &&
        op.phase == Phase::kForward) {
      return r.ops[static_cast<size_t>(v)].result.dims[0];
    }
  }
  return {};
}

bool ShardsOptimizerState(const Subgraph& sub, const AutoShardResult& r) {
  const std::vector<int32_t> batch_dims = BatchMeshDims(sub, r);
  if (batch_dims.empty()) return false;
  for (int32_t v = 0; v < sub.graph.size(); ++v) {
    const Op& op = sub.graph.op(v);
    if (op.kind != OpKind::kParameter || op.role != TensorRole::kOptimizerState) continue;
    for (const auto& dims : r.ops[static_cast<size_t>(v)].result.dims) {
      for (int32_t d : dims) {
        if (std::find(batch_dims.begin(), batch_dims.end(), d) != batch_dims.end()) return true;
      }
    }
  }
  return false;
}

bool GathersWeights(const Subgraph& sub, const AutoShardResult& r) {
  for (const PlannedCollective& c : r.collectives) {
    if (c.inside_op || c.gradient_sync || c.tensor < 0) continue;
    const Op& op = sub.graph.op(c.tensor);
    if (op.kind == OpKind::kParameter && op.role == TensorRole::kParameter) return true;
  }
  return false;
}

int64_t DataParallelDegree(const Subgraph& sub, const AutoShardResult& r,
                           const std::vector<int64_t>& mesh_shape) {
  int64_t degree = 1;
  for (int32_t d : BatchMeshDims(sub, r)) degree *= mesh_shape[static_cast<size_t>(d)];
  return degree;
}

bool TensorParallelInsideHosts(const SubmeshShape& submesh, const std::vector<int64_t>& mesh_shape,
                               const std::vector<int32_t>& batch_dims) {
  if (submesh.hosts <= 1) return true;
  for (size_t d = 0; d < mesh_shape.size(); ++d) {
    if (mesh_shape[d] == 1 || std::find(batch_dims.begin(), batch_dims.end(),
                                        static_cast<int32_t>(d)) != batch_dims.end()) {
      continue;
    }
    if (d + 1 != mesh_shape.size() || submesh.devices_per_host % mesh_shape[d] != 0) return false;
  }
  return true;
}

void AssignStagePieces(const Graph& graph, const LayerClustering& clustering, StagePieces& pieces) {
  const size_t n = static_cast<size_t>(graph.size());
  pieces.op_piece.assign(n, -1);
  if (!clustering.from_markers) {
    pieces.op_piece = clustering.op_layer;
    for (int32_t g = 0; g < clustering.num_layers; ++g) {
      pieces.piece_marker.push_back(g);
      pieces.group_first_piece.push_back(g);
    }
    pieces.group_first_piece.push_back(clustering.num_layers);
    return;
  }
  std::vector<int32_t> markers;
  for (const Op& op : graph.ops) {
    if (op.layer >= 0) markers.push_back(op.layer);
  }
  std::sort(markers.begin(), markers.end());
  markers.erase(std::unique(markers.begin(), markers.end()), markers.end());
  pieces.piece_marker = markers;
  for (size_t v = 0; v < n; ++v) {
    if (clustering.op_layer[v] < 0) continue;
    const int32_t layer = graph.ops[v].layer;
    pieces.op_piece[v] = static_cast<int32_t>(
        std::lower_bound(markers.begin(), markers.end(), layer) - markers.begin());
  }
  for (int32_t g = 0; g < clustering.num_layers; ++g) {
    const int32_t first = clustering.first_unit[static_cast<size_t>(g)];
    pieces.group_first_piece.push_back(static_cast<int32_t>(
        std::lower_bound(markers.begin(), markers.end(), first) - markers.begin()));
  }
  pieces.group_first_piece.push_back(static_cast<int32_t>(markers.size()));
}

Result<StagePieces> CutStagePieces(const Graph& graph, const LayerClustering& clustering,
                                   int32_t threads) {
  StagePieces stage_pieces;
  AssignStagePieces(graph, clustering, stage_pieces);
  const int32_t pieces = static_cast<int32_t>(stage_pieces.piece_marker.size());

  // Subgraphs (on `threads` threads), then their types in piece order.
  std::vector<std::shared_ptr<const Subgraph>> cut(static_cast<size_t>(pieces));
  std::vector<std::string> keys(static_cast<size_t>(pieces));
  stage_pieces.local_of.resize(static_cast<size_t>(pieces));
  ALPA_RETURN_IF_ERROR(RunParallel(pieces, threads, [&](int64_t task) -> Status {
    const auto p = static_cast<int32_t>(task);
    Result<Subgraph> sub = ExtractSubgraph(graph, stage_pieces.op_piece, p, p);
    if (!sub.ok()) return sub.status();
    std::vector<int32_t>& local = stage_pieces.local_of[static_cast<size_t>(p)];
    local.assign(static_cast<size_t>(graph.size()), -1);
    const Subgraph& s = sub.value();
    for (int32_t l = 0; l < s.graph.size(); ++l) {
      const int32_t o = s.origin[static_cast<size_t>(l)];
      if (stage_pieces.op_piece[static_cast<size_t>(o)] == p) local[static_cast<size_t>(o)] = l;
    }
    keys[static_cast<size_t>(p)] = StructuralKey(s.graph);
    cut[static_cast<size_t>(p)] = std::make_shared<const Subgraph>(std::move(sub).value());
    return Status::Ok();
  }));
  std::map<std::string, int32_t> type_of_key;
  for (int32_t p = 0; p < pieces; ++p) {
    auto [it, inserted] = type_of_key.emplace(std::move(keys[static_cast<size_t>(p)]),
                                              static_cast<int32_t>(stage_pieces.type_rep.size()));
    if (inserted) stage_pieces.type_rep.push_back(p);
    stage_pieces.piece_type.push_back(it->second);
  }
  stage_pieces.piece_graph = std::move(cut);

  // Edges between pieces.
  for (int32_t b = 0; b < pieces; ++b) {
    const Subgraph& s = *stage_pieces.piece_graph[static_cast<size_t>(b)];
    for (int32_t l : s.boundary_inputs) {
      const int32_t u = s.origin[static_cast<size_t>(l)];
      const int32_t a = stage_pieces.op_piece[static_cast<size_t>(u)];
      if (a < 0 || a == b) continue;
      stage_pieces.edges.push_back(
          {a, b, stage_pieces.local_of[static_cast<size_t>(a)][static_cast<size_t>(u)], l,
           graph.op(u).phase == Phase::kForward});
    }
  }
  return stage_pieces;
}

Result<double> PieceEdgeReshardSeconds(const StagePieces& pieces, const PieceEdge& e,
                                       const UnitProfile& producer, const UnitProfile& reader,
                                       const LogicalMesh& mesh) {
  const OpSharding& from = producer.sharding->ops[static_cast<size_t>(e.producer)];
  if (from.free || from.fused) return 0.0;  // made locally in any layout: nothing to move
  const Op& op = pieces.piece_graph[static_cast<size_t>(e.b)]->graph.op(e.reader);
  const OpSharding& to = reader.sharding->ops[static_cast<size_t>(e.reader)];
  ReshardOptions ro;
  ro.cost_mode = CostMode::kRealUnits;
  ro.alpa_compatible = false;
  Result<ReshardPlan> plan = PlanReshard(from.reader_layout ? *from.reader_layout : from.result,
                                         to.result, op.shape, DTypeBytes(op.dtype), mesh, ro);
  if (!plan.ok()) return plan.status();
  return plan.value().cost;
}

void StageComposer::AddPiece(const UnitProfile& u) {
  // What runs again before the backward, what stays per microbatch in flight, and what the
  // rerun holds while one microbatch's backward runs.
  double rerun = 0;
  int64_t kept = u.activation_bytes, rerun_bytes = 0;
  if (remat_ == Recompute::kFull) {
    rerun = u.forward_latency;
    kept = u.checkpoint_bytes;
    rerun_bytes = u.activation_bytes;
  } else if (remat_ == Recompute::kSelective) {
    rerun = u.selective_latency;
    kept = u.selective_activation_bytes;
    rerun_bytes = u.recomputed_bytes;
  }
  // ZeRO-2: the reduce-scatters of the gradients run per microbatch, the accumulators are
  // shards, and one microbatch's gradient is held whole while it is laid out.
  const double moved = shard_gradients_ ? u.zero2_moved_seconds : 0.0;
  latency_ += u.latency + rerun + moved;
  forward_latency_ += u.forward_latency;
  weight_gradient_latency_ += u.weight_gradient_latency + moved;
  iteration_overhead_ += std::max(0.0, u.iteration_overhead - moved);
  persistent_ += u.persistent_bytes - (shard_gradients_ ? u.zero2_saved_bytes : 0);
  activation_ += kept;
  working_ = std::max(
      working_, u.working_bytes + rerun_bytes + (shard_gradients_ ? u.zero2_transient_bytes : 0));
  update_ = std::max(update_, u.update_bytes);
}

void StageComposer::AddEdge(const StageEdgeCost& e) {
  edge_seconds_ += e.seconds;
  if (e.forward) forward_edge_seconds_ += e.seconds;
}

ComposedStage StageComposer::Composed() const {
  ComposedStage composed;
  composed.latency = latency_ + edge_seconds_;
  composed.forward_latency = forward_latency_ + forward_edge_seconds_;
  // At most the backward (a stage whose backward is all weight gradients sums the same costs
  // in another order: the difference may round below it).
  composed.weight_gradient_latency =
      std::min(weight_gradient_latency_, composed.latency - composed.forward_latency);
  composed.iteration_overhead = iteration_overhead_;
  composed.memory = StageMemory{persistent_, activation_, working_, update_};
  return composed;
}

ComposedStage ComposeStage(const std::vector<const UnitProfile*>& pieces,
                           const std::vector<StageEdgeCost>& edges, Recompute remat,
                           bool shard_gradients) {
  StageComposer composer(remat, shard_gradients);
  for (const UnitProfile* u : pieces) composer.AddPiece(*u);
  for (const StageEdgeCost& e : edges) composer.AddEdge(e);
  return composer.Composed();
}

std::vector<size_t> StageEdgeOrder(const std::vector<PieceEdge>& edges) {
  std::vector<size_t> order(edges.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return std::max(edges[x].a, edges[x].b) < std::max(edges[y].a, edges[y].b);
  });
  return order;
}

void PruneDominatedCandidates(StageCostTable& table) {
  using Group = std::tuple<int32_t, int32_t, int32_t>;
  std::map<Group, std::vector<size_t>> groups;
  for (size_t k = 0; k < table.candidates.size(); ++k) {
    const StageCandidate& c = table.candidates[k];
    groups[Group{c.first_layer, c.last_layer, c.submesh}].push_back(k);
  }
  std::vector<char> keep(table.candidates.size(), 1);
  const bool has_forward = table.candidate_forward_latency.size() == table.candidates.size();
  const bool has_weight = table.candidate_weight_gradient_latency.size() == table.candidates.size();
  // A selective-recomputation candidate never prunes another one: the planner also solves the
  // DP without them (planner.cc, WithoutSelective), over exactly the candidates it would have
  // kept had there been none.
  auto selective = [&](size_t k) {
    return table.configs[static_cast<size_t>(table.candidates[k].config)].remat ==
           Recompute::kSelective;
  };
  for (const auto& [group, members] : groups) {
    for (size_t x : members) {
      for (size_t y : members) {
        if (x == y || !keep[y] || (selective(y) && !selective(x))) continue;
        const bool y_dominates = AtLeastAsGood(table.candidates[y], table.candidate_memory[y],
                                               table.candidates[x], table.candidate_memory[x]) &&
                                 (!AtLeastAsGood(table.candidates[x], table.candidate_memory[x],
                                                 table.candidates[y], table.candidate_memory[y]) ||
                                  y < x);
        if (y_dominates) {
          keep[x] = 0;
          break;
        }
      }
    }
  }
  size_t out = 0;
  for (size_t k = 0; k < table.candidates.size(); ++k) {
    if (!keep[k]) continue;
    table.candidates[out] = table.candidates[k];
    table.candidate_memory[out] = table.candidate_memory[k];
    if (has_forward) table.candidate_forward_latency[out] = table.candidate_forward_latency[k];
    if (has_weight) {
      table.candidate_weight_gradient_latency[out] = table.candidate_weight_gradient_latency[k];
    }
    ++out;
  }
  table.pruned = static_cast<int64_t>(table.candidates.size() - out);
  table.candidates.resize(out);
  table.candidate_memory.resize(out);
  if (has_forward) table.candidate_forward_latency.resize(out);
  if (has_weight) table.candidate_weight_gradient_latency.resize(out);
}

Result<StageMemory> PlannedStageMemoryModel(const PlannedStage& stage) {
  std::vector<UnitProfile> units;
  for (const StagePiece& piece : stage.pieces) {
    Result<UnitMemory> m = ProfileUnitMemory(piece.subgraph->graph, *piece.sharding);
    if (!m.ok()) return m.status();
    UnitProfile u;
    u.persistent_bytes = m.value().persistent();
    u.activation_bytes = m.value().activations;
    u.checkpoint_bytes = m.value().checkpoints;
    u.selective_activation_bytes = m.value().selective_activations;
    u.recomputed_bytes = m.value().recomputed;
    u.working_bytes = m.value().working;
    u.update_bytes = m.value().update;
    if (stage.shard_gradients) SetZero2Figures(piece.subgraph->graph, *piece.sharding, u);
    units.push_back(u);
  }
  std::vector<const UnitProfile*> pointers;
  for (const UnitProfile& u : units) pointers.push_back(&u);
  return ComposeStage(pointers, {}, stage.remat, stage.shard_gradients).memory;
}

int32_t MaxStagesAfter(const StageMemory& memory, int64_t device_memory, int64_t microbatches,
                       int32_t cap) {
  if (memory.With(1) > device_memory) return -1;
  if (memory.activation == 0) return cap;
  const int64_t in_flight =
      (device_memory - memory.persistent - memory.working) / memory.activation;
  if (in_flight >= microbatches) return cap;
  return static_cast<int32_t>(std::min<int64_t>(cap, in_flight - 1));
}

const UnitProfile& StageCostTable::Solution(int32_t piece, int32_t config) const {
  const auto& levels = solutions[static_cast<size_t>(piece_type[static_cast<size_t>(piece)])]
                                [static_cast<size_t>(mesh_of_config[static_cast<size_t>(config)])];
  const size_t level = static_cast<size_t>(configs[static_cast<size_t>(config)].level);
  return levels[std::min(level, levels.size() - 1)];
}

namespace {

// Every logical mesh of every submesh shape the pins allow, with the submesh each one is on.
struct StageMeshes {
  std::vector<LogicalMesh> meshes;
  std::vector<int32_t> submesh;  // per mesh: index into StageCostTable::submeshes
  // per mesh: the mesh dim the pins force the batch onto (kBatchDimFree: none)
  std::vector<int32_t> batch_dim;
};

// Whether a stage on `submesh` leaves every other one of options.pipeline_stages stages at
// least one device (one stage: the whole cluster).
bool SubmeshFitsPinnedStages(const Cluster& cluster, const SubmeshShape& submesh,
                             const PlannerOptions& options) {
  if (options.pipeline_stages <= 0) return true;
  if (options.pipeline_stages == 1) return submesh.num_devices() == cluster.num_devices();
  return submesh.num_devices() <= cluster.num_devices() - (options.pipeline_stages - 1);
}

// The batch mesh dim the tensor-parallel pins force on `shape` over `submesh`, or nullopt when
// they rule the mesh out: with a cap on the degree, meshes whose second dim exceeds it are out;
// with either pin, a mesh whose first dim could otherwise carry tensor parallelism (across
// hosts, or beyond the cap) splits the batch over it, and is out when that split does not
// divide the microbatch (microbatch_size, when known).
std::optional<int32_t> PinnedBatchDim(const SubmeshShape& submesh,
                                      const std::vector<int64_t>& shape,
                                      const PlannerOptions& options, int64_t microbatch_size) {
  const int64_t d0 = shape[0], d1 = shape.size() > 1 ? shape[1] : 1;
  const int64_t cap = options.max_tensor_parallel;
  if (cap > 0 && d1 > cap) return std::nullopt;
  const bool capped = cap > 0 && d0 * d1 > cap;
  const bool across_hosts = options.tensor_parallel_inside_host && submesh.hosts > 1;
  if (d0 == 1 || !(capped || across_hosts)) return kBatchDimFree;
  if (microbatch_size > 0 && microbatch_size % d0 != 0) return std::nullopt;
  return 0;
}

Result<StageMeshes> EnumerateStageMeshes(const Cluster& cluster,
                                         const std::vector<SubmeshShape>& submeshes,
                                         const PlannerOptions& options, int64_t microbatch_size,
                                         bool one_dimensional) {
  StageMeshes out;
  for (size_t s = 0; s < submeshes.size(); ++s) {
    if (!SubmeshFitsPinnedStages(cluster, submeshes[s], options)) continue;
    for (const std::vector<int64_t>& shape : EnumerateLogicalShapes(submeshes[s])) {
      if (one_dimensional && shape[1] > 1) continue;
      const std::optional<int32_t> batch_dim =
          PinnedBatchDim(submeshes[s], shape, options, microbatch_size);
      if (!batch_dim) continue;
      Result<LogicalMesh> mesh = DeriveLogicalMesh(cluster, submeshes[s], shape);
      if (!mesh.ok()) return mesh.status();
      out.meshes.push_back(std::move(mesh).value());
      out.submesh.push_back(static_cast<int32_t>(s));
      out.batch_dim.push_back(*batch_dim);
    }
  }
  return out;
}

// The auto-sharding options of every intra-op solve (before its memory budget).
AutoShardOptions IntraOpOptions(const PlannerOptions& options, int64_t microbatches) {
  AutoShardOptions shard;
  shard.iteration_weight = 1.0 / static_cast<double>(microbatches);
  shard.solve.threads = 1;
  shard.solve.deterministic = true;
  shard.solve.deterministic_searches = 1;  // the solves themselves run side by side
  shard.solve.heuristic_only = !options.intra_op_exact;
  shard.solve.heuristic_elimination_work = kIntraOpEliminationWork;
  shard.solve.time_limit_seconds = options.intra_op_time_limit_seconds;
  shard.solve.relative_gap = options.intra_op_relative_gap;
  shard.solve.cancel = options.cancel;
  // ZeRO is a choice in every solve: sharding the optimizer state and its update over the
  // data-parallel devices costs the same collectives as an all-reduce and divides the update
  // and the state's memory.
  shard.zero = ZeroMode::kSearch;
  // Weights gathered per use (ZeRO-3) only pay under a memory budget: the memory levels past
  // the first allow them (SolveMemoryLevels), the unconstrained solve does not, which keeps its
  // model small.
  shard.gather_parameters = false;
  return shard;
}

// What every intra-op solve task of one table shares.
struct IntraOpContext {
  const StageCostTable& table;           // its pieces (solutions are written by the tasks)
  const std::vector<int32_t>& type_rep;  // per type: its first piece
  const std::vector<LogicalMesh>& meshes;
  const std::vector<int32_t>& batch_dims;  // per mesh: StageMeshes::batch_dim
  const Cluster& cluster;
  const PlannerOptions& options;
  int64_t microbatches = 1;
  int64_t microbatch_size = 0;  // StageCostRun::microbatch_size
  int32_t most_pieces_per_group = 1;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const IntraOpWarmStarts* warm_starts = nullptr;      // StageCostRun::warm_starts
  SharedReshardCosts* shared_reshard_costs = nullptr;  // StageCostRun::shared_reshard_costs
  const IntraOpSolutions* solved = nullptr;            // StageCostRun::solved
};

// The warm-start key of piece type `type` on mesh `mesh_index`.
IntraOpWarmStarts::Key WarmStartKey(const IntraOpContext& ctx, int32_t type, size_t mesh_index) {
  const int32_t rep = ctx.type_rep[static_cast<size_t>(type)];
  return {ctx.table.piece_marker[static_cast<size_t>(rep)],
          ctx.table.piece_graph[static_cast<size_t>(rep)]->graph.size(),
          ctx.meshes[mesh_index].shape, ctx.batch_dims[mesh_index]};
}

// Sets `shard` to start from the solution of an earlier microbatch count, where there is one.
void UseWarmStart(const IntraOpContext& ctx, int32_t type, size_t mesh_index,
                  AutoShardOptions& shard) {
  if (!ctx.warm_starts) return;
  const auto it = ctx.warm_starts->solutions.find(WarmStartKey(ctx, type, mesh_index));
  if (it == ctx.warm_starts->solutions.end()) return;
  shard.warm_start = it->second;
  shard.solve.warm_start_effort = kWarmStartEffort;
}

// Keeps every level-0 solution of `table` as the warm start of the next count.
void KeepWarmStarts(const IntraOpContext& ctx, IntraOpWarmStarts& warm_starts) {
  for (size_t type = 0; type < ctx.type_rep.size(); ++type) {
    for (size_t m = 0; m < ctx.meshes.size(); ++m) {
      const std::vector<UnitProfile>& levels = ctx.table.solutions[type][m];
      if (levels.empty() || !levels.front().sharding) continue;
      warm_starts.solutions[WarmStartKey(ctx, static_cast<int32_t>(type), m)] =
          levels.front().sharding;
    }
  }
}

// The levels of every (piece type, mesh) of `table` solved at this count, for a later pass over
// the same count (IntraOpSolutions); nothing when the deadline cut a solve short.
void KeepSolutions(const IntraOpContext& ctx, IntraOpSolutions& solved) {
  if (ctx.table.time_limit_reached) return;
  for (size_t type = 0; type < ctx.type_rep.size(); ++type) {
    for (size_t m = 0; m < ctx.meshes.size(); ++m) {
      const std::vector<UnitProfile>& levels = ctx.table.solutions[type][m];
      if (levels.empty()) continue;
      solved.levels[{ctx.microbatches, WarmStartKey(ctx, static_cast<int32_t>(type), m)}] = levels;
    }
  }
}

// The levels an earlier pass solved for piece type `type` on mesh `mesh_index` at this count, or
// null.
const std::vector<UnitProfile>* SolvedBefore(const IntraOpContext& ctx, int32_t type,
                                             size_t mesh_index) {
  if (!ctx.solved) return nullptr;
  const auto it = ctx.solved->levels.find({ctx.microbatches, WarmStartKey(ctx, type, mesh_index)});
  return it == ctx.solved->levels.end() ? nullptr : &it->second;
}

// Seconds left before the deadline (infinity without one).
double SecondsLeft(const IntraOpContext& ctx) {
  if (!ctx.deadline) return std::numeric_limits<double>::infinity();
  return std::chrono::duration<double>(*ctx.deadline - std::chrono::steady_clock::now()).count();
}

int32_t MostPiecesPerGroup(const StageCostTable& table, int32_t groups) {
  int32_t most = 1;
  for (int32_t g = 0; g < groups; ++g) {
    most = std::max(most, table.group_first_piece[static_cast<size_t>(g) + 1] -
                              table.group_first_piece[static_cast<size_t>(g)]);
  }
  return most;
}

// The pieces a stage on `mesh` holds, for sizing memory levels: at least the largest layer
// group, and in a balanced pipeline a one-host stage's share of the devices (capped at one
// host so that the big multi-host meshes, rarely memory-bound, do not multiply the solves).
int64_t PiecesPerStage(const IntraOpContext& ctx, const LogicalMesh& mesh) {
  const Cluster& cluster = ctx.cluster;
  const int64_t devices = std::min(mesh.num_devices(), cluster.devices_per_host);
  const int64_t share =
      (static_cast<int64_t>(ctx.table.piece_marker.size()) * devices + cluster.num_devices() - 1) /
      cluster.num_devices();
  return std::max<int64_t>(ctx.most_pieces_per_group, share);
}

// The memory budget of the next level after `last` (at a peak of `peak` bytes) on `mesh`, or
// nullopt when a stage of such pieces already fits the device.
std::optional<int64_t> NextLevelBudget(const IntraOpContext& ctx, const LogicalMesh& mesh,
                                       const UnitProfile& last) {
  const int64_t peak = last.one_microbatch_peak();
  const int64_t held = PiecesPerStage(ctx, mesh);
  // Such a stage's memory with one microbatch in flight: the pieces' persistent and
  // activation bytes add up, working memory does not.
  const int64_t working = last.one_microbatch_working();
  // The memory to fit: the planner's (PlannerOptions::device_memory_bytes or the device's).
  const int64_t device_memory = ctx.table.device_memory;
  if ((Int128{last.persistent_bytes} + last.activation_bytes) * held + working <= device_memory) {
    return std::nullopt;
  }
  // Aim straight at the budget that makes such a stage fit, cutting the peak by at most 8x
  // per level.
  const int64_t target = (device_memory - working) / held + working;
  return std::max<int64_t>(std::min<int64_t>(target, peak - 1), peak / 8);
}

struct SolveCounters {
  std::atomic<int64_t> solves{0}, proven{0};
  std::atomic<bool> cut_by_deadline{false};  // some solve was not started for the deadline
};

// The auto-sharding options of a piece's solves on mesh `mesh_index` (before a memory budget
// or a warm start).
AutoShardOptions LevelOptions(const IntraOpContext& ctx, const Subgraph& sub, size_t mesh_index) {
  AutoShardOptions shard = IntraOpOptions(ctx.options, ctx.microbatches);
  // Other pieces read these as inputs: the solve prices leaving them partial sums.
  shard.handed_off_outputs = HandedOffOutputs(sub);
  shard.batch_mesh_dim = ctx.batch_dims[mesh_index];
  shard.batch_size = ctx.microbatch_size;
  // A weight-shaped value crossing a piece boundary (a tied embedding) is replicated where the
  // forced split does not divide it; a batch the split does not divide is replicated too, which
  // the cost model prices as redundant work.
  shard.replicate_indivisible_inputs = true;
  shard.shared_reshard_costs = ctx.shared_reshard_costs;
  return shard;
}

// The subgraph of piece type `type`'s first piece (what its solves solve).
const Subgraph& TypeSubgraph(const IntraOpContext& ctx, int32_t type) {
  return *ctx.table.piece_graph[static_cast<size_t>(ctx.type_rep[static_cast<size_t>(type)])];
}

// Whether piece type `type` on mesh `mesh_index`, solved to `levels`, takes ZeRO-3's level: the
// batch is split over the mesh, and at the last level the weights, gradients and optimizer
// state of a stage of such pieces alone leave no room (recomputation shrinks the rest).
bool Zero3LevelApplies(const IntraOpContext& ctx, int32_t type, size_t mesh_index,
                       const std::vector<UnitProfile>& levels) {
  if (levels.empty() || !levels.back().sharding) return false;
  const UnitProfile& last = levels.back();
  if (Int128{last.persistent_bytes} * PiecesPerStage(ctx, ctx.meshes[mesh_index]) +
          last.one_microbatch_working() <=
      ctx.table.device_memory) {
    return false;
  }
  return !BatchMeshDims(TypeSubgraph(ctx, type), *last.sharding).empty();
}

// ZeRO-3 as one more level after the budgets (PlannerOptions::search_zero3), where
// Zero3LevelApplies: the solve with every weight (and the optimizer state) held with the fewest
// copies, gathered where read each microbatch. Kept when it cuts the peak by 10 % as a level
// must.
Status SolveZero3Level(const IntraOpContext& ctx, int32_t type, size_t mesh_index,
                       std::vector<UnitProfile>& levels, SolveCounters& counters) {
  if (!Zero3LevelApplies(ctx, type, mesh_index, levels)) return Status::Ok();
  const Subgraph& sub = TypeSubgraph(ctx, type);
  const LogicalMesh& mesh = ctx.meshes[mesh_index];
  const UnitProfile& last = levels.back();
  const double left = SecondsLeft(ctx);
  if (!(left > 0)) {
    counters.cut_by_deadline = true;
    return Status::Ok();
  }
  AutoShardOptions shard = LevelOptions(ctx, sub, mesh_index);
  shard.zero = ZeroMode::kForce;
  shard.zero_parameters = true;
  shard.solve.time_limit_seconds = std::min(ctx.options.intra_op_time_limit_seconds, left);
  Result<UnitProfile> profile = ProfileUnit(sub.graph, mesh, ctx.cluster, shard);
  counters.solves.fetch_add(1);
  if (!profile.ok()) {
    if (ctx.options.cancel && ctx.options.cancel->load()) {
      return Status(StatusCode::kCancelled, "planning cancelled");
    }
    if (!(SecondsLeft(ctx) > 0)) counters.cut_by_deadline = true;
    return Status::Ok();  // no layout of this piece holds every weight sharded
  }
  if (profile.value().sharding->status == SolveStatus::kOptimal) counters.proven.fetch_add(1);
  if (profile.value().one_microbatch_peak() * 10 < last.one_microbatch_peak() * 9) {
    levels.push_back(std::move(profile).value());
  }
  return Status::Ok();
}

// The memory levels of piece type `type` on mesh `mesh_index`: solves at shrinking budgets
// until a stage fits, a budget is infeasible or the peak stops falling by 10%.
Status SolveMemoryLevels(const IntraOpContext& ctx, int32_t type, size_t mesh_index,
                         std::vector<UnitProfile>& levels, SolveCounters& counters) {
  const int32_t rep = ctx.type_rep[static_cast<size_t>(type)];
  const Subgraph& sub = *ctx.table.piece_graph[static_cast<size_t>(rep)];
  const Graph& piece = sub.graph;
  const LogicalMesh& mesh = ctx.meshes[mesh_index];
  AutoShardOptions shard = LevelOptions(ctx, sub, mesh_index);
  UseWarmStart(ctx, type, mesh_index, shard);
  for (int32_t level = 0; level <= ctx.options.memory_levels; ++level) {
    // Past the deadline no solve starts; one that starts ends at it at the latest.
    const double left = SecondsLeft(ctx);
    if (!(left > 0)) {
      counters.cut_by_deadline = true;
      break;
    }
    shard.solve.time_limit_seconds = std::min(ctx.options.intra_op_time_limit_seconds, left);
    if (level > 0) {
      const std::optional<int64_t> budget = NextLevelBudget(ctx, mesh, levels.back());
      if (!budget) break;
      // Below the least peak of the piece's model (the same model at every budget) the solve
      // is infeasible: it would stop the levels here after building the model again.
      if (*budget < levels.back().sharding->least_peak_memory_bytes) break;
      shard.memory_budget_bytes = *budget;
      shard.gather_parameters = ctx.options.search_zero3;
      shard.warm_start = nullptr;  // a smaller budget than the solution it would start from
      shard.solve.warm_start_effort = 1.0;
    }
    Result<UnitProfile> profile = ProfileUnit(piece, mesh, ctx.cluster, shard);
    counters.solves.fetch_add(1);
    if (!profile.ok()) {
      if (level > 0 && profile.status().code() == StatusCode::kInfeasible) break;
      if (ctx.options.cancel && ctx.options.cancel->load()) {
        return Status(StatusCode::kCancelled, "planning cancelled");
      }
      // A solve the planner's deadline stopped before its first answer: this mesh stays
      // unsolved at this level, as if the solve had not started (the plan is the best so far).
      if (!(SecondsLeft(ctx) > 0)) {
        counters.cut_by_deadline = true;
        break;
      }
      return Status(
          profile.status().code(),
          "layer piece " + std::to_string(ctx.table.piece_marker[static_cast<size_t>(rep)]) +
              " on mesh " + MeshShapeString(mesh.shape) + ": " + profile.status().message());
    }
    if (profile.value().sharding->status == SolveStatus::kOptimal) counters.proven.fetch_add(1);
    if (level > 0 &&
        profile.value().one_microbatch_peak() * 10 >= levels.back().one_microbatch_peak() * 9)
      break;
    levels.push_back(std::move(profile).value());
  }
  return Status::Ok();
}

// Reports intra-op progress (done of total solves at this B); false when the callback asks to
// cancel.
bool ReportIntraOpProgress(const PlannerOptions& options, const PlannerProgress& progress_base,
                           std::chrono::steady_clock::time_point start, int64_t microbatches,
                           int64_t done, int64_t total) {
  PlannerProgress progress = progress_base;
  progress.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.phase = "intra-op";
  progress.microbatches = microbatches;
  progress.done = done;
  progress.total = total;
  return options.on_progress(progress);
}

// The logical meshes in solving order: largest submesh first (ties in enumeration order).
std::vector<size_t> MeshSolveOrder(const std::vector<LogicalMesh>& meshes) {
  std::vector<size_t> order(meshes.size());
  for (size_t m = 0; m < order.size(); ++m) order[m] = m;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return meshes[a].num_devices() > meshes[b].num_devices();
  });
  return order;
}

// The intra-op solves: one task per (mesh, type), its memory levels in sequence; fills
// table.solutions, solves, proven and time_limit_reached.
Status SolveIntraOp(const IntraOpContext& ctx, StageCostTable& table,
                    const PlannerProgress& progress_base,
                    std::chrono::steady_clock::time_point start) {
  const PlannerOptions& options = ctx.options;
  const int32_t types = static_cast<int32_t>(ctx.type_rep.size());
  const int64_t mesh_count = static_cast<int64_t>(ctx.meshes.size());
  table.solutions.assign(static_cast<size_t>(types),
                         std::vector<std::vector<UnitProfile>>(ctx.meshes.size()));
  const int64_t tasks = static_cast<int64_t>(types) * mesh_count;
  std::atomic<int64_t> done{0};
  SolveCounters counters;
  std::mutex progress_mu;
  std::atomic<bool> cancelled{false};
  const std::vector<size_t> order = MeshSolveOrder(ctx.meshes);
  const int32_t threads = ResolveThreadCount(options.threads);
  // Progress is reported from the calling thread only (it runs tasks too): at each of its own
  // finished tasks, with the count of all finished ones.
  const std::thread::id caller = std::this_thread::get_id();
  Status st = RunParallel(tasks, threads, [&](int64_t task) -> Status {
    if (cancelled.load() || (options.cancel && options.cancel->load())) {
      cancelled = true;
      return Status(StatusCode::kCancelled, "planning cancelled");
    }
    if (!(SecondsLeft(ctx) > 0)) {  // skipped, not done: the progress counts solved tasks
      counters.cut_by_deadline = true;
      return Status::Ok();
    }
    const int32_t type = static_cast<int32_t>(task % types);
    const size_t mesh_index = order[static_cast<size_t>(task / types)];
    std::vector<UnitProfile>& levels = table.solutions[static_cast<size_t>(type)][mesh_index];
    if (const std::vector<UnitProfile>* before = SolvedBefore(ctx, type, mesh_index)) {
      levels = *before;
    } else {
      ALPA_RETURN_IF_ERROR(SolveMemoryLevels(ctx, type, mesh_index, levels, counters));
    }
    const int64_t finished = done.fetch_add(1) + 1;
    if (options.on_progress && std::this_thread::get_id() == caller) {
      std::lock_guard<std::mutex> lock(progress_mu);
      if (!ReportIntraOpProgress(options, progress_base, start, ctx.microbatches, finished,
                                 tasks)) {
        cancelled = true;
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  if (cancelled.load()) return Status(StatusCode::kCancelled, "planning cancelled");
  if (options.on_progress &&
      !ReportIntraOpProgress(options, progress_base, start, ctx.microbatches, done.load(), tasks)) {
    return Status(StatusCode::kCancelled, "planning cancelled");
  }
  table.solves = counters.solves.load();
  table.proven = counters.proven.load();
  table.time_limit_reached = counters.cut_by_deadline.load();
  return Status::Ok();
}

// Whether some piece type on some mesh takes ZeRO-3's level.
bool AnyZero3Level(const IntraOpContext& ctx, const StageCostTable& table) {
  for (size_t type = 0; type < table.solutions.size(); ++type) {
    for (size_t m = 0; m < table.solutions[type].size(); ++m) {
      if (Zero3LevelApplies(ctx, static_cast<int32_t>(type), m, table.solutions[type][m])) {
        return true;
      }
    }
  }
  return false;
}

// ZeRO-3's level (SolveZero3Level) for every piece type on every mesh, in parallel; adds its
// solves to the table's counts.
Status SolveZero3Levels(const IntraOpContext& ctx, StageCostTable& table) {
  const int32_t types = static_cast<int32_t>(ctx.type_rep.size());
  const int64_t tasks = static_cast<int64_t>(types) * static_cast<int64_t>(ctx.meshes.size());
  SolveCounters counters;
  Status st = RunParallel(tasks, ResolveThreadCount(ctx.options.threads), [&](int64_t task) {
    if (ctx.options.cancel && ctx.options.cancel->load()) {
      return Status(StatusCode::kCancelled, "planning cancelled");
    }
    const int32_t type = static_cast<int32_t>(task % types);
    const size_t mesh_index = static_cast<size_t>(task / types);
    return SolveZero3Level(ctx, type, mesh_index,
                           table.solutions[static_cast<size_t>(type)][mesh_index], counters);
  });
  if (!st.ok()) return st;
  table.solves += counters.solves.load();
  table.proven += counters.proven.load();
  table.time_limit_reached = table.time_limit_reached || counters.cut_by_deadline.load();
  return Status::Ok();
}

// Whether every piece type got its level-0 solve on mesh m (all do without a deadline).
bool MeshSolved(const StageCostTable& table, size_t m) {
  for (const auto& per_mesh : table.solutions) {
    if (per_mesh[m].empty()) return false;
  }
  return true;
}

// Whether some piece has an attention core that selective recomputation reruns.
bool AnyPieceRecomputesSelectively(const StageCostTable& table) {
  for (const std::shared_ptr<const Subgraph>& sub : table.piece_graph) {
    for (bool rerun : SelectivelyRecomputedOps(sub->graph)) {
      if (rerun) return true;
    }
  }
  return false;
}

// Whether some piece type's solution on mesh m at `level` has ZeRO-2 gradient chains.
bool AnyGradientChains(const StageCostTable& table, size_t m, size_t level) {
  for (const auto& per_mesh : table.solutions) {
    const std::vector<UnitProfile>& levels = per_mesh[m];
    if (levels.empty()) continue;
    if (levels[std::min(level, levels.size() - 1)].zero2_saved_bytes > 0) return true;
  }
  return false;
}

// Configs: (mesh, level) for every level some type reached, under each recomputation choice;
// then, with ZeRO-2 searched, a copy with shard_gradients of each one whose pieces have
// gradient chains (zero2_config links them).
void AddConfigs(StageCostTable& table, const StageMeshes& meshes, RematMode remat_mode,
                bool search_zero2) {
  const std::vector<Recompute> choices =
      RecomputeChoices(remat_mode, AnyPieceRecomputesSelectively(table));
  for (size_t m = 0; m < meshes.meshes.size(); ++m) {
    if (!MeshSolved(table, m)) continue;
    size_t most = 1;
    for (const auto& per_mesh : table.solutions) most = std::max(most, per_mesh[m].size());
    for (size_t level = 0; level < most; ++level) {
      for (Recompute remat : choices) {
        table.configs.push_back(
            {meshes.submesh[m], meshes.meshes[m], static_cast<int32_t>(level), remat, false});
        table.mesh_of_config.push_back(static_cast<int32_t>(m));
      }
    }
  }
  const size_t base = table.configs.size();
  table.zero2_config.assign(base, -1);
  if (!search_zero2) return;
  for (size_t c = 0; c < base; ++c) {
    const size_t m = static_cast<size_t>(table.mesh_of_config[c]);
    if (!AnyGradientChains(table, m, static_cast<size_t>(table.configs[c].level))) continue;
    StageMeshConfig copy = table.configs[c];
    copy.shard_gradients = true;
    table.zero2_config[c] = static_cast<int32_t>(table.configs.size());
    table.configs.push_back(std::move(copy));
    table.mesh_of_config.push_back(static_cast<int32_t>(m));
    table.zero2_config.push_back(-1);
  }
}

// The resharding cost of every edge between pieces under every config, [edge * configs +
// config]; equal (types, ops, profiles) are priced once.
Result<std::vector<double>> PieceEdgeCosts(const StageCostTable& table, const StagePieces& pieces) {
  const std::vector<PieceEdge>& edges = pieces.edges;
  const size_t nc = table.configs.size();
  std::vector<double> edge_cost(edges.size() * nc, 0.0);
  std::map<std::tuple<int32_t, int32_t, int32_t, int32_t, const UnitProfile*, const UnitProfile*>,
           double>
      memo;
  for (size_t e = 0; e < edges.size(); ++e) {
    const PieceEdge& pe = edges[e];
    for (size_t c = 0; c < nc; ++c) {
      const UnitProfile& pa = table.Solution(pe.a, static_cast<int32_t>(c));
      const UnitProfile& pb = table.Solution(pe.b, static_cast<int32_t>(c));
      const auto key = std::make_tuple(table.piece_type[static_cast<size_t>(pe.a)],
                                       table.piece_type[static_cast<size_t>(pe.b)], pe.producer,
                                       pe.reader, &pa, &pb);
      auto it = memo.find(key);
      const OpSharding& from = pa.sharding->ops[static_cast<size_t>(pe.producer)];
      if (from.free || from.fused) {  // made locally in any layout: nothing to move
        edge_cost[e * nc + c] = 0;
        continue;
      }
      if (it == memo.end()) {
        Result<double> cost = PieceEdgeReshardSeconds(pieces, pe, pa, pb, table.configs[c].mesh);
        if (!cost.ok()) return cost.status();
        it = memo.emplace(key, cost.value()).first;
      }
      edge_cost[e * nc + c] = it->second;
    }
  }
  return edge_cost;
}

// The edges between pieces of a layer range as the range grows by one group at a time (every
// range starting at one group): each edge joins when the range reaches its later piece, in
// StageEdgeOrder. Built once per table and read by every config's composition.
class RangeEdges {
 public:
  RangeEdges(const StageCostTable& table, const std::vector<PieceEdge>& edges, int32_t groups)
      : table_(table), edges_(edges) {
    const int32_t pieces = table.group_first_piece[static_cast<size_t>(groups)];
    by_last_.resize(static_cast<size_t>(std::max(pieces, 0)));
    for (size_t e = 0; e < edges.size(); ++e) {
      const int32_t last = std::max(edges[e].a, edges[e].b);
      if (last >= 0 && last < pieces) {
        by_last_[static_cast<size_t>(last)].push_back(static_cast<int32_t>(e));
      }
    }
  }
  // The edges (into `out`, cleared first) that join when a range starting at group i grows to
  // end at group j.
  void Joining(int32_t i, int32_t j, std::vector<int32_t>& out) const {
    out.clear();
    const int32_t first_piece = table_.group_first_piece[static_cast<size_t>(i)];
    for (int32_t p = table_.group_first_piece[static_cast<size_t>(j)];
         p < table_.group_first_piece[static_cast<size_t>(j) + 1]; ++p) {
      for (int32_t e : by_last_[static_cast<size_t>(p)]) {
        const PieceEdge& pe = edges_[static_cast<size_t>(e)];
        if (std::min(pe.a, pe.b) >= first_piece) out.push_back(e);
      }
    }
  }

 private:
  const StageCostTable& table_;
  const std::vector<PieceEdge>& edges_;
  std::vector<std::vector<int32_t>> by_last_;  // per piece: the edges it is the later end of
};

// The candidates of one config (and of its ZeRO-2 twin), in the order AddCandidates appends
// them.
struct ConfigCandidates {
  std::vector<StageCandidate> candidates;
  std::vector<StageMemory> memory;
  std::vector<double> forward_latency, weight_gradient_latency;

  // Appends the candidate of layer groups i..j under config c, composed as `composed`; returns
  // its max_stages_after.
  int32_t Add(const StageCostTable& table, int32_t i, int32_t j, int32_t c,
              const ComposedStage& composed, int32_t groups) {
    StageCandidate cand;
    cand.first_layer = i;
    cand.last_layer = j;
    cand.submesh = table.configs[static_cast<size_t>(c)].submesh;
    cand.config = c;
    cand.latency = composed.latency;
    cand.iteration_overhead = composed.iteration_overhead;
    cand.max_stages_after =
        MaxStagesAfter(composed.memory, table.device_memory, table.microbatches, groups);
    candidates.push_back(cand);
    memory.push_back(composed.memory);
    forward_latency.push_back(composed.forward_latency);
    weight_gradient_latency.push_back(composed.weight_gradient_latency);
    return cand.max_stages_after;
  }
};

// The candidates of config c: one per layer group range, composed from its pieces and inner
// edges, each range grown from the one a group shorter; ranges longer than max_groups are left
// out.
ConfigCandidates ComposeConfig(const StageCostTable& table, const std::vector<PieceEdge>& edges,
                               const RangeEdges& range_edges, const std::vector<double>& edge_cost,
                               int32_t groups, int32_t max_groups, size_t c) {
  const size_t nc = table.configs.size();
  const Recompute remat = table.configs[c].remat;
  const int32_t zero2 = table.zero2_config[c];
  ConfigCandidates out;
  std::vector<int32_t> joining;
  for (int32_t i = 0; i < groups; ++i) {
    StageComposer base(remat, false), sharded(remat, true);
    for (int32_t j = i; j < groups && j - i < max_groups; ++j) {
      for (int32_t p = table.group_first_piece[static_cast<size_t>(j)];
           p < table.group_first_piece[static_cast<size_t>(j) + 1]; ++p) {
        const UnitProfile& u = table.Solution(p, static_cast<int32_t>(c));
        base.AddPiece(u);
        if (zero2 >= 0) sharded.AddPiece(u);
      }
      range_edges.Joining(i, j, joining);
      for (int32_t e : joining) {
        const StageEdgeCost cost{edge_cost[static_cast<size_t>(e) * nc + c],
                                 edges[static_cast<size_t>(e)].forward};
        base.AddEdge(cost);
        if (zero2 >= 0) sharded.AddEdge(cost);
      }
      const int32_t base_after =
          out.Add(table, i, j, static_cast<int32_t>(c), base.Composed(), groups);
      if (zero2 < 0) continue;
      // ZeRO-2 only pays where it fits more stages after it (its latency is never lower and
      // its latency plus overhead the same): otherwise the DP and the ranking never take it.
      const ComposedStage z = sharded.Composed();
      if (MaxStagesAfter(z.memory, table.device_memory, table.microbatches, groups) > base_after) {
        out.Add(table, i, j, zero2, z, groups);
      }
    }
  }
  return out;
}

// Every config's candidates (composed on `threads` threads), appended in config order.
Status AddCandidates(StageCostTable& table, const std::vector<PieceEdge>& edges,
                     const std::vector<double>& edge_cost, int32_t groups, int32_t max_groups,
                     int32_t threads) {
  const size_t nc = table.configs.size();
  std::vector<ConfigCandidates> per_config(nc);
  const RangeEdges range_edges(table, edges, groups);  // shared by every config
  ALPA_RETURN_IF_ERROR(RunParallel(static_cast<int64_t>(nc), threads, [&](int64_t task) -> Status {
    const size_t c = static_cast<size_t>(task);
    // A ZeRO-2 config is composed beside its ZeRO-1 config.
    if (!table.configs[c].shard_gradients) {
      per_config[c] = ComposeConfig(table, edges, range_edges, edge_cost, groups, max_groups, c);
    }
    return Status::Ok();
  }));
  size_t total = 0;
  for (const ConfigCandidates& cc : per_config) total += cc.candidates.size();
  table.candidates.reserve(total);
  table.candidate_memory.reserve(total);
  table.candidate_forward_latency.reserve(total);
  table.candidate_weight_gradient_latency.reserve(total);
  for (ConfigCandidates& cc : per_config) {
    table.candidates.insert(table.candidates.end(), cc.candidates.begin(), cc.candidates.end());
    table.candidate_memory.insert(table.candidate_memory.end(), cc.memory.begin(), cc.memory.end());
    table.candidate_forward_latency.insert(table.candidate_forward_latency.end(),
                                           cc.forward_latency.begin(), cc.forward_latency.end());
    table.candidate_weight_gradient_latency.insert(table.candidate_weight_gradient_latency.end(),
                                                   cc.weight_gradient_latency.begin(),
                                                   cc.weight_gradient_latency.end());
    cc = ConfigCandidates{};
  }
  return Status::Ok();
}

}  // namespace

std::vector<Recompute> RecomputeChoices(RematMode mode, bool selective_applies) {
  switch (mode) {
    case RematMode::kOff:
      return {Recompute::kNone};
    case RematMode::kOn:
      return {Recompute::kFull};
    case RematMode::kSelective:
      return {Recompute::kSelective};
    case RematMode::kSearch:
      break;
  }
  if (selective_applies) return {Recompute::kNone, Recompute::kFull, Recompute::kSelective};
  return {Recompute::kNone, Recompute::kFull};
}

PlannerWorkEstimate EstimateIntraOpWork(const PlannerOptions& options, int64_t piece_types,
                                        int64_t logical_meshes, int64_t microbatch_counts,
                                        int32_t groups) {
  PlannerWorkEstimate e;
  e.piece_types = piece_types;
  e.logical_meshes = logical_meshes;
  e.solves_per_count = SaturatingProduct(piece_types, logical_meshes);
  // The budget levels, and ZeRO-3's level after them.
  const int64_t levels =
      static_cast<int64_t>(options.memory_levels) + (options.search_zero3 ? 2 : 1);
  e.max_solves_per_count = SaturatingProduct(e.solves_per_count, levels);
  e.microbatch_counts = microbatch_counts;
  e.solves = SaturatingProduct(e.solves_per_count, microbatch_counts);
  const int64_t remat_choices = options.remat == RematMode::kSearch ? 3 : 1;
  const int64_t configs =
      SaturatingProduct(SaturatingProduct(logical_meshes, levels), remat_choices);
  const int64_t ranges = static_cast<int64_t>(groups) * (static_cast<int64_t>(groups) + 1) / 2;
  e.stage_candidates = SaturatingProduct(configs, ranges);
  return e;
}

namespace {

// The configs and stage candidates of the table's solutions (from scratch: again after more
// solves).
Status ComposeCandidates(StageCostTable& table, const StagePieces& pieces,
                         const StageMeshes& meshes, const PlannerOptions& options, int32_t groups) {
  table.configs.clear();
  table.mesh_of_config.clear();
  table.zero2_config.clear();
  table.candidates.clear();
  table.candidate_memory.clear();
  table.candidate_forward_latency.clear();
  table.candidate_weight_gradient_latency.clear();
  table.pruned = 0;
  AddConfigs(table, meshes, options.remat, options.search_zero2);
  if (table.configs.empty()) {
    return Status(StatusCode::kTimeout,
                  "the time limit came before every layer piece type was auto-sharded on some "
                  "logical mesh (B=" +
                      std::to_string(table.microbatches) + ")");
  }
  Result<std::vector<double>> edge_cost = PieceEdgeCosts(table, pieces);
  if (!edge_cost.ok()) return edge_cost.status();
  const int32_t max_groups =
      options.pipeline_stages > 0 ? groups - (options.pipeline_stages - 1) : groups;
  ALPA_RETURN_IF_ERROR(AddCandidates(table, pieces.edges, edge_cost.value(), groups, max_groups,
                                     ResolveThreadCount(options.threads)));
  PruneDominatedCandidates(table);
  return Status::Ok();
}

}  // namespace

Result<StageCostTable> BuildStageCosts(const Graph& graph, const LayerClustering& clustering,
                                       const Cluster& cluster, const PlannerOptions& options,
                                       int64_t microbatches, int64_t device_memory,
                                       const StageCostRun& run) {
  const auto start = std::chrono::steady_clock::now();
  StageCostTable table;
  table.microbatches = microbatches;
  table.device_memory = device_memory;
  Result<StagePieces> cut = CutStagePieces(graph, clustering, ResolveThreadCount(options.threads));
  if (!cut.ok()) return cut.status();
  const StagePieces& pieces = cut.value();
  table.piece_marker = pieces.piece_marker;
  table.op_piece = pieces.op_piece;
  table.group_first_piece = pieces.group_first_piece;
  table.piece_graph = pieces.piece_graph;
  table.piece_type = pieces.piece_type;

  table.submeshes =
      PlannerSubmeshShapes(cluster.hosts, cluster.devices_per_host, clustering.num_layers);
  Result<StageMeshes> meshes = EnumerateStageMeshes(
      cluster, table.submeshes, options, run.microbatch_size, run.one_dimensional_meshes);
  if (!meshes.ok()) return meshes.status();
  if (meshes.value().meshes.empty()) {
    table.pinned_out = true;
    return table;
  }

  // The intra-op reports carry this count's estimate.
  PlannerProgress progress_base = run.progress_base;
  progress_base.estimate =
      EstimateIntraOpWork(options, static_cast<int64_t>(pieces.type_rep.size()),
                          static_cast<int64_t>(meshes.value().meshes.size()), run.microbatch_counts,
                          clustering.num_layers);
  if (run.before_solves) ALPA_RETURN_IF_ERROR(run.before_solves(progress_base.estimate));

  const IntraOpContext ctx{table,
                           pieces.type_rep,
                           meshes.value().meshes,
                           meshes.value().batch_dim,
                           cluster,
                           options,
                           microbatches,
                           run.microbatch_size,
                           MostPiecesPerGroup(table, clustering.num_layers),
                           run.deadline,
                           run.warm_starts,
                           run.shared_reshard_costs,
                           run.solved};
  ALPA_RETURN_IF_ERROR(SolveIntraOp(ctx, table, progress_base, start));
  if (run.warm_starts) KeepWarmStarts(ctx, *run.warm_starts);
  if (run.solved && run.one_dimensional_meshes) KeepSolutions(ctx, *run.solved);

  ALPA_RETURN_IF_ERROR(
      ComposeCandidates(table, pieces, meshes.value(), options, clustering.num_layers));
  // ZeRO-3's level only where nothing fits without it: it never makes a stage faster.
  if (options.search_zero3 && run.fits && AnyZero3Level(ctx, table) && !run.fits(table)) {
    ALPA_RETURN_IF_ERROR(SolveZero3Levels(ctx, table));
    ALPA_RETURN_IF_ERROR(
        ComposeCandidates(table, pieces, meshes.value(), options, clustering.num_layers));
  }
  return table;
}

}  // namespace alpa
