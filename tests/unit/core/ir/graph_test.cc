// The IR: shape inference per op kind, validation errors that name the op, graph statistics.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "core/ir/graph.h"
#include "core/ir/graph_builder.h"
#include "core/ir/graph_stats.h"

namespace alpa {
namespace {

using ::testing::HasSubstr;

int32_t Param(GraphBuilder& b, Dims shape, DType dtype = DType::kF32, const char* name = "p") {
  return b.Parameter(std::move(shape), dtype, TensorRole::kParameter, name);
}

TEST(DTypeTest, NamesRoundTripAndSizes) {
  for (int32_t i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    Result<DType> parsed = ParseDType(DTypeName(d));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed.value(), d);
  }
  EXPECT_EQ(DTypeBytes(DType::kBF16), 2);
  EXPECT_EQ(DTypeBytes(DType::kS64), 8);
  EXPECT_EQ(DTypeBytes(DType::kPred), 1);
  EXPECT_THAT(ParseDType("f8").status().message(), HasSubstr("unknown dtype \"f8\""));
}

TEST(OpKindTest, NamesRoundTrip) {
  for (OpKind k : AllOpKinds()) {
    Result<OpKind> parsed = ParseOpKind(OpKindName(k));
    ASSERT_TRUE(parsed.ok()) << OpKindName(k);
    EXPECT_EQ(parsed.value(), k);
    EXPECT_TRUE(IsValidOpKind(static_cast<int32_t>(k)));
  }
  EXPECT_EQ(AllOpKinds().size(), 37u);
  EXPECT_FALSE(IsValidOpKind(3));
  EXPECT_FALSE(ParseOpKind("matmul").ok());
}

TEST(ShapeInferenceTest, DotGeneralWithBatchDimsInTheMiddle) {
  GraphBuilder b;
  int32_t x = Param(b, {4, 2, 3, 5});  // [i, b, k, j']
  int32_t y = Param(b, {3, 2, 7});     // [k, b, n]
  DotDims d;
  d.lhs_batch = {1};
  d.rhs_batch = {1};
  d.lhs_contracting = {2};
  d.rhs_contracting = {0};
  int32_t z = b.DotGeneral(x, y, d);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b.shape(z), (Dims{2, 4, 5, 7}));
}

TEST(ShapeInferenceTest, DotGeneralMismatchNamesTheDims) {
  GraphBuilder b;
  int32_t x = Param(b, {4, 64});
  int32_t y = Param(b, {32, 8});
  b.SetName(b.MatMul(x, y), "unused");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidGraph);
  EXPECT_THAT(b.status().message(), HasSubstr("op 2 (dot_general)"));
  EXPECT_THAT(b.status().message(), HasSubstr("lhs dim 1 is 64, rhs dim 0 is 32"));
}

TEST(ShapeInferenceTest, ConvolutionStridePaddingDilationGroups) {
  GraphBuilder b;
  int32_t x = Param(b, {2, 4, 9, 9});
  int32_t w = Param(b, {6, 2, 3, 3});
  // Dilated kernel 5; (9 + 1 + 1 - 5) / 2 + 1 = 4.
  int32_t y = b.Convolution(x, w, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {2, 2}, 2);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b.shape(y), (Dims{2, 6, 4, 4}));
  // lhs dilation 2: dilated input 17, kernel 3 -> 15.
  int32_t w1 = Param(b, {3, 4, 3, 3});
  int32_t t = b.Convolution(x, w1, {1, 1}, {0, 0}, {0, 0}, {2, 2}, {1, 1});
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b.shape(t), (Dims{2, 3, 15, 15}));
  b.Convolution(x, w, {1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 3);
  EXPECT_THAT(b.status().message(), HasSubstr("feature_group_count 3 does not divide"));
}

