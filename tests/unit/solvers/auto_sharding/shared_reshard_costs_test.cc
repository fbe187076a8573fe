// Resharding prices shared between solves (shared_reshard_costs.h): a move is priced by its
// bytes, not its shape, and solves that share prices give exactly the answers of solves that
// price every move themselves.
#include "solvers/auto_sharding/shared_reshard_costs.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "core/cluster/resharding.h"
#include "models/model_zoo.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/auto_sharding/plan_check.h"

namespace alpa {
namespace {

ShardingSpec Spec(const std::string& text) { return ParseShardingSpec(text).value(); }

LogicalMesh P3Mesh(std::vector<int64_t> shape) {
  const Cluster cluster = MakePresetCluster("p3.16xlarge", 1).value();
  return DeriveLogicalMesh(cluster, SubmeshShape{1, 8}, shape).value();
}

TEST(SharedReshardCosts, AMoveCostsTheSameForEveryShapeOfItsBytes) {
  const LogicalMesh mesh = P3Mesh({2, 4});
  ReshardOptions options;
  options.cost_mode = CostMode::kRealUnits;
  options.alpa_compatible = false;
  const std::vector<std::pair<std::string, std::string>> moves = {{"S0 S1", "R R"},
                                                                  {"S01 R", "R S10"},
                                                                  {"R R partial(0,1)", "S1 S0"},
                                                                  {"S1 R partial(0)", "S1 S0"},
                                                                  {"S0 R", "R S0"},
                                                                  {"R S0", "S01 R"}};
  for (const auto& [src, dst] : moves) {
    // 8 x 1024 and 64 x 128 floats, 64 x 256 halves: 32 KiB each.
    const Result<ReshardPlan> a = PlanReshard(Spec(src), Spec(dst), {8, 1024}, 4, mesh, options);
    const Result<ReshardPlan> b = PlanReshard(Spec(src), Spec(dst), {64, 128}, 4, mesh, options);
    const Result<ReshardPlan> c = PlanReshard(Spec(src), Spec(dst), {64, 256}, 2, mesh, options);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << src << " -> " << dst;
    EXPECT_GT(a.value().cost, 0) << src << " -> " << dst;
    EXPECT_EQ(a.value().cost, b.value().cost) << src << " -> " << dst;
    EXPECT_EQ(a.value().cost, c.value().cost) << src << " -> " << dst;
    EXPECT_EQ(a.value().NumCollectives(), b.value().NumCollectives()) << src << " -> " << dst;
  }
}

TEST(SharedReshardCosts, SpecsPackApartAndMeshesOfMoreDimsAreNotShared) {
  const std::vector<std::string> specs = {"R R",   "S0 R",           "R S0",
                                          "S01 R", "S10 R",          "S0 S1",
                                          "S1 S0", "R R partial(0)", "R S0 partial(1)"};
  std::vector<uint64_t> packed;
  for (const std::string& text : specs) {
    const std::optional<uint64_t> p = SharedReshardTable::PackSpec(Spec(text), 2);
    ASSERT_TRUE(p.has_value()) << text;
    for (uint64_t q : packed) EXPECT_NE(*p, q) << text;
    packed.push_back(*p);
  }
  // The same lists on a tensor of another rank: another key.
  EXPECT_NE(SharedReshardTable::PackSpec(Spec("S0 R R"), 2),
            SharedReshardTable::PackSpec(Spec("S0 R"), 2));
  EXPECT_FALSE(SharedReshardTable::PackSpec(Spec("S0 S1 S2 S3"), 4).has_value());
  EXPECT_FALSE(SharedReshardTable::PackSpec(Spec("S2 R"), 2).has_value());  // no mesh dim 2
}

TEST(SharedReshardCosts, AFullTableKeepsNoMoreMoves) {
  SharedReshardTable table(2);
  for (uint64_t b = 1; b <= 5; ++b) table.Insert({b, 1, 2}, PricedReshard{static_cast<double>(b)});
  EXPECT_EQ(table.size(), 2);
  ASSERT_TRUE(table.Find({2, 1, 2}).has_value());
  EXPECT_EQ(table.Find({2, 1, 2})->cost, 2.0);
  EXPECT_FALSE(table.Find({3, 1, 2}).has_value());
  EXPECT_FALSE(table.Find({2, 2, 1}).has_value());  // the other direction is another move
}

struct Solved {
  Graph graph;
  AutoShardResult result;
};

Solved SolveGpt(int64_t batch, const LogicalMesh& mesh, SharedReshardCosts* shared) {
  Result<Graph> g = BuildModel("gpt:layers=2,hidden=512,heads=8,seq=128,vocab=2048,batch=" +
                               std::to_string(batch));
  EXPECT_TRUE(g.ok()) << g.status().message();
  const Cluster cluster = MakePresetCluster("p3.16xlarge", 1).value();
  AutoShardOptions options;
  options.solve.deterministic = true;
  options.solve.deterministic_searches = 1;
  options.solve.threads = 1;
  options.solve.heuristic_only = true;  // the planner's kind of solve
  options.shared_reshard_costs = shared;
  Result<AutoShardResult> r = AutoShard(g.value(), mesh, &cluster, options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  Solved solved{std::move(g).value(), std::move(r).value()};
  const Status check = CheckShardingPlan(solved.graph, mesh.shape, solved.result, std::nullopt);
  EXPECT_TRUE(check.ok()) << check.message();
  return solved;
}

TEST(SharedReshardCosts, SolvesSharingPricesAnswerAsSolvesPricingAlone) {
  SharedReshardCosts shared;
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 4}, {4, 2}, {8, 1}}) {
    const LogicalMesh mesh = P3Mesh(shape);
    for (int64_t batch : {8, 16, 32}) {
      const Solved alone = SolveGpt(batch, mesh, nullptr);
      const Solved sharing = SolveGpt(batch, mesh, &shared);
      const std::string where = MeshShapeString(shape) + " batch " + std::to_string(batch);
      EXPECT_EQ(sharing.result.objective, alone.result.objective) << where;
      EXPECT_EQ(sharing.result.node_strategies, alone.result.node_strategies) << where;
      EXPECT_EQ(sharing.result.collectives.size(), alone.result.collectives.size()) << where;
    }
  }
  EXPECT_GT(shared.moves(), 0);
  // A solve met before prices nothing new.
  const int64_t moves = shared.moves();
  SolveGpt(16, P3Mesh({2, 4}), &shared);
  EXPECT_EQ(shared.moves(), moves);
}

}  // namespace
}  // namespace alpa
