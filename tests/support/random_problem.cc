#include "support/random_problem.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/util/wide_int.h"

namespace alpa::testing {

uint64_t SplitMix64::Next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

int64_t SplitMix64::Below(int64_t n) {
  // Multiply-high maps 64 random bits onto [0, n) without a division (bias is negligible).
  __extension__ typedef unsigned __int128 UInt128;  // NOLINT: GCC/Clang extension
  const UInt128 wide = static_cast<UInt128>(Next()) * static_cast<uint64_t>(n);
  return static_cast<int64_t>(wide >> 64);
}

double SplitMix64::Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

namespace {

const char* ShapeName(GraphShape shape) {
  switch (shape) {
    case GraphShape::kRandom:
      return "random";
    case GraphShape::kChain:
      return "chain";
    case GraphShape::kTree:
      return "tree";
    case GraphShape::kGrid:
      return "grid";
  }
  return "?";
}

const char* MemoryName(MemoryMode memory) {
  switch (memory) {
    case MemoryMode::kNone:
      return "none";
    case MemoryMode::kIntervals:
      return "intervals";
    case MemoryMode::kLiveSets:
      return "live_sets";
  }
  return "?";
}

// A cost entry: forbidden, or an integer in [-max_cost, max_cost] (negative with probability).
double RandomCost(const RandomProblemSpec& spec, SplitMix64& rng) {
  if (rng.Chance(spec.forbidden_cost_probability)) {
    // Exactly the threshold most of the time, something above it otherwise.
    return rng.Chance(0.75) ? kForbiddenCost : 3e18;
  }
  const int64_t magnitude = rng.Between(0, spec.max_cost);
  const bool negative = rng.Chance(spec.negative_cost_probability);
  return static_cast<double>(negative ? -magnitude : magnitude);
}

std::vector<double> RandomMatrix(const RandomProblemSpec& spec, SplitMix64& rng, size_t size) {
  std::vector<double> costs(size);
  for (double& c : costs) c = RandomCost(spec, rng);
  return costs;
}

void AddEdge(ShardingProblem& problem, const RandomProblemSpec& spec, SplitMix64& rng, int32_t u,
             int32_t v) {
  if (rng.Chance(0.5)) std::swap(u, v);
  ShardingEdge edge;
  edge.u = u;
  edge.v = v;
  edge.costs = RandomMatrix(spec, rng,
                            problem.nodes[static_cast<size_t>(u)].costs.size() *
                                problem.nodes[static_cast<size_t>(v)].costs.size());
  problem.edges.push_back(std::move(edge));
}

// The node pairs of the requested shape.
std::vector<std::pair<int32_t, int32_t>> ShapePairs(const RandomProblemSpec& spec,
                                                    SplitMix64& rng) {
  const int32_t n = spec.nodes;
  std::vector<std::pair<int32_t, int32_t>> pairs;
  switch (spec.shape) {
    case GraphShape::kChain:
      for (int32_t i = 0; i + 1 < n; ++i) pairs.emplace_back(i, i + 1);
      break;
    case GraphShape::kTree:
      for (int32_t i = 1; i < n; ++i) pairs.emplace_back(static_cast<int32_t>(rng.Below(i)), i);
      break;
    case GraphShape::kGrid: {
      const int32_t cols = std::max<int32_t>(1, static_cast<int32_t>(std::ceil(std::sqrt(n))));
      for (int32_t i = 0; i < n; ++i) {
        if (i % cols + 1 < cols && i + 1 < n) pairs.emplace_back(i, i + 1);
        if (i + cols < n) pairs.emplace_back(i, i + cols);
      }
      break;
    }
    case GraphShape::kRandom:
      if (n <= 2000) {
        for (int32_t u = 0; u < n; ++u) {
          for (int32_t v = u + 1; v < n; ++v) {
            if (rng.Chance(spec.edge_density)) pairs.emplace_back(u, v);
          }
        }
      } else {  // Large graphs: sample the expected number of pairs instead of visiting all.
        const double all = 0.5 * static_cast<double>(n) * static_cast<double>(n - 1);
        const int64_t m = static_cast<int64_t>(std::llround(spec.edge_density * all));
        for (int64_t e = 0; e < m; ++e) {
          const int32_t u = static_cast<int32_t>(rng.Below(n));
          const int32_t v = static_cast<int32_t>(rng.Below(n - 1));
          pairs.emplace_back(u, v >= u ? v + 1 : v);
        }
      }
      break;
  }
  return pairs;
}

// Largest per-step memory total when every node takes its smallest (pick_max false) or largest
// usage.
Int128 PeakOfExtremeUsage(const ShardingProblem& problem, bool pick_max) {
  std::vector<int64_t> usage(problem.nodes.size(), 0);
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const std::vector<int64_t>& u = problem.nodes[i].usages;
    if (u.empty()) continue;
    usage[i] =
        pick_max ? *std::max_element(u.begin(), u.end()) : *std::min_element(u.begin(), u.end());
  }
  Int128 peak = 0;
  if (problem.uses_live_sets()) {
    for (const std::vector<int32_t>& live : problem.live_sets) {
      Int128 total = 0;
      for (int32_t node : live) total += usage[static_cast<size_t>(node)];
      peak = std::max(peak, total);
    }
    return peak;
  }
  std::vector<std::pair<int64_t, int64_t>> events;
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const UsageInterval& in = problem.nodes[i].interval;
    if (usage[i] == 0 || in.lo >= in.hi) continue;
    events.emplace_back(in.lo, usage[i]);
    events.emplace_back(in.hi, -usage[i]);
  }
  std::sort(events.begin(), events.end());
  Int128 total = 0;
  for (size_t e = 0; e < events.size();) {
    const int64_t time = events[e].first;
    for (; e < events.size() && events[e].first == time; ++e) total += events[e].second;
    peak = std::max(peak, total);
  }
  return peak;
}

