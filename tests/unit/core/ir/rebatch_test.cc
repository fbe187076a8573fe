// Rebatching: the zoo's training step built at the global batch and rebatched into B
// microbatches equals the zoo's own graph of one microbatch (the spec's batch / B), op by op; and
// graphs whose batch cannot be followed are refused naming the op.
#include "core/ir/rebatch.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "core/ir/graph_builder.h"
#include "models/planner_model.h"

namespace alpa {
namespace {

Graph ZooMicrobatch(const std::string& spec, int64_t microbatches) {
  Result<PlannerModel> model = PlannerModelFromSpec(spec);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Graph> graph = model.value().build(microbatches);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return graph.ok() ? std::move(graph).value() : Graph{};
}

// Op by op, so that a mismatch names the first op that differs.
void ExpectSameGraph(const Graph& expected, const Graph& actual, const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (int32_t id = 0; id < expected.size(); ++id) {
    const Op& e = expected.op(id);
    const Op& a = actual.op(id);
    ASSERT_EQ(e.kind, a.kind) << what << ": " << DescribeOp(expected, id);
    ASSERT_EQ(e.shape, a.shape) << what << ": " << DescribeOp(expected, id) << " "
                                << ShapeString(e.shape) << " vs " << ShapeString(a.shape);
    ASSERT_TRUE(e.attrs == a.attrs)
        << what << ": attrs of " << DescribeOp(expected, id) << " (value " << e.attrs.value
        << " vs " << a.attrs.value << ")";
    ASSERT_TRUE(e == a) << what << ": " << DescribeOp(expected, id);
  }
  EXPECT_EQ(expected.outputs, actual.outputs) << what;
}

void ExpectRebatchMatchesZoo(const std::string& spec) {
  const Graph global = ZooMicrobatch(spec, 1);
  Result<BatchAnalysis> analysis = AnalyzeBatch(global);
  ASSERT_TRUE(analysis.ok()) << spec << ": " << analysis.status().message();
  EXPECT_FALSE(analysis.value().mean_divisors.empty()) << spec << ": the loss is a mean";
  for (int64_t microbatches : {1, 2, 4}) {
    Result<Graph> rebatched = Rebatch(global, analysis.value(), microbatches);
    ASSERT_TRUE(rebatched.ok()) << spec << " B=" << microbatches << ": "
                                << rebatched.status().message();
    ExpectSameGraph(ZooMicrobatch(spec, microbatches), rebatched.value(),
                    spec + " B=" + std::to_string(microbatches));
  }
}

TEST(Rebatch, GptRebatchedEqualsTheZoosMicrobatchGraph) {
  ExpectRebatchMatchesZoo("gpt:hidden=64,heads=4,layers=2,vocab=128,seq=16,batch=8");
}

TEST(Rebatch, MlpRebatchedEqualsTheZoosMicrobatchGraph) {
  ExpectRebatchMatchesZoo("mlp:hidden=32,layers=3,batch=16");
}

TEST(Rebatch, BertRebatchedEqualsTheZoosMicrobatchGraph) {
  ExpectRebatchMatchesZoo("bert:hidden=64,heads=4,layers=2,vocab=128,seq=16,batch=8");
}

TEST(Rebatch, MoeRebatchedEqualsTheZoosMicrobatchGraph) {
  ExpectRebatchMatchesZoo(
      "moe:hidden=32,heads=4,layers=2,vocab=128,seq=16,batch=8,experts=4,group=8");
}

TEST(Rebatch, WideResnetRebatchedEqualsTheZoosMicrobatchGraph) {
  ExpectRebatchMatchesZoo("wresnet:channels=4,width=1,image=16,classes=10,batch=8,dtype=f32");
}

TEST(Rebatch, LlamaRebatchedEqualsTheZoosMicrobatchGraph) {
  ExpectRebatchMatchesZoo(
      "llama:hidden=64,heads=4,kv_heads=2,ffn=96,layers=2,vocab=128,seq=16,batch=8");
}

TEST(Rebatch, MicrobatchesThatDoNotDivideTheBatchAreRefusedNamingBoth) {
  const Graph global = ZooMicrobatch("mlp:hidden=32,layers=2,batch=12", 1);
  Result<BatchAnalysis> analysis = AnalyzeBatch(global);
  ASSERT_TRUE(analysis.ok()) << analysis.status().message();
  EXPECT_EQ(analysis.value().batch, 12);
  Result<Graph> rebatched = Rebatch(global, analysis.value(), 8);
  ASSERT_FALSE(rebatched.ok());
  EXPECT_EQ(rebatched.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(rebatched.status().message().find("8 microbatches"), std::string::npos);
  EXPECT_NE(rebatched.status().message().find("batch of 12"), std::string::npos);
}

TEST(Rebatch, ASliceAcrossTheBatchIsRefusedNamingTheOp) {
  GraphBuilder b;
  int32_t x = b.Parameter({8, 4}, DType::kF32, TensorRole::kInput, "x");
  Op slice;
  slice.kind = OpKind::kSlice;
  slice.operands = {x};
  slice.attrs.starts = {0, 0};
  slice.attrs.limits = {4, 4};
  slice.attrs.strides = {1, 1};
  slice.name = "first_half";
  int32_t y = b.Add(std::move(slice));
  b.AddOutput(b.ReduceSum(y, {0, 1}));
  Result<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  Result<BatchAnalysis> analysis = AnalyzeBatch(graph.value());
  ASSERT_FALSE(analysis.ok());
  EXPECT_EQ(analysis.status().code(), StatusCode::kInvalidGraph);
  EXPECT_NE(analysis.status().message().find("'first_half'"), std::string::npos)
      << analysis.status().message();
}

TEST(Rebatch, AWeightCombinedWithTheBatchIsRefusedNamingTheOp) {
  GraphBuilder b;
  int32_t x = b.Parameter({8, 4}, DType::kF32, TensorRole::kInput, "x");
  int32_t w = b.Parameter({8, 4}, DType::kF32, TensorRole::kParameter, "w");
  int32_t y = b.Mul(x, w);
  b.SetName(y, "scaled");
  b.AddOutput(b.ReduceSum(y, {0, 1}));
  Result<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  Result<BatchAnalysis> analysis = AnalyzeBatch(graph.value());
  ASSERT_FALSE(analysis.ok());
  EXPECT_NE(analysis.status().message().find("'scaled'"), std::string::npos)
      << analysis.status().message();
  EXPECT_NE(analysis.status().message().find("'w'"), std::string::npos)
      << analysis.status().message();
}

TEST(Rebatch, InputsThatDisagreeOnTheBatchAreRefusedNamingBoth) {
  GraphBuilder b;
  int32_t x = b.Parameter({8, 4}, DType::kF32, TensorRole::kInput, "x");
  int32_t y = b.Parameter({6, 4}, DType::kF32, TensorRole::kInput, "labels");
  b.AddOutput(b.ReduceSum(x, {0, 1}));
  b.AddOutput(b.ReduceSum(y, {0, 1}));
  Result<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  Result<BatchAnalysis> analysis = AnalyzeBatch(graph.value());
  ASSERT_FALSE(analysis.ok());
  EXPECT_NE(analysis.status().message().find("'labels'"), std::string::npos)
      << analysis.status().message();
  EXPECT_NE(analysis.status().message().find("'x'"), std::string::npos);
}

TEST(Rebatch, AReshapeThatSplitsTheBatchIsRefusedNamingTheOp) {
  GraphBuilder b;
  int32_t x = b.Parameter({8, 4}, DType::kF32, TensorRole::kInput, "x");
  int32_t y = b.Reshape(x, {2, 16});
  b.SetName(y, "split");
  b.AddOutput(b.ReduceSum(y, {0, 1}));
  Result<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  Result<BatchAnalysis> analysis = AnalyzeBatch(graph.value());
  ASSERT_FALSE(analysis.ok());
  EXPECT_NE(analysis.status().message().find("'split'"), std::string::npos)
      << analysis.status().message();
}

TEST(Rebatch, AGraphWithoutInputsHasNoBatch) {
  GraphBuilder b;
  int32_t w = b.Parameter({8, 4}, DType::kF32, TensorRole::kParameter, "w");
  b.AddOutput(b.ReduceSum(w, {0, 1}));
  Result<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  Result<BatchAnalysis> analysis = AnalyzeBatch(graph.value());
  ASSERT_FALSE(analysis.ok());
  EXPECT_EQ(analysis.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace alpa
