// The equivalence check catches a wrong plan: a plan with one collective dropped, or moved onto
// the wrong mesh dim (the wrong device group), does not run to the one-device result, or is
// refused by the lowering (its layouts no longer fit), or breaks the conformance check.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "exec/driver/plan_conformance.h"
#include "exec/driver/plan_run.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"

namespace alpa {
namespace {

const char* kGpt = "gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5";

struct Fixture {
  PipelinePlan plan;
  Graph whole;
};

Fixture Build(const char* model_spec, int64_t dp, int64_t tp) {
  Fixture f;
  Result<PlannerModel> model = PlannerModelFromSpec(model_spec);
  EXPECT_TRUE(model.ok());
  Result<Cluster> cluster = ParseClusterSpec("p3.16xlarge:devices_per_host=4");
  EXPECT_TRUE(cluster.ok());
  ManualPlanSpec spec;
  spec.data_parallel = dp;
  spec.tensor_parallel = tp;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  f.plan = std::move(plan).value();
  f.whole = model.value().build(1).value();
  return f;
}

// Whether the run of `plan` differs from one device (fails, or is off, or breaks conformance).
bool Detected(const PipelinePlan& plan, const Graph& whole, std::string& why) {
  PlanRunOptions options;
  options.steps = 2;
  options.check = true;
  Result<PlanRunReport> run = RunPlanOnThreads(plan, whole, options);
  if (!run.ok()) {
    why = "run: " + run.status().message();
    return true;
  }
  if (!run.value().passed) {
    why = "numerics: step results off";
    return true;
  }
  Status conforms = CheckExecutedAgainstPlan(plan, run.value());
  why = conforms.message();
  return !conforms.ok();
}

// The plan's collectives over mesh dim `dim` of size > 1, as (stage, piece, index).
std::vector<std::tuple<size_t, size_t, size_t>> Collectives(const PipelinePlan& plan) {
  std::vector<std::tuple<size_t, size_t, size_t>> out;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    for (size_t p = 0; p < plan.stages[s].pieces.size(); ++p) {
      const auto& list = plan.stages[s].pieces[p].sharding->collectives;
      for (size_t i = 0; i < list.size(); ++i) out.push_back({s, p, i});
    }
  }
  return out;
}

AutoShardResult& Mutable(PipelinePlan& plan, size_t s, size_t p) {
  StagePiece& piece = plan.stages[s].pieces[p];
  auto copy = std::make_shared<AutoShardResult>(*piece.sharding);
  piece.sharding = copy;
  return *copy;
}

TEST(PlanPerturbationTest, UnperturbedPlanPasses) {
  Fixture f = Build(kGpt, 2, 2);
  std::string why;
  EXPECT_FALSE(Detected(f.plan, f.whole, why)) << why;
}

TEST(PlanPerturbationTest, EveryDroppedCollectiveIsDetected) {
  Fixture f = Build(kGpt, 2, 2);
  const auto all = Collectives(f.plan);
  ASSERT_GE(all.size(), 4u);
  // Every fourth collective (the run takes a fraction of a second each).
  for (size_t k = 0; k < all.size(); k += 4) {
    const auto [s, p, i] = all[k];
    PipelinePlan perturbed = f.plan;
    AutoShardResult& r = Mutable(perturbed, s, p);
    const std::string what = r.collectives[i].description;
    r.collectives.erase(r.collectives.begin() + static_cast<std::ptrdiff_t>(i));
    std::string why;
    EXPECT_TRUE(Detected(perturbed, f.whole, why)) << "dropping " << what << " went unnoticed";
  }
}

TEST(PlanPerturbationTest, CollectiveOnTheWrongGroupIsDetected) {
  Fixture f = Build(kGpt, 2, 2);
  const auto all = Collectives(f.plan);
  int tried = 0;
  for (size_t k = 0; k < all.size() && tried < 6; k += 3) {
    const auto [s, p, i] = all[k];
    PipelinePlan perturbed = f.plan;
    AutoShardResult& r = Mutable(perturbed, s, p);
    PlannedCollective& c = r.collectives[i];
    if (c.mesh_dims.size() != 1) continue;
    c.mesh_dims[0] = 1 - c.mesh_dims[0];  // the other dim of the 2 x 2 mesh
    ++tried;
    std::string why;
    EXPECT_TRUE(Detected(perturbed, f.whole, why))
        << c.description << " over the other mesh dim went unnoticed";
  }
  EXPECT_GT(tried, 0);
}

}  // namespace
}  // namespace alpa