void AddMemory(ShardingProblem& problem, const RandomProblemSpec& spec, SplitMix64& rng) {
  const int64_t steps =
      spec.time_steps > 0 ? spec.time_steps : std::max<int64_t>(1, 2 * spec.nodes);
  for (ShardingNode& node : problem.nodes) {
    if (rng.Chance(0.1)) continue;  // some nodes use no memory at all (empty usages)
    node.usages.resize(node.costs.size());
    for (int64_t& u : node.usages) u = rng.Between(0, spec.max_usage);
  }
  if (spec.memory == MemoryMode::kIntervals) {
    for (ShardingNode& node : problem.nodes) {
      node.interval.lo = rng.Below(steps);
      node.interval.hi = rng.Between(node.interval.lo, steps);  // lo == hi: never live
    }
  } else {
    problem.live_sets.resize(static_cast<size_t>(steps));
    for (std::vector<int32_t>& live : problem.live_sets) {
      for (size_t i = 0; i < problem.nodes.size(); ++i) {
        if (rng.Chance(0.4)) live.push_back(static_cast<int32_t>(i));
      }
    }
  }
  const long double loose = static_cast<long double>(PeakOfExtremeUsage(problem, true));
  const long double tight = static_cast<long double>(PeakOfExtremeUsage(problem, false));
  const long double limit =
      loose - static_cast<long double>(spec.limit_tightness) * (loose - tight);
  problem.usage_limit = limit <= 0 ? 0 : static_cast<int64_t>(std::floor(limit));
}

}  // namespace

std::string Describe(const RandomProblemSpec& spec) {
  std::ostringstream out;
  out << "{nodes=" << spec.nodes << ", max_strategies=" << spec.max_strategies
      << ", shape=" << ShapeName(spec.shape) << ", edge_density=" << spec.edge_density
      << ", parallel=" << spec.parallel_edge_probability
      << ", self_edge=" << spec.self_edge_probability << ", follower=" << spec.follower_probability
      << ", alias=" << spec.alias_probability << ", negative=" << spec.negative_cost_probability
      << ", forbidden=" << spec.forbidden_cost_probability << ", max_cost=" << spec.max_cost
      << ", max_usage=" << spec.max_usage << ", memory=" << MemoryName(spec.memory)
      << ", time_steps=" << spec.time_steps << ", tightness=" << spec.limit_tightness << "}";
  return out.str();
}

