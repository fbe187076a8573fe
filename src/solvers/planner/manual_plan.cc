// Manual plans (manual_plan.h): a Megatron-style spec evaluated with the planner's pieces,
// intra-op solves and stage composition.
#include "solvers/planner/manual_plan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "core/ir/graph_stats.h"
#include "core/ir/recompute.h"
#include "core/util/number_text.h"
#include "core/util/parallel.h"
#include "solvers/pipeline/layer_clustering.h"
#include "solvers/pipeline/pipeline_estimate.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/plan_flops.h"
#include "solvers/planner/plan_transfers.h"
#include "solvers/planner/schedule_choice.h"
#include "solvers/planner/stage_costs.h"
#include "solvers/planner/unit_profile.h"

namespace alpa {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The mesh a spec's stages run on and how the solves are constrained there.
struct MeshKey {
  int64_t hosts = 1, per_host = 1;  // the submesh
  int64_t d0 = 1, d1 = 1;           // the logical shape
  int32_t batch_dim = kBatchDimFree;
  ZeroMode zero = ZeroMode::kOff;
  bool zero_parameters = false;  // ZeRO-3: the weights sharded too
  auto Tie() const {
    return std::make_tuple(hosts, per_host, d0, d1, batch_dim, zero, zero_parameters);
  }
  bool operator<(const MeshKey& o) const { return Tie() < o.Tie(); }
};

// A piece set: (microbatches, the stage count for graphs without markers whose pieces depend on
// it, else 0).
using SetKey = std::pair<int64_t, int64_t>;
using SolveKey = std::tuple<SetKey, int32_t, MeshKey>;  // set, piece type, mesh
// set, mesh, the two piece types, producer and reader ops, the two types' memory levels
using EdgeKey = std::tuple<SetKey, MeshKey, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t>;
// The memory level each piece type is composed at (absent: level 0, its first solve).
using TypeLevels = std::map<int32_t, int32_t>;

// The submesh and mesh of a spec (checked by CheckSpec).
MeshKey MeshOf(const ManualPlanSpec& spec, const Cluster& cluster) {
  MeshKey k;
  const int64_t n = spec.data_parallel * spec.tensor_parallel;
  if (n >= cluster.devices_per_host) {
    k.hosts = n / cluster.devices_per_host;
    k.per_host = cluster.devices_per_host;
  } else {
    k.per_host = n;
  }
  k.d0 = spec.tensor_inside_host ? spec.data_parallel : spec.tensor_parallel;
  k.d1 = spec.tensor_inside_host ? spec.tensor_parallel : spec.data_parallel;
  if (spec.data_parallel > 1) k.batch_dim = spec.tensor_inside_host ? 0 : 1;
  k.zero = spec.zero_stage >= 1 && spec.data_parallel > 1 ? ZeroMode::kForce : ZeroMode::kOff;
  k.zero_parameters = k.zero == ZeroMode::kForce && spec.zero_stage == 3;
  return k;
}

// ZeRO-2 and 3: gradients reduce-scattered per microbatch and accumulated as shards.
bool ShardsGradients(const ManualPlanSpec& spec) {
  return spec.zero_stage >= 2 && spec.data_parallel > 1;
}

// The schedule a spec's plan runs: interleaved 1F1B with virtual stages, else 1F1B.
PipelineScheduleKind ScheduleOf(const ManualPlanSpec& spec) {
  return spec.virtual_stages > 1 ? PipelineScheduleKind::kInterleavedOneFOneB
                                 : PipelineScheduleKind::kOneFOneB;
}

// The pipeline's stages: pipeline_parallel device groups of virtual_stages stages each.
int64_t StageCount(const ManualPlanSpec& spec) {
  return spec.pipeline_parallel * spec.virtual_stages;
}

// The microbatches stage s of `stages` keeps in flight under the spec's schedule.
int64_t InFlight(const ManualPlanSpec& spec, int64_t stages, int64_t s) {
  return MicrobatchesInFlight(ScheduleOf(spec), static_cast<int32_t>(stages),
                              static_cast<int32_t>(s), spec.microbatches, spec.virtual_stages);
}

Status CheckSpec(const ManualPlanSpec& spec, const Cluster& cluster, int64_t global_batch) {
  const std::pair<const char*, int64_t> positive[] = {{"data_parallel", spec.data_parallel},
                                                      {"tensor_parallel", spec.tensor_parallel},
                                                      {"pipeline_parallel", spec.pipeline_parallel},
                                                      {"microbatches", spec.microbatches}};
  for (const auto& [name, value] : positive) {
    if (value < 1) {
      return InvalidArgument(std::string("manual plan: ") + name + " must be >= 1 (got " +
                             std::to_string(value) + ")");
    }
  }
  if (spec.zero_stage < 0 || spec.zero_stage > 3) {
    return InvalidArgument("manual plan: zero_stage must be 0, 1, 2 or 3 (got " +
                           std::to_string(spec.zero_stage) + ")");
  }
  if (spec.virtual_stages < 1) {
    return InvalidArgument("manual plan: virtual_stages must be >= 1 (got " +
                           std::to_string(spec.virtual_stages) + ")");
  }
  if (spec.virtual_stages > 1) {
    if (spec.pipeline_parallel < 2) {
      return InvalidArgument("manual plan: virtual_stages " + std::to_string(spec.virtual_stages) +
                             " needs pipeline_parallel >= 2 (interleaved 1F1B runs several stages "
                             "on each of at least 2 device groups; got pipeline_parallel " +
                             std::to_string(spec.pipeline_parallel) + ")");
    }
    if (spec.pipeline_parallel > std::numeric_limits<int32_t>::max() / spec.virtual_stages) {
      return InvalidArgument("manual plan: pipeline_parallel x virtual_stages = " +
                             std::to_string(spec.pipeline_parallel) + " x " +
                             std::to_string(spec.virtual_stages) + " stages is too many");
    }
    const std::string problem = PipelineShapeProblem(PipelineScheduleKind::kInterleavedOneFOneB,
                                                     static_cast<int32_t>(StageCount(spec)),
                                                     spec.virtual_stages, spec.microbatches);
    if (!problem.empty()) {
      return InvalidArgument("manual plan: virtual_stages " + std::to_string(spec.virtual_stages) +
                             ": " + problem);
    }
  }
  const int64_t devices = cluster.num_devices();
  if (spec.data_parallel > devices || spec.tensor_parallel > devices ||
      spec.pipeline_parallel > devices ||
      spec.data_parallel * spec.tensor_parallel * spec.pipeline_parallel != devices) {
    return InvalidArgument("manual plan: data_parallel x tensor_parallel x pipeline_parallel = " +
                           std::to_string(spec.data_parallel) + " x " +
                           std::to_string(spec.tensor_parallel) + " x " +
                           std::to_string(spec.pipeline_parallel) + " must equal the cluster's " +
                           std::to_string(devices) + " devices");
  }
  const int64_t per_host = cluster.devices_per_host;
  if (spec.tensor_inside_host && per_host % spec.tensor_parallel != 0) {
    return InvalidArgument("manual plan: tensor_parallel " + std::to_string(spec.tensor_parallel) +
                           " does not divide the " + std::to_string(per_host) +
                           " devices per host (tensor_inside_host keeps it inside one host)");
  }
  const int64_t n = spec.data_parallel * spec.tensor_parallel;
  if ((n >= per_host && n % per_host != 0) || (n < per_host && per_host % n != 0)) {
    return InvalidArgument(
        "manual plan: a stage of data_parallel x tensor_parallel = " + std::to_string(n) +
        " devices would straddle hosts of " + std::to_string(per_host) +
        " devices unevenly (pipeline_parallel " + std::to_string(spec.pipeline_parallel) + ")");
  }
  if (global_batch > 0) {
    if (global_batch % spec.microbatches != 0) {
      return InvalidArgument("manual plan: microbatches " + std::to_string(spec.microbatches) +
                             " do not divide the batch of " + std::to_string(global_batch));
    }
    const int64_t size = global_batch / spec.microbatches;
    if (size % spec.data_parallel != 0) {
      return InvalidArgument("manual plan: data_parallel " + std::to_string(spec.data_parallel) +
                             " does not divide the microbatch size " + std::to_string(size) +
                             " (batch " + std::to_string(global_batch) + " / " +
                             std::to_string(spec.microbatches) + " microbatches)");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string ManualPlanSpecString(const ManualPlanSpec& spec) {
  std::string s =
      "dp=" + std::to_string(spec.data_parallel) + " tp=" + std::to_string(spec.tensor_parallel) +
      " pp=" + std::to_string(spec.pipeline_parallel) + " B=" + std::to_string(spec.microbatches) +
      " zero=" + std::to_string(spec.zero_stage) +
      " remat=" + std::string(RecomputeName(spec.remat));
  if (spec.virtual_stages > 1) s += " vp=" + std::to_string(spec.virtual_stages);
  if (!spec.tensor_inside_host) s += " tp-across-hosts";
  return s;
}

struct ManualPlanEvaluator::Impl {
  PlannerModel model;
  Cluster cluster;
  PlannerOptions options;
  int64_t solves = 0;
  double solve_seconds = 0;

  // One piece set: a clustering of the microbatch graph and its pieces.
  struct PieceSet {
    LayerClustering clustering;
    StagePieces pieces;
  };
  // Per microbatch count.
  struct GraphCtx {
    Graph graph;
    bool markers = false;
    int32_t layers = 0;                  // transformer layers (markers) or units
    int32_t prologue = 0, epilogue = 0;  // marker units before / after the layers (0 or 1)
    PieceSet marker_set;                 // one layer group per marker (markers)
    // ClusterLayers(stages) per stage count (no markers).
    std::map<int64_t, std::unique_ptr<PieceSet>> by_stages;
  };
  std::map<int64_t, std::unique_ptr<GraphCtx>> graphs;
  std::map<SolveKey, Result<UnitProfile>> profiles;
  // Levels 1, 2, ... of a solve: the piece re-solved under shrinking memory budgets, made only
  // for the types of a stage that does not fit (ComposeFitting). A deque, because stage
  // evaluations point into it while it grows.
  std::map<SolveKey, std::deque<UnitProfile>> tighter;
  std::set<SolveKey> exhausted;  // no further level: the budget was infeasible or bought < 10 %
  std::map<EdgeKey, double> edge_costs;

  // A spec resolved against the graph: its piece set and stage ranges of layer groups.
  struct Resolved {
    GraphCtx* ctx = nullptr;
    const PieceSet* set = nullptr;
    SetKey set_key;
    std::vector<std::pair<int32_t, int32_t>> stage_groups;  // inclusive
    MeshKey mesh;
  };

  Status CheckInputs() const {
    ALPA_RETURN_IF_ERROR(ValidateCluster(cluster));
    if (cluster.mixed()) {
      return InvalidArgument("manual plan: the cluster " + cluster.name +
                             " mixes GPU types; Megatron-style degrees assume one type, so plan "
                             "it with the planner (alpa plan) or give one pool");
    }
    if (!model.build) return InvalidArgument("manual plan: the model has no graph builder");
    if (model.global_batch < 0) return InvalidArgument("manual plan: negative global batch");
    if (options.device_memory_bytes && *options.device_memory_bytes <= 0) {
      return InvalidArgument("manual plan: device memory must be > 0 bytes");
    }
    if (!(options.intra_op_time_limit_seconds > 0)) {
      return InvalidArgument("manual plan: intra_op_time_limit_seconds must be > 0");
    }
    if (!(options.intra_op_relative_gap >= 0) || !std::isfinite(options.intra_op_relative_gap)) {
      return InvalidArgument("manual plan: intra_op_relative_gap must be >= 0");
    }
    return Status::Ok();
  }

  int64_t DeviceMemory() const { return MemoryToFit(options, cluster); }

  int32_t Threads() const { return ResolveThreadCount(options.threads); }

  Result<GraphCtx*> GraphFor(int64_t microbatches) {
    auto it = graphs.find(microbatches);
    if (it != graphs.end()) return it->second.get();
    Result<Graph> built = model.build(microbatches);
    if (!built.ok()) return built.status();
    auto ctx = std::make_unique<GraphCtx>();
    ctx->graph = std::move(built).value();
    ALPA_RETURN_IF_ERROR(ValidateGraph(ctx->graph));
    std::vector<int32_t> markers;
    for (const Op& op : ctx->graph.ops) {
      if (op.phase == Phase::kForward && op.layer >= 0) markers.push_back(op.layer);
    }
    std::sort(markers.begin(), markers.end());
    markers.erase(std::unique(markers.begin(), markers.end()), markers.end());
    ctx->markers = markers.size() >= 2;
    LayerClusteringOptions co;
    co.delta = options.clustering_delta;
    if (ctx->markers) {
      // One layer group per marker.
      co.num_layers = static_cast<int32_t>(markers.size());
      Result<LayerClustering> clustered = ClusterLayers(ctx->graph, co);
      if (!clustered.ok()) return clustered.status();
      ctx->marker_set.clustering = std::move(clustered).value();
      Result<StagePieces> cut = CutStagePieces(ctx->graph, ctx->marker_set.clustering, Threads());
      if (!cut.ok()) return cut.status();
      ctx->marker_set.pieces = std::move(cut).value();
      // The embedding and the head: a first / last piece of a type no other piece has, as long
      // as a layer remains between them.
      const std::vector<int32_t>& type = ctx->marker_set.pieces.piece_type;
      const int32_t m = static_cast<int32_t>(type.size());
      auto unique = [&](int32_t p) {
        return std::count(type.begin(), type.end(), type[static_cast<size_t>(p)]) == 1;
      };
      if (m >= 3 && unique(0)) ctx->prologue = 1;
      if (m - ctx->prologue >= 2 && unique(m - 1)) ctx->epilogue = 1;
      ctx->layers = m - ctx->prologue - ctx->epilogue;
    } else {
      co.num_layers = std::numeric_limits<int32_t>::max();
      Result<LayerClustering> clustered = ClusterLayers(ctx->graph, co);
      if (!clustered.ok()) return clustered.status();
      ctx->layers = clustered.value().num_layers;
    }
    GraphCtx* raw = ctx.get();
    graphs.emplace(microbatches, std::move(ctx));
    return raw;
  }

  // The stages' layer groups for pp x virtual_stages stages (errors name pipeline_parallel and
  // virtual_stages).
  Result<Resolved> Resolve(const ManualPlanSpec& spec) {
    ALPA_RETURN_IF_ERROR(CheckSpec(spec, cluster, model.global_batch));
    Result<GraphCtx*> got = GraphFor(spec.microbatches);
    if (!got.ok()) return got.status();
    Resolved resolved;
    resolved.ctx = got.value();
    resolved.mesh = MeshOf(spec, cluster);
    GraphCtx& ctx = *resolved.ctx;
    const int64_t n = StageCount(spec);
    auto too_many = [&](int64_t layers) {
      return InvalidArgument(
          "manual plan: " +
          (spec.virtual_stages > 1
               ? "pipeline_parallel x virtual_stages = " + std::to_string(spec.pipeline_parallel) +
                     " x " + std::to_string(spec.virtual_stages) + " = " + std::to_string(n) +
                     " stages exceed"
               : "pipeline_parallel " + std::to_string(n) + " exceeds") +
          " the model's " + std::to_string(layers) +
          (ctx.markers ? " layers" : " clustering units"));
    };
    if (n > ctx.layers) return too_many(ctx.layers);
    if (ctx.markers) {
      resolved.set = &ctx.marker_set;
      resolved.set_key = {spec.microbatches, 0};
      const int32_t m = static_cast<int32_t>(ctx.marker_set.pieces.piece_type.size());
      if (ctx.layers % n == 0) {
        const int32_t k = static_cast<int32_t>(ctx.layers / n);
        for (int32_t s = 0; s < n; ++s) {
          const int32_t first = s == 0 ? 0 : ctx.prologue + s * k;
          const int32_t last = s == n - 1 ? m - 1 : ctx.prologue + (s + 1) * k - 1;
          resolved.stage_groups.emplace_back(first, last);
        }
      } else {
        // Alpa's clustering into n groups of markers (balanced forward FLOPs).
        LayerClusteringOptions co;
        co.num_layers = static_cast<int32_t>(n);
        co.delta = options.clustering_delta;
        Result<LayerClustering> clustered = ClusterLayers(ctx.graph, co);
        if (!clustered.ok()) return clustered.status();
        const LayerClustering& c = clustered.value();
        if (c.num_layers != n || !c.from_markers) {
          return InternalError("manual plan: layer clustering gave " +
                               std::to_string(c.num_layers) + " groups for " + std::to_string(n) +
                               " stages");
        }
        const std::vector<int32_t>& markers = ctx.marker_set.pieces.piece_marker;
        auto piece_of = [&](int32_t marker) {
          return static_cast<int32_t>(std::lower_bound(markers.begin(), markers.end(), marker) -
                                      markers.begin());
        };
        for (int32_t s = 0; s < n; ++s) {
          const int32_t first = piece_of(c.first_unit[static_cast<size_t>(s)]);
          const int32_t last =
              s == n - 1 ? m - 1 : piece_of(c.first_unit[static_cast<size_t>(s) + 1]) - 1;
          resolved.stage_groups.emplace_back(first, last);
        }
      }
      return resolved;
    }
    auto it = ctx.by_stages.find(n);
    if (it == ctx.by_stages.end()) {
      LayerClusteringOptions co;
      co.num_layers = static_cast<int32_t>(n);
      co.delta = options.clustering_delta;
      Result<LayerClustering> clustered = ClusterLayers(ctx.graph, co);
      if (!clustered.ok()) return clustered.status();
      auto set = std::make_unique<PieceSet>();
      set->clustering = std::move(clustered).value();
      if (set->clustering.num_layers != n) return too_many(set->clustering.num_layers);
      Result<StagePieces> cut = CutStagePieces(ctx.graph, set->clustering, Threads());
      if (!cut.ok()) return cut.status();
      set->pieces = std::move(cut).value();
      it = ctx.by_stages.emplace(n, std::move(set)).first;
    }
    resolved.set = it->second.get();
    resolved.set_key = {spec.microbatches, n};
    for (int32_t s = 0; s < n; ++s) resolved.stage_groups.emplace_back(s, s);
    return resolved;
  }

  Result<LogicalMesh> MeshFor(const MeshKey& k) const {
    return DeriveLogicalMesh(cluster, SubmeshShape{k.hosts, k.per_host}, {k.d0, k.d1});
  }

  // The piece types a resolved spec needs solved.
  std::vector<int32_t> TypesOf(const Resolved& r) const {
    std::vector<char> used(r.set->pieces.type_rep.size(), 0);
    for (const auto& [first, last] : r.stage_groups) {
      const int32_t p0 = r.set->pieces.group_first_piece[static_cast<size_t>(first)];
      const int32_t p1 = r.set->pieces.group_first_piece[static_cast<size_t>(last) + 1];
      for (int32_t p = p0; p < p1; ++p) {
        used[static_cast<size_t>(r.set->pieces.piece_type[static_cast<size_t>(p)])] = 1;
      }
    }
    std::vector<int32_t> types;
    for (size_t t = 0; t < used.size(); ++t) {
      if (used[t]) types.push_back(static_cast<int32_t>(t));
    }
    return types;
  }

  Result<UnitProfile> Solve(const PieceSet& set, int64_t microbatches, int32_t type,
                            const MeshKey& key,
                            std::optional<int64_t> memory_budget_bytes = std::nullopt) const {
    Result<LogicalMesh> mesh = MeshFor(key);
    if (!mesh.ok()) return mesh.status();
    AutoShardOptions o;
    o.iteration_weight = 1.0 / static_cast<double>(microbatches);
    o.batch_mesh_dim = key.batch_dim;
    o.replicate_indivisible_inputs = true;  // CheckSpec: dp divides the microbatch
    o.zero = key.zero;
    o.zero_parameters = key.zero_parameters;
    o.gather_parameters = key.zero_parameters;  // ZeRO-1 and 2 keep the weights whole
    o.solve.threads = 1;
    o.solve.deterministic = true;
    o.solve.deterministic_searches = 1;  // the solves themselves run side by side
    // Under a memory budget the local search alone can end far from the optimum (on the
    // 7.5B GPT row of bench/fidelity.py with fused elementwise pricing: 2.1x the exact
    // latency), so budgeted solves are proved with the ILP, within the same time limit.
    o.solve.heuristic_only = !options.intra_op_exact && !memory_budget_bytes;
    o.solve.heuristic_elimination_work = kIntraOpEliminationWork;  // as the planner's solves
    o.solve.time_limit_seconds = options.intra_op_time_limit_seconds;
    o.solve.relative_gap = options.intra_op_relative_gap;
    o.solve.cancel = options.cancel;
    o.memory_budget_bytes = memory_budget_bytes;
    const int32_t rep = set.pieces.type_rep[static_cast<size_t>(type)];
    const Subgraph& sub = *set.pieces.piece_graph[static_cast<size_t>(rep)];
    // Other pieces read these as inputs: the solve prices leaving them partial sums.
    o.handed_off_outputs = HandedOffOutputs(sub);
    Result<UnitProfile> p = ProfileUnit(sub.graph, mesh.value(), cluster, o);
    if (!p.ok()) {
      if (options.cancel && options.cancel->load()) {
        return Status(StatusCode::kCancelled, "planning cancelled");
      }
      return Status(
          p.status().code(),
          "layer piece " + std::to_string(set.pieces.piece_marker[static_cast<size_t>(rep)]) +
              " on mesh " + MeshShapeString(mesh.value().shape) + ": " + p.status().message());
    }
    return p;
  }

  Status Prepare(const std::vector<ManualPlanSpec>& specs) {
    ALPA_RETURN_IF_ERROR(CheckInputs());
    struct Task {
      SolveKey key;
      const PieceSet* set;
    };
    std::vector<Task> tasks;
    std::map<SolveKey, size_t> seen;
    for (const ManualPlanSpec& spec : specs) {
      if (!CheckSpec(spec, cluster, model.global_batch).ok()) continue;
      Result<Resolved> r = Resolve(spec);
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kInvalidArgument) continue;  // Cost reports it
        return r.status();
      }
      for (int32_t type : TypesOf(r.value())) {
        SolveKey key{r.value().set_key, type, r.value().mesh};
        if (profiles.count(key) || seen.count(key)) continue;
        seen.emplace(key, tasks.size());
        tasks.push_back({key, r.value().set});
      }
    }
    return SolveAll(tasks.size(),
                    [&](size_t k) { return std::make_pair(tasks[k].key, tasks[k].set); });
  }

  // Solves `count` tasks (key and piece set per index) on the threads, recording each result
  // (errors too) in `profiles`; reports progress from the calling thread.
  Status SolveAll(size_t count,
                  const std::function<std::pair<SolveKey, const PieceSet*>(size_t)>& task_of) {
    if (count == 0) return Status::Ok();
    const Clock::time_point t0 = Clock::now();
    std::vector<std::optional<Result<UnitProfile>>> results(count);
    std::atomic<int64_t> done{0};
    std::atomic<bool> cancelled{false};
    const std::thread::id caller = std::this_thread::get_id();
    Status st = RunParallel(static_cast<int64_t>(count), Threads(), [&](int64_t k) -> Status {
      if (cancelled.load() || (options.cancel && options.cancel->load())) {
        cancelled = true;
        return Status(StatusCode::kCancelled, "planning cancelled");
      }
      const auto [key, set] = task_of(static_cast<size_t>(k));
      Result<UnitProfile> p =
          Solve(*set, std::get<0>(key).first, std::get<1>(key), std::get<2>(key));
      if (!p.ok() && p.status().code() == StatusCode::kCancelled) return p.status();
      results[static_cast<size_t>(k)] = std::move(p);
      const int64_t finished = done.fetch_add(1) + 1;
      if (options.on_progress && std::this_thread::get_id() == caller) {
        PlannerProgress pr;
        pr.phase = "intra-op";
        pr.microbatches = std::get<0>(key).first;
        pr.done = finished;
        pr.total = static_cast<int64_t>(count);
        pr.seconds = Since(t0);
        if (!options.on_progress(pr)) cancelled = true;
      }
      return Status::Ok();
    });
    solve_seconds += Since(t0);
    for (size_t k = 0; k < count; ++k) {
      if (!results[k]) continue;
      ++solves;
      profiles.emplace(task_of(k).first, std::move(*results[k]));
    }
    if (!st.ok()) return st;
    if (cancelled.load()) return Status(StatusCode::kCancelled, "planning cancelled");
    return Status::Ok();
  }

  // The profiles of a resolved spec's types, solving the missing ones.
  Status EnsureSolved(const Resolved& r) {
    std::vector<SolveKey> missing;
    for (int32_t type : TypesOf(r)) {
      SolveKey key{r.set_key, type, r.mesh};
      if (!profiles.count(key)) missing.push_back(key);
    }
    return SolveAll(missing.size(), [&](size_t k) { return std::make_pair(missing[k], r.set); });
  }

  // Per stage: its composition on the spec's mesh.
  struct StageEval {
    ComposedStage composed;
    std::vector<const UnitProfile*> profiles;  // per piece of the stage
  };
  Result<std::vector<StageEval>> Compose(const Resolved& resolved, Recompute remat,
                                         bool shard_gradients, const TypeLevels& levels) {
    ALPA_RETURN_IF_ERROR(EnsureSolved(resolved));
    const StagePieces& sp = resolved.set->pieces;
    std::vector<StageEval> out;
    Result<LogicalMesh> mesh = MeshFor(resolved.mesh);
    if (!mesh.ok()) return mesh.status();
    auto profile = [&](int32_t p) -> Result<const UnitProfile*> {
      const int32_t type = sp.piece_type[static_cast<size_t>(p)];
      return ProfileAt(SolveKey{resolved.set_key, type, resolved.mesh}, LevelOf(levels, type));
    };
    const std::vector<size_t> edge_order = StageEdgeOrder(sp.edges);  // the planner's sum order
    for (const auto& [first, last] : resolved.stage_groups) {
      const int32_t p0 = sp.group_first_piece[static_cast<size_t>(first)];
      const int32_t p1 = sp.group_first_piece[static_cast<size_t>(last) + 1];
      StageEval ev;
      for (int32_t p = p0; p < p1; ++p) {
        Result<const UnitProfile*> u = profile(p);
        if (!u.ok()) return u.status();
        ev.profiles.push_back(u.value());
      }
      std::vector<StageEdgeCost> edges;
      for (size_t k : edge_order) {
        const PieceEdge& pe = sp.edges[k];
        if (std::min(pe.a, pe.b) < p0 || std::max(pe.a, pe.b) >= p1) continue;
        const int32_t type_a = sp.piece_type[static_cast<size_t>(pe.a)];
        const int32_t type_b = sp.piece_type[static_cast<size_t>(pe.b)];
        const EdgeKey key{
            resolved.set_key,        resolved.mesh,          type_a, type_b, pe.producer, pe.reader,
            LevelOf(levels, type_a), LevelOf(levels, type_b)};
        auto it = edge_costs.find(key);
        if (it == edge_costs.end()) {
          Result<double> cost =
              PieceEdgeReshardSeconds(sp, pe, *ev.profiles[static_cast<size_t>(pe.a - p0)],
                                      *ev.profiles[static_cast<size_t>(pe.b - p0)], mesh.value());
          if (!cost.ok()) return cost.status();
          it = edge_costs.emplace(key, cost.value()).first;
        }
        edges.push_back({it->second, pe.forward});
      }
      ev.composed = ComposeStage(ev.profiles, edges, remat, shard_gradients);
      out.push_back(std::move(ev));
    }
    return out;
  }

  static int32_t LevelOf(const TypeLevels& levels, int32_t type) {
    const auto it = levels.find(type);
    return it == levels.end() ? 0 : it->second;
  }

  // The profile of a solve at a memory level that has been made.
  Result<const UnitProfile*> ProfileAt(const SolveKey& key, int32_t level) const {
    const auto it = profiles.find(key);
    if (it == profiles.end()) return InternalError("manual plan: a piece was not solved");
    if (!it->second.ok()) return it->second.status();
    if (level == 0) return &it->second.value();
    const auto deeper = tighter.find(key);
    if (deeper == tighter.end() || static_cast<size_t>(level) > deeper->second.size()) {
      return InternalError("manual plan: a memory level was not solved");
    }
    return &deeper->second[static_cast<size_t>(level) - 1];
  }

  // Makes level `level` + 1 of a piece type's solve (if not made yet): the piece re-solved with
  // a memory budget of its peak at `level` times `scale`, cutting it by at most 8x, as the
  // planner's levels do (stage_costs.h); a budget that cannot be met is relaxed halfway to the
  // peak, once, so that a stage that cannot fit still reports the least memory found. False
  // when there is no such level: both budgets are infeasible, or the peak falls by < 10 %.
  Result<bool> MakeTighterLevel(const Resolved& r, int64_t microbatches, int32_t type,
                                int32_t level, double scale) {
    const SolveKey key{r.set_key, type, r.mesh};
    std::deque<UnitProfile>& made = tighter[key];
    if (static_cast<size_t>(level) < made.size()) return true;
    if (exhausted.count(key)) return false;
    Result<const UnitProfile*> current = ProfileAt(key, level);
    if (!current.ok()) return current.status();
    const int64_t peak = current.value()->one_microbatch_peak();
    const int64_t aimed = static_cast<int64_t>(static_cast<double>(peak) * scale);
    int64_t budget = std::max<int64_t>(std::min<int64_t>(aimed, peak - 1), peak / 8);
    Result<UnitProfile> p = InternalError("manual plan: no budgeted solve ran");
    for (int32_t attempt = 0; attempt < 2; ++attempt) {
      const Clock::time_point t0 = Clock::now();
      p = Solve(*r.set, microbatches, type, r.mesh, budget);
      solve_seconds += Since(t0);
      ++solves;
      if (p.ok() || p.status().code() != StatusCode::kInfeasible) break;
      budget += (peak - budget) / 2;
    }
    if (!p.ok()) {
      if (p.status().code() != StatusCode::kInfeasible) return p.status();
      exhausted.insert(key);
      return false;
    }
    if (p.value().one_microbatch_peak() * 10 >= peak * 9) {
      exhausted.insert(key);
      return false;
    }
    made.push_back(std::move(p).value());
    return true;
  }

  // Per stage, its bytes per device with the microbatches the spec's schedule keeps in flight.
  static std::vector<int64_t> StageBytes(const std::vector<StageEval>& stages,
                                         const ManualPlanSpec& spec) {
    const int64_t n = static_cast<int64_t>(stages.size());
    std::vector<int64_t> bytes;
    for (int64_t s = 0; s < n; ++s) {
      bytes.push_back(stages[static_cast<size_t>(s)].composed.memory.With(InFlight(spec, n, s)));
    }
    return bytes;
  }

  // Per stage, the bytes of the devices it runs on: its own, or under interleaved 1F1B the sum
  // over the stages of its device group (which peak at different times: a bound from above).
  static std::vector<int64_t> DeviceBytes(const std::vector<int64_t>& stage_bytes,
                                          const ManualPlanSpec& spec) {
    const std::vector<int64_t> group = GroupSums(stage_bytes, spec.virtual_stages);
    std::vector<int64_t> bytes;
    for (size_t s = 0; s < stage_bytes.size(); ++s) bytes.push_back(group[s % group.size()]);
    return bytes;
  }

  // The stages of a spec at the lowest memory levels that fit the device: first every piece
  // type at its first solve; then, while some device is over its memory, the types of every
  // stage it runs one level tighter, their peaks scaled by the device's memory over its need,
  // for at most options.memory_levels rounds. Stages that still do not fit are returned as they
  // are (CostOf reports them).
  Result<std::vector<StageEval>> ComposeFitting(const Resolved& r, const ManualPlanSpec& spec) {
    TypeLevels levels;
    const int64_t memory = DeviceMemory();
    const StagePieces& sp = r.set->pieces;
    for (int32_t round = 0;; ++round) {
      Result<std::vector<StageEval>> stages = Compose(r, spec.remat, ShardsGradients(spec), levels);
      if (!stages.ok() || round >= options.memory_levels) return stages;
      const std::vector<StageEval>& evals = stages.value();
      const int64_t n = static_cast<int64_t>(evals.size());
      const std::vector<int64_t> device_bytes = DeviceBytes(StageBytes(evals, spec), spec);
      TypeLevels next = levels;
      bool tightened = false;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t bytes = device_bytes[static_cast<size_t>(s)];
        if (bytes <= memory) continue;
        // A little under the exact ratio: the stage's composition is not linear in the peaks.
        const double scale = 0.95 * static_cast<double>(memory) / static_cast<double>(bytes);
        const auto& [first, last] = r.stage_groups[static_cast<size_t>(s)];
        const int32_t p0 = sp.group_first_piece[static_cast<size_t>(first)];
        const int32_t p1 = sp.group_first_piece[static_cast<size_t>(last) + 1];
        for (int32_t p = p0; p < p1; ++p) {
          const int32_t type = sp.piece_type[static_cast<size_t>(p)];
          if (LevelOf(next, type) != LevelOf(levels, type)) continue;  // tightened this round
          Result<bool> made =
              MakeTighterLevel(r, spec.microbatches, type, LevelOf(levels, type), scale);
          if (!made.ok()) return made.status();
          if (made.value()) {
            next[type] = LevelOf(levels, type) + 1;
            tightened = true;
          }
        }
      }
      if (!tightened) return stages;
      levels = std::move(next);
    }
  }

  static ManualPlanCost CostOf(const std::vector<StageEval>& stages, const ManualPlanSpec& spec,
                               int64_t device_memory) {
    ManualPlanCost cost;
    const int64_t n = static_cast<int64_t>(stages.size());
    const int64_t microbatches = spec.microbatches;
    const std::vector<int64_t> device_bytes = DeviceBytes(StageBytes(stages, spec), spec);
    double sum = 0;
    int64_t worst_over = std::numeric_limits<int64_t>::min();
    std::vector<PipelineEstimateStage> estimate;
    for (int64_t s = 0; s < n; ++s) {
      const ComposedStage& st = stages[static_cast<size_t>(s)].composed;
      sum += st.latency + st.iteration_overhead;
      cost.max_stage_latency = std::max(cost.max_stage_latency, st.latency);
      PipelineEstimateStage e;
      e.forward = st.forward_latency;
      e.backward = st.latency - st.forward_latency;
      e.iteration_overhead = st.iteration_overhead;
      estimate.push_back(e);
      const int64_t bytes = device_bytes[static_cast<size_t>(s)];
      cost.peak_memory_bytes = std::max(cost.peak_memory_bytes, bytes);
      if (bytes > device_memory && bytes - device_memory > worst_over) {
        worst_over = bytes - device_memory;
        cost.worst_stage = static_cast<int32_t>(s);
        cost.worst_stage_bytes = bytes;
      }
    }
    // Several stages per device group: the DP's formula would run them one after another; the
    // group's schedule evaluated instead (no transfers, as the formula).
    cost.iteration_seconds =
        spec.virtual_stages > 1
            ? EvaluateSchedule(ScheduleOf(spec), estimate, microbatches, spec.virtual_stages)
            : sum + static_cast<double>(microbatches - 1) * cost.max_stage_latency;
    cost.feasible = cost.worst_stage < 0;
    return cost;
  }

  Result<ManualPlanCost> Cost(const ManualPlanSpec& spec) {
    ALPA_RETURN_IF_ERROR(CheckInputs());
    Result<Resolved> r = Resolve(spec);
    if (!r.ok()) return r.status();
    // The grid's ranking: first solves only (levels would multiply a search's solves).
    Result<std::vector<StageEval>> stages =
        Compose(r.value(), spec.remat, ShardsGradients(spec), TypeLevels{});
    if (!stages.ok()) return stages.status();
    return CostOf(stages.value(), spec, DeviceMemory());
  }

  Result<PipelinePlan> Plan(const ManualPlanSpec& spec);
};

Result<PipelinePlan> ManualPlanEvaluator::Impl::Plan(const ManualPlanSpec& spec) {
  const Clock::time_point t0 = Clock::now();
  const int64_t solves_before = solves;
  const double solve_seconds_before = solve_seconds;
  ALPA_RETURN_IF_ERROR(CheckInputs());
  Result<Resolved> resolved = Resolve(spec);
  if (!resolved.ok()) return resolved.status();
  const Resolved& resolved_spec = resolved.value();
  Result<std::vector<StageEval>> evaluated = ComposeFitting(resolved_spec, spec);
  if (!evaluated.ok()) return evaluated.status();
  const std::vector<StageEval>& evals = evaluated.value();
  const int64_t device_memory = DeviceMemory();
  const int64_t B = spec.microbatches;
  const ManualPlanCost cost = CostOf(evals, spec, device_memory);
  const int64_t stage_count = static_cast<int64_t>(evals.size());
  if (!cost.feasible) {
    // The stages on the worst devices (one, or under interleaving its device group's).
    std::string where = "stage " + std::to_string(cost.worst_stage);
    std::string in_flight = std::to_string(InFlight(spec, stage_count, cost.worst_stage));
    if (spec.virtual_stages > 1) {
      where = "device group " + std::to_string(cost.worst_stage) + " (stages";
      in_flight.clear();
      for (int64_t s = cost.worst_stage; s < stage_count; s += spec.pipeline_parallel) {
        const bool first = s == cost.worst_stage;
        where += (first ? " " : ", ") + std::to_string(s);
        in_flight += (first ? "" : " + ") + std::to_string(InFlight(spec, stage_count, s));
      }
      where += ")";
    }
    return Status(StatusCode::kInfeasible,
                  "manual plan " + ManualPlanSpecString(spec) + ": " + where + " needs " +
                      ExactByteSizeText(cost.worst_stage_bytes) + " per device with " + in_flight +
                      " microbatches in flight; the device memory is " +
                      ByteSizeText(device_memory));
  }

  const StagePieces& sp = resolved_spec.set->pieces;
  const Graph& graph = resolved_spec.ctx->graph;
  PipelinePlan plan;
  plan.microbatches = B;
  plan.schedule = ScheduleOf(spec);
  plan.virtual_stages = spec.virtual_stages;
  const int64_t per_stage = spec.data_parallel * spec.tensor_parallel;
  std::vector<int32_t> stage_of_piece(sp.piece_marker.size(), -1);
  for (int32_t s = 0; s < stage_count; ++s) {
    const StageEval& ev = evals[static_cast<size_t>(s)];
    PlannedStage st;
    st.first_layer = resolved_spec.stage_groups[static_cast<size_t>(s)].first;
    st.last_layer = resolved_spec.stage_groups[static_cast<size_t>(s)].second;
    st.submesh = SubmeshShape{resolved_spec.mesh.hosts, resolved_spec.mesh.per_host};
    st.logical_mesh = {resolved_spec.mesh.d0, resolved_spec.mesh.d1};
    // Stage s on device group s % pp (the groups' devices in order).
    const int64_t group = s % spec.pipeline_parallel;
    for (int64_t d = 0; d < per_stage; ++d) st.devices.push_back(group * per_stage + d);
    st.remat = spec.remat;
    st.latency = ev.composed.latency;
    st.forward_latency = ev.composed.forward_latency;
    st.weight_gradient_latency = ev.composed.weight_gradient_latency;
    st.iteration_overhead = ev.composed.iteration_overhead;
    st.in_flight = InFlight(spec, stage_count, s);
    st.memory_bytes = ev.composed.memory.With(st.in_flight);
    st.activation_bytes = ev.composed.memory.activation;
    const int32_t p0 = sp.group_first_piece[static_cast<size_t>(st.first_layer)];
    const int32_t p1 = sp.group_first_piece[static_cast<size_t>(st.last_layer) + 1];
    for (int32_t p = p0; p < p1; ++p) {
      stage_of_piece[static_cast<size_t>(p)] = s;
      st.pieces.push_back({sp.piece_marker[static_cast<size_t>(p)],
                           sp.piece_graph[static_cast<size_t>(p)],
                           ev.profiles[static_cast<size_t>(p - p0)]->sharding});
    }
    // The spec's degrees; where dp = 1 and the solver split the batch over the tensor-parallel
    // dim anyway, the degrees it realised (as the planner reports them).
    st.data_parallel = spec.data_parallel;
    if (spec.data_parallel == 1) {
      const StagePiece& lead = *std::max_element(
          st.pieces.begin(), st.pieces.end(), [](const StagePiece& a, const StagePiece& b) {
            return a.sharding->compute_cost < b.sharding->compute_cost;
          });
      st.data_parallel = DataParallelDegree(*lead.subgraph, *lead.sharding, st.logical_mesh);
    }
    st.tensor_parallel = per_stage / std::max<int64_t>(1, st.data_parallel);
    st.zero = resolved_spec.mesh.zero == ZeroMode::kForce;
    st.shard_gradients = ShardsGradients(spec);
    st.shard_parameters = resolved_spec.mesh.zero_parameters;
    plan.stages.push_back(std::move(st));
  }
  // Per device: under interleaving the sum over its group's stages.
  plan.peak_memory_bytes = cost.peak_memory_bytes;

  // Transfers between stages, and the prediction with them, as the planner makes them.
  Result<std::vector<CrossStageTransfer>> transfers =
      ListCrossStageTransfers(graph, sp.piece_graph, sp.op_piece, sp.group_first_piece,
                              stage_of_piece, plan.stages, cluster);
  if (!transfers.ok()) return transfers.status();
  plan.transfers = std::move(transfers).value();
  PredictPlanIteration(plan);
  if (options.search_zero_bubble && spec.virtual_stages == 1) {
    std::vector<StageMemory> memory;
    for (const StageEval& ev : evals) memory.push_back(ev.composed.memory);
    ChooseZeroBubble(plan, memory, device_memory);
  }
  SetPlanFlops(plan, graph, cluster);
  plan.stats.pieces = static_cast<int64_t>(sp.piece_marker.size());
  plan.stats.distinct_pieces = static_cast<int64_t>(sp.type_rep.size());
  plan.stats.intra_op_solves = solves - solves_before;
  plan.stats.intra_op_seconds = solve_seconds - solve_seconds_before;
  plan.stats.microbatches_tried = {B};
  plan.stats.microbatches_full = {B};
  plan.graph = graph;
  plan.clustering = resolved_spec.set->clustering;
  plan.stats.total_seconds = Since(t0);
  return plan;
}

ManualPlanEvaluator::ManualPlanEvaluator(PlannerModel model, Cluster cluster,
                                         PlannerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = std::move(model);
  impl_->cluster = std::move(cluster);
  impl_->options = std::move(options);
}

ManualPlanEvaluator::~ManualPlanEvaluator() = default;

Result<int64_t> ManualPlanEvaluator::Layers(int64_t microbatches) {
  ALPA_RETURN_IF_ERROR(impl_->CheckInputs());
  if (microbatches < 1) return InvalidArgument("manual plan: microbatches must be >= 1");
  Result<Impl::GraphCtx*> ctx = impl_->GraphFor(microbatches);
  if (!ctx.ok()) return ctx.status();
  return static_cast<int64_t>(ctx.value()->layers);
}

Result<bool> ManualPlanEvaluator::RecomputesSelectively(int64_t microbatches) {
  ALPA_RETURN_IF_ERROR(impl_->CheckInputs());
  if (microbatches < 1) return InvalidArgument("manual plan: microbatches must be >= 1");
  Result<Impl::GraphCtx*> ctx = impl_->GraphFor(microbatches);
  if (!ctx.ok()) return ctx.status();
  for (bool rerun : SelectivelyRecomputedOps(ctx.value()->graph)) {
    if (rerun) return true;
  }
  return false;
}

Status ManualPlanEvaluator::Prepare(const std::vector<ManualPlanSpec>& specs) {
  return impl_->Prepare(specs);
}

Result<ManualPlanCost> ManualPlanEvaluator::Cost(const ManualPlanSpec& spec) {
  return impl_->Cost(spec);
}

Result<PipelinePlan> ManualPlanEvaluator::Plan(const ManualPlanSpec& spec) {
  return impl_->Plan(spec);
}

int64_t ManualPlanEvaluator::solves() const { return impl_->solves; }

Result<PipelinePlan> EvaluateManualPlan(const PlannerModel& model, const Cluster& cluster,
                                        const ManualPlanSpec& spec, const PlannerOptions& options) {
  ManualPlanEvaluator evaluator(model, cluster, options);
  return evaluator.Plan(spec);
}

}  // namespace alpa
