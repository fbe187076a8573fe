// Random sharding problems for differential and property tests. Deterministic for a given seed on
// every platform: a private splitmix64 stream, no <random> distributions (their output differs
// between standard libraries). Every problem passes ValidateProblem; some are infeasible.
#pragma once

#include <cstdint>
#include <string>

#include "core/problem/sharding_problem.h"

namespace alpa::testing {

enum class GraphShape : int32_t { kRandom = 0, kChain = 1, kTree = 2, kGrid = 3 };
enum class MemoryMode : int32_t { kNone = 0, kIntervals = 1, kLiveSets = 2 };

struct RandomProblemSpec {
  int32_t nodes = 6;
  int32_t max_strategies = 3;  // each node gets 1..max_strategies (followers copy their leader)
  GraphShape shape = GraphShape::kRandom;
  // kRandom: expected fraction of the n(n-1)/2 node pairs that get an edge. Other shapes ignore it.
  double edge_density = 0.3;
  double parallel_edge_probability = 0;   // per edge: add another edge on the same pair
  double self_edge_probability = 0;       // per node: add an edge (u, u)
  double follower_probability = 0;        // per node: follow an earlier node (random order)
  double alias_probability = 0;           // per node: one alias pair with a random other node
  double negative_cost_probability = 0;   // per cost entry
  double forbidden_cost_probability = 0;  // per cost entry (a node keeps >= 1 allowed strategy)
  int64_t max_cost = 100;                 // costs are integers in [0, max_cost] (or negated)
  int64_t max_usage = 20;                 // usages are integers in [0, max_usage]
  MemoryMode memory = MemoryMode::kNone;  // kNone: no usages and no limit
  // Intervals lie in [0, time_steps); live sets have time_steps entries. 0: 2 * nodes.
  int64_t time_steps = 0;
  // The limit lies between the peak with every node at its largest usage (0: always fits) and
  // the largest per-step sum of smallest usages (1: as tight as can possibly fit, often
  // infeasible). Values above 1 go below that bound: infeasible whenever it is positive.
  double limit_tightness = 0.5;
};

// A readable one-line description, for replaying a failure.
std::string Describe(const RandomProblemSpec& spec);

ShardingProblem RandomProblem(const RandomProblemSpec& spec, uint64_t seed);

// A spec drawn at random (from the seed) mixing every feature, for small instances of 1..max_nodes
// nodes with up to max_strategies strategies.
RandomProblemSpec RandomSmallSpec(uint64_t seed, int32_t max_nodes, int32_t max_strategies);

// The small PRNG behind all of the above (splitmix64), exposed for tests that need their own
// random choices.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, n), n > 0.
  int64_t Below(int64_t n);
  // Uniform in [lo, hi].
  int64_t Between(int64_t lo, int64_t hi) { return lo + Below(hi - lo + 1); }
  // Uniform in [0, 1).
  double Unit();
  bool Chance(double p) { return Unit() < p; }

 private:
  uint64_t state_;
};

}  // namespace alpa::testing
