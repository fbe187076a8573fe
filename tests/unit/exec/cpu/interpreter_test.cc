// The CPU interpreter as a whole: dtype rounding, Interpret's request checks and liveness, and
// a training-step-sized chain.
#include "exec/cpu/interpreter.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/graph_builder.h"
#include "interpreter_test_util.h"

namespace alpa {
namespace {

using testing_interp::Case;
using V = std::vector<double>;
const double kInf = std::numeric_limits<double>::infinity();

TEST(RoundToDType, F16) {
  EXPECT_EQ(RoundToDType(65504, DType::kF16), 65504);
  EXPECT_EQ(RoundToDType(65519, DType::kF16), 65504);  // below the halfway point
  EXPECT_EQ(RoundToDType(65520, DType::kF16), kInf);   // halfway to 2^16: ties to even = inf
  EXPECT_EQ(RoundToDType(-65520, DType::kF16), -kInf);
  EXPECT_EQ(RoundToDType(1.0 / 3.0, DType::kF16), 0.333251953125);  // 0x3555
  EXPECT_EQ(RoundToDType(1.0 + 1.0 / 2048, DType::kF16), 1.0);      // tie -> even
  EXPECT_EQ(RoundToDType(1.0 + 3.0 / 2048, DType::kF16), 1.0 + 2.0 / 1024);
  // Subnormals: multiples of 2^-24. 1e-7 = 1.68 * 2^-24 -> 2 * 2^-24.
  EXPECT_EQ(RoundToDType(1e-7, DType::kF16), std::ldexp(1.0, -23));
  EXPECT_EQ(RoundToDType(std::ldexp(1.0, -25), DType::kF16), 0.0);  // tie -> even (0)
  EXPECT_EQ(RoundToDType(std::ldexp(3.0, -25), DType::kF16), std::ldexp(1.0, -23));
  EXPECT_EQ(RoundToDType(std::ldexp(1.0, -14), DType::kF16), std::ldexp(1.0, -14));  // min normal
  EXPECT_EQ(RoundToDType(-1e-9, DType::kF16), 0.0);
  EXPECT_TRUE(std::signbit(RoundToDType(-1e-9, DType::kF16)));
  EXPECT_TRUE(std::isnan(RoundToDType(std::nan(""), DType::kF16)));
  EXPECT_EQ(RoundToDType(kInf, DType::kF16), kInf);
}

TEST(RoundToDType, BF16AndF32) {
  EXPECT_EQ(RoundToDType(1.0 / 3.0, DType::kBF16), 0.333984375);  // 0x3EAB
  EXPECT_EQ(RoundToDType(1.0 + 1.0 / 256, DType::kBF16), 1.0);    // tie -> even
  EXPECT_EQ(RoundToDType(1.0 + 3.0 / 256, DType::kBF16), 1.015625);
  EXPECT_EQ(RoundToDType(257, DType::kBF16), 256);
  EXPECT_EQ(RoundToDType(65520, DType::kBF16), 65536);  // bf16 has f32's range
  const double bf16_max = std::ldexp(255.0, 120);
  EXPECT_EQ(RoundToDType(bf16_max, DType::kBF16), bf16_max);
  EXPECT_EQ(RoundToDType(static_cast<double>(std::numeric_limits<float>::max()), DType::kBF16),
            kInf);
  EXPECT_EQ(RoundToDType(1.0 / 3.0, DType::kF32), static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(RoundToDType(1e39, DType::kF32), kInf);
  EXPECT_EQ(RoundToDType(-1e39, DType::kF32), -kInf);
  const double flt_max = static_cast<double>(std::numeric_limits<float>::max());
  EXPECT_EQ(RoundToDType(flt_max * (1 + 1e-9), DType::kF32), flt_max);  // rounds down
  EXPECT_EQ(RoundToDType(1e-45, DType::kF32), std::ldexp(1.0, -149));   // f32 subnormal
  EXPECT_EQ(RoundToDType(1.0 / 3.0, DType::kF64), 1.0 / 3.0);
}

TEST(RoundToDType, IntegersAndPred) {
  EXPECT_EQ(RoundToDType(127, DType::kS8), 127);
  EXPECT_EQ(RoundToDType(128, DType::kS8), -128);
  EXPECT_EQ(RoundToDType(200, DType::kS8), -56);
  EXPECT_EQ(RoundToDType(-129, DType::kS8), 127);
  EXPECT_EQ(RoundToDType(-256, DType::kS8), 0);
  EXPECT_EQ(RoundToDType(1000, DType::kS8), -24);  // 1000 - 4 * 256
  EXPECT_EQ(RoundToDType(2.9, DType::kS8), 2);
  EXPECT_EQ(RoundToDType(-2.9, DType::kS8), -2);
  EXPECT_EQ(RoundToDType(2147483648.0, DType::kS32), -2147483648.0);
  EXPECT_EQ(RoundToDType(-2147483649.0, DType::kS32), 2147483647.0);
  EXPECT_EQ(RoundToDType(std::ldexp(1.0, 63), DType::kS64), -std::ldexp(1.0, 63));
  EXPECT_EQ(RoundToDType(std::ldexp(1.0, 40) + 3, DType::kS64), std::ldexp(1.0, 40) + 3);
  EXPECT_EQ(RoundToDType(std::nan(""), DType::kS32), 0);
  EXPECT_EQ(RoundToDType(kInf, DType::kS8), 127);  // saturates
  EXPECT_EQ(RoundToDType(0.5, DType::kPred), 1);
  EXPECT_EQ(RoundToDType(-3, DType::kPred), 1);
  EXPECT_EQ(RoundToDType(0, DType::kPred), 0);
}

// x [2, 3] (f32, "x"), w [3] (f32, "w"): y = x * broadcast(w), s = reduce_sum(y).
struct SmallGraph {
  Graph graph;
  int32_t x, w, y, s;
  SmallGraph() {
    GraphBuilder b;
    x = b.Parameter({2, 3}, DType::kF32, TensorRole::kInput, "x");
    w = b.Parameter({3}, DType::kF32, TensorRole::kParameter, "w");
    y = b.Mul(x, b.BroadcastInDim(w, {2, 3}, {1}));
    s = b.ReduceSum(y, {0, 1});
    b.SetName(s, "total");
    b.AddOutput(s);
    graph = std::move(b).Finish().value();
  }
  HostFeeds Feeds() const {
    return {{x, HostTensor{{2, 3}, DType::kF32, {1, 2, 3, 4, 5, 6}}},
            {w, HostTensor{{3}, DType::kF32, {1, 10, 100}}}};
  }
};

TEST(Interpret, FetchesInOrder) {
  SmallGraph g;
  Result<std::vector<HostTensor>> r = Interpret(g.graph, g.Feeds(), {g.s, g.y, g.w, g.s});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r.value().size(), 4u);
  EXPECT_EQ(r.value()[0].data, V({1 + 20 + 300 + 4 + 50 + 600}));
  EXPECT_EQ(r.value()[0].shape, Dims({}));
  EXPECT_EQ(r.value()[0].dtype, DType::kF32);
  EXPECT_EQ(r.value()[1].data, V({1, 20, 300, 4, 50, 600}));
  EXPECT_EQ(r.value()[1].shape, Dims({2, 3}));
  EXPECT_EQ(r.value()[2].data, V({1, 10, 100}));
  EXPECT_EQ(r.value()[3].data, r.value()[0].data);
  Result<std::vector<HostTensor>> none = Interpret(g.graph, g.Feeds(), {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value().empty());
}

TEST(Interpret, FeedsAreRoundedToTheirDType) {
  GraphBuilder b;
  int32_t p = b.Parameter({2}, DType::kF16, TensorRole::kInput, "h");
  Graph g = std::move(b).Finish().value();
  Result<std::vector<HostTensor>> r =
      Interpret(g, {{p, HostTensor{{2}, DType::kF16, {1.0 / 3.0, 1e6}}}}, {p});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value()[0].data, V({0.333251953125, kInf}));
}

TEST(Interpret, MissingFeedNamesTheOp) {
  SmallGraph g;
  HostFeeds feeds = g.Feeds();
  feeds.erase(g.w);
  Result<std::vector<HostTensor>> r = Interpret(g.graph, feeds, {g.s});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'w'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("not fed"), std::string::npos) << r.status().message();
  // w is not needed for x alone.
  EXPECT_TRUE(Interpret(g.graph, feeds, {g.x}).ok());
}

TEST(Interpret, BadFeedsNameTheOp) {
  SmallGraph g;
  auto expect_error = [&](const HostFeeds& feeds, const std::string& needle) {
    Result<std::vector<HostTensor>> r = Interpret(g.graph, feeds, {g.s});
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  HostFeeds shape = g.Feeds();
  shape[g.x].shape = {3, 2};
  expect_error(shape, "'x'");
  expect_error(shape, "[3, 2]");
  HostFeeds dtype = g.Feeds();
  dtype[g.w].dtype = DType::kF16;
  expect_error(dtype, "'w'");
  expect_error(dtype, "f16");
  HostFeeds size = g.Feeds();
  size[g.w].data.push_back(7);
  expect_error(size, "'w'");
  expect_error(size, "holds 4 values");
  HostFeeds not_param = g.Feeds();
  not_param[g.s] = HostTensor{{}, DType::kF32, {0}};
  expect_error(not_param, "'total'");
  HostFeeds out_of_range = g.Feeds();
  out_of_range[99] = HostTensor{};
  expect_error(out_of_range, "op 99");
}

TEST(Interpret, FetchOutOfRange) {
  SmallGraph g;
  for (int32_t bad : {-1, 5, 1000}) {
    Result<std::vector<HostTensor>> r = Interpret(g.graph, g.Feeds(), {g.s, bad});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("fetch 1 names op " + std::to_string(bad)),
              std::string::npos)
        << r.status().message();
  }
}

TEST(Interpret, InvalidGraphIsRefused) {
  SmallGraph g;
  Graph bad = g.graph;
  bad.ops[static_cast<size_t>(g.y)].shape = {3, 2};  // stored type differs from the inferred
  Result<std::vector<HostTensor>> r = Interpret(bad, g.Feeds(), {g.s});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidGraph);
}

