// Warm starts (AutoShardOptions::warm_start): a solve of the same graph structure at another
// batch size starts the solve, which then does a share of the local search's work. The planner
// solves every layer piece at several microbatch counts this way.
#include "solvers/auto_sharding/warm_start.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "models/model_zoo.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/auto_sharding/auto_sharding_problem.h"
#include "solvers/auto_sharding/plan_check.h"

namespace alpa {
namespace {

std::string SmallGpt(int64_t batch, int32_t layers = 2) {
  return "gpt:layers=" + std::to_string(layers) +
         ",hidden=512,heads=8,seq=128,vocab=2048,batch=" + std::to_string(batch);
}

struct Solve {
  Graph graph;
  AutoShardResult result;
};

// The planner's kind of solve (local search alone, deterministic work) on a (2, 4) mesh of one
// p3.16xlarge, optionally from `warm` with `effort`.
Solve SolveGpt(const std::string& spec, std::shared_ptr<const AutoShardResult> warm = nullptr,
               double effort = 0.25) {
  Result<Graph> g = BuildModel(spec);
  EXPECT_TRUE(g.ok()) << g.status().message();
  const Cluster cluster = MakePresetCluster("p3.16xlarge", 1).value();
  const LogicalMesh mesh = DeriveLogicalMesh(cluster, SubmeshShape{1, 8}, {2, 4}).value();
  AutoShardOptions options;
  options.solve.deterministic = true;
  options.solve.deterministic_searches = 1;
  options.solve.threads = 1;
  options.solve.heuristic_only = true;
  options.warm_start = std::move(warm);
  options.solve.warm_start_effort = effort;
  Result<AutoShardResult> r = AutoShard(g.value(), mesh, &cluster, options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  Solve solve{std::move(g).value(), std::move(r).value()};
  Status check = CheckShardingPlan(solve.graph, {2, 4}, solve.result, std::nullopt);
  EXPECT_TRUE(check.ok()) << check.message();
  return solve;
}

std::unique_ptr<AutoShardModel> ModelOf(const Graph& graph) {
  const Cluster cluster = MakePresetCluster("p3.16xlarge", 1).value();
  const LogicalMesh mesh = DeriveLogicalMesh(cluster, SubmeshShape{1, 8}, {2, 4}).value();
  Result<std::unique_ptr<AutoShardModel>> model =
      BuildAutoShardModel(graph, mesh, &cluster, AutoShardOptions{});
  EXPECT_TRUE(model.ok()) << model.status().message();
  return std::move(model).value();
}

TEST(WarmStart, ASolveMapsOntoItsOwnModelAsItsAnswer) {
  const Solve cold = SolveGpt(SmallGpt(16));
  ASSERT_FALSE(cold.result.node_strategies.empty());
  const std::unique_ptr<AutoShardModel> model = ModelOf(cold.graph);
  EXPECT_EQ(WarmStartAssignment(cold.graph, *model, cold.result), cold.result.node_strategies);
}

TEST(WarmStart, AnotherBatchSizeStartsTheSolveAndItReachesTheColdOptimum) {
  const auto at8 = std::make_shared<const AutoShardResult>(SolveGpt(SmallGpt(8)).result);
  const Solve cold = SolveGpt(SmallGpt(32));
  const std::unique_ptr<AutoShardModel> model = ModelOf(cold.graph);
  const std::vector<int32_t> start = WarmStartAssignment(cold.graph, *model, *at8);
  ASSERT_EQ(start.size(), model->problem.nodes.size());
  for (size_t n = 0; n < start.size(); ++n) {
    ASSERT_GE(start[n], 0);
    ASSERT_LT(start[n], model->problem.nodes[n].strategy_count());
    EXPECT_TRUE(std::isfinite(model->problem.nodes[n].costs[static_cast<size_t>(start[n])]))
        << "node " << n;
  }
  // A quarter of the work from the batch-8 layouts finds the same optimum as the cold solve.
  const Solve warm = SolveGpt(SmallGpt(32), at8, 0.25);
  EXPECT_NEAR(static_cast<double>(warm.result.objective),
              static_cast<double>(cold.result.objective),
              1e-9 * static_cast<double>(cold.result.objective));
  EXPECT_EQ(warm.result.counts.total(), cold.result.counts.total());
}

TEST(WarmStart, AnotherStructureStartsCold) {
  const auto other = std::make_shared<const AutoShardResult>(SolveGpt(SmallGpt(8, 3)).result);
  const Solve cold = SolveGpt(SmallGpt(8));
  const std::unique_ptr<AutoShardModel> model = ModelOf(cold.graph);
  EXPECT_TRUE(WarmStartAssignment(cold.graph, *model, *other).empty());
  const Solve warm = SolveGpt(SmallGpt(8), other, 0.25);
  EXPECT_EQ(warm.result.node_strategies, cold.result.node_strategies);
}

TEST(WarmStart, AnEffortOutsideZeroToOneIsTheColdSearch) {
  const auto at8 = std::make_shared<const AutoShardResult>(SolveGpt(SmallGpt(8)).result);
  const Solve full = SolveGpt(SmallGpt(16), at8, 1.0);
  for (double effort : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    const Solve odd = SolveGpt(SmallGpt(16), at8, effort);
    EXPECT_EQ(odd.result.node_strategies, full.result.node_strategies) << "effort " << effort;
  }
}

}  // namespace
}  // namespace alpa
