// Variable elimination against brute force on random sums of table factors: the minimum, the
// back-substituted argument, the tables left over the variables that stay, the plan's limits
// and stopping.
#include "solvers/sharding/elimination/variable_elimination.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "support/random_problem.h"

namespace alpa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double Value(const Factor& f, const std::vector<int32_t>& domain,
             const std::vector<int32_t>& assignment) {
  size_t index = 0;
  for (int32_t v : f.vars) {
    index = index * static_cast<size_t>(domain[static_cast<size_t>(v)]) +
            static_cast<size_t>(assignment[static_cast<size_t>(v)]);
  }
  return f.table[index];
}

double Sum(const std::vector<Factor>& factors, const std::vector<int32_t>& domain,
           const std::vector<int32_t>& assignment) {
  double total = 0;
  for (const Factor& f : factors) total += Value(f, domain, assignment);
  return total;
}

// Calls visit on every assignment of the variables in `vars` (the others keep their values).
template <typename Visit>
void ForEach(const std::vector<int32_t>& vars, const std::vector<int32_t>& domain,
             std::vector<int32_t>* assignment, Visit visit) {
  for (int32_t v : vars) (*assignment)[static_cast<size_t>(v)] = 0;
  for (;;) {
    visit();
    size_t j = 0;
    while (j < vars.size()) {
      int32_t& x = (*assignment)[static_cast<size_t>(vars[j])];
      if (++x < domain[static_cast<size_t>(vars[j])]) break;
      x = 0;
      ++j;
    }
    if (j == vars.size()) return;
  }
}

struct RandomFactors {
  std::vector<int32_t> domain;
  std::vector<Factor> factors;
};

// 1..6 variables with domains 1..4 and 0..8 factors of 0..3 distinct variables; integer costs,
// some negative, some +inf.
RandomFactors MakeRandomFactors(uint64_t seed) {
  testing::SplitMix64 rng(seed);
  RandomFactors r;
  const int32_t n = static_cast<int32_t>(rng.Between(1, 6));
  for (int32_t v = 0; v < n; ++v) r.domain.push_back(static_cast<int32_t>(rng.Between(1, 4)));
  const int32_t count = static_cast<int32_t>(rng.Between(0, 8));
  for (int32_t i = 0; i < count; ++i) {
    Factor f;
    std::vector<int32_t> vars(static_cast<size_t>(n));
    std::iota(vars.begin(), vars.end(), 0);
    const int32_t arity = static_cast<int32_t>(rng.Between(0, std::min(3, n)));
    for (int32_t j = 0; j < arity; ++j) {
      const size_t pick = static_cast<size_t>(rng.Below(static_cast<int64_t>(vars.size())));
      f.vars.push_back(vars[pick]);
      vars.erase(vars.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    size_t size = 1;
    for (int32_t v : f.vars) size *= static_cast<size_t>(r.domain[static_cast<size_t>(v)]);
    for (size_t k = 0; k < size; ++k) {
      f.table.push_back(rng.Chance(0.05) ? kInf : static_cast<double>(rng.Between(-20, 100)));
    }
    r.factors.push_back(std::move(f));
  }
  return r;
}

TEST(VariableElimination, MinimumAndArgumentMatchBruteForce) {
  for (uint64_t seed = 1; seed <= 2000; ++seed) {
    const RandomFactors r = MakeRandomFactors(seed);
    const int32_t n = static_cast<int32_t>(r.domain.size());
    std::vector<int32_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    std::vector<int32_t> x(static_cast<size_t>(n), 0);
    double truth = kInf;
    ForEach(all, r.domain, &x, [&] { truth = std::min(truth, Sum(r.factors, r.domain, x)); });

    const EliminationPlan plan = PlanElimination(r.domain, r.factors, all, EliminationLimits{});
    ASSERT_TRUE(plan.within_limits) << "seed " << seed;
    std::vector<int32_t> sorted = plan.order;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, all) << "seed " << seed;
    const EliminationOutcome out = Eliminate(r.domain, r.factors, plan.order, SolveControl());
    ASSERT_TRUE(out.completed) << "seed " << seed;
    double constant = 0;
    for (const Factor& f : out.remaining) {
      ASSERT_TRUE(f.vars.empty()) << "seed " << seed;
      constant += f.table.at(0);
    }
    EXPECT_EQ(constant, truth) << "seed " << seed;
    std::vector<int32_t> best(static_cast<size_t>(n), -1);
    BackSubstitute(out.steps, &best);
    for (int32_t v = 0; v < n; ++v) {
      ASSERT_GE(best[static_cast<size_t>(v)], 0) << "seed " << seed;
      ASSERT_LT(best[static_cast<size_t>(v)], r.domain[static_cast<size_t>(v)]);
    }
    EXPECT_EQ(Sum(r.factors, r.domain, best), truth) << "seed " << seed;
  }
}

// Eliminating some variables leaves tables over the others that hold, for each of their joint
// values, the minimum over the eliminated ones; back substitution attains it.
TEST(VariableElimination, PartialEliminationLeavesTheMinimumOverTheRest) {
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    const RandomFactors r = MakeRandomFactors(seed * 31);
    const int32_t n = static_cast<int32_t>(r.domain.size());
    testing::SplitMix64 rng(seed);
    std::vector<int32_t> eliminate, stay;
    for (int32_t v = 0; v < n; ++v) (rng.Chance(0.5) ? eliminate : stay).push_back(v);
    const EliminationPlan plan =
        PlanElimination(r.domain, r.factors, eliminate, EliminationLimits{});
    ASSERT_TRUE(plan.within_limits);
    const EliminationOutcome out = Eliminate(r.domain, r.factors, plan.order, SolveControl());
    ASSERT_TRUE(out.completed);
    for (const Factor& f : out.remaining) {
      for (int32_t v : f.vars) {
        ASSERT_TRUE(std::find(stay.begin(), stay.end(), v) != stay.end()) << "seed " << seed;
      }
    }
    std::vector<int32_t> x(static_cast<size_t>(n), 0);
    ForEach(stay, r.domain, &x, [&] {
      double truth = kInf;
      std::vector<int32_t> y = x;
      ForEach(eliminate, r.domain, &y,
              [&] { truth = std::min(truth, Sum(r.factors, r.domain, y)); });
      EXPECT_EQ(Sum(out.remaining, r.domain, x), truth) << "seed " << seed;
      std::vector<int32_t> best = x;
      BackSubstitute(out.steps, &best);
      EXPECT_EQ(Sum(r.factors, r.domain, best), truth) << "seed " << seed;
    });
  }
}

