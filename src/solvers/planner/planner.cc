// The pipeline planner's driver (planner.h): microbatch search, clustering, the stage cost
// table, the stage DP, and the plan read back.
#include "solvers/planner/planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/cluster/sharding_spec.h"
#include "core/ir/graph_stats.h"
#include "core/util/number_text.h"
#include "core/util/parallel.h"
#include "core/util/wide_int.h"
#include "solvers/auto_sharding/shared_reshard_costs.h"
#include "solvers/pipeline/stage_dp.h"
#include "solvers/planner/interleave_choice.h"
#include "solvers/planner/microbatch_counts.h"
#include "solvers/planner/microbatch_search.h"
#include "solvers/planner/nic_placement.h"
#include "solvers/planner/plan_flops.h"
#include "solvers/planner/plan_transfers.h"
#include "solvers/planner/pool_stage_costs.h"
#include "solvers/planner/schedule_choice.h"
#include "solvers/planner/stage_costs.h"
#include "solvers/planner/training_state_bound.h"

namespace alpa {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What the microbatch counts of one planning call share.
struct PlannerCall {
  Clock::time_point t0;
  std::optional<Clock::time_point> deadline;
  int64_t microbatch_counts = 1;  // the search's counts (at most), for the estimate
  PlannerProgress progress;       // the time limit and the latest estimate
  PlannerStats stats;
  IntraOpWarmStarts warm_starts;  // the solutions of the counts tried so far
  // On a mixed cluster, per pool (a pool's solutions start that pool's solves only).
  std::vector<IntraOpWarmStarts> pool_warm_starts;
  // Every intra-op solve's resharding prices, per mesh (pools with the same links share them).
  SharedReshardCosts reshard_costs;
  // The screening pass's solves, taken by the pass over every mesh at the same count.
  IntraOpSolutions solved;
  // The training state's bound passed on the first count's graph (it holds for every count).
  bool training_state_fits = false;

