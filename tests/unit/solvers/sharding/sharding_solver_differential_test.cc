// Differential test: the solver against brute force on many small random problems mixing every
// feature (memory limits including infeasible ones, followers, aliases, parallel and self edges,
// negative and forbidden costs, chains, trees, grids and random graphs). The solver's answer is
// judged by the independent evaluator, never by its own objective alone.
#include "solvers/sharding/sharding_solver.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/problem/problem_io.h"
#include "core/problem/sharding_evaluator.h"
#include "core/problem/sharding_problem.h"
#include "support/brute_force.h"
#include "support/random_problem.h"

namespace alpa {
namespace {

constexpr uint64_t kInstances = 3000;
constexpr int32_t kMaxNodes = 8;
constexpr int32_t kMaxStrategies = 4;
constexpr int kMaxReportedFailures = 10;

bool Close(long double a, long double b) {
  return std::fabs(a - b) <= 1e-9L * std::max(1.0L, std::fabs(b));
}

std::string Replay(uint64_t seed, const testing::RandomProblemSpec& spec) {
  return "replay: seed " + std::to_string(seed) + ", spec " + testing::Describe(spec) +
         " (RandomProblem(RandomSmallSpec(seed, " + std::to_string(kMaxNodes) + ", " +
         std::to_string(kMaxStrategies) + "), seed))";
}

// Checks one instance; returns "" or a description of the mismatch.
std::string CheckInstance(const ShardingProblem& problem, const testing::BruteForceResult& truth,
                          const SolveResult& result) {
  std::ostringstream why;
  if (!truth.feasible) {
    if (result.status != SolveStatus::kInfeasible) {
      why << "brute force: infeasible; solver: " << SolveStatusName(result.status) << " ("
          << result.message << ") assignment " << FormatAssignment(result.assignment);
    }
    return why.str();
  }
  if (result.status != SolveStatus::kOptimal) {
    why << "brute force: optimum " << static_cast<double>(truth.optimum) << " at "
        << FormatAssignment(truth.assignment) << "; solver: " << SolveStatusName(result.status)
        << " (" << result.message << ")";
    return why.str();
  }
  const Evaluation e = EvaluateAssignment(problem, result.assignment);
  if (!e.feasible || !Close(e.cost, truth.optimum) || !Close(result.objective, truth.optimum) ||
      result.lower_bound > truth.optimum + 1e-9L * std::max(1.0L, std::fabs(truth.optimum))) {
    why.precision(17);
    why << "brute force: optimum " << static_cast<double>(truth.optimum) << " at "
        << FormatAssignment(truth.assignment) << "; solver: assignment "
        << FormatAssignment(result.assignment) << " evaluates to " << static_cast<double>(e.cost)
        << (e.feasible ? " (feasible)" : " (infeasible: " + e.violation + ")")
        << ", reported objective " << static_cast<double>(result.objective) << ", lower bound "
        << static_cast<double>(result.lower_bound);
  }
  return why.str();
}

TEST(ShardingSolverDifferential, MatchesBruteForceOnRandomSmallProblems) {
  int failures = 0;
  int infeasible = 0, memory_binding = 0, with_followers = 0, with_aliases = 0, with_core = 0;
  int eliminated = 0, in_blocks = 0;
  for (uint64_t seed = 1; seed <= kInstances; ++seed) {
    const testing::RandomProblemSpec spec =
        testing::RandomSmallSpec(seed, kMaxNodes, kMaxStrategies);
    const ShardingProblem problem = testing::RandomProblem(spec, seed);
    const Status valid = ValidateProblem(problem);
    ASSERT_TRUE(valid.ok()) << valid.message() << "\n" << Replay(seed, spec);
    const testing::BruteForceResult truth = testing::BruteForceSolve(problem);
    ASSERT_FALSE(truth.too_large) << Replay(seed, spec);

    // Feature coverage of the generated set (asserted below).
    infeasible += truth.feasible ? 0 : 1;
    if (truth.feasible && problem.usage_limit) {
      ShardingProblem unlimited = problem;
      unlimited.usage_limit.reset();
      memory_binding += testing::BruteForceSolve(unlimited).optimum < truth.optimum ? 1 : 0;
    }
    with_followers += std::any_of(problem.nodes.begin(), problem.nodes.end(),
                                  [](const ShardingNode& n) { return n.follows >= 0; })
                          ? 1
                          : 0;
    with_aliases += problem.aliases.empty() ? 0 : 1;

    SolveOptions options;
    options.deterministic = true;
    // Every fourth instance also gets a random warm start (possibly inconsistent or infeasible):
    // it must not change the answer.
    if (seed % 4 == 0) {
      testing::SplitMix64 rng(seed * 7919);
      for (const ShardingNode& n : problem.nodes) {
        options.warm_start.push_back(static_cast<int32_t>(rng.Below(n.strategy_count())));
      }
    }
    // Three paths to the optimum, by seed: the exact elimination over the whole core, the
    // elimination by blocks of random groups, and GLPK after the local search.
    const int path = static_cast<int>(seed % 3);
    if (path == 1) {
      testing::SplitMix64 rng(seed * 104729);
      for (size_t v = 0; v < problem.nodes.size(); ++v) {
        options.node_groups.push_back(static_cast<int32_t>(rng.Between(-1, 3)));
      }
    }
    options.exact_elimination = path != 2;
    const SolveResult result = SolveSharding(problem, options);
    with_core += result.stats.core_nodes > 0 ? 1 : 0;
    eliminated += result.stats.elimination_solved ? 1 : 0;
    in_blocks += result.stats.elimination_blocks > 0 ? 1 : 0;
    std::string mismatch = CheckInstance(problem, truth, result);
    if (mismatch.empty() && seed % 10 == 0) {  // deterministic: the same answer again
      const SolveResult again = SolveSharding(problem, options);
      if (again.status != result.status || again.assignment != result.assignment) {
        mismatch = "second solve differs: " + FormatAssignment(again.assignment) + " vs " +
                   FormatAssignment(result.assignment);
      }
    }
    if (!mismatch.empty() && ++failures <= kMaxReportedFailures) {
      ADD_FAILURE() << mismatch << "\n" << Replay(seed, spec);
    }
  }
  EXPECT_EQ(failures, 0) << "instances where the solver disagrees with brute force (the first "
                         << kMaxReportedFailures << " are reported above)";
  // Every feature is well represented (fractions of kInstances, about half of what the
  // generator gives).
  const int n = static_cast<int>(kInstances);
  EXPECT_GE(infeasible, n / 12);
  EXPECT_GE(memory_binding, n / 10);
  EXPECT_GE(with_followers, n / 10);
  EXPECT_GE(with_aliases, n / 10);
  EXPECT_GE(with_core, n / 10);   // instances that reach the search after reductions
  EXPECT_GE(eliminated, n / 20);  // solved by the exact elimination
  EXPECT_GE(in_blocks, n / 60);   // of which by blocks
  std::printf(
      "instances %llu: infeasible %d, memory binding %d, followers %d, aliases %d, "
      "non-empty core %d, eliminated %d (in blocks %d)\n",
      static_cast<unsigned long long>(kInstances), infeasible, memory_binding, with_followers,
      with_aliases, with_core, eliminated, in_blocks);
}

// The example of REFERENCE §2, as a fixed anchor next to the random instances.
TEST(ShardingSolverDifferential, IopddlExample) {
  ShardingProblem p;
  const std::vector<std::vector<double>> costs = {{15}, {55, 65}, {25, 45, 35}, {85, 75}, {95}};
  const std::vector<std::vector<int64_t>> usages = {{10}, {25, 25}, {15, 20, 15}, {10, 10}, {15}};
  const std::vector<UsageInterval> intervals = {
      {30, 70}, {40, 70}, {50, 120}, {110, 140}, {110, 150}};
  for (size_t i = 0; i < costs.size(); ++i) {
    ShardingNode n;
    n.costs = costs[i];
    n.usages = usages[i];
    n.interval = intervals[i];
    p.nodes.push_back(n);
  }
  p.edges = {{0, 1, {30, 40}},
             {0, 2, {50, 10, 40}},
             {1, 3, {90, 10, 20, 80}},
             {2, 4, {60, 20, 30}},
             {3, 4, {70, 60}}};
  p.usage_limit = 50;
  SolveOptions options;
  options.deterministic = true;
  SolveResult r = SolveSharding(p, options);
  ASSERT_EQ(r.status, SolveStatus::kOptimal) << r.message;
  EXPECT_EQ(r.assignment, (std::vector<int32_t>{0, 0, 2, 1, 0}));
  EXPECT_EQ(EvaluateAssignment(p, r.assignment).cost, 445.0L);
  p.usage_limit.reset();
  r = SolveSharding(p, options);
  ASSERT_EQ(r.status, SolveStatus::kOptimal) << r.message;
  EXPECT_EQ(r.assignment, (std::vector<int32_t>{0, 0, 1, 1, 0}));
  EXPECT_EQ(r.objective, 415.0L);
  p.usage_limit = 44;
  r = SolveSharding(p, options);
  EXPECT_EQ(r.status, SolveStatus::kInfeasible);
  EXPECT_FALSE(r.message.empty());
}

}  // namespace
}  // namespace alpa