// A 6x6 grid of 10-value variables has elimination width 6: 1e7-entry tables. The plan says so
// before anything is built.
TEST(VariableElimination, PlanStopsAtTheLimits) {
  const int32_t side = 6;
  std::vector<int32_t> domain(static_cast<size_t>(side * side), 10);
  std::vector<Factor> factors;
  for (int32_t r = 0; r < side; ++r) {
    for (int32_t c = 0; c < side; ++c) {
      const int32_t v = r * side + c;
      if (c + 1 < side) factors.push_back(Factor{{v, v + 1}, std::vector<double>(100, 1.0)});
      if (r + 1 < side) factors.push_back(Factor{{v, v + side}, std::vector<double>(100, 1.0)});
    }
  }
  std::vector<int32_t> all(domain.size());
  std::iota(all.begin(), all.end(), 0);
  EliminationLimits tight;
  tight.max_table = 1e5;
  const EliminationPlan plan = PlanElimination(domain, factors, all, tight);
  EXPECT_FALSE(plan.within_limits);
  EliminationLimits little_work;
  little_work.max_work = 1e6;
  EXPECT_FALSE(PlanElimination(domain, factors, all, little_work).within_limits);
  const EliminationPlan roomy = PlanElimination(domain, factors, all, EliminationLimits{});
  EXPECT_TRUE(roomy.within_limits);
  EXPECT_LE(roomy.largest_table, 1e7);
  EXPECT_EQ(roomy.order.size(), all.size());
}

TEST(VariableElimination, StopsWhenCancelled) {
  std::vector<int32_t> domain(12, 16);
  std::vector<Factor> factors;
  for (int32_t a = 0; a < 12; ++a) {
    for (int32_t b = a + 1; b < 12; b += 3) {
      factors.push_back(Factor{{a, b}, std::vector<double>(256, 1.0)});
    }
  }
  std::vector<int32_t> all(domain.size());
  std::iota(all.begin(), all.end(), 0);
  const EliminationPlan plan = PlanElimination(domain, factors, all, EliminationLimits{});
  ASSERT_TRUE(plan.within_limits);
  ASSERT_GT(plan.largest_table, 1e5);  // big enough to be polled inside a step
  std::atomic<bool> cancel{true};
  const EliminationOutcome out =
      Eliminate(domain, factors, plan.order, SolveControl::Unlimited(&cancel));
  EXPECT_FALSE(out.completed);
}

}  // namespace
}  // namespace alpa