  bool DeadlinePassed() const { return deadline && Clock::now() >= *deadline; }
};

// The smallest device memory under which the DP finds a plan (binary search over bytes).
int64_t SmallestFittingMemory(StageDpInput input, const StageCostTable& t, int32_t groups) {
  int64_t lo = 0, hi = 0;
  for (const StageMemory& m : t.candidate_memory) hi = std::max(hi, m.With(t.microbatches));
  auto fits = [&](int64_t memory) {
    for (size_t k = 0; k < input.candidates.size(); ++k) {
      input.candidates[k].max_stages_after =
          MaxStagesAfter(t.candidate_memory[k], memory, t.microbatches, groups);
    }
    Result<StageDpResult> r = SolveStageDp(input);
    return r.ok() && r.value().feasible;
  };
  if (!fits(hi)) return -1;
  while (hi - lo > std::max<int64_t>(1, hi / 1000)) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  return hi;
}

// Marks the candidates slower than `latency` per microbatch unusable. The prediction of a plan
// whose slowest stage takes t per microbatch is at least B t (EstimateOneFOneB: the first
// microbatch's pass takes at least t, each of the B - 1 periods after it at least t, and stage
// 0's once-per-iteration work is not negative), so with latency = (the best prediction so far) /
// B no plan using such a candidate can beat it (a relative 1e-9 of slack covers rounding).
// Nothing is marked when some overhead is negative.
void LeaveOutSlowerThan(double latency, StageDpInput& input) {
  for (const StageCandidate& c : input.candidates) {
    if (c.iteration_overhead < 0) return;
  }
  const double limit = latency * (1 + 1e-9);
  for (StageCandidate& c : input.candidates) {
    if (c.latency > limit) c.max_stages_after = -1;
  }
}

// The DP's best answers, each without one of the logical meshes `dp`'s stages use (on that
// submesh; every level and remat choice of it left out), feasible ones only. The DP's objective
// leaves out the transfers between stages, and two meshes of nearly equal stage latency can
// differ in what their boundaries cost: a [4, 1] mesh's replicated boundary gathered over a
// host's NIC against a [2, 2] mesh's split one. The caller ranks them by the full prediction.
Result<std::vector<StageDpResult>> WithoutEachMesh(const StageDpInput& input,
                                                   const StageCostTable& table,
                                                   const StageDpResult& dp, int32_t threads) {
  // Per config: an id shared by the configs of one (submesh, logical mesh shape).
  std::vector<std::pair<int32_t, std::vector<int64_t>>> meshes;
  std::vector<int32_t> mesh_of_config;
  for (const StageMeshConfig& config : table.configs) {
    const auto key = std::make_pair(config.submesh, config.mesh.shape);
    const auto it = std::find(meshes.begin(), meshes.end(), key);
    mesh_of_config.push_back(static_cast<int32_t>(it - meshes.begin()));
    if (it == meshes.end()) meshes.push_back(key);
  }
  auto mesh_of = [&](size_t candidate) {
    return mesh_of_config[static_cast<size_t>(input.candidates[candidate].config)];
  };
  std::vector<int32_t> used;
  for (int32_t k : dp.stages) {
    const int32_t mesh = mesh_of(static_cast<size_t>(k));
    if (std::find(used.begin(), used.end(), mesh) == used.end()) used.push_back(mesh);
  }
  // One DP per mesh left out, on the options' threads.
  std::vector<StageDpResult> solved(used.size());
  ALPA_RETURN_IF_ERROR(
      RunParallel(static_cast<int64_t>(used.size()), threads, [&](int64_t task) -> Status {
        const int32_t mesh = used[static_cast<size_t>(task)];
        StageDpInput without = input;
        for (size_t k = 0; k < without.candidates.size(); ++k) {
          if (mesh_of(k) == mesh) without.candidates[k].max_stages_after = -1;
        }
        Result<StageDpResult> r = SolveStageDp(without);
        if (!r.ok()) return r.status();
        solved[static_cast<size_t>(task)] = std::move(r).value();
        return Status::Ok();
      }));
  std::vector<StageDpResult> out;
  for (StageDpResult& r : solved) {
    if (r.feasible) out.push_back(std::move(r));
  }
  return out;
}

// The piece of a stage candidate whose solution computes the most: its degrees are the stage's
// (an embedding may not split the batch).
int32_t CandidateLeadPiece(const StageCostTable& table, const StageCandidate& candidate) {
  const int32_t p0 = table.group_first_piece[static_cast<size_t>(candidate.first_layer)];
  const int32_t p1 = table.group_first_piece[static_cast<size_t>(candidate.last_layer) + 1];
  int32_t lead = p0;
  double lead_cost = table.Solution(p0, candidate.config).sharding->compute_cost;
  for (int32_t p = p0 + 1; p < p1; ++p) {
    const double cost = table.Solution(p, candidate.config).sharding->compute_cost;
    if (cost > lead_cost) lead = p, lead_cost = cost;
  }
  return lead;
}

// Whether a stage candidate keeps tensor parallelism inside hosts (TensorParallelInsideHosts of
// its lead piece, CandidateLeadPiece).
bool CandidateInsideHosts(const StageCostTable& table, const StageCandidate& candidate,
                          int32_t lead) {
  return TensorParallelInsideHosts(table.submeshes[static_cast<size_t>(candidate.submesh)],
                                   table.configs[static_cast<size_t>(candidate.config)].mesh.shape,
                                   BatchMeshDims(*table.piece_graph[static_cast<size_t>(lead)],
                                                 *table.Solution(lead, candidate.config).sharding));
}

// `input` with the candidates whose tensor parallelism crosses hosts unusable, when `chosen`
// has such a stage; nothing otherwise.
std::optional<StageDpInput> WithoutTensorParallelAcrossHosts(const StageDpInput& input,
                                                             const StageCostTable& table,
                                                             const PipelinePlan& chosen) {
  const bool used = std::any_of(chosen.stages.begin(), chosen.stages.end(), [](const auto& st) {
    const StagePiece& lead = *std::max_element(
        st.pieces.begin(), st.pieces.end(), [](const StagePiece& a, const StagePiece& b) {
          return a.sharding->compute_cost < b.sharding->compute_cost;
        });
    return !TensorParallelInsideHosts(st.submesh, st.logical_mesh,
                                      BatchMeshDims(*lead.subgraph, *lead.sharding));
  });
  if (!used) return std::nullopt;
  StageDpInput without = input;
  // Many candidates share a lead piece and a config: each pair is checked once.
  std::unordered_map<int64_t, bool> inside;
  for (StageCandidate& candidate : without.candidates) {
    if (candidate.max_stages_after < 0) continue;
    const int32_t lead = CandidateLeadPiece(table, candidate);
    const int64_t key =
        int64_t{lead} * static_cast<int64_t>(table.configs.size()) + candidate.config;
    auto [it, fresh] = inside.try_emplace(key, true);
    if (fresh) it->second = CandidateInsideHosts(table, candidate, lead);
    if (!it->second) candidate.max_stages_after = -1;
  }
  return without;
}

// `input` with the selective-recomputation candidates unusable, when `dp`'s stages or `chosen`'s
// (the plan ranked best from it) use one; nothing otherwise.
std::optional<StageDpInput> WithoutSelective(const StageDpInput& input, const StageCostTable& table,
                                             const StageDpResult& dp, const PipelinePlan& chosen) {
  auto selective = [&](int32_t k) {
    const int32_t config = input.candidates[static_cast<size_t>(k)].config;
    return table.configs[static_cast<size_t>(config)].remat == Recompute::kSelective;
  };
  const bool used = std::any_of(dp.stages.begin(), dp.stages.end(), selective) ||
                    std::any_of(chosen.stages.begin(), chosen.stages.end(),
                                [](const auto& st) { return st.remat == Recompute::kSelective; });
  if (!used) return std::nullopt;
  StageDpInput without = input;
  for (size_t k = 0; k < without.candidates.size(); ++k) {
    if (selective(static_cast<int32_t>(k))) without.candidates[k].max_stages_after = -1;
  }
  return without;
}

// The plan of one DP answer: stages placed, pieces, transfers and the prediction (not the
// FLOPs, graph, clustering or statistics: the caller's, for the plan it keeps).
// The plan whose stages are the table's candidates `chosen` (pipeline order), `virtual_stages`
// per device group: 1 (a stage per submesh, 1F1B, or ZB-H1 where chosen), or v >= 2 (interleaved
// 1F1B: the first stages.size() / v are placed, stage s runs on stage s % (stages / v)'s
// devices). Predicted; an interleaved plan where a transfer joins two stages of one group is
// none (a tensor that skips a whole round of the groups).
Result<std::optional<PipelinePlan>> PlanFromCandidates(
    const Graph& graph, const StageCostTable& stage_costs, const Cluster& cluster,
    const PlannerOptions& options, const std::vector<int32_t>& chosen, int64_t microbatches,
    int32_t virtual_stages) {
  PipelinePlan plan;
  plan.microbatches = microbatches;
  const int32_t stage_count = static_cast<int32_t>(chosen.size());
  const int32_t groups = stage_count / virtual_stages;
  std::vector<SubmeshShape> shapes;
  std::vector<int32_t> pools;
  for (int32_t s = 0; s < groups; ++s) {
    const StageCandidate& candidate =
        stage_costs.candidates[static_cast<size_t>(chosen[static_cast<size_t>(s)])];
    shapes.push_back(stage_costs.submeshes[static_cast<size_t>(candidate.submesh)]);
    pools.push_back(candidate.pool);
  }
  Result<std::vector<std::vector<int64_t>>> placed = PlaceStagesOnPools(cluster, shapes, pools);
  if (!placed.ok()) return placed.status();
  std::vector<int32_t> stage_of_piece(stage_costs.piece_marker.size(), -1);
  for (int32_t s = 0; s < stage_count; ++s) {
    const size_t k = static_cast<size_t>(chosen[static_cast<size_t>(s)]);
    const StageCandidate& candidate = stage_costs.candidates[k];
    const StageMeshConfig& config = stage_costs.configs[static_cast<size_t>(candidate.config)];
    PlannedStage st;
    st.first_layer = candidate.first_layer;
    st.last_layer = candidate.last_layer;
    st.submesh = stage_costs.submeshes[static_cast<size_t>(candidate.submesh)];
    st.logical_mesh = config.mesh.shape;
    st.devices = placed.value()[static_cast<size_t>(s % groups)];
    st.memory_level = config.level;
    st.remat = config.remat;
    st.latency = candidate.latency;
    st.forward_latency = stage_costs.candidate_forward_latency[k];
    st.weight_gradient_latency = stage_costs.candidate_weight_gradient_latency[k];
    st.iteration_overhead = candidate.iteration_overhead;
    st.in_flight = std::min<int64_t>(microbatches, stage_count - s);
    st.memory_bytes = stage_costs.candidate_memory[k].With(st.in_flight);
    st.activation_bytes = stage_costs.candidate_memory[k].activation;
    const int32_t p0 = stage_costs.group_first_piece[static_cast<size_t>(candidate.first_layer)];
    const int32_t p1 = stage_costs.group_first_piece[static_cast<size_t>(candidate.last_layer) + 1];
    for (int32_t p = p0; p < p1; ++p) {
      stage_of_piece[static_cast<size_t>(p)] = s;
      st.pieces.push_back({stage_costs.piece_marker[static_cast<size_t>(p)],
                           stage_costs.piece_graph[static_cast<size_t>(p)],
                           stage_costs.Solution(p, candidate.config).sharding});
    }
    const int32_t lead = CandidateLeadPiece(stage_costs, candidate);
    st.data_parallel = DataParallelDegree(*stage_costs.piece_graph[static_cast<size_t>(lead)],
                                          *stage_costs.Solution(lead, candidate.config).sharding,
                                          config.mesh.shape);
    st.tensor_parallel = st.submesh.num_devices() / std::max<int64_t>(1, st.data_parallel);
    st.zero = std::any_of(st.pieces.begin(), st.pieces.end(), [](const StagePiece& sp) {
      return ShardsOptimizerState(*sp.subgraph, *sp.sharding);
    });
    st.shard_parameters = std::any_of(st.pieces.begin(), st.pieces.end(), [](const StagePiece& sp) {
      return GathersWeights(*sp.subgraph, *sp.sharding);
    });
    st.shard_gradients = config.shard_gradients;
    plan.peak_memory_bytes = std::max(plan.peak_memory_bytes, st.memory_bytes);
    plan.stages.push_back(std::move(st));
  }

  const TransferLister list_transfers = [&](const std::vector<PlannedStage>& stages) {
    return ListCrossStageTransfers(graph, stage_costs.piece_graph, stage_costs.op_piece,
                                   stage_costs.group_first_piece, stage_of_piece, stages, cluster);
  };
  Result<std::vector<CrossStageTransfer>> transfers = list_transfers(plan.stages);
  if (!transfers.ok()) return transfers.status();
  plan.transfers = std::move(transfers).value();
  std::vector<StageMemory> memory;
  for (int32_t k : chosen) memory.push_back(stage_costs.candidate_memory[static_cast<size_t>(k)]);
  if (virtual_stages > 1) {
    for (const CrossStageTransfer& t : plan.transfers) {
      if (t.from_stage % groups == t.to_stage % groups) return std::optional<PipelinePlan>();
    }
    // The groups' devices are placed once; the NIC reordering moves single stages, so it stays
    // off.
    plan.schedule = PipelineScheduleKind::kInterleavedOneFOneB;
    plan.virtual_stages = virtual_stages;
    PredictPlanIteration(plan);
    ApplySchedule(plan, PipelineScheduleKind::kInterleavedOneFOneB, memory, virtual_stages);
    return std::optional<PipelinePlan>(std::move(plan));
  }
  if (options.place_near_nics) {
    // Stages moved next to the NICs inside their hosts where that is predicted faster.
    ALPA_RETURN_IF_ERROR(PredictWithNicPlacement(plan, cluster, list_transfers));
  } else {
    PredictPlanIteration(plan);
  }
  if (options.search_zero_bubble) {
    // Each stage against its devices' memory (its pool's on a mixed cluster).
    std::vector<int64_t> device_memory;
    for (const PlannedStage& st : plan.stages) {
      device_memory.push_back(MemoryToFit(options, DevicesCluster(cluster, st.devices)));
    }
    ChooseZeroBubble(plan, memory, device_memory);
  }
  return std::optional<PipelinePlan>(std::move(plan));
}

// The fastest of `layouts` as plans (PlanFromCandidates) replaces `chosen` where its prediction
// is faster.
Status TakeFasterLayout(const Graph& graph, const StageCostTable& stage_costs,
                        const Cluster& cluster, const PlannerOptions& options,
                        const std::vector<InterleavedLayout>& layouts, int64_t microbatches,
                        PipelinePlan& chosen) {
  for (const InterleavedLayout& layout : layouts) {
    Result<std::optional<PipelinePlan>> plan =
        PlanFromCandidates(graph, stage_costs, cluster, options, layout.candidates, microbatches,
                           layout.virtual_stages);
    if (!plan.ok()) return plan.status();
    if (plan.value() && plan.value()->iteration_seconds < chosen.iteration_seconds) {
      chosen = std::move(*plan.value());
    }
  }
  return Status::Ok();
}

// Where the options allow interleaved 1F1B: the interleaved layouts of `dp`'s stages
// (interleave_choice.h) as plans, the fastest of them when its prediction beats `chosen`'s.
Status ChooseInterleaving(const Graph& graph, const StageCostTable& stage_costs,
                          const Cluster& cluster, const PlannerOptions& options,
                          const StageDpResult& dp, int64_t microbatches, int32_t num_layers,
                          PipelinePlan& chosen) {
  if (!options.search_interleaving || dp.stages.size() < 2) return Status::Ok();
  // Each group against its devices' memory (its pool's on a mixed cluster).
  std::vector<int64_t> group_memory;
  for (const PlannedStage& st : chosen.stages) {
    group_memory.push_back(MemoryToFit(options, DevicesCluster(cluster, st.devices)));
  }
  return TakeFasterLayout(graph, stage_costs, cluster, options,
                          InterleavedLayouts(stage_costs, dp.stages, num_layers, microbatches,
                                             group_memory, kMaxVirtualStages),
                          microbatches, chosen);
}

// Where the options allow interleaved 1F1B on a one-type cluster: Megatron-LM's layouts, P equal
// device groups of one submesh each (UniformGroupings; P the pinned stage count when there is
// one), which the stage DP's answers need not contain (their stages balance 1F1B, and the
// ranking leaves out stage counts whose stages are slower than the best plan's period).
Status ChooseUniformInterleaving(const Graph& graph, const StageCostTable& stage_costs,
                                 const Cluster& cluster, const PlannerOptions& options,
                                 int64_t microbatches, int32_t num_layers, PipelinePlan& chosen) {
  if (!options.search_interleaving || cluster.mixed()) return Status::Ok();
  const int64_t memory = MemoryToFit(options, cluster);
  for (const std::vector<GroupMesh>& groups :
       UniformGroupings(stage_costs, cluster.num_devices())) {
    if (options.pipeline_stages > 0 &&
        static_cast<int64_t>(groups.size()) != options.pipeline_stages) {
      continue;
    }
    ALPA_RETURN_IF_ERROR(TakeFasterLayout(
        graph, stage_costs, cluster, options,
        GroupLayouts(stage_costs, groups, num_layers, microbatches,
                     std::vector<int64_t>(groups.size(), memory), kMaxVirtualStages),
        microbatches, chosen));
  }
  return Status::Ok();
}

// The DP's answer `dp` as a plan (PlanFromCandidates with a stage per submesh), or its fastest
// interleaved layout where the options search them and one is predicted faster
// (ChooseInterleaving): every stage count the ranking tries is tried interleaved too.
Result<PipelinePlan> PlanFromDp(const Graph& graph, const StageCostTable& stage_costs,
                                const Cluster& cluster, const PlannerOptions& options,
                                const StageDpResult& dp, int64_t microbatches) {
  Result<std::optional<PipelinePlan>> plan =
      PlanFromCandidates(graph, stage_costs, cluster, options, dp.stages, microbatches, 1);
  if (!plan.ok()) return plan.status();
  PipelinePlan chosen = std::move(*plan.value());
  const int32_t num_layers = static_cast<int32_t>(stage_costs.group_first_piece.size()) - 1;
  ALPA_RETURN_IF_ERROR(ChooseInterleaving(graph, stage_costs, cluster, options, dp, microbatches,
                                          num_layers, chosen));
  return chosen;
}

// The DP's answer `dp` on `input`, and its best answers with every other stage count, ranked by
// the prediction with the transfers between stages (which the DP's objective leaves out): fewer
// stages cut fewer activations at stage boundaries, more stages can shorten each stage's
// transfers or its per-microbatch time enough to pay for theirs. A pinned stage count has no
// alternatives. One search gives the best plan of every stage count. Sets time_limit_reached when
// the deadline cut the ranking short.
Result<PipelinePlan> BestDpAnswer(const Graph& graph, const StageCostTable& stage_costs,
                                  const Cluster& cluster, const PlannerOptions& options,
                                  int64_t microbatches, const StageDpInput& input,
                                  const StageDpResult& dp, const PlannerCall& call,
                                  bool& time_limit_reached) {
  const int32_t dp_stages = static_cast<int32_t>(dp.stages.size());
  Result<PipelinePlan> first = PlanFromDp(graph, stage_costs, cluster, options, dp, microbatches);
  if (!first.ok()) return first.status();
  PipelinePlan chosen = std::move(first).value();
  const int32_t threads = ResolveThreadCount(options.threads);
  // Keeps, in order, each feasible alternative's plan whose prediction beats the chosen one's,
  // until the deadline: the plans are made on the options' threads (none starts after the
  // deadline), then taken in order up to the first the deadline left out.
  auto consider = [&](const std::vector<StageDpResult>& alternatives) -> Status {
    std::vector<std::optional<PipelinePlan>> plans(alternatives.size());
    ALPA_RETURN_IF_ERROR(RunParallel(
        static_cast<int64_t>(alternatives.size()), threads, [&](int64_t task) -> Status {
          const StageDpResult& alternative = alternatives[static_cast<size_t>(task)];
          if (!alternative.feasible || call.DeadlinePassed()) return Status::Ok();
          Result<PipelinePlan> plan =
              PlanFromDp(graph, stage_costs, cluster, options, alternative, microbatches);
          if (!plan.ok()) return plan.status();
          plans[static_cast<size_t>(task)] = std::move(plan).value();
          return Status::Ok();
        }));
    for (size_t k = 0; k < alternatives.size(); ++k) {
      if (!alternatives[k].feasible) continue;
      if (!plans[k]) {
        time_limit_reached = true;
        break;
      }
      if (plans[k]->iteration_seconds < chosen.iteration_seconds) chosen = std::move(*plans[k]);
    }
    return Status::Ok();
  };
  std::vector<StageDpResult> alternatives;
  if (dp_stages > 1 && !call.DeadlinePassed()) {
    Result<std::vector<StageDpResult>> r = WithoutEachMesh(input, stage_costs, dp, threads);
    if (!r.ok()) return r.status();
    ALPA_RETURN_IF_ERROR(consider(r.value()));
  }
  if (options.pipeline_stages == 0) {
    if (call.DeadlinePassed()) {
      time_limit_reached = true;
    } else {
      StageDpInput other = input;
      LeaveOutSlowerThan(chosen.iteration_seconds / static_cast<double>(microbatches), other);
      Result<std::vector<StageDpResult>> r = SolveStageDpPerStageCount(other);
      if (!r.ok()) return r.status();
      alternatives = std::move(r).value();
      // The DP's own count is its answer already.
      if (dp_stages >= 1 && static_cast<size_t>(dp_stages) <= alternatives.size()) {
        alternatives[static_cast<size_t>(dp_stages - 1)].feasible = false;
      }
    }
  }
  // Fewer stages first, from the DP's count down (alternatives[k - 1] has k stages), then more.
  std::vector<StageDpResult> ordered;
  for (size_t k = std::min<size_t>(alternatives.size(), static_cast<size_t>(dp_stages)); k-- > 0;)
    ordered.push_back(std::move(alternatives[k]));
  for (size_t k = static_cast<size_t>(dp_stages); k < alternatives.size(); ++k)
    ordered.push_back(std::move(alternatives[k]));
  ALPA_RETURN_IF_ERROR(consider(ordered));
  return chosen;
}

// The best plan ranked from the DP's answer `dp` on `input` (BestDpAnswer). Selective
// recomputation changes which meshes and stage counts minimise the DP's objective, which leaves
// out the transfers between stages, so the plans ranked from its answer can all be predicted
// slower than those of the search without it (1008B of Megatron-LM's SC'21 table at B = 256:
// 108.9 s against 93.6 s, its stages of tp 32 and 256 across hosts). Where they use it, the
// search without it runs too, and the faster prediction wins.
Result<PipelinePlan> RankDpAnswer(const Graph& graph, const StageCostTable& stage_costs,
                                  const Cluster& cluster, const PlannerOptions& options,
                                  int64_t microbatches, const StageDpInput& input,
                                  const StageDpResult& dp, const PlannerCall& call,
                                  bool& time_limit_reached) {
  Result<PipelinePlan> chosen = BestDpAnswer(graph, stage_costs, cluster, options, microbatches,
                                             input, dp, call, time_limit_reached);
  if (!chosen.ok()) return chosen.status();
  const std::optional<StageDpInput> without =
      WithoutSelective(input, stage_costs, dp, chosen.value());
  if (!without || call.DeadlinePassed()) return chosen;
  Result<StageDpResult> other = SolveStageDp(*without);
  if (!other.ok()) return other.status();
  if (!other.value().feasible) return chosen;
  Result<PipelinePlan> plan = BestDpAnswer(graph, stage_costs, cluster, options, microbatches,
                                           *without, other.value(), call, time_limit_reached);
  if (!plan.ok()) return plan.status();
  if (plan.value().iteration_seconds < chosen.value().iteration_seconds) return plan;
  return chosen;
}

// The stage DP's input: the table's candidates for its microbatch count.
StageDpInput MakeStageDpInput(const StageCostTable& table, const LayerClustering& clustering,
                              const Cluster& cluster, int32_t pipeline_stages) {
  StageDpInput input;
  input.num_layers = clustering.num_layers;
  input.hosts = cluster.hosts;
  input.devices_per_host = cluster.devices_per_host;
  input.submeshes = table.submeshes;
  input.candidates = table.candidates;
  input.microbatches = table.microbatches;
  input.min_stages = input.max_stages = pipeline_stages;
  input.pool_devices = PoolDevices(cluster);
  return input;
}

// The stage costs of a mixed cluster: BuildStageCosts on every pool (its device type, its
// memory unless the options fix one, its own warm starts), merged (pool_stage_costs.h). A pool
// gains ZeRO-3's level where no plan fits on it alone.
Result<StageCostTable> BuildPoolStageCosts(const Graph& graph, const LayerClustering& clustering,
                                           const Cluster& cluster, const PlannerOptions& options,
                                           int64_t microbatches, StageCostRun run,
                                           PlannerCall& call) {
  std::vector<StageCostTable> tables;
  call.pool_warm_starts.resize(cluster.pools.size());
  for (size_t p = 0; p < cluster.pools.size(); ++p) {
    const Cluster& pool = cluster.pools[p];
    if (run.warm_starts != nullptr) run.warm_starts = &call.pool_warm_starts[p];
    run.progress_base.seconds = Since(call.t0);  // each pool's progress counts on from here
    run.fits = [&](const StageCostTable& t) {
      Result<StageDpResult> dp =
          SolveStageDp(MakeStageDpInput(t, clustering, pool, options.pipeline_stages));
      return !dp.ok() || dp.value().feasible;
    };
    Result<StageCostTable> table = BuildStageCosts(graph, clustering, pool, options, microbatches,
                                                   MemoryToFit(options, pool), run);
    if (!table.ok()) return table.status();
    tables.push_back(std::move(table).value());
  }
  return MergePoolStageCosts(std::move(tables));
}

// The best plan ranked from the stage DP's answer on `input` (RankDpAnswer), or from the DP
// without tensor parallelism across hosts where that is predicted at most
// options.tensor_parallel_across_hosts_margin slower; none when the DP finds no plan. `solved`:
// the DP's answer on `input` when already known.
Result<std::optional<PipelinePlan>> PlanFromDpInput(
    const Graph& graph, const StageCostTable& stage_costs, const Cluster& cluster,
    const PlannerOptions& options, int64_t microbatches, const StageDpInput& input,
    std::optional<StageDpResult> solved, PlannerCall& call, bool& time_limit_reached) {
  if (!solved) {
    Result<StageDpResult> r = SolveStageDp(input);
    if (!r.ok()) return r.status();
    solved = std::move(r).value();
  }
  if (!solved->feasible) return std::optional<PipelinePlan>();
  Result<PipelinePlan> chosen = RankDpAnswer(graph, stage_costs, cluster, options, microbatches,
                                             input, *solved, call, time_limit_reached);
  if (!chosen.ok()) return chosen.status();
  // Tensor parallelism across hosts only where it is predicted more than
  // options.tensor_parallel_across_hosts_margin faster than the best plan keeping it inside.
  const std::optional<StageDpInput> inside =
      WithoutTensorParallelAcrossHosts(input, stage_costs, chosen.value());
  if (inside && !call.DeadlinePassed()) {
    Result<StageDpResult> other = SolveStageDp(*inside);
    if (!other.ok()) return other.status();
    if (other.value().feasible) {
      Result<PipelinePlan> plan = RankDpAnswer(graph, stage_costs, cluster, options, microbatches,
                                               *inside, other.value(), call, time_limit_reached);
      if (!plan.ok()) return plan.status();
      if (plan.value().iteration_seconds <=
          chosen.value().iteration_seconds * (1 + options.tensor_parallel_across_hosts_margin)) {
        chosen = plan;
      }
    }
  }
  PipelinePlan best = std::move(chosen).value();
  if (!call.DeadlinePassed()) {
    ALPA_RETURN_IF_ERROR(ChooseUniformInterleaving(graph, stage_costs, cluster, options,
                                                   microbatches, input.num_layers, best));
  }
  return std::optional<PipelinePlan>(std::move(best));
}

// On a mixed cluster, the best plan over the pool orders (PlannerPoolOrders), ranked by the
// prediction; none when no order has a plan.
Result<std::optional<PipelinePlan>> PlanOverPoolOrders(
    const Graph& graph, const StageCostTable& stage_costs, const Cluster& cluster,
    const PlannerOptions& options, int64_t microbatches, const StageDpInput& input,
    PlannerCall& call, bool& time_limit_reached) {
  std::optional<PipelinePlan> best;
  for (const std::vector<int32_t>& order :
       PlannerPoolOrders(static_cast<int32_t>(cluster.pools.size()))) {
    if (best && call.DeadlinePassed()) {
      time_limit_reached = true;
      break;
    }
    StageDpInput ordered = input;
    ordered.pool_order = order;
    Result<std::optional<PipelinePlan>> plan =
        PlanFromDpInput(graph, stage_costs, cluster, options, microbatches, ordered, std::nullopt,
                        call, time_limit_reached);
    if (!plan.ok()) return plan.status();
    if (plan.value() && (!best || plan.value()->iteration_seconds < best->iteration_seconds)) {
      best = std::move(plan).value();
    }
  }
  return best;
}

// kInfeasible when the training state alone exceeds the cluster's memory (training_state_bound.h):
// no count and no mesh can fit then, and the message says how far off the cluster is. On a
// mixed cluster (a memory per pool, unless the options fix one) against all devices' memory
// together.
Status CheckTrainingStateFits(const Graph& graph, const LayerClustering& clustering,
                              const Cluster& cluster, const PlannerOptions& options,
                              int64_t device_memory) {
  const int64_t devices = cluster.num_devices();
  const TrainingStateBound bound =
      BoundTrainingState(graph, clustering.op_layer, devices, device_memory);
  if (!cluster.mixed()) {
    if (bound.per_device <= device_memory) return Status::Ok();
    return Status(StatusCode::kInfeasible,
                  "no plan fits in " + ByteSizeText(device_memory) +
                      " per device: " + TrainingStateBoundText(bound, devices, device_memory));
  }
  Int128 total = 0;
  for (const Cluster& pool : cluster.pools) {
    total += Int128{pool.num_devices()} * MemoryToFit(options, pool);
  }
  const int64_t total_memory = ClampToInt64(total);
  if (!ExceedsTotalMemory(bound, devices, total_memory)) return Status::Ok();
  return Status(StatusCode::kInfeasible, "no plan fits the cluster's device memory: " +
                                             TotalMemoryBoundText(bound, devices, total_memory));
}

// Plans `microbatches`; `screening`: on the one-dimensional logical meshes only (the search's
// first pass, whose solves `call.solved` keeps for the pass over every mesh).
Result<CountAttempt> PlanForMicrobatches(const PlannerModel& model, const Cluster& cluster,
                                         const PlannerOptions& options, int64_t microbatches,
                                         int64_t device_memory, bool screening, PlannerCall& call) {
  const Clock::time_point t0 = call.t0;
  PlannerStats& stats = call.stats;
  PlannerProgress base = call.progress;
  base.microbatches = microbatches;
  auto report = [&](const char* phase) {
    if (!options.on_progress) return true;
    base.phase = phase;
    base.seconds = Since(t0);
    return options.on_progress(base);
  };
  if (!report("build")) return Status(StatusCode::kCancelled, "planning cancelled");
  Result<Graph> built = model.build(microbatches);
  if (!built.ok()) return built.status();
  Graph graph = std::move(built).value();
  ALPA_RETURN_IF_ERROR(ValidateGraph(graph));
  ALPA_RETURN_IF_ERROR(CheckGraphLimits(graph, options.limits));

  if (!report("cluster")) return Status(StatusCode::kCancelled, "planning cancelled");
  Clock::time_point phase = Clock::now();
  LayerClusteringOptions co;
  co.num_layers = options.num_layers > 0 ? options.num_layers : DefaultLayerGroupCap(cluster);
  co.delta = options.clustering_delta;
  Result<LayerClustering> clustered = ClusterLayers(graph, co);
  if (!clustered.ok()) return clustered.status();
  const LayerClustering& clustering = clustered.value();
  stats.clustering_seconds += Since(phase);
  if (options.pipeline_stages > clustering.num_layers) {
    return InvalidArgument("planner: pipeline_stages " + std::to_string(options.pipeline_stages) +
                           " exceeds the " + std::to_string(clustering.num_layers) +
                           " layer groups (raise num_layers, at most the model's layers)");
  }
  if (!call.training_state_fits) {
    ALPA_RETURN_IF_ERROR(
        CheckTrainingStateFits(graph, clustering, cluster, options, device_memory));
    call.training_state_fits = true;
  }

  phase = Clock::now();
  base.seconds = Since(t0);
  StageCostRun run;
  run.progress_base = base;
  run.deadline = call.deadline;
  run.microbatch_counts = call.microbatch_counts;
  run.microbatch_size = model.global_batch > 0 ? model.global_batch / microbatches : 0;
  if (options.intra_op_warm_start) run.warm_starts = &call.warm_starts;
  run.shared_reshard_costs = &call.reshard_costs;
  run.one_dimensional_meshes = screening;
  run.solved = &call.solved;
  run.before_solves = [&](const PlannerWorkEstimate& estimate) -> Status {
    ALPA_RETURN_IF_ERROR(CheckWorkEstimate(estimate, options.limits));
    call.progress.estimate = estimate;
    base.estimate = estimate;
    if (!report("estimate")) return Status(StatusCode::kCancelled, "planning cancelled");
    return Status::Ok();
  };
  // The DP that decides whether ZeRO-3's level is needed; where the table comes back as it
  // checked it (a plan fits), its input and answer are the DP's below.
  struct CheckedDp {
    StageDpInput input;
    StageDpResult result;
  };
  std::optional<CheckedDp> fitting;
  if (!cluster.mixed())
    run.fits = [&](const StageCostTable& t) {
      StageDpInput checked = MakeStageDpInput(t, clustering, cluster, options.pipeline_stages);
      Result<StageDpResult> dp = SolveStageDp(checked);
      if (!dp.ok()) return true;  // the DP below reports the error
      if (!dp.value().feasible) return false;
      fitting = CheckedDp{std::move(checked), std::move(dp).value()};
      return true;
    };
  Result<StageCostTable> table =
      cluster.mixed()
          ? BuildPoolStageCosts(graph, clustering, cluster, options, microbatches, run, call)
          : BuildStageCosts(graph, clustering, cluster, options, microbatches, device_memory, run);
  if (!table.ok()) return table.status();
  const StageCostTable& stage_costs = table.value();
  stats.intra_op_seconds += Since(phase);
  stats.intra_op_solves += stage_costs.solves;
  stats.intra_op_proven += stage_costs.proven;
  CountAttempt attempt;
  attempt.time_limit_reached = stage_costs.time_limit_reached;
  if (stage_costs.pinned_out) {
    attempt.pinned_out = true;
    return attempt;
  }

  if (!report("dp")) return Status(StatusCode::kCancelled, "planning cancelled");
  phase = Clock::now();
  const StageDpInput input =
      fitting ? std::move(fitting->input)
              : MakeStageDpInput(stage_costs, clustering, cluster, options.pipeline_stages);
  std::optional<StageDpResult> known;
  if (fitting) known = std::move(fitting->result);
  Result<std::optional<PipelinePlan>> chosen =
      cluster.mixed() ? PlanOverPoolOrders(graph, stage_costs, cluster, options, microbatches,
                                           input, call, attempt.time_limit_reached)
                      : PlanFromDpInput(graph, stage_costs, cluster, options, microbatches, input,
                                        std::move(known), call, attempt.time_limit_reached);
  if (!chosen.ok()) return chosen.status();
  if (!chosen.value()) {
    // The smallest fitting memory only improves the message (of a search over every mesh); the
    // deadline skips it.
    if (!screening && call.DeadlinePassed()) {
      attempt.fitting_memory_skipped = true;
      attempt.time_limit_reached = true;
    } else if (!screening) {
      attempt.smallest_fitting_memory =
          SmallestFittingMemory(input, stage_costs, clustering.num_layers);
    }
    stats.dp_seconds += Since(phase);
    return attempt;
  }
  stats.dp_seconds += Since(phase);
  PipelinePlan& plan = attempt.plan;
  plan = std::move(*chosen.value());
  SetPlanFlops(plan, graph, cluster);
  plan.stats.pieces = static_cast<int64_t>(stage_costs.piece_marker.size());
  plan.stats.distinct_pieces = static_cast<int64_t>(stage_costs.solutions.size());
  plan.stats.candidates = static_cast<int64_t>(stage_costs.candidates.size());
  plan.stats.pruned_candidates = stage_costs.pruned;
  plan.graph = std::move(graph);
  plan.clustering = clustering;
  attempt.feasible = true;
  return attempt;
}

// The options' time limit and work limits.
Status ValidatePlannerBounds(const PlannerOptions& options) {
  if (std::isnan(options.time_limit_seconds) || options.time_limit_seconds < 0) {
    return InvalidArgument(
        "planner: time_limit_seconds must be >= 0 (0 or infinity: no limit; got " +
        std::to_string(options.time_limit_seconds) + ")");
  }
  const PlannerLimits& l = options.limits;
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"max_hosts", l.max_hosts},
                                    {"max_devices", l.max_devices},
                                    {"max_graph_ops", l.max_graph_ops},
                                    {"max_layers", l.max_layers},
                                    {"max_intra_op_solves", l.max_intra_op_solves}}) {
    if (value < 0) {
      return InvalidArgument(std::string("planner: ") + name + " must be >= 0 (0: no limit; got " +
                             std::to_string(value) + ")");
    }
  }
  return Status::Ok();
}

