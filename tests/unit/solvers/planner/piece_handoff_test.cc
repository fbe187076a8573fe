// A piece's boundary outputs are handed to other pieces fully reduced: the intra-op solve of a
// piece prices leaving one a partial sum (AutoShardOptions::handed_off_outputs). The case: a
// weight that the head reads as well as its own layer (a tied embedding), so that the head's
// piece computes a contribution to the weight's gradient that the weight's piece sums and
// applies. Alone, the head's solve split the tokens over every device and left that
// contribution a partial sum over all of them, which the stage then reduced across the hosts'
// link (the plain-JAX GPT-2 of docs/jax.md predicted 1.26x the zoo's GPT-2 for it).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/autodiff/autodiff.h"
#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "core/ir/graph_builder.h"
#include "models/planner_model.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/unit_profile.h"
#include "support/clusters.h"

namespace alpa {
namespace {

constexpr int64_t kBatch = 8, kSeq = 128, kHidden = 256, kVocab = 8192;

// A weight (layer 0, with a squared-norm penalty there) that the head (layer 1) also reads:
// logits of input activations against it and their log-sum-exp, trained with SGD. The weight's
// gradient sums the penalty's part (layer 0) and the head's (layer 1), as a tied embedding's
// sums the lookup's and the head's.
Graph TiedWeightModel() {
  GraphBuilder b;
  b.set_layer(0);
  const int32_t wte = b.Parameter({kVocab, kHidden}, DType::kF32, TensorRole::kParameter, "wte");
  const int32_t penalty = b.ReduceSum(b.Mul(wte, wte), {0, 1});
  b.set_layer(1);
  const int32_t x = b.Parameter({kBatch, kSeq, kHidden}, DType::kF32, TensorRole::kInput, "x");
  DotDims head;
  head.lhs_contracting = {2};
  head.rhs_contracting = {1};
  const int32_t logits = b.DotGeneral(x, wte, head);
  // A log-sum-exp over the vocabulary, as a cross-entropy has: the head's solve splits the
  // tokens rather than the vocabulary.
  const int32_t lse = b.Unary(OpKind::kLog, b.ReduceSum(b.Unary(OpKind::kExp, logits), {2}));
  const int32_t loss = b.Add(b.ReduceSum(lse, {0, 1}), penalty);
  b.AddOutput(loss);
  Result<Graph> forward = std::move(b).Finish();
  EXPECT_TRUE(forward.ok()) << forward.status().message();
  OptimizerConfig sgd;
  sgd.kind = OptimizerKind::kSgd;
  Result<Graph> step = BuildTrainingGraph(forward.value(), sgd);
  EXPECT_TRUE(step.ok()) << step.status().message();
  return step.ok() ? std::move(step).value() : Graph{};
}

// Seconds of one step of `graph` auto-sharded whole on `mesh` (no pieces, nothing handed over).
double WholeGraphSeconds(const Graph& graph, const LogicalMesh& mesh, const Cluster& cluster) {
  AutoShardOptions options;
  options.zero = ZeroMode::kSearch;
  options.solve.threads = 2;
  options.solve.deterministic = true;
  Result<UnitProfile> whole = ProfileUnit(graph, mesh, cluster, options);
  EXPECT_TRUE(whole.ok()) << whole.status().message();
  return whole.ok() ? whole.value().latency + whole.value().iteration_overhead : 0.0;
}

TEST(PieceHandoff, TiedWeightGradientIsHandedOverReduced) {
  auto graph = std::make_shared<const Graph>(TiedWeightModel());
  const Cluster cluster = testing::P3(2);
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 1;
  options.pipeline_stages = 1;
  Result<PipelinePlan> plan = PlanPipeline(FixedPlannerModel(graph), cluster, options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan.value().stages.size(), 1u);
  const PlannedStage& stage = plan.value().stages[0];
  ASSERT_EQ(stage.pieces.size(), 2u);  // the weight's piece and the head's

  Result<LogicalMesh> mesh = DeriveLogicalMesh(cluster, stage.submesh, stage.logical_mesh);
  ASSERT_TRUE(mesh.ok()) << mesh.status().message();

  // Cutting the step into the two pieces costs about what the whole step costs auto-sharded
  // at once on the plan's mesh: the head's piece hands the weight's gradient over without
  // a partial sum across the hosts.
  const double whole = WholeGraphSeconds(*graph, mesh.value(), cluster);
  ASSERT_GT(whole, 0);
  EXPECT_LT(plan.value().iteration_seconds, 1.1 * whole)
      << "planned " << plan.value().iteration_seconds << " s, whole graph " << whole << " s";

  // The head's solve sees the handover: the gradient contribution it hands over (a
  // [vocab, hidden] result of the head's dot) is no partial sum over the mesh, whose one split
  // dim spans both hosts; alone, the solve left it one (19.7x the whole graph's time).
  ASSERT_EQ(mesh.value().shape, (std::vector<int64_t>{16, 1}));
  const StagePiece& head = stage.pieces[1];
  int handed_over = 0;
  for (int32_t l : head.subgraph->boundary_outputs) {
    if (head.subgraph->graph.op(l).shape != Dims{kVocab, kHidden}) continue;
    ++handed_over;
    const ShardingSpec& spec = head.sharding->ops[static_cast<size_t>(l)].result;
    EXPECT_TRUE(spec.partial.empty()) << ToString(spec);
  }
  EXPECT_EQ(handed_over, 1);
}

}  // namespace
}  // namespace alpa
