// The Megatron-LM baseline grid search (baseline_search.h).
#include "solvers/planner/baseline_search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "core/util/number_text.h"
#include "solvers/planner/stage_costs.h"

namespace alpa {
namespace {

constexpr size_t kReranked = 8;

// Stages per device group a grid point tries: 1, and where the options search interleaving,
// every v in 2..4 with pp >= 2, B a multiple of pp and the layers a multiple of pp v (Megatron-LM's
// --num-layers-per-virtual-pipeline-stage needs equal chunks).
std::vector<int32_t> VirtualStageChoices(const PlannerOptions& options, int64_t pp, int64_t b,
                                         int64_t layers) {
  std::vector<int32_t> choices = {1};
  if (!options.search_interleaving || pp < 2 || b % pp != 0) return choices;
  for (int32_t v = 2; v <= 4; ++v) {
    if (layers % (pp * v) == 0) choices.push_back(v);
  }
  return choices;
}

}  // namespace

Result<std::vector<ManualPlanSpec>> MegatronBaselineGrid(ManualPlanEvaluator& evaluator,
                                                         const PlannerModel& model,
                                                         const Cluster& cluster,
                                                         const PlannerOptions& options) {
  ALPA_RETURN_IF_ERROR(ValidateCluster(cluster));
  ALPA_RETURN_IF_ERROR(CheckClusterLimits(cluster, options.limits));
  ALPA_RETURN_IF_ERROR(CheckModelLayerLimit(model.layers, options.limits));
  if (options.microbatches < 0) {
    return InvalidArgument("baseline: microbatches must be >= 1 (got " +
                           std::to_string(options.microbatches) + ")");
  }
  if (options.max_microbatches < 1) {
    return InvalidArgument("baseline: max_microbatches must be >= 1");
  }
  const int64_t batch = model.global_batch;
  if (options.microbatches > 0 && batch > 0 && batch % options.microbatches != 0) {
    return InvalidArgument("baseline: " + std::to_string(options.microbatches) +
                           " microbatches do not divide the batch of " + std::to_string(batch));
  }
  std::vector<int64_t> counts;
  if (options.microbatches > 0) {
    counts.push_back(options.microbatches);
  } else if (batch == 0) {
    counts.push_back(1);
  } else {
    for (int64_t b = 1; b <= std::min(batch, options.max_microbatches); b *= 2) {
      if (batch % b == 0) counts.push_back(b);
    }
  }
  Result<int64_t> layers = evaluator.Layers(counts.front());
  if (!layers.ok()) return layers.status();
  Result<bool> selective = evaluator.RecomputesSelectively(counts.front());
  if (!selective.ok()) return selective.status();
  const std::vector<Recompute> choices = RecomputeChoices(options.remat, selective.value());

  const int64_t devices = cluster.num_devices();
  const int64_t per_host = cluster.devices_per_host;
  std::vector<ManualPlanSpec> grid;
  for (int64_t tp = 1; tp <= per_host; tp *= 2) {
    if (per_host % tp != 0) continue;
    for (int64_t pp = 1; pp <= devices / tp; ++pp) {
      if ((devices / tp) % pp != 0 || pp > layers.value() || layers.value() % pp != 0) continue;
      const int64_t dp = devices / tp / pp;
      const int64_t stage = dp * tp;
      if ((stage >= per_host && stage % per_host != 0) ||
          (stage < per_host && per_host % stage != 0)) {
        continue;
      }
      for (int64_t b : counts) {
        if (b < pp && options.microbatches == 0) continue;
        if (batch > 0 && (batch / b) % dp != 0) continue;
        const int32_t most_zero = dp == 1                ? 0
                                  : options.search_zero3 ? 3
                                  : options.search_zero2 ? 2
                                                         : 1;
        for (int32_t zero = 0; zero <= most_zero; ++zero) {
          if (zero == 2 && !options.search_zero2) continue;
          for (Recompute remat : choices) {
            for (int32_t v : VirtualStageChoices(options, pp, b, layers.value())) {
              ManualPlanSpec spec;
              spec.data_parallel = dp;
              spec.tensor_parallel = tp;
              spec.pipeline_parallel = pp;
              spec.microbatches = b;
              spec.zero_stage = zero;
              spec.remat = remat;
              spec.virtual_stages = v;
              grid.push_back(spec);
            }
          }
        }
      }
    }
  }
  return grid;
}

Result<BaselineSearchResult> SearchMegatronBaseline(const PlannerModel& model,
                                                    const Cluster& cluster,
                                                    const PlannerOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  ManualPlanEvaluator evaluator(model, cluster, options);
  Result<std::vector<ManualPlanSpec>> grid =
      MegatronBaselineGrid(evaluator, model, cluster, options);
  if (!grid.ok()) return grid.status();
  if (grid.value().empty()) {
    return InvalidArgument("baseline: no Megatron-LM configuration (dp x tp x pp = " +
                           std::to_string(cluster.num_devices()) +
                           " devices, tp inside a host, pp dividing the layers) fits this model "
                           "and batch");
  }
  const std::vector<ManualPlanSpec>& specs = grid.value();

  // Microbatch counts from the largest down: a configuration that does not fit with B
  // microbatches is not tried with fewer (larger microbatches hold more activations).
  std::vector<int64_t> counts;
  for (const ManualPlanSpec& spec : specs) counts.push_back(spec.microbatches);
  std::sort(counts.begin(), counts.end(), std::greater<int64_t>());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  using Config = std::tuple<int64_t, int64_t, int64_t, int32_t, Recompute, int32_t>;
  auto config_of = [](const ManualPlanSpec& s) {
    return Config{s.data_parallel, s.tensor_parallel, s.pipeline_parallel,
                  s.zero_stage,    s.remat,           s.virtual_stages};
  };
  std::set<Config> dead;
  std::vector<std::optional<ManualPlanCost>> costs(specs.size());
  BaselineSearchResult result;
  for (int64_t b : counts) {
    std::vector<size_t> level;
    std::vector<ManualPlanSpec> level_specs;
    for (size_t k = 0; k < specs.size(); ++k) {
      if (specs[k].microbatches != b) continue;
      if (dead.count(config_of(specs[k]))) {
        ++result.pruned;
        continue;
      }
      level.push_back(k);
      level_specs.push_back(specs[k]);
    }
    ALPA_RETURN_IF_ERROR(evaluator.Prepare(level_specs));
    for (size_t k : level) {
      Result<ManualPlanCost> cost = evaluator.Cost(specs[k]);
      if (!cost.ok()) {
        // A point the solver cannot shard as stated (a batch dim it cannot split): skipped.
        if (cost.status().code() == StatusCode::kInvalidArgument ||
            cost.status().code() == StatusCode::kInfeasible) {
          continue;
        }
        return cost.status();
      }
      if (!cost.value().feasible) dead.insert(config_of(specs[k]));
      costs[k] = cost.value();
    }
  }

  const double inf = std::numeric_limits<double>::infinity();
  int64_t lightest = -1, lightest_bytes = std::numeric_limits<int64_t>::max();
  for (size_t k = 0; k < specs.size(); ++k) {
    if (!costs[k]) continue;
    ++result.evaluated;
    const ManualPlanCost& c = *costs[k];
    if (c.peak_memory_bytes < lightest_bytes) {
      lightest_bytes = c.peak_memory_bytes;
      lightest = static_cast<int64_t>(k);
    }
    result.table.emplace_back(specs[k], c.feasible ? c.iteration_seconds : inf);
    if (c.feasible) ++result.feasible;
  }
  if (result.feasible == 0) {
    if (lightest < 0) {
      return InvalidArgument("baseline: no Megatron-LM configuration could be evaluated");
    }
    const int64_t memory = MemoryToFit(options, cluster);
    return Status(StatusCode::kInfeasible,
                  "baseline: no Megatron-LM configuration fits in " + ByteSizeText(memory) +
                      " per device; the least memory-hungry, " +
                      ManualPlanSpecString(specs[static_cast<size_t>(lightest)]) + ", needs " +
                      ExactByteSizeText(lightest_bytes));
  }
  // Ranked again by the prediction with the transfers between stages (what the planner ranks
  // its plans by), in the order of the schedule formula: the kReranked fastest by it, then every
  // point whose formula value is below the best prediction so far. The formula is a lower bound
  // of the prediction (pipeline_estimate.h: the period is at least the slowest stage, and the
  // transfers only add), so no point left out can be predicted faster than the one chosen.
  std::stable_sort(result.table.begin(), result.table.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  std::optional<PipelinePlan> chosen;
  for (size_t k = 0; k < result.table.size(); ++k) {
    if (result.table[k].second == inf) break;
    if (k >= kReranked && result.table[k].second >= chosen->iteration_seconds) break;
    Result<PipelinePlan> plan = evaluator.Plan(result.table[k].first);
    if (!plan.ok()) return plan.status();
    result.table[k].second = plan.value().iteration_seconds;
    if (!chosen || plan.value().iteration_seconds < chosen->iteration_seconds) {
      chosen = std::move(plan).value();
      result.spec = result.table[k].first;
    }
  }
  std::stable_sort(result.table.begin(), result.table.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  result.best = std::move(*chosen);
  result.intra_op_solves = evaluator.solves();
  result.search_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.best.stats.intra_op_solves = result.intra_op_solves;
  result.best.stats.total_seconds = result.search_seconds;
  return result;
}

}  // namespace alpa