// kTimeout for a call whose time limit came before any plan.
Status TimedOut(double limit_seconds, const std::string& detail) {
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", limit_seconds);
  return Status(StatusCode::kTimeout, std::string("planning time limit of ") + limit +
                                          " s reached before any plan was found (" + detail +
                                          "); raise the plan option time_limit_seconds (CLI "
                                          "--time-limit)");
}

// The request's errors before any work: the cluster, the options, the limits, the model.
Status ValidatePlanRequest(const PlannerModel& model, const Cluster& cluster,
                           const PlannerOptions& options) {
  ALPA_RETURN_IF_ERROR(ValidateCluster(cluster));
  ALPA_RETURN_IF_ERROR(ValidatePlannerBounds(options));
  ALPA_RETURN_IF_ERROR(CheckClusterLimits(cluster, options.limits));
  ALPA_RETURN_IF_ERROR(CheckModelLayerLimit(model.layers, options.limits));
  if (!model.build) return InvalidArgument("planner: the model has no graph builder");
  if (options.microbatches < 0) {
    return InvalidArgument("planner: microbatches must be >= 1 (got " +
                           std::to_string(options.microbatches) + ")");
  }
  if (model.global_batch < 0) return InvalidArgument("planner: negative global batch");
  if (options.microbatches > 0 && model.global_batch > 0 &&
      model.global_batch % options.microbatches != 0) {
    return InvalidArgument("planner: " + std::to_string(options.microbatches) +
                           " microbatches do not divide the batch of " +
                           std::to_string(model.global_batch));
  }
  if (options.num_layers < 0) {
    return InvalidArgument("planner: num_layers must be >= 0 (got " +
                           std::to_string(options.num_layers) + ")");
  }
  if (options.max_microbatches < 1) {
    return InvalidArgument("planner: max_microbatches must be >= 1");
  }
  if (options.memory_levels < 0) return InvalidArgument("planner: memory_levels must be >= 0");
  if (options.pipeline_stages < 0 || options.pipeline_stages > cluster.num_devices()) {
    return InvalidArgument("planner: pipeline_stages must be in 0.." +
                           std::to_string(cluster.num_devices()) +
                           " (the cluster's devices; 0: searched; got " +
                           std::to_string(options.pipeline_stages) + ")");
  }
  if (options.max_tensor_parallel < 0) {
    return InvalidArgument("planner: max_tensor_parallel must be >= 0 (0: no limit; got " +
                           std::to_string(options.max_tensor_parallel) + ")");
  }
  if (!(options.tensor_parallel_across_hosts_margin >= 0)) {
    return InvalidArgument(
        "planner: tensor_parallel_across_hosts_margin must be >= 0 (infinity: inside hosts "
        "wherever a plan fits)");
  }
  if (!(options.intra_op_time_limit_seconds > 0)) {
    return InvalidArgument("planner: intra_op_time_limit_seconds must be > 0");
  }
  if (!(options.intra_op_relative_gap >= 0) || !std::isfinite(options.intra_op_relative_gap)) {
    return InvalidArgument("planner: intra_op_relative_gap must be >= 0");
  }
  if (MemoryToFit(options, cluster) <= 0) {
    return InvalidArgument("planner: device memory must be > 0 bytes");
  }
  return Status::Ok();
}

