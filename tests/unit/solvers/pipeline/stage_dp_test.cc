// The stage DP: REFERENCE §4's hand cases, brute force and an all-t_max reference DP on random
// instances, memory and stage-count rules, input errors. Every plan is checked by the
// independent evaluator below.
#include "solvers/pipeline/stage_dp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "support/stage_dp_brute_force.h"

namespace alpa {
namespace {

using testing::SolveStageDpBruteForce;

constexpr double kInf = std::numeric_limits<double>::infinity();

StageCandidate Cand(int32_t first, int32_t last, int32_t submesh, double latency,
                    double overhead = 0, int32_t max_stages_after = 100) {
  StageCandidate c;
  c.first_layer = first;
  c.last_layer = last;
  c.submesh = submesh;
  c.latency = latency;
  c.iteration_overhead = overhead;
  c.max_stages_after = max_stages_after;
  return c;
}

// Recomputes T from the plan and checks every rule; returns T (NaN when the plan is broken).
double CheckPlan(const StageDpInput& in, const StageDpResult& r) {
  EXPECT_TRUE(r.feasible);
  const int32_t n = static_cast<int32_t>(r.stages.size());
  EXPECT_GE(n, 1);
  if (in.max_stages > 0) {
    EXPECT_LE(n, in.max_stages);
  }
  int32_t next_layer = 0;
  int64_t devices = 0;
  double sum = 0, worst = 0;
  for (int32_t x = 0; x < n; ++x) {
    const int32_t j = r.stages[static_cast<size_t>(x)];
    if (j < 0 || j >= static_cast<int32_t>(in.candidates.size())) {
      ADD_FAILURE() << "stage " << x << ": bad candidate " << j;
      return std::nan("");
    }
    const StageCandidate& c = in.candidates[static_cast<size_t>(j)];
    EXPECT_EQ(c.first_layer, next_layer) << "stage " << x;
    EXPECT_GE(c.max_stages_after, n - 1 - x) << "stage " << x << " breaks the memory rule";
    next_layer = c.last_layer + 1;
    devices += in.submeshes[static_cast<size_t>(c.submesh)].num_devices();
    sum += c.latency + c.iteration_overhead;
    worst = std::max(worst, c.latency);
  }
  EXPECT_EQ(next_layer, in.num_layers);
  EXPECT_EQ(devices, in.hosts * in.devices_per_host);
  const double t = sum + static_cast<double>(in.microbatches - 1) * worst;
  EXPECT_NEAR(r.objective, t, 1e-12 * std::max(1.0, std::abs(t)));
  EXPECT_EQ(r.max_latency, worst);
  return t;
}

// Four layers of cost 1 on 1 x 4; a stage of layers i..j on n devices takes (j - i + 1) / n,
// divided by `efficiency` when n > 1. Candidates for every range and every enumerated shape.
StageDpInput ReferenceCase(double efficiency, int64_t microbatches) {
  StageDpInput in;
  in.num_layers = 4;
  in.hosts = 1;
  in.devices_per_host = 4;
  in.submeshes = EnumerateSubmeshShapes(1, 4);
  in.microbatches = microbatches;
  for (int32_t i = 0; i < 4; ++i) {
    for (int32_t j = i; j < 4; ++j) {
      for (size_t m = 0; m < in.submeshes.size(); ++m) {
        const double n = static_cast<double>(in.submeshes[m].num_devices());
        const double latency = (j - i + 1) / (n > 1 ? n * efficiency : n);
        in.candidates.push_back(Cand(i, j, static_cast<int32_t>(m), latency));
      }
    }
  }
  return in;
}

const SubmeshShape& StageShape(const StageDpInput& in, const StageDpResult& r, size_t x) {
  return in.submeshes[static_cast<size_t>(in.candidates[static_cast<size_t>(r.stages[x])].submesh)];
}

TEST(StageDp, ReferencePerfectScalingIsOneStage) {
  const StageDpInput in = ReferenceCase(1.0, 8);
  Result<StageDpResult> r = SolveStageDp(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(CheckPlan(in, r.value()), 8.0);
  EXPECT_DOUBLE_EQ(r.value().objective, 8.0);
  ASSERT_EQ(r.value().stages.size(), 1u);
  EXPECT_EQ(StageShape(in, r.value(), 0), (SubmeshShape{1, 4}));
}

TEST(StageDp, ReferenceHalfEfficiencyIsFourStages) {
  const StageDpInput in = ReferenceCase(0.5, 8);
  Result<StageDpResult> r = SolveStageDp(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(CheckPlan(in, r.value()), 11.0);
  ASSERT_EQ(r.value().stages.size(), 4u);
  for (size_t x = 0; x < 4; ++x) {
    const StageCandidate& c = in.candidates[static_cast<size_t>(r.value().stages[x])];
    EXPECT_EQ(c.first_layer, static_cast<int32_t>(x));
    EXPECT_EQ(c.last_layer, static_cast<int32_t>(x));
    EXPECT_EQ(StageShape(in, r.value(), x), (SubmeshShape{1, 1}));
  }
  EXPECT_DOUBLE_EQ(r.value().max_latency, 1.0);
}

TEST(StageDp, ReferenceHalfEfficiencyOneMicrobatchIsOneStage) {
  const StageDpInput in = ReferenceCase(0.5, 1);
  Result<StageDpResult> r = SolveStageDp(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(CheckPlan(in, r.value()), 2.0);
  ASSERT_EQ(r.value().stages.size(), 1u);
  EXPECT_EQ(StageShape(in, r.value(), 0), (SubmeshShape{1, 4}));
}

// Two layers on 1 x 2: single-layer stages cost 1 each on (1, 1), both layers on (1, 2) cost 5.
StageDpInput TwoLayers(int32_t first_stage_max_after) {
  StageDpInput in;
  in.num_layers = 2;
  in.hosts = 1;
  in.devices_per_host = 2;
  in.submeshes = {{1, 1}, {1, 2}};
  in.candidates = {Cand(0, 0, 0, 1, 0, first_stage_max_after), Cand(1, 1, 0, 1, 0, 0),
                   Cand(0, 1, 1, 5, 0, 0)};
  return in;
}

TEST(StageDp, MemoryRuleAndStageLimit) {
  StageDpInput in = TwoLayers(1);
  Result<StageDpResult> r = SolveStageDp(in);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(CheckPlan(in, r.value()), 2.0);
  EXPECT_EQ(r.value().stages, (std::vector<int32_t>{0, 1}));

  in = TwoLayers(0);  // the first stage cannot hold a later stage's worth of activations
  r = SolveStageDp(in);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(CheckPlan(in, r.value()), 5.0);
  EXPECT_EQ(r.value().stages, (std::vector<int32_t>{2}));

  in = TwoLayers(1);
  in.max_stages = 1;
  r = SolveStageDp(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().stages, (std::vector<int32_t>{2}));

  in = TwoLayers(1);
  in.candidates[2].max_stages_after = -1;  // never fits
  in.max_stages = 1;
  r = SolveStageDp(in);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().feasible);
}

TEST(StageDp, InfeasibleIsNotAnError) {
  StageDpInput in;
  in.num_layers = 1;
  in.hosts = 1;
  in.devices_per_host = 4;
  in.submeshes = {{1, 2}};
  in.candidates = {Cand(0, 0, 0, 1)};  // 2 devices can never make 4
  for (auto solve : {SolveStageDp, SolveStageDpBruteForce}) {
    Result<StageDpResult> r = solve(in);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_FALSE(r.value().feasible);
    EXPECT_TRUE(r.value().stages.empty());
  }
  in.candidates.clear();
  Result<StageDpResult> r = SolveStageDp(in);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().feasible);
}

// Random instance: every shape kept with probability 0.8, 1..3 configs per (range, shape) with
// latencies that often tie, overheads by `seed % 3` (zero, positive, down to -0.9 t).
StageDpInput RandomInstance(uint32_t seed, int32_t min_layers, int32_t max_layers) {
  std::mt19937 rng(seed);
  auto uniform_int = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  static const int64_t kClusters[][2] = {{1, 4}, {2, 2}, {1, 6}, {3, 2}, {2, 4}};
  const auto* cluster = kClusters[uniform_int(0, 4)];
  StageDpInput in;
  in.num_layers = static_cast<int32_t>(uniform_int(min_layers, max_layers));
  in.hosts = cluster[0];
  in.devices_per_host = cluster[1];
  for (const SubmeshShape& s : EnumerateSubmeshShapes(in.hosts, in.devices_per_host)) {
    if (uniform(0, 1) < 0.8) in.submeshes.push_back(s);
  }
  in.microbatches = uniform_int(1, 8);
  in.max_stages = uniform(0, 1) < 0.3 ? static_cast<int32_t>(uniform_int(1, in.num_layers)) : 0;
  const int32_t layers = in.num_layers;
  for (int32_t i = 0; i < layers; ++i) {
    for (int32_t j = i; j < layers; ++j) {
      for (size_t m = 0; m < in.submeshes.size(); ++m) {
        if (uniform(0, 1) < 0.25) continue;
        const int64_t configs = uniform_int(1, 3);
        for (int64_t c = 0; c < configs; ++c) {
          const double latency =
              uniform(0, 1) < 0.5 ? static_cast<double>(uniform_int(1, 6)) : uniform(0.1, 6.0);
          const double overhead = seed % 3 == 0   ? 0.0
                                  : seed % 3 == 1 ? uniform(0.0, 1.0)
                                                  : uniform(-0.9, 0.5) * latency;
          in.candidates.push_back(Cand(i, j, static_cast<int32_t>(m), latency, overhead,
                                       static_cast<int32_t>(uniform_int(-1, layers))));
          in.candidates.back().config = static_cast<int32_t>(c);
        }
      }
    }
  }
  return in;
}

void ExpectSameOptimum(const StageDpInput& in, const StageDpResult& dp, bool feasible,
                       double optimum, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(dp.feasible, feasible);
  EXPECT_LE(dp.t_max_tried, dp.t_max_values);
  if (!feasible) return;
  CheckPlan(in, dp);
  EXPECT_NEAR(dp.objective, optimum, 1e-9 * std::max(1.0, std::abs(optimum)));
}

TEST(StageDp, MatchesBruteForceOnRandomInstances) {
  int feasible = 0;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    const StageDpInput in = RandomInstance(seed, 1, 5);
    Result<StageDpResult> bf = SolveStageDpBruteForce(in);
    Result<StageDpResult> dp = SolveStageDp(in);
    ASSERT_TRUE(bf.ok()) << bf.status().message();
    ASSERT_TRUE(dp.ok()) << dp.status().message();
    if (bf.value().feasible) {
      CheckPlan(in, bf.value());
      ++feasible;
    }
    EXPECT_EQ(dp.value().t_max_values, bf.value().t_max_values);
    ExpectSameOptimum(in, dp.value(), bf.value().feasible, bf.value().objective,
                      "seed " + std::to_string(seed));
  }
  EXPECT_GE(feasible, 100);  // the instances are not trivially infeasible
}

// Alpa's enumeration without the early stop or the bisection: the DP at every distinct latency.
double AllTMaxReference(const StageDpInput& in, bool* feasible) {
  const int32_t layers = in.num_layers;
  const int64_t total = in.hosts * in.devices_per_host;
  const int32_t max_stages = in.max_stages > 0 ? in.max_stages : layers;
  std::vector<double> latencies;
  std::vector<std::vector<const StageCandidate*>> starting(static_cast<size_t>(layers));
  for (const StageCandidate& c : in.candidates) {
    latencies.push_back(c.latency);
    starting[static_cast<size_t>(c.first_layer)].push_back(&c);
  }
  // f[(s * (layers + 1) + k) * (total + 1) + d]: s stages on layers k.. with d devices.
  std::vector<double> f(static_cast<size_t>((layers + 1) * (layers + 1) * (total + 1)));
  auto at = [&](int32_t s, int32_t k, int64_t d) -> double& {
    return f[static_cast<size_t>((s * (layers + 1) + k) * (total + 1) + d)];
  };
  double best = kInf;
  for (double t_max : latencies) {
    std::fill(f.begin(), f.end(), kInf);
    at(0, layers, 0) = 0;
    for (int32_t k = layers - 1; k >= 0; --k) {
      for (int32_t s = 1; s <= layers; ++s) {
        for (int64_t d = 0; d <= total; ++d) {
          for (const StageCandidate* c : starting[static_cast<size_t>(k)]) {
            const int64_t n = in.submeshes[static_cast<size_t>(c->submesh)].num_devices();
            if (c->latency > t_max || c->max_stages_after < s - 1 || n > d) continue;
            const double rest = at(s - 1, c->last_layer + 1, d - n);
            at(s, k, d) = std::min(at(s, k, d), c->latency + c->iteration_overhead + rest);
          }
        }
      }
    }
    for (int32_t s = 1; s <= max_stages; ++s) {
      best = std::min(best, at(s, 0, total) + static_cast<double>(in.microbatches - 1) * t_max);
    }
  }
  *feasible = best < kInf;
  return best;
}

// Latencies that follow the work (layer costs over devices, efficiency falling with size and
// across hosts), so G(t_max) falls in many small steps, and memory that often binds. With
// `near_ties`, scaling is perfect up to a relative noise of 1e-6, so many plans come within
// 1e-5 of the optimum and a solver that is only nearly exact fails.
StageDpInput ScalingInstance(uint32_t seed, bool near_ties) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  static const int64_t kClusters[][2] = {{2, 4}, {1, 8}, {4, 2}, {2, 2}};
  static const int64_t kMicrobatches[] = {1, 2, 4, 8, 16, 32};
  static const double kMemory[] = {1, 2, 4, 100};
  const auto* cluster = kClusters[seed % 4];
  StageDpInput in;
  in.num_layers = static_cast<int32_t>(6 + seed % 5);
  in.hosts = cluster[0];
  in.devices_per_host = cluster[1];
  in.submeshes = EnumerateSubmeshShapes(in.hosts, in.devices_per_host);
  in.microbatches = kMicrobatches[(seed / 4) % 6];
  const double memory = kMemory[(seed / 3) % 4];
  std::vector<double> cost(static_cast<size_t>(in.num_layers));
  for (double& c : cost) c = uniform(0.5, 1.5);
  for (int32_t i = 0; i < in.num_layers; ++i) {
    double sum = 0;
    for (int32_t j = i; j < in.num_layers; ++j) {
      sum += cost[static_cast<size_t>(j)];
      for (size_t m = 0; m < in.submeshes.size(); ++m) {
        const double n = static_cast<double>(in.submeshes[m].num_devices());
        for (int32_t config = 0; config < 3; ++config) {
          double efficiency = std::pow(0.9 + 0.03 * config, std::log2(n));
          if (in.submeshes[m].hosts > 1) efficiency *= 0.8;
          if (near_ties) efficiency = 1;
          const double latency = sum / (n * efficiency) * uniform(1.0, near_ties ? 1 + 1e-6 : 1.05);
          const double per_microbatch = (j - i + 1) / n * (1 + 0.3 * config);
          in.candidates.push_back(
              Cand(i, j, static_cast<int32_t>(m), latency, 0.02 * sum / n * (1 + config),
                   static_cast<int32_t>(std::floor(memory / per_microbatch)) - 1));
        }
      }
    }
  }
  return in;
}

TEST(StageDp, MatchesAllTMaxEnumerationOnLargerInstances) {
  int64_t tried = 0, values = 0;
  for (uint32_t seed = 1000; seed < 1072; ++seed) {
    const uint32_t kind = seed % 3;
    const StageDpInput in =
        kind == 0 ? RandomInstance(seed, 6, 10) : ScalingInstance(seed, kind == 2);
    bool feasible = false;
    const double optimum = AllTMaxReference(in, &feasible);
    Result<StageDpResult> dp = SolveStageDp(in);
    ASSERT_TRUE(dp.ok()) << dp.status().message();
    ExpectSameOptimum(in, dp.value(), feasible, optimum, "seed " + std::to_string(seed));
    tried += dp.value().t_max_tried;
    values += dp.value().t_max_values;
  }
  EXPECT_LT(tried * 4, values);  // the bisection and the early stop skip most t_max values
}

// Every entry of the per-stage-count search is the answer SolveStageDp gives with that count
// pinned (min_stages = max_stages = s): the same plan, objective and max latency; counts beyond
// the returned ones have no plan. The small instances are checked against the brute force too.
void ExpectPerCountMatchesPinned(const StageDpInput& in, bool brute_force, int64_t* per_tried,
                                 int64_t* pinned_tried) {
  Result<std::vector<StageDpResult>> per = SolveStageDpPerStageCount(in);
  ASSERT_TRUE(per.ok()) << per.status().message();
  const std::vector<StageDpResult>& by_count = per.value();
  if (!by_count.empty()) *per_tried += by_count[0].t_max_tried;
  const int32_t most = in.max_stages > 0 ? in.max_stages : in.num_layers;
  for (int32_t s = 1; s <= most; ++s) {
    SCOPED_TRACE("stages " + std::to_string(s));
    StageDpInput pinned = in;
    pinned.min_stages = pinned.max_stages = s;
    Result<StageDpResult> one = SolveStageDp(pinned);
    ASSERT_TRUE(one.ok()) << one.status().message();
    *pinned_tried += one.value().t_max_tried;
    if (static_cast<size_t>(s) > by_count.size() || s < in.min_stages) {
      EXPECT_FALSE(one.value().feasible && s >= in.min_stages);
      if (static_cast<size_t>(s) <= by_count.size()) {
        EXPECT_FALSE(by_count[static_cast<size_t>(s) - 1].feasible);
      }
      continue;
    }
    const StageDpResult& got = by_count[static_cast<size_t>(s) - 1];
    ASSERT_EQ(got.feasible, one.value().feasible);
    if (brute_force) {
      Result<StageDpResult> bf = SolveStageDpBruteForce(pinned);
      ASSERT_TRUE(bf.ok()) << bf.status().message();
      ExpectSameOptimum(pinned, got, bf.value().feasible, bf.value().objective, "brute force");
    }
    if (!got.feasible) continue;
    EXPECT_EQ(static_cast<int32_t>(got.stages.size()), s);
    CheckPlan(pinned, got);
    EXPECT_EQ(got.stages, one.value().stages);
    EXPECT_EQ(got.objective, one.value().objective);
    EXPECT_EQ(got.max_latency, one.value().max_latency);
  }
}

TEST(StageDp, PerStageCountMatchesPinnedSolves) {
  int64_t per_tried = 0, pinned_tried = 0;
  for (uint32_t seed = 0; seed < 120; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ExpectPerCountMatchesPinned(RandomInstance(seed, 1, 5), true, &per_tried, &pinned_tried);
  }
  per_tried = pinned_tried = 0;  // the count below is over the larger instances
  for (uint32_t seed = 1000; seed < 1036; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const uint32_t kind = seed % 3;
    const StageDpInput in =
        kind == 0 ? RandomInstance(seed, 6, 10) : ScalingInstance(seed, kind == 2);
    ExpectPerCountMatchesPinned(in, false, &per_tried, &pinned_tried);
  }
  // One search for all counts evaluates the DP far less often than one search per count.
  EXPECT_LT(per_tried * 3, pinned_tried * 2) << per_tried << " vs " << pinned_tried;
}

TEST(StageDp, PerStageCountRejectsWhatSolveRejects) {
  StageDpInput in = RandomInstance(3, 4, 4);
  in.microbatches = 0;
  Result<std::vector<StageDpResult>> r = SolveStageDpPerStageCount(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("microbatches must be >= 1"), std::string::npos);
}

TEST(StageDp, Deterministic) {
  const StageDpInput in = RandomInstance(7, 8, 8);
  Result<StageDpResult> a = SolveStageDp(in);
  Result<StageDpResult> b = SolveStageDp(in);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value().stages, b.value().stages);
  EXPECT_EQ(a.value().objective, b.value().objective);
  EXPECT_EQ(a.value().t_max_tried, b.value().t_max_tried);
}

