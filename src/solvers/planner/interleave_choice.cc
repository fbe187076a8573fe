// Interleaved 1F1B layouts (interleave_choice.h).
#include "solvers/planner/interleave_choice.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "core/util/wide_int.h"
#include "solvers/pipeline/pipeline_schedule.h"

namespace alpa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The table's usable candidates of one submesh and pool, by layer range.
using RangeCandidates = std::map<std::pair<int32_t, int32_t>, std::vector<int32_t>>;

RangeCandidates CandidatesOn(const StageCostTable& table, int32_t submesh, int32_t pool) {
  RangeCandidates by_range;
  for (size_t k = 0; k < table.candidates.size(); ++k) {
    const StageCandidate& c = table.candidates[k];
    if (c.submesh != submesh || c.pool != pool || c.max_stages_after < 0) continue;
    by_range[{c.first_layer, c.last_layer}].push_back(static_cast<int32_t>(k));
  }
  return by_range;
}

// Chunk boundaries: `chunks` contiguous ranges of the layer groups whose largest cost is least,
// chunk c costing the sum of cost[c % cost.size()] over its groups (the costs of its device
// group's submesh). Returns each chunk's first group, plus the layer count at the end.
std::vector<int32_t> BalancedCuts(const std::vector<std::vector<double>>& cost, int32_t chunks) {
  const int32_t n = static_cast<int32_t>(cost.front().size());
  std::vector<std::vector<double>> prefix;
  for (const std::vector<double>& c : cost) {
    std::vector<double> p(static_cast<size_t>(n) + 1, 0);
    for (int32_t l = 0; l < n; ++l) {
      p[static_cast<size_t>(l) + 1] = p[static_cast<size_t>(l)] + c[static_cast<size_t>(l)];
    }
    prefix.push_back(std::move(p));
  }
  // best[c][l]: the least largest chunk over the first l groups in c chunks; from[c][l] the
  // start of the last of them.
  const size_t rows = static_cast<size_t>(chunks) + 1, cols = static_cast<size_t>(n) + 1;
  std::vector<std::vector<double>> best(rows, std::vector<double>(cols, kInf));
  std::vector<std::vector<int32_t>> from(rows, std::vector<int32_t>(cols, -1));
  best[0][0] = 0;
  for (int32_t c = 1; c <= chunks; ++c) {
    const std::vector<double>& p = prefix[static_cast<size_t>(c - 1) % prefix.size()];
    for (int32_t l = c; l <= n; ++l) {
      for (int32_t k = c - 1; k < l; ++k) {
        const double v = std::max(best[static_cast<size_t>(c) - 1][static_cast<size_t>(k)],
                                  p[static_cast<size_t>(l)] - p[static_cast<size_t>(k)]);
        if (v < best[static_cast<size_t>(c)][static_cast<size_t>(l)]) {
          best[static_cast<size_t>(c)][static_cast<size_t>(l)] = v;
          from[static_cast<size_t>(c)][static_cast<size_t>(l)] = k;
        }
      }
    }
  }
  std::vector<int32_t> cuts(rows, n);
  for (int32_t c = chunks, l = n; c > 0; --c) {
    l = from[static_cast<size_t>(c)][static_cast<size_t>(l)];
    cuts[static_cast<size_t>(c) - 1] = l;
  }
  return cuts;
}

// The fastest candidate of `options` whose bytes with `in_flight` microbatches are at most
// `limit` (0: no limit); -1 when none.
int32_t Fastest(const StageCostTable& table, const std::vector<int32_t>& options, int64_t in_flight,
                int64_t limit) {
  int32_t pick = -1;
  for (int32_t k : options) {
    const size_t ki = static_cast<size_t>(k);
    if (limit > 0 && table.candidate_memory[ki].With(in_flight) > limit) continue;
    if (pick < 0 ||
        table.candidates[ki].latency < table.candidates[static_cast<size_t>(pick)].latency)
      pick = k;
  }
  return pick;
}

int32_t Smallest(const StageCostTable& table, const std::vector<int32_t>& options,
                 int64_t in_flight) {
  int32_t pick = -1;
  for (int32_t k : options) {
    if (pick < 0 || table.candidate_memory[static_cast<size_t>(k)].With(in_flight) <
                        table.candidate_memory[static_cast<size_t>(pick)].With(in_flight))
      pick = k;
  }
  return pick;
}