// The microbatch counts the search chooses from, largest first: the fixed count, one for a
// graph of one microbatch, else the ladder of the global batch's divisors.
std::vector<int64_t> MicrobatchChoices(const PlannerModel& model, const Cluster& cluster,
                                       const PlannerOptions& options) {
  std::vector<int64_t> choices;
  if (options.microbatches > 0) {
    choices.push_back(options.microbatches);
  } else if (model.global_batch == 0) {
    choices.push_back(1);
  } else {
    choices = MicrobatchCounts(model.global_batch, options.max_microbatches, cluster.hosts);
  }
  return choices;
}

// Why a search that kept no plan found none: the deadline, the pins, or the memory.
Status NoPlanStatus(const MicrobatchSearchResult& search, const PlannerOptions& options,
                    int64_t device_memory) {
  if (search.time_limit_reached) {
    return TimedOut(options.time_limit_seconds,
                    search.tried.empty()
                        ? "no microbatch count was started"
                        : "the microbatch counts tried found no plan that fits in " +
                              ByteSizeText(device_memory) + " per device");
  }
  const int64_t full_counts = static_cast<int64_t>(search.full.size());
  if (full_counts > 0 && search.pinned_out_counts == full_counts) {
    return Status(StatusCode::kInfeasible,
                  "the pins (pipeline_stages, max_tensor_parallel, tensor_parallel_inside_host) "
                  "leave no logical mesh whose batch split divides the microbatch at the "
                  "microbatch counts tried; relax a pin or fix fewer microbatches");
  }
  std::string message = "no plan fits in " + ByteSizeText(device_memory) + " per device";
  if (search.smallest_fitting > 0) {
    message += "; the smallest device memory that fits a plan is " +
               ExactByteSizeText(search.smallest_fitting);
  } else if (search.fitting_memory_skipped) {
    message += "; the time limit left no time to find the smallest device memory that fits";
  } else {
    message += "; no plan fits at any memory size with these layer groups";
  }
  return Status(StatusCode::kInfeasible, message);
}

}  // namespace

