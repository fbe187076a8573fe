// Property: normalization and the exact reductions never change the optimum. For random small
// problems (most without a usage limit, some with one), the brute-force optimum of the reduced
// core plus its constant equals the brute-force optimum of the original problem, and the core
// optimum expanded back to the original nodes evaluates (independently) to that same cost.
#include "solvers/sharding/reductions/reductions.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/problem/problem_io.h"
#include "core/problem/sharding_evaluator.h"
#include "core/problem/sharding_problem.h"
#include "solvers/sharding/normalize.h"
#include "solvers/sharding/work_problem.h"
#include "support/brute_force.h"
#include "support/random_problem.h"

namespace alpa {
namespace {

constexpr uint64_t kInstances = 2000;
constexpr int kMaxReportedFailures = 10;

bool Close(long double a, long double b) {
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= 1e-9L * std::max(1.0L, std::fabs(b));
}

struct WorkOptimum {
  bool feasible = false;
  long double objective = std::numeric_limits<long double>::infinity();
  std::vector<int32_t> assignment;
};

// Every assignment of a work problem: objective by WorkObjective (constant included), feasible
// when finite and every memory row holds.
WorkOptimum BruteForceWork(const WorkProblem& work) {
  WorkOptimum best;
  const int32_t n = work.node_count();
  for (int32_t v = 0; v < n; ++v) {
    if (work.strategy_count(v) == 0) return best;  // no choice left: infeasible
  }
  std::vector<int32_t> a(static_cast<size_t>(n), 0);
  while (true) {
    const long double objective = WorkObjective(work, a);
    if (!std::isinf(objective) && objective < best.objective && WorkMemoryFeasible(work, a)) {
      best.feasible = true;
      best.objective = objective;
      best.assignment = a;
    }
    int32_t digit = n;
    while (digit > 0) {
      const size_t v = static_cast<size_t>(digit - 1);
      if (++a[v] < work.strategy_count(digit - 1)) break;
      a[v] = 0;
      --digit;
    }
    if (digit == 0) break;
  }
  return best;
}

// Checks one problem; returns "" or what went wrong.
std::string CheckReductions(const ShardingProblem& problem) {
  std::ostringstream why;
  why.precision(17);
  const testing::BruteForceResult truth = testing::BruteForceSolve(problem);
  const Result<NormalizedProblem> normalized = Normalize(problem);
  if (!normalized.ok()) {
    if (normalized.status().code() != StatusCode::kInfeasible || truth.feasible) {
      why << "Normalize failed: " << normalized.status().message() << "; brute force "
          << (truth.feasible ? "optimum " + std::to_string(static_cast<double>(truth.optimum))
                             : std::string("infeasible"));
    }
    return why.str();
  }
  const NormalizedProblem& norm = normalized.value();
  if (norm.work_node_of.size() != problem.nodes.size()) {
    why << "work_node_of has " << norm.work_node_of.size() << " entries";
    return why.str();
  }

  // Normalization alone keeps the optimum (separates its bugs from the reductions' ones).
  const WorkOptimum work_best = BruteForceWork(norm.work);
  if (work_best.feasible != truth.feasible ||
      (truth.feasible && !Close(work_best.objective, truth.optimum))) {
    why << "normalized optimum " << static_cast<double>(work_best.objective)
        << " != original optimum " << static_cast<double>(truth.optimum);
    return why.str();
  }

  const ReducedProblem reduced(norm.work);
  const WorkProblem& core = reduced.core();
  if (reduced.stats().nodes_after != core.node_count() ||
      reduced.input_node_of_core().size() != static_cast<size_t>(core.node_count())) {
    why << "stats/core node counts disagree: " << reduced.stats().nodes_after << " vs "
        << core.node_count();
    return why.str();
  }
  const WorkOptimum core_best = BruteForceWork(core);
  if (core_best.feasible != truth.feasible) {
    why << "core is " << (core_best.feasible ? "feasible" : "infeasible") << ", original is not";
    return why.str();
  }
  if (!truth.feasible) return "";
  if (!Close(core_best.objective, truth.optimum)) {
    why << "core optimum " << static_cast<double>(core_best.objective) << " (constant "
        << static_cast<double>(core.constant) << ") != original optimum "
        << static_cast<double>(truth.optimum) << " at " << FormatAssignment(truth.assignment);
    return why.str();
  }

  const std::vector<int32_t> work_assignment = reduced.Expand(core_best.assignment);
  const std::vector<int32_t> original = ToOriginalAssignment(norm, work_assignment);
  const Evaluation e = EvaluateAssignment(problem, original);
  if (!e.feasible || !Close(e.cost, truth.optimum)) {
    why << "core optimum " << FormatAssignment(core_best.assignment) << " expands to "
        << FormatAssignment(original) << " which evaluates to " << static_cast<double>(e.cost)
        << (e.feasible ? "" : " (infeasible: " + e.violation + ")") << ", optimum "
        << static_cast<double>(truth.optimum);
    return why.str();
  }
  if (!Close(WorkObjective(norm.work, work_assignment), truth.optimum)) {
    why << "expanded work assignment costs "
        << static_cast<double>(WorkObjective(norm.work, work_assignment));
    return why.str();
  }
  if (reduced.Restrict(work_assignment) != core_best.assignment) {
    why << "Restrict(Expand(" << FormatAssignment(core_best.assignment)
        << ")) = " << FormatAssignment(reduced.Restrict(work_assignment));
    return why.str();
  }
  const std::optional<std::vector<int32_t>> back = ToWorkAssignment(norm, original);
  if (!back || *back != work_assignment) {
    why << "ToWorkAssignment(ToOriginalAssignment(w)) != w for w = "
        << FormatAssignment(work_assignment);
  }
  return why.str();
}

void RunProperty(bool keep_limit, uint64_t first_seed, int min_reduced_nodes) {
  int failures = 0;
  int reduced_nodes = 0;
  for (uint64_t seed = first_seed; seed < first_seed + kInstances; ++seed) {
    testing::RandomProblemSpec spec = testing::RandomSmallSpec(seed, 8, 4);
    if (!keep_limit) spec.memory = testing::MemoryMode::kNone;
    ShardingProblem problem = testing::RandomProblem(spec, seed);
    if (keep_limit && !problem.usage_limit) continue;  // this spec drew no memory
    ASSERT_TRUE(ValidateProblem(problem).ok()) << "seed " << seed;
    const std::string failure = CheckReductions(problem);
    if (!failure.empty() && ++failures <= kMaxReportedFailures) {
      ADD_FAILURE() << failure << "\nreplay: seed " << seed << ", spec " << testing::Describe(spec)
                    << (keep_limit ? "" : " with memory none");
    }
    const Result<NormalizedProblem> normalized = Normalize(problem);
    if (normalized.ok()) {
      const ReducedProblem reduced(normalized.value().work);
      reduced_nodes += reduced.stats().nodes_before - reduced.stats().nodes_after;
    }
  }
  EXPECT_EQ(failures, 0) << "instances where the optimum changed (the first "
                         << kMaxReportedFailures << " are reported above)";
  // The reductions must actually do something on these chains, trees and sparse graphs.
  EXPECT_GE(reduced_nodes, min_reduced_nodes);
  std::printf("%s: %d nodes eliminated\n", keep_limit ? "with limit" : "without limit",
              reduced_nodes);
}

TEST(ReductionsProperty, KeepTheOptimumWithoutUsageLimit) {
  RunProperty(false, 1, static_cast<int>(kInstances));
}

TEST(ReductionsProperty, KeepTheOptimumWithUsageLimit) {
  RunProperty(true, 100001, static_cast<int>(kInstances / 2));
}

}  // namespace
}  // namespace alpa
