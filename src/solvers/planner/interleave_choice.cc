// Interleaved 1F1B layouts (interleave_choice.h).
#include "solvers/planner/interleave_choice.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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
std::vector<int32_t> BalancedCuts(const std::vector<const std::vector<double>*>& cost,
                                  int32_t chunks) {
  const int32_t n = static_cast<int32_t>(cost.front()->size());
  std::vector<std::vector<double>> prefix;
  for (const std::vector<double>* group : cost) {
    const std::vector<double>& c = *group;
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

// A candidate's seconds per iteration of `microbatches`: B t + o (its share of the pipeline's
// time when the bubble is small).
double IterationShare(const StageCandidate& c, int64_t microbatches) {
  return c.latency * static_cast<double>(microbatches) + c.iteration_overhead;
}

// The fastest candidate of `options` (least IterationShare); -1 when there is none.
int32_t Fastest(const StageCostTable& table, const std::vector<int32_t>& options,
                int64_t microbatches) {
  int32_t pick = -1;
  for (int32_t k : options) {
    if (pick < 0 || IterationShare(table.candidates[static_cast<size_t>(k)], microbatches) <
                        IterationShare(table.candidates[static_cast<size_t>(pick)], microbatches))
      pick = k;
  }
  return pick;
}

// One choice of candidates for the stages of a device group so far: their bytes and seconds.
struct GroupChoice {
  int64_t bytes = 0;
  double seconds = 0;
  std::vector<int32_t> picks;
};

// The most choices a group's frontier keeps per stage (beyond it every k-th is kept; the answer
// is then a good one rather than the best).
constexpr size_t kMaxFrontier = 256;

// The candidates of a group's stages (`options`, one list per stage, `in_flight` microbatches
// each) with the least summed IterationShare whose summed bytes fit `device_memory` (0 or less:
// no limit): a Pareto frontier of (bytes, seconds) over the stages. Empty when none fits.
std::vector<int32_t> FastestFitting(const StageCostTable& table,
                                    const std::vector<const std::vector<int32_t>*>& options,
                                    const std::vector<int64_t>& in_flight, int64_t microbatches,
                                    int64_t device_memory) {
  const int64_t limit = device_memory > 0 ? device_memory : std::numeric_limits<int64_t>::max();
  std::vector<GroupChoice> frontier = {GroupChoice{}};
  for (size_t s = 0; s < options.size(); ++s) {
    std::vector<GroupChoice> next;
    for (const GroupChoice& c : frontier) {
      for (int32_t k : *options[s]) {
        const size_t ki = static_cast<size_t>(k);
        const Int128 bytes =
            Int128{c.bytes} + Int128{table.candidate_memory[ki].With(in_flight[s])};
        if (bytes > Int128{limit}) continue;
        GroupChoice n{static_cast<int64_t>(bytes),
                      c.seconds + IterationShare(table.candidates[ki], microbatches), c.picks};
        n.picks.push_back(k);
        next.push_back(std::move(n));
      }
    }
    // The choices no other beats in both bytes and seconds, fewest bytes first.
    std::sort(next.begin(), next.end(), [](const GroupChoice& a, const GroupChoice& b) {
      return a.bytes != b.bytes ? a.bytes < b.bytes : a.seconds < b.seconds;
    });
    frontier.clear();
    for (GroupChoice& c : next) {
      if (frontier.empty() || c.seconds < frontier.back().seconds) frontier.push_back(std::move(c));
    }
    if (frontier.empty()) return {};
    if (frontier.size() > kMaxFrontier) {
      std::vector<GroupChoice> thinned;
      const size_t step = (frontier.size() + kMaxFrontier - 1) / kMaxFrontier;
      for (size_t i = 0; i < frontier.size(); i += step) thinned.push_back(std::move(frontier[i]));
      if ((frontier.size() - 1) % step != 0) thinned.push_back(std::move(frontier.back()));
      frontier = std::move(thinned);
    }
  }
  return frontier.back().picks;  // the fastest of those that fit
}

// One layout for v, or none (an empty candidate list): per device group its submesh's
// candidates by range and its cost per layer group.
std::vector<int32_t> Layout(const StageCostTable& table,
                            const std::vector<const RangeCandidates*>& by_range,
                            const std::vector<const std::vector<double>*>& group_cost, int32_t v,
                            int64_t microbatches, const std::vector<int64_t>& group_memory) {
  const int32_t groups = static_cast<int32_t>(by_range.size());
  const int32_t stages = groups * v;
  const std::vector<int32_t> cuts = BalancedCuts(group_cost, stages);
  std::vector<const std::vector<int32_t>*> options;
  std::vector<int64_t> in_flight;
  for (int32_t s = 0; s < stages; ++s) {
    const RangeCandidates& ranges = *by_range[static_cast<size_t>(s % groups)];
    const auto it =
        ranges.find({cuts[static_cast<size_t>(s)], cuts[static_cast<size_t>(s) + 1] - 1});
    if (it == ranges.end()) return {};
    options.push_back(&it->second);
    in_flight.push_back(MicrobatchesInFlight(PipelineScheduleKind::kInterleavedOneFOneB, stages, s,
                                             microbatches, v));
  }
  std::vector<int32_t> picks(static_cast<size_t>(stages));
  for (int32_t g = 0; g < groups; ++g) {
    std::vector<const std::vector<int32_t>*> group_options;
    std::vector<int64_t> group_in_flight;
    for (int32_t s = g; s < stages; s += groups) {
      group_options.push_back(options[static_cast<size_t>(s)]);
      group_in_flight.push_back(in_flight[static_cast<size_t>(s)]);
    }
    const std::vector<int32_t> chosen = FastestFitting(
        table, group_options, group_in_flight, microbatches, group_memory[static_cast<size_t>(g)]);
    if (chosen.empty()) return {};
    for (int32_t s = g, i = 0; s < stages; s += groups, ++i) {
      picks[static_cast<size_t>(s)] = chosen[static_cast<size_t>(i)];
    }
  }
  return picks;
}

}  // namespace

std::vector<InterleavedLayout> InterleavedLayouts(const StageCostTable& table,
                                                  const std::vector<int32_t>& chosen,
                                                  int32_t num_layers, int64_t microbatches,
                                                  const std::vector<int64_t>& group_memory,
                                                  int32_t max_virtual_stages) {
  std::vector<GroupMesh> groups;
  for (int32_t k : chosen) {
    const StageCandidate& c = table.candidates[static_cast<size_t>(k)];
    groups.push_back({c.submesh, c.pool});
  }
  return GroupLayouts(table, groups, num_layers, microbatches, group_memory, max_virtual_stages);
}

std::vector<InterleavedLayout> GroupLayouts(const StageCostTable& table,
                                            const std::vector<GroupMesh>& groups,
                                            int32_t num_layers, int64_t microbatches,
                                            const std::vector<int64_t>& group_memory,
                                            int32_t max_virtual_stages) {
  std::vector<InterleavedLayout> layouts;
  const int32_t count = static_cast<int32_t>(groups.size());
  if (count < 2 || num_layers < 1 || microbatches % count != 0 ||
      group_memory.size() != groups.size()) {
    return layouts;
  }
  if (2 * count > num_layers) return layouts;  // no room for two chunks per group
  // Per distinct (submesh, pool): its candidates by range and its cost per layer group.
  std::map<std::pair<int32_t, int32_t>, std::pair<RangeCandidates, std::vector<double>>> meshes;
  std::vector<const RangeCandidates*> by_range;
  std::vector<const std::vector<double>*> group_cost;
  for (const GroupMesh& g : groups) {
    auto [it, added] = meshes.try_emplace({g.submesh, g.pool});
    auto& [ranges, cost] = it->second;
    if (added) {
      ranges = CandidatesOn(table, g.submesh, g.pool);
      cost.assign(static_cast<size_t>(num_layers), 0);
      for (int32_t l = 0; l < num_layers; ++l) {
        const auto single = ranges.find({l, l});
        if (single == ranges.end()) return layouts;
        cost[static_cast<size_t>(l)] =
            table.candidates[static_cast<size_t>(Fastest(table, single->second, microbatches))]
                .latency;
      }
    }
    by_range.push_back(&ranges);
    group_cost.push_back(&cost);
  }
  for (int32_t v = 2; v <= max_virtual_stages && count * v <= num_layers; ++v) {
    std::vector<int32_t> picks = Layout(table, by_range, group_cost, v, microbatches, group_memory);
    if (!picks.empty()) layouts.push_back({v, std::move(picks)});
  }
  return layouts;
}

std::vector<std::vector<GroupMesh>> UniformGroupings(const StageCostTable& table, int64_t devices) {
  std::vector<std::vector<GroupMesh>> groupings;
  for (size_t m = 0; m < table.submeshes.size(); ++m) {
    const int64_t size = table.submeshes[m].num_devices();
    if (size < 1 || devices % size != 0 || devices / size < 2) continue;
    groupings.emplace_back(static_cast<size_t>(devices / size),
                           GroupMesh{static_cast<int32_t>(m), 0});
  }
  return groupings;
}

}  // namespace alpa