std::vector<PlanOpSite> PlanOpSites(const PipelinePlan& plan) {
  std::vector<PlanOpSite> sites(static_cast<size_t>(plan.graph.size()));
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlannedStage& stage = plan.stages[s];
    for (size_t p = 0; p < stage.pieces.size(); ++p) {
      const StagePiece& piece = stage.pieces[p];
      const Subgraph& sub = *piece.subgraph;
      std::vector<char> boundary(static_cast<size_t>(sub.graph.size()), 0);
      for (int32_t l : sub.boundary_inputs) boundary[static_cast<size_t>(l)] = 1;
      for (int32_t l = 0; l < sub.graph.size(); ++l) {
        const int32_t v = sub.origin[static_cast<size_t>(l)];
        const int32_t group = plan.clustering.op_layer[static_cast<size_t>(v)];
        const int32_t unit = plan.clustering.from_markers ? plan.graph.op(v).layer : group;
        if (boundary[static_cast<size_t>(l)] || group < stage.first_layer ||
            group > stage.last_layer || unit != piece.piece) {
          continue;
        }
        sites[static_cast<size_t>(v)] = {static_cast<int32_t>(s), static_cast<int32_t>(p), l};
      }
    }
  }
  return sites;
}

int64_t MemoryToFit(const PlannerOptions& options, const Cluster& cluster) {
  return options.device_memory_bytes.value_or(cluster.device.memory_bytes);
}