void ExpectInvalid(const StageDpInput& in, const std::string& fragment) {
  SCOPED_TRACE(fragment);
  for (auto solve : {SolveStageDp, SolveStageDpBruteForce}) {
    Result<StageDpResult> r = solve(in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
  }
}

TEST(StageDp, InvalidInputNamesTheElement) {
  StageDpInput base;
  base.num_layers = 8;
  base.hosts = 1;
  base.devices_per_host = 8;
  base.submeshes = EnumerateSubmeshShapes(1, 8);
  for (int32_t k = 0; k < 8; ++k) base.candidates.push_back(Cand(k, 7, k % 4, 1.0));
  ASSERT_TRUE(SolveStageDp(base).ok());

  StageDpInput in = base;
  in.candidates[7].last_layer = 9;
  ExpectInvalid(in, "stage candidate 7: last_layer 9 is outside 7..7");
  in = base;
  in.candidates[3].last_layer = 2;
  ExpectInvalid(in, "stage candidate 3: last_layer 2 is outside 3..7");
  in = base;
  in.candidates[2].first_layer = -1;
  ExpectInvalid(in, "stage candidate 2: first_layer -1 is outside 0..7");
  in = base;
  in.candidates[5].submesh = 4;
  ExpectInvalid(in, "stage candidate 5: submesh 4 is outside 0..3");
  in = base;
  in.candidates[6].latency = std::nan("");
  ExpectInvalid(in, "stage candidate 6: latency");
  in = base;
  in.candidates[1].latency = -1;
  ExpectInvalid(in, "stage candidate 1: latency -1 is not a finite number >= 0");
  in = base;
  in.candidates[0].iteration_overhead = kInf;
  ExpectInvalid(in, "stage candidate 0: iteration_overhead inf");
  in = base;
  in.microbatches = 0;
  ExpectInvalid(in, "microbatches must be >= 1 (got 0)");
  in = base;
  in.num_layers = 0;
  ExpectInvalid(in, "num_layers must be >= 1");
  in = base;
  in.hosts = 0;
  ExpectInvalid(in, "hosts must be in");
  in = base;
  in.max_stages = -2;
  ExpectInvalid(in, "max_stages must be >= 0");
  in = base;
  in.submeshes[1] = {1, 3};
  ExpectInvalid(in, "submesh 1 (1, 3): 3 devices do not divide a host's 8");
}

// ---- Pools (mixed clusters) ---------------------------------------------------------------

// A plan on pools: every stage on a pool of the order, the pools' stages in the order's blocks,
// each block filling its pool; returns the objective.
double CheckPoolPlan(const StageDpInput& in, const std::vector<int32_t>& order,
                     const StageDpResult& r) {
  EXPECT_TRUE(r.feasible);
  size_t block = 0;
  int64_t used_in_block = 0;
  int32_t next_layer = 0;
  double sum = 0, worst = 0;
  const auto n = static_cast<int32_t>(r.stages.size());
  for (int32_t x = 0; x < n; ++x) {
    const StageCandidate& c = in.candidates[static_cast<size_t>(r.stages[static_cast<size_t>(x)])];
    EXPECT_EQ(c.first_layer, next_layer);
    EXPECT_GE(c.max_stages_after, n - 1 - x);
    next_layer = c.last_layer + 1;
    if (block < order.size() &&
        used_in_block == in.pool_devices[static_cast<size_t>(order[block])]) {
      ++block;
      used_in_block = 0;
    }
    EXPECT_LT(block, order.size()) << "stage " << x << " beyond the pools";
    if (block >= order.size()) return std::nan("");
    EXPECT_EQ(c.pool, order[block]) << "stage " << x;
    used_in_block += in.submeshes[static_cast<size_t>(c.submesh)].num_devices();
    sum += c.latency + c.iteration_overhead;
    worst = std::max(worst, c.latency);
  }
  EXPECT_EQ(next_layer, in.num_layers);
  EXPECT_EQ(block + 1, order.size());
  EXPECT_EQ(used_in_block, in.pool_devices[static_cast<size_t>(order.back())]);
  return sum + static_cast<double>(in.microbatches - 1) * worst;
}

// Two pools of the same shapes, the second twice as slow: the DP sizes the stages by speed (the
// fast pool takes the larger layer range), keeps each pool's stages together in the order asked,
// and uses only the pools the order names.
TEST(StageDp, PoolsSizeStagesBySpeedInTheirOrder) {
  StageDpInput in;
  in.num_layers = 6;
  in.hosts = 2;
  in.devices_per_host = 2;
  in.submeshes = {{1, 2}};
  in.pool_devices = {2, 2};
  in.microbatches = 8;
  for (int32_t pool = 0; pool < 2; ++pool) {
    for (int32_t i = 0; i < 6; ++i) {
      for (int32_t j = i; j < 6; ++j) {
        StageCandidate c = Cand(i, j, 0, (j - i + 1) * (pool == 0 ? 1.0 : 2.0), 0, 6);
        c.pool = pool;
        in.candidates.push_back(c);
      }
    }
  }
  for (const std::vector<int32_t>& order : {std::vector<int32_t>{0, 1}, {1, 0}}) {
    in.pool_order = order;
    Result<StageDpResult> r = SolveStageDp(in);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r.value().stages.size(), 2u);
    CheckPoolPlan(in, order, r.value());
    // 4 layers on the fast pool (4 s), 2 on the slow one (4 s): T = 8 + 7 * 4.
    EXPECT_DOUBLE_EQ(r.value().objective, 36.0);
    const StageCandidate& fast =
        in.candidates[static_cast<size_t>(r.value().stages[order[0] == 0 ? 0 : 1])];
    EXPECT_EQ(fast.pool, 0);
    EXPECT_EQ(fast.last_layer - fast.first_layer + 1, 4);
  }
  // The fast pool alone: half the devices, every layer on it.
  in.pool_order = {0};
  Result<StageDpResult> alone = SolveStageDp(in);
  ASSERT_TRUE(alone.ok());
  ASSERT_TRUE(alone.value().feasible);
  EXPECT_DOUBLE_EQ(CheckPoolPlan(in, {0}, alone.value()), 48.0);  // 6 + 7 * 6
}