TEST(ShapeInferenceTest, MovementOps) {
  GraphBuilder b;
  int32_t x = Param(b, {2, 3, 4});
  EXPECT_EQ(b.shape(b.Transpose(x, {2, 0, 1})), (Dims{4, 2, 3}));
  EXPECT_EQ(b.shape(b.Reshape(x, {6, 4})), (Dims{6, 4}));
  EXPECT_EQ(b.shape(b.Slice(x, {0, 1, 0}, {2, 3, 4}, {1, 1, 3})), (Dims{2, 2, 2}));
  EXPECT_EQ(b.shape(b.Concatenate({x, x}, 1)), (Dims{2, 6, 4}));
  EXPECT_EQ(b.shape(b.Pad(x, 0, {1, 0, -1}, {0, 2, 0}, {0, 1, 1})), (Dims{3, 7, 6}));
  EXPECT_EQ(b.shape(b.BroadcastInDim(x, {5, 2, 3, 4}, {1, 2, 3})), (Dims{5, 2, 3, 4}));
  EXPECT_EQ(b.shape(b.ReduceSum(x, {0, 2})), (Dims{3}));
  EXPECT_EQ(
      b.shape(b.ReduceWindow(ReduceKind::kMax, x, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {0, 1, 1})),
      (Dims{2, 2, 2}));
  int32_t table = Param(b, {10, 8});
  int32_t idx = b.Parameter({2, 5}, DType::kS32, TensorRole::kInput, "tokens");
  int32_t g = b.Gather(table, idx, 0);
  EXPECT_EQ(b.shape(g), (Dims{2, 5, 8}));
  EXPECT_EQ(b.shape(b.ScatterAdd(table, idx, g, 0)), (Dims{10, 8}));
  ASSERT_TRUE(b.ok()) << b.status().message();
  b.Reshape(x, {5, 5});
  EXPECT_THAT(b.status().message(), HasSubstr("cannot reshape [2, 3, 4] to [5, 5]"));
}

TEST(ShapeInferenceTest, ElementwiseRules) {
  GraphBuilder b;
  int32_t x = Param(b, {3});
  int32_t y = Param(b, {3}, DType::kF16);
  EXPECT_EQ(b.dtype(b.Compare(Comparison::kLt, x, x)), DType::kPred);
  EXPECT_EQ(b.dtype(b.Convert(x, DType::kBF16)), DType::kBF16);
  ASSERT_TRUE(b.ok());
  b.Add(x, y);
  EXPECT_THAT(b.status().message(), HasSubstr("operand dtypes differ: f32 vs f16"));
  GraphBuilder c;
  int32_t p = Param(c, {3});
  int32_t q = Param(c, {4});
  c.Select(c.Compare(Comparison::kGt, p, p), p, q);
  EXPECT_THAT(c.status().message(), HasSubstr("(select)"));
}

TEST(ShapeInferenceTest, OverflowingSizesAreErrors) {
  GraphBuilder b;
  int64_t big = int64_t{1} << 40;
  Param(b, {big, big});
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("more than 2^63 elements"));
  GraphBuilder c;
  Param(c, {int64_t{1} << 31, int64_t{1} << 31});  // 2^62 elements of 4 bytes
  EXPECT_THAT(c.status().message(), HasSubstr("more than 2^63 bytes"));
  GraphBuilder d;
  Param(d, {3, -1});
  EXPECT_THAT(d.status().message(), HasSubstr("negative"));
  // Attribute arithmetic (dilation, padding) must not overflow on the way to a size.
  GraphBuilder e;
  int32_t x = Param(e, {1, 1, 4});
  int32_t w = Param(e, {1, 1, 2});
  int64_t huge = int64_t{1} << 62;
  e.Convolution(x, w, {1}, {0}, {0}, {huge}, {1});
  EXPECT_THAT(e.status().message(), HasSubstr("overflows int64"));
  GraphBuilder f;
  int32_t y = Param(f, {5});
  f.Pad(y, 0, {huge}, {huge});
  EXPECT_THAT(f.status().message(), HasSubstr("overflows int64"));
  GraphBuilder h;
  int32_t z = Param(h, {5});
  h.ReduceWindow(ReduceKind::kSum, z, {1}, {1}, {huge}, {huge});
  EXPECT_THAT(h.status().message(), HasSubstr("overflows int64"));
  GraphBuilder k;
  int32_t v = Param(k, {5});
  EXPECT_EQ(k.shape(k.Slice(v, {1}, {5}, {std::numeric_limits<int64_t>::max()})), (Dims{1}));
}

Graph SmallGraph() {
  GraphBuilder b;
  int32_t x = Param(b, {2, 3}, DType::kF32, "x");
  int32_t e = b.Unary(OpKind::kExp, x);
  b.SetName(e, "e");
  int32_t s = b.ReduceSum(b.Add(e, x), {0, 1});
  b.AddOutput(s);
  Result<Graph> g = std::move(b).Finish();
  EXPECT_TRUE(g.ok());
  return g.value();
}

TEST(ValidateGraphTest, AcceptsBuilderGraphs) { EXPECT_TRUE(ValidateGraph(SmallGraph()).ok()); }