int32_t DefaultLayerGroupCap(const Cluster& cluster) {
  constexpr int64_t kHostsPerGroup = 6, kMinCap = 16, kMaxCap = 64;
  const int64_t cap = std::clamp(cluster.hosts / kHostsPerGroup, kMinCap, kMaxCap);
  return static_cast<int32_t>(cluster.mixed() ? 2 * cap : cap);
}

Result<PipelinePlan> PlanPipeline(const PlannerModel& model, const Cluster& cluster,
                                  const PlannerOptions& options) {
  const Clock::time_point t0 = Clock::now();
  ALPA_RETURN_IF_ERROR(ValidatePlanRequest(model, cluster, options));
  const int64_t device_memory = MemoryToFit(options, cluster);
  const std::vector<int64_t> choices = MicrobatchChoices(model, cluster, options);

  PlannerCall call;
  call.t0 = t0;
  if (options.time_limit_seconds > 0 && std::isfinite(options.time_limit_seconds)) {
    call.deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(options.time_limit_seconds));
    call.progress.time_limit_seconds = options.time_limit_seconds;
  }
  call.microbatch_counts = static_cast<int64_t>(std::min(choices.size(), kCountsPerPass));
  PlannerStats& stats = call.stats;
  CountPlanner planner;
  planner.plan = [&](int64_t b, bool screening) {
    return PlanForMicrobatches(model, cluster, options, b, device_memory, screening, call);
  };
  planner.deadline_passed = [&] { return call.DeadlinePassed(); };
  planner.solves = [&] { return stats.intra_op_solves; };
  planner.forget_screening = [&] {
    call.warm_starts = IntraOpWarmStarts{};
    call.solved = IntraOpSolutions{};
  };
  Result<MicrobatchSearchResult> searched =
      SearchMicrobatchCounts(choices, ScreensMicrobatchCounts(model, cluster, options), planner);
  if (!searched.ok()) {
    if (searched.status().code() != StatusCode::kTimeout) return searched.status();
    return TimedOut(options.time_limit_seconds, searched.status().message());
  }
  MicrobatchSearchResult& search = searched.value();
  std::optional<PipelinePlan>& best = search.best;
  stats.microbatches_tried = search.tried;
  stats.microbatches_full = search.full;
  stats.time_limit_reached = search.time_limit_reached;
  if (!best) return NoPlanStatus(search, options, device_memory);
  if (stats.time_limit_reached && options.on_progress) {
    PlannerProgress progress = call.progress;
    progress.phase = "time limit";
    progress.microbatches = best->microbatches;
    progress.seconds = Since(t0);
    if (!options.on_progress(progress)) return Status(StatusCode::kCancelled, "planning cancelled");
  }
  best->stats.clustering_seconds = stats.clustering_seconds;
  best->stats.intra_op_seconds = stats.intra_op_seconds;
  best->stats.dp_seconds = stats.dp_seconds;
  best->stats.intra_op_solves = stats.intra_op_solves;
  best->stats.intra_op_proven = stats.intra_op_proven;
  best->stats.microbatches_tried = stats.microbatches_tried;
  best->stats.microbatches_full = stats.microbatches_full;
  best->stats.time_limit_reached = stats.time_limit_reached;
  best->stats.total_seconds = Since(t0);
  return std::move(*best);
}

}  // namespace alpa