TEST(Interpret, UnusedOpsAreNotEvaluated) {
  GraphBuilder b;
  int32_t x = b.Parameter({2}, DType::kF32, TensorRole::kInput, "x");
  int32_t unfed = b.Parameter({2}, DType::kF32, TensorRole::kInput, "unfed");
  int32_t huge = b.Constant(1, {int64_t{1} << 20, int64_t{1} << 10}, DType::kF32);  // 2^30
  b.SetName(huge, "huge");
  int32_t huge_sum = b.ReduceSum(huge, {0, 1});
  int32_t y = b.Add(x, x);
  (void)unfed;
  Graph g = std::move(b).Finish().value();
  HostFeeds feeds = {{x, HostTensor{{2}, DType::kF32, {1.5, -2}}}};
  InterpretStats stats;
  InterpretOptions with_stats;
  with_stats.stats = &stats;
  Result<std::vector<HostTensor>> r = Interpret(g, feeds, {y}, with_stats);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value()[0].data, V({3, -4}));
  EXPECT_EQ(stats.ops_evaluated, 2);  // x and y
  EXPECT_EQ(stats.peak_live_elements, 4);
  // Fetching the huge op trips the limit, saying how much it would take.
  Result<std::vector<HostTensor>> big = Interpret(g, feeds, {huge_sum});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(big.status().message().find("1073741825 elements"), std::string::npos)
      << big.status().message();
  EXPECT_NE(big.status().message().find("'huge'"), std::string::npos) << big.status().message();
  // A smaller limit counts every needed result: x (2) + y (2) = 4 elements.
  InterpretOptions tight;
  tight.max_total_elements = 3;
  Result<std::vector<HostTensor>> small = Interpret(g, feeds, {y}, tight);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("4 elements"), std::string::npos)
      << small.status().message();
  tight.max_total_elements = 4;
  EXPECT_TRUE(Interpret(g, feeds, {y}, tight).ok());
}

