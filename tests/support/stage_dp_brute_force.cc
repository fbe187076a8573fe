#include "support/stage_dp_brute_force.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace alpa::testing {
namespace {

// The enumeration recurses once per stage.
constexpr int32_t kMaxLayers = 64;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Enumeration {
  explicit Enumeration(const StageDpInput& in)
      : input(in),
        cluster_devices(in.hosts * in.devices_per_host),
        max_stages(in.max_stages > 0 ? in.max_stages : in.num_layers) {
    // Pools: the devices used before pool_order[i]'s stages start, in pipeline order.
    if (in.pool_devices.empty()) return;
    std::vector<int32_t> order = in.pool_order;
    if (order.empty()) {
      for (size_t p = 0; p < in.pool_devices.size(); ++p) order.push_back(static_cast<int32_t>(p));
    }
    pool_start.assign(in.pool_devices.size(), -1);
    int64_t used = 0;
    for (int32_t p : order) {
      pool_start[static_cast<size_t>(p)] = used;
      used += in.pool_devices[static_cast<size_t>(p)];
    }
    cluster_devices = used;
  }

  const StageDpInput& input;
  int64_t cluster_devices = 0;
  int32_t max_stages = 0;
  std::vector<int64_t> pool_start;  // per pool id; -1: unused (empty: no pools)
  std::vector<int32_t> stages, best;
  double best_objective = kInf;

  // T = sum (t + o) + (B - 1) max t, summed in pipeline order.
  double Objective(const std::vector<int32_t>& plan, double* max_latency) const {
    double sum = 0, worst = 0;
    for (int32_t j : plan) {
      const StageCandidate& c = input.candidates[static_cast<size_t>(j)];
      sum += c.latency + c.iteration_overhead;
      worst = std::max(worst, c.latency);
    }
    *max_latency = worst;
    return sum + static_cast<double>(input.microbatches - 1) * worst;
  }

  // Every stage must have at most max_stages_after stages behind it.
  bool MemoryFits(const std::vector<int32_t>& plan) const {
    const size_t n = plan.size();
    for (size_t x = 0; x < n; ++x) {
      const int64_t after = static_cast<int64_t>(n - 1 - x);
      if (input.candidates[static_cast<size_t>(plan[x])].max_stages_after < after) return false;
    }
    return true;
  }

  void Visit(int32_t first_layer, int64_t devices_used) {
    if (first_layer == input.num_layers) {
      if (devices_used != cluster_devices || !MemoryFits(stages)) return;
      if (static_cast<int32_t>(stages.size()) < input.min_stages) return;
      double max_latency = 0;
      const double t = Objective(stages, &max_latency);
      if (t < best_objective || (t == best_objective && stages.size() < best.size())) {
        best_objective = t;
        best = stages;
      }
      return;
    }
    if (static_cast<int32_t>(stages.size()) == max_stages) return;
    for (size_t j = 0; j < input.candidates.size(); ++j) {
      const StageCandidate& c = input.candidates[j];
      if (c.first_layer != first_layer || c.max_stages_after < 0) continue;
      const int64_t devices = input.submeshes[static_cast<size_t>(c.submesh)].num_devices();
      if (devices > cluster_devices - devices_used) continue;
      if (!pool_start.empty()) {
        // A stage of a pool lies wholly inside the pool's devices in the pipeline's order.
        const int64_t start = pool_start[static_cast<size_t>(c.pool)];
        if (start < 0 || devices_used < start ||
            devices_used + devices > start + input.pool_devices[static_cast<size_t>(c.pool)]) {
          continue;
        }
      }
      stages.push_back(static_cast<int32_t>(j));
      Visit(c.last_layer + 1, devices_used + devices);
      stages.pop_back();
    }
  }
};

int64_t CountDistinctUsableLatencies(const StageDpInput& input) {
  std::vector<double> latencies;
  for (const StageCandidate& c : input.candidates) {
    const bool pool_used = input.pool_devices.empty() || input.pool_order.empty() ||
                           std::find(input.pool_order.begin(), input.pool_order.end(), c.pool) !=
                               input.pool_order.end();
    if (c.max_stages_after >= 0 && pool_used) latencies.push_back(c.latency);
  }
  std::sort(latencies.begin(), latencies.end());
  return std::unique(latencies.begin(), latencies.end()) - latencies.begin();
}

}  // namespace

Result<StageDpResult> SolveStageDpBruteForce(const StageDpInput& input) {
  ALPA_RETURN_IF_ERROR(ValidateStageDpInput(input));
  if (input.num_layers > kMaxLayers) {
    return Status(StatusCode::kUnsupported, "stage DP brute force: num_layers " +
                                                std::to_string(input.num_layers) + " exceeds " +
                                                std::to_string(kMaxLayers));
  }
  Enumeration e(input);
  e.Visit(0, 0);
  StageDpResult result;
  result.t_max_values = CountDistinctUsableLatencies(input);
  if (e.best_objective < kInf) {
    result.feasible = true;
    result.objective = e.Objective(e.best, &result.max_latency);
    result.stages = std::move(e.best);
  }
  return result;
}

}  // namespace alpa::testing