TEST(StageDp, MatchesBruteForceOnRandomPooledInstances) {
  int feasible = 0;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    StageDpInput in = RandomInstance(seed, 1, 5);
    std::mt19937 rng(seed + 1000);
    // Split the hosts into pools (one host each where there are several), candidates over them.
    const auto pools = static_cast<int32_t>(in.hosts);
    in.pool_devices.assign(static_cast<size_t>(pools), in.devices_per_host);
    for (StageCandidate& c : in.candidates) {
      c.pool = static_cast<int32_t>(std::uniform_int_distribution<int32_t>(0, pools - 1)(rng));
    }
    std::vector<int32_t> order(static_cast<size_t>(pools));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    if (pools > 1 && seed % 2 == 0) order.pop_back();  // a pool left out
    in.pool_order = order;
    Result<StageDpResult> bf = SolveStageDpBruteForce(in);
    Result<StageDpResult> dp = SolveStageDp(in);
    ASSERT_TRUE(bf.ok()) << bf.status().message();
    ASSERT_TRUE(dp.ok()) << dp.status().message();
    SCOPED_TRACE("seed " + std::to_string(seed));
    ASSERT_EQ(dp.value().feasible, bf.value().feasible);
    if (!bf.value().feasible) continue;
    ++feasible;
    const double t = CheckPoolPlan(in, order, dp.value());
    EXPECT_NEAR(t, bf.value().objective, 1e-9 * std::max(1.0, std::abs(t)));
    EXPECT_NEAR(dp.value().objective, t, 1e-12 * std::max(1.0, std::abs(t)));
  }
  EXPECT_GE(feasible, 40);
}

TEST(StageDp, PoolErrorsNameTheElement) {
  StageDpInput in;
  in.num_layers = 2;
  in.hosts = 2;
  in.devices_per_host = 2;
  in.submeshes = {{1, 2}};
  in.candidates = {Cand(0, 1, 0, 1.0, 0, 1)};
  in.pool_devices = {2, 3};
  auto message = [&] {
    Result<StageDpResult> r = SolveStageDp(in);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(message().find("pool 1: 3 devices is not a whole number of hosts of 2"),
            std::string::npos);
  in.pool_devices = {2};
  EXPECT_NE(message().find("pools: their 2 devices are not the cluster's 4"), std::string::npos);
  in.pool_devices = {2, 2};
  in.pool_order = {1, 1};
  EXPECT_NE(message().find("pool_order: pool 1 appears twice"), std::string::npos);
  in.pool_order = {2};
  EXPECT_NE(message().find("pool_order: pool 2 is outside 0..1"), std::string::npos);
  in.pool_order = {};
  in.candidates[0].pool = 2;
  EXPECT_NE(message().find("stage candidate 0: pool 2 is outside 0..1"), std::string::npos);
}

}  // namespace
}  // namespace alpa