TEST(Interpret, LongChainFreesDeadValues) {
  // 3000 chained adds over a [64, 64] tensor: values freed after their last use keep memory
  // flat (the peak says so); the result checks the chain: x + 3000 * 0.5.
  GraphBuilder b;
  int32_t x = b.Parameter({64, 64}, DType::kF64, TensorRole::kInput, "x");
  int32_t half = b.Constant(0.5, {64, 64}, DType::kF64);
  int32_t y = x;
  for (int i = 0; i < 3000; ++i) y = b.Add(y, half);
  Graph g = std::move(b).Finish().value();
  HostFeeds feeds = {{x, HostTensor{{64, 64}, DType::kF64, V(64 * 64, 1.0)}}};
  InterpretStats stats;
  InterpretOptions options;
  options.stats = &stats;
  Result<std::vector<HostTensor>> r = Interpret(g, feeds, {y}, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value()[0].data, V(64 * 64, 1501.0));
  EXPECT_EQ(stats.ops_evaluated, 3002);
  // At most three [64, 64] values live at once: the constant, the previous sum and the new one.
  EXPECT_EQ(stats.peak_live_elements, 3 * 64 * 64);
}

TEST(EvaluateOp, ChecksItsArguments) {
  SmallGraph g;
  HostTensor x{{2, 3}, DType::kF32, {1, 2, 3, 4, 5, 6}};
  HostTensor wb{{2, 3}, DType::kF32, {1, 1, 1, 2, 2, 2}};
  Result<HostTensor> y = EvaluateOp(g.graph, g.y, {&x, &wb});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(y.value().data, V({1, 2, 3, 8, 10, 12}));
  EXPECT_EQ(EvaluateOp(g.graph, g.y, {&x}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EvaluateOp(g.graph, g.y, {&x, nullptr}).status().code(), StatusCode::kInvalidArgument);
  HostTensor wrong{{3, 2}, DType::kF32, {1, 1, 1, 2, 2, 2}};
  Result<HostTensor> bad = EvaluateOp(g.graph, g.y, {&x, &wrong});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("operand 1"), std::string::npos);
  EXPECT_EQ(EvaluateOp(g.graph, g.x, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EvaluateOp(g.graph, 77, {}).status().code(), StatusCode::kInvalidArgument);
}

// A transformer-block-shaped chain: [32, 32] activations through matmuls, gelu, softmax-like
// reductions and broadcasts, 8 ops per step, ~2000 ops in all.
TEST(InterpretTest, LongSoftmaxChainStaysNormalized) {
  GraphBuilder b;
  const int64_t t = 32, h = 32;
  int32_t x = b.Parameter({t, h}, DType::kF32, TensorRole::kInput, "x");
  int32_t w1 = b.Parameter({h, 4 * h}, DType::kF32, TensorRole::kParameter, "w1");
  int32_t w2 = b.Parameter({4 * h, h}, DType::kF32, TensorRole::kParameter, "w2");
  int32_t y = x;
  for (int i = 0; i < 190; ++i) {
    int32_t u = b.Unary(OpKind::kGelu, b.MatMul(y, w1));
    int32_t v = b.MatMul(u, w2);
    int32_t m = b.ReduceMax(v, {1});
    int32_t e = b.Unary(OpKind::kExp, b.Sub(v, b.BroadcastInDim(m, {t, h}, {0})));
    y = b.Transpose(b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {1}), {t, h}, {0})), {1, 0});
  }
  Graph g = std::move(b).Finish().value();
  ASSERT_GE(g.size(), 2000);
  HostFeeds feeds;
  auto fill = [](int64_t n, double scale) {
    V v;
    for (int64_t i = 0; i < n; ++i) v.push_back(scale * static_cast<double>((i * 37) % 19 - 9));
    return v;
  };
  feeds[x] = HostTensor{{t, h}, DType::kF32, fill(t * h, 0.1)};
  feeds[w1] = HostTensor{{h, 4 * h}, DType::kF32, fill(h * 4 * h, 0.01)};
  feeds[w2] = HostTensor{{4 * h, h}, DType::kF32, fill(4 * h * h, 0.01)};
  Result<std::vector<HostTensor>> r = Interpret(g, feeds, {y});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Each step ends in a softmax over rows (then transposed): every column sums to 1.
  double col0 = 0;
  for (int64_t i = 0; i < t; ++i) col0 += r.value()[0].data[static_cast<size_t>(i * h)];
  EXPECT_NEAR(col0, 1.0, 1e-5);
}

}  // namespace
}  // namespace alpa