// Whether group `g`'s stages of `picks` fit `device_memory` (0: no limit).
bool GroupFits(const StageCostTable& table, const std::vector<int32_t>& picks,
               const std::vector<int64_t>& in_flight, int32_t groups, int32_t g,
               int64_t device_memory) {
  if (device_memory <= 0) return true;
  Int128 sum{0};
  for (size_t s = static_cast<size_t>(g); s < picks.size(); s += static_cast<size_t>(groups)) {
    sum += Int128{table.candidate_memory[static_cast<size_t>(picks[s])].With(in_flight[s])};
  }
  return sum <= Int128{device_memory};
}

// One layout for v, or none (an empty candidate list): per device group its submesh's
// candidates by range and its cost per layer group.
std::vector<int32_t> Layout(const StageCostTable& table,
                            const std::vector<RangeCandidates>& by_range,
                            const std::vector<std::vector<double>>& group_cost, int32_t v,
                            int64_t microbatches, int64_t device_memory) {
  const int32_t groups = static_cast<int32_t>(by_range.size());
  const int32_t stages = groups * v;
  const std::vector<int32_t> cuts = BalancedCuts(group_cost, stages);
  std::vector<const std::vector<int32_t>*> options;
  std::vector<int64_t> in_flight;
  for (int32_t s = 0; s < stages; ++s) {
    const RangeCandidates& ranges = by_range[static_cast<size_t>(s % groups)];
    const auto it =
        ranges.find({cuts[static_cast<size_t>(s)], cuts[static_cast<size_t>(s) + 1] - 1});
    if (it == ranges.end()) return {};
    options.push_back(&it->second);
    in_flight.push_back(MicrobatchesInFlight(PipelineScheduleKind::kInterleavedOneFOneB, stages, s,
                                             microbatches, v));
  }
  std::vector<int32_t> picks(static_cast<size_t>(stages));
  for (int32_t s = 0; s < stages; ++s) {
    picks[static_cast<size_t>(s)] = Fastest(table, *options[static_cast<size_t>(s)], 0, 0);
  }
  for (int32_t g = 0; g < groups; ++g) {
    if (GroupFits(table, picks, in_flight, groups, g, device_memory)) continue;
    for (int32_t s = g; s < stages; s += groups) {
      const size_t si = static_cast<size_t>(s);
      picks[si] = Fastest(table, *options[si], in_flight[si], device_memory / v);
      if (picks[si] < 0) picks[si] = Smallest(table, *options[si], in_flight[si]);
    }
    if (!GroupFits(table, picks, in_flight, groups, g, device_memory)) return {};
  }
  return picks;
}

}  // namespace

std::vector<InterleavedLayout> InterleavedLayouts(const StageCostTable& table,
                                                  const std::vector<int32_t>& chosen,
                                                  int32_t num_layers, int64_t microbatches,
                                                  int64_t device_memory,
                                                  int32_t max_virtual_stages) {
  std::vector<InterleavedLayout> layouts;
  const int32_t groups = static_cast<int32_t>(chosen.size());
  if (groups < 2 || num_layers < 1 || microbatches % groups != 0) return layouts;
  std::vector<RangeCandidates> by_range;
  std::vector<std::vector<double>> group_cost;
  for (int32_t k : chosen) {
    const StageCandidate& c = table.candidates[static_cast<size_t>(k)];
    by_range.push_back(CandidatesOn(table, c.submesh, c.pool));
    std::vector<double> cost(static_cast<size_t>(num_layers), 0);
    for (int32_t l = 0; l < num_layers; ++l) {
      const auto it = by_range.back().find({l, l});
      if (it == by_range.back().end()) return layouts;
      cost[static_cast<size_t>(l)] =
          table.candidates[static_cast<size_t>(Fastest(table, it->second, 0, 0))].latency;
    }
    group_cost.push_back(std::move(cost));
  }
  for (int32_t v = 2; v <= max_virtual_stages && groups * v <= num_layers; ++v) {
    std::vector<int32_t> picks =
        Layout(table, by_range, group_cost, v, microbatches, device_memory);
    if (!picks.empty()) layouts.push_back({v, std::move(picks)});
  }
  return layouts;
}

}  // namespace alpa