ShardingProblem RandomProblem(const RandomProblemSpec& spec, uint64_t seed) {
  SplitMix64 rng(seed);
  ShardingProblem problem;
  problem.name = "random_" + std::to_string(seed);
  const int32_t n = std::max<int32_t>(0, spec.nodes);
  const int64_t max_k = std::max<int32_t>(1, spec.max_strategies);
  problem.nodes.resize(static_cast<size_t>(n));

  std::vector<int32_t> strategies(static_cast<size_t>(n));
  for (int32_t& k : strategies) k = static_cast<int32_t>(rng.Between(1, max_k));
  // Followers: a node may follow any node placed before it in a random order, so chains form
  // but cycles cannot; a follower copies its leader's strategy count.
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  for (int32_t i = n - 1; i > 0; --i) {
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(rng.Below(i + 1))]);
  }
  for (int32_t r = 1; r < n; ++r) {
    if (!rng.Chance(spec.follower_probability)) continue;
    const size_t follower = static_cast<size_t>(order[static_cast<size_t>(r)]);
    const int32_t leader = order[static_cast<size_t>(rng.Below(r))];
    problem.nodes[follower].follows = leader;
    strategies[follower] = strategies[static_cast<size_t>(leader)];
  }

  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    ShardingNode& node = problem.nodes[i];
    node.costs = RandomMatrix(spec, rng, static_cast<size_t>(strategies[i]));
    if (std::all_of(node.costs.begin(), node.costs.end(), IsForbidden)) {
      node.costs[static_cast<size_t>(rng.Below(strategies[i]))] =
          static_cast<double>(rng.Between(0, spec.max_cost));
    }
  }

  for (const auto& [u, v] : ShapePairs(spec, rng)) {
    AddEdge(problem, spec, rng, u, v);
    while (rng.Chance(spec.parallel_edge_probability)) AddEdge(problem, spec, rng, u, v);
  }
  for (int32_t i = 0; i < n; ++i) {
    if (rng.Chance(spec.self_edge_probability)) AddEdge(problem, spec, rng, i, i);
  }

  for (int32_t u = 0; u < n; ++u) {
    if (!rng.Chance(spec.alias_probability)) continue;
    ShardingAlias alias;
    alias.u = u;
    alias.v = static_cast<int32_t>(rng.Below(n));  // may be u itself: only the diagonal applies
    alias.forbidden.resize(problem.nodes[static_cast<size_t>(alias.u)].costs.size() *
                           problem.nodes[static_cast<size_t>(alias.v)].costs.size());
    for (uint8_t& f : alias.forbidden) f = rng.Chance(0.3) ? 1 : 0;
    problem.aliases.push_back(std::move(alias));
  }

  if (spec.memory != MemoryMode::kNone) AddMemory(problem, spec, rng);
  return problem;
}

RandomProblemSpec RandomSmallSpec(uint64_t seed, int32_t max_nodes, int32_t max_strategies) {
  SplitMix64 rng(seed ^ 0x5DEECE66DULL);
  RandomProblemSpec spec;
  spec.nodes = static_cast<int32_t>(rng.Between(1, std::max<int32_t>(1, max_nodes)));
  spec.max_strategies = static_cast<int32_t>(
      rng.Chance(0.5) ? max_strategies : rng.Between(1, std::max<int32_t>(1, max_strategies)));
  spec.shape = static_cast<GraphShape>(rng.Below(4));
  spec.edge_density = 0.1 + 0.8 * rng.Unit();
  spec.parallel_edge_probability = rng.Chance(0.3) ? 0.3 : 0;
  spec.self_edge_probability = rng.Chance(0.2) ? 0.2 : 0;
  spec.follower_probability = rng.Chance(0.35) ? 0.1 + 0.4 * rng.Unit() : 0;
  spec.alias_probability = rng.Chance(0.3) ? 0.4 : 0;
  spec.negative_cost_probability = rng.Chance(0.3) ? 0.3 : 0;
  spec.forbidden_cost_probability = rng.Chance(0.3) ? 0.15 : 0;
  spec.max_cost = rng.Chance(0.1) ? 1000000000 : 100;
  spec.max_usage = rng.Chance(0.1) ? 1000000000000 : 20;
  const int64_t memory = rng.Below(5);  // memory more often than not
  spec.memory = memory == 0 ? MemoryMode::kNone
                            : (memory <= 2 ? MemoryMode::kIntervals : MemoryMode::kLiveSets);
  spec.time_steps = rng.Chance(0.5) ? 0 : rng.Between(1, 3 * static_cast<int64_t>(spec.nodes));
  spec.limit_tightness = 1.1 * rng.Unit();
  return spec;
}

}  // namespace alpa::testing
