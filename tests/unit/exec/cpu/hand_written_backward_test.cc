// Frameworks may hand in their own backward pass instead of letting libalpa differentiate: a
// graph with hand-written backward and update ops must validate, report its phases, and compute
// the same step as the autodiff path.
#include <gtest/gtest.h>

#include "core/autodiff/autodiff.h"
#include "core/ir/graph_builder.h"
#include "core/ir/graph_stats.h"
#include "exec/cpu/interpreter.h"

namespace alpa {
namespace {

constexpr double kLearningRate = 0.01;

struct Step {
  Graph graph;
  int32_t x = -1, w = -1, loss = -1, new_w = -1;
};

// loss = sum((x . w)^2), x [4, 3] data, w [3, 2] weight.
void BuildForward(GraphBuilder& b, Step& s) {
  s.x = b.Parameter({4, 3}, DType::kF64, TensorRole::kInput, "x");
  s.w = b.Parameter({3, 2}, DType::kF64, TensorRole::kParameter, "w");
  int32_t y = b.MatMul(s.x, s.w);
  s.loss = b.ReduceSum(b.Mul(y, y), {0, 1});
  b.AddOutput(s.loss);
}

// The framework's own backward and SGD update: dy = 2 y, dw = x^T dy, w' = w - lr dw.
Step HandWritten() {
  GraphBuilder b;
  Step s;
  BuildForward(b, s);
  int32_t y = b.graph().op(s.loss).operands[0];  // the mul; its operand is y
  y = b.graph().op(y).operands[0];
  b.set_phase(Phase::kBackward);
  int32_t dy = b.Scale(y, 2.0);
  DotDims d;
  d.lhs_contracting = {0};
  d.rhs_contracting = {0};
  int32_t dw = b.DotGeneral(s.x, dy, d);
  b.SetRole(dw, TensorRole::kGradient);
  b.set_phase(Phase::kUpdate);
  s.new_w = b.Sub(s.w, b.Scale(dw, kLearningRate));
  b.SetAlias(s.new_w, s.w);
  b.AddOutput(s.new_w);
  Result<Graph> g = std::move(b).Finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  s.graph = g.ok() ? g.value() : Graph{};
  return s;
}

TEST(HandWrittenBackwardTest, ValidatesAndMatchesAutodiff) {
  Step hand = HandWritten();
  ASSERT_GT(hand.graph.size(), 0);
  GraphStats stats = ComputeGraphStats(hand.graph);
  EXPECT_EQ(stats.ops_by_phase.at("backward"), 3);  // constant, mul, dot_general
  EXPECT_EQ(stats.gradient_bytes, 3 * 2 * 8);

  GraphBuilder fb;
  Step autodiff;
  BuildForward(fb, autodiff);
  Result<Graph> forward = std::move(fb).Finish();
  ASSERT_TRUE(forward.ok());
  OptimizerConfig sgd;
  sgd.kind = OptimizerKind::kSgd;
  sgd.learning_rate = kLearningRate;
  Result<Graph> trained = BuildTrainingGraph(forward.value(), sgd);
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  int32_t auto_new_w = -1;
  for (int32_t id : trained.value().outputs) {
    if (trained.value().op(id).alias_of == autodiff.w) auto_new_w = id;
  }
  ASSERT_NE(auto_new_w, -1);

  HostFeeds feeds;
  feeds[hand.x] = HostTensor{{4, 3}, DType::kF64, {1, -2, 3, 0.5, 1, -1, 2, 2, 0, -1, 0.25, 1}};
  feeds[hand.w] = HostTensor{{3, 2}, DType::kF64, {0.1, -0.2, 0.3, 0.05, -0.1, 0.2}};
  Result<std::vector<HostTensor>> a = Interpret(hand.graph, feeds, {hand.loss, hand.new_w});
  Result<std::vector<HostTensor>> b =
      Interpret(trained.value(), feeds, {trained.value().outputs[0], auto_new_w});
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_DOUBLE_EQ(a.value()[0].data[0], b.value()[0].data[0]);
  ASSERT_EQ(a.value()[1].data.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(a.value()[1].data[i], b.value()[1].data[i], 1e-12) << "element " << i;
  }
  // And the step lowers the loss.
  feeds[hand.w] = a.value()[1];
  Result<std::vector<HostTensor>> after = Interpret(hand.graph, feeds, {hand.loss});
  ASSERT_TRUE(after.ok());
  EXPECT_LT(after.value()[0].data[0], a.value()[0].data[0]);
}

}  // namespace
}  // namespace alpa