TEST(ValidateGraphTest, DanglingOperand) {
  Graph g = SmallGraph();
  g.ops[1].operands[0] = 42;
  Status s = ValidateGraph(g);
  EXPECT_EQ(s.code(), StatusCode::kInvalidGraph);
  EXPECT_THAT(s.message(), HasSubstr("op 1 'e' (exp): operand 0 refers to op 42"));
}

TEST(ValidateGraphTest, CycleIsReportedAsACycle) {
  Graph g = SmallGraph();
  g.ops[1].operands[0] = 2;  // e = exp(add) and add = e + x
  Status s = ValidateGraph(g);
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
  EXPECT_THAT(s.message(), HasSubstr("op 1 'e' (exp)"));
  EXPECT_THAT(s.message(), HasSubstr("op 2 (add)"));
}

TEST(ValidateGraphTest, ForwardReferenceWithoutCycle) {
  Graph g = SmallGraph();
  // Op 1 reads op 3 (a reduce of op 2), which does not depend on op 1 once op 2 reads op 0.
  g.ops[2].operands = {0, 0};
  g.ops[1].operands[0] = 3;
  g.ops[1].shape = {};
  Status s = ValidateGraph(g);
  EXPECT_THAT(s.message(), HasSubstr("topological order"));
}

TEST(ValidateGraphTest, StoredTypeMustMatch) {
  Graph g = SmallGraph();
  g.ops[2].shape = {3, 2};
  EXPECT_THAT(ValidateGraph(g).message(), HasSubstr("stored type f32[3, 2] differs"));
}

TEST(ValidateGraphTest, AliasMustTargetAParameterOfTheSameType) {
  Graph g = SmallGraph();
  g.ops[2].alias_of = 1;
  EXPECT_THAT(ValidateGraph(g).message(), HasSubstr("is not a parameter op"));
  g.ops[2].alias_of = 0;
  EXPECT_TRUE(ValidateGraph(g).ok());
  g.ops[3].alias_of = 0;
  EXPECT_THAT(ValidateGraph(g).message(), HasSubstr("of a different type"));
  g.ops[3].alias_of = -1;
  g.ops[1].alias_of = 0;
  EXPECT_THAT(ValidateGraph(g).message(), HasSubstr("is already replaced by op 1"));
}

TEST(ValidateGraphTest, OutputsInRange) {
  Graph g = SmallGraph();
  g.outputs.push_back(9);
  EXPECT_THAT(ValidateGraph(g).message(), HasSubstr("output 1 refers to op 9"));
}

TEST(GraphStatsTest, FlopsAndBytes) {
  GraphBuilder b;
  int32_t x = b.Parameter({8, 16}, DType::kF16, TensorRole::kInput, "x");
  int32_t w = Param(b, {16, 32}, DType::kF16, "w");
  int32_t y = b.MatMul(x, w);
  int32_t k = Param(b, {4, 8, 3, 3}, DType::kF16, "k");
  int32_t img = b.Parameter({2, 8, 5, 5}, DType::kF16, TensorRole::kInput, "img");
  int32_t c = b.Convolution(img, k, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1});
  b.AddOutput(b.ReduceSum(y, {0, 1}));
  b.AddOutput(c);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  GraphStats s = ComputeGraphStats(g.value());
  EXPECT_EQ(s.parameter_count, 16 * 32 + 4 * 8 * 9);
  EXPECT_EQ(s.parameter_bytes, 2 * (16 * 32 + 4 * 8 * 9));
  EXPECT_EQ(s.input_bytes, 2 * (8 * 16 + 2 * 8 * 25));
  EXPECT_DOUBLE_EQ(static_cast<double>(s.dot_flops), 2.0 * 8 * 16 * 32);
  EXPECT_DOUBLE_EQ(static_cast<double>(s.conv_flops), 2.0 * 2 * 4 * 25 * 8 * 9);
  EXPECT_DOUBLE_EQ(static_cast<double>(s.flops),
                   2.0 * 8 * 16 * 32 + 2.0 * 2 * 4 * 25 * 8 * 9 + 8 * 32);
  EXPECT_EQ(s.ops_by_kind.at("parameter"), 4);
  EXPECT_DOUBLE_EQ(static_cast<double>(OpBytesAccessed(g.value(), y)),
                   2.0 * (8 * 16 + 16 * 32 + 8 * 32));
}

}  // namespace
}  // namespace alpa
