// The CPU interpreter on sources, elementwise ops and data movement, against hand-computed values.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "interpreter_test_util.h"

namespace alpa {
namespace {

using testing_interp::Case;
using V = std::vector<double>;
const double kInf = std::numeric_limits<double>::infinity();

TEST(InterpreterOps, ConstantAndIota) {
  Case c;
  int32_t k = c.b.Constant(2.5, {2, 2}, DType::kF32);
  int32_t i1 = c.b.Iota({2, 3}, DType::kS32, 1);
  int32_t i0 = c.b.Iota({2, 3}, DType::kF32, 0);
  int32_t kr = c.b.Constant(1.0 / 3.0, {1}, DType::kF16);  // rounded to f16
  int32_t ki = c.b.Constant(300, {1}, DType::kS8);         // wrapped to s8
  EXPECT_EQ(c.Values(k), V({2.5, 2.5, 2.5, 2.5}));
  EXPECT_EQ(c.Values(i1), V({0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(c.Values(i0), V({0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(c.Values(kr), V({0.333251953125}));
  EXPECT_EQ(c.Values(ki), V({44}));
}

TEST(InterpreterOps, UnaryF64) {
  Case c;
  int32_t x = c.Param({5}, {-2, -0.5, 0, 1, 4});
  int32_t p = c.Param({3}, {0.25, 1, 4});
  EXPECT_EQ(c.Values(c.b.Unary(OpKind::kNeg, x)), V({2, 0.5, -0.0, -1, -4}));
  EXPECT_EQ(c.Values(c.b.Unary(OpKind::kAbs, x)), V({2, 0.5, 0, 1, 4}));
  EXPECT_EQ(c.Values(c.b.Unary(OpKind::kRelu, x)), V({0, 0, 0, 1, 4}));
  EXPECT_EQ(c.Values(c.b.Unary(OpKind::kSqrt, p)), V({0.5, 1, 2}));
  EXPECT_EQ(c.Values(c.b.Unary(OpKind::kRsqrt, p)), V({2, 1, 0.5}));
  EXPECT_EQ(c.Values(c.b.Unary(OpKind::kLog, p)), V({std::log(0.25), 0, std::log(4.0)}));
  EXPECT_EQ(c.Values(c.b.Unary(OpKind::kExp, x)),
            V({std::exp(-2.0), std::exp(-0.5), 1, std::exp(1.0), std::exp(4.0)}));
  EXPECT_EQ(c.Values(c.b.Unary(OpKind::kTanh, x)),
            V({std::tanh(-2.0), std::tanh(-0.5), 0, std::tanh(1.0), std::tanh(4.0)}));
  // gelu, tanh approximation: gelu(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.8411919906...
  V g = c.Values(c.b.Unary(OpKind::kGelu, x));
  ASSERT_EQ(g.size(), 5u);
  EXPECT_NEAR(g[3], 0.8411919906082768, 1e-12);
  EXPECT_NEAR(g[0], -0.04540230591222, 1e-12);
  EXPECT_EQ(g[2], 0.0);
}

TEST(InterpreterOps, UnaryRoundsToF32) {
  Case c;
  int32_t x = c.Param({1}, {3.0}, DType::kF32);
  EXPECT_EQ(c.Values(c.b.Unary(OpKind::kSqrt, x)),
            V({static_cast<double>(static_cast<float>(std::sqrt(3.0)))}));
}

TEST(InterpreterOps, Convert) {
  Case c;
  int32_t x = c.Param({7}, {2.7, -2.7, 0.0, -0.5, 300, 128, -200}, DType::kF32);
  EXPECT_EQ(c.Values(c.b.Convert(x, DType::kS32)), V({2, -2, 0, 0, 300, 128, -200}));
  EXPECT_EQ(c.Values(c.b.Convert(x, DType::kS8)), V({2, -2, 0, 0, 44, -128, 56}));
  EXPECT_EQ(c.Values(c.b.Convert(x, DType::kPred)), V({1, 1, 0, 1, 1, 1, 1}));
  int32_t third = c.Param({1}, {1.0 / 3.0}, DType::kF64);
  EXPECT_EQ(c.Values(c.b.Convert(third, DType::kBF16)), V({0.333984375}));
  int32_t big = c.Param({2}, {70000, -1e6}, DType::kF32);
  EXPECT_EQ(c.Values(c.b.Convert(big, DType::kF16)), V({kInf, -kInf}));
}

TEST(InterpreterOps, Binary) {
  Case c;
  int32_t x = c.Param({4}, {1, -2, 3, 8});
  int32_t y = c.Param({4}, {2, 5, 3, -4});
  EXPECT_EQ(c.Values(c.b.Add(x, y)), V({3, 3, 6, 4}));
  EXPECT_EQ(c.Values(c.b.Sub(x, y)), V({-1, -7, 0, 12}));
  EXPECT_EQ(c.Values(c.b.Mul(x, y)), V({2, -10, 9, -32}));
  EXPECT_EQ(c.Values(c.b.Div(x, y)), V({0.5, -0.4, 1, -2}));
  EXPECT_EQ(c.Values(c.b.Binary(OpKind::kMax, x, y)), V({2, 5, 3, 8}));
  EXPECT_EQ(c.Values(c.b.Binary(OpKind::kMin, x, y)), V({1, -2, 3, -4}));
  EXPECT_EQ(c.Values(c.b.Binary(OpKind::kPow, x, y)), V({1, -32, 27, 1.0 / 4096}));
  EXPECT_EQ(c.Values(c.b.Compare(Comparison::kEq, x, y)), V({0, 0, 1, 0}));
  EXPECT_EQ(c.Values(c.b.Compare(Comparison::kNe, x, y)), V({1, 1, 0, 1}));
  EXPECT_EQ(c.Values(c.b.Compare(Comparison::kLt, x, y)), V({1, 1, 0, 0}));
  EXPECT_EQ(c.Values(c.b.Compare(Comparison::kLe, x, y)), V({1, 1, 1, 0}));
  EXPECT_EQ(c.Values(c.b.Compare(Comparison::kGt, x, y)), V({0, 0, 0, 1}));
  EXPECT_EQ(c.Values(c.b.Compare(Comparison::kGe, x, y)), V({0, 0, 1, 1}));
  int32_t p = c.b.Compare(Comparison::kGt, x, y);
  EXPECT_EQ(c.Values(c.b.Select(p, x, y)), V({2, 5, 3, 8}));
  EXPECT_EQ(c.b.dtype(p), DType::kPred);
}

TEST(InterpreterOps, IntegerArithmeticTruncatesAndWraps) {
  Case c;
  int32_t x = c.Param({3}, {7, -7, 100}, DType::kS32);
  int32_t y = c.Param({3}, {-2, 2, 3}, DType::kS32);
  EXPECT_EQ(c.Values(c.b.Div(x, y)), V({-3, -3, 33}));  // toward zero
  int32_t a = c.Param({2}, {100, -100}, DType::kS8);
  int32_t b = c.Param({2}, {100, -100}, DType::kS8);
  EXPECT_EQ(c.Values(c.b.Add(a, b)), V({-56, 56}));  // 200 and -200 wrap
  EXPECT_EQ(c.Values(c.b.Mul(a, b)), V({16, 16}));   // 10000 mod 256 = 16
  int32_t big = c.Param({1}, {2147483647}, DType::kS32);
  int32_t one = c.Param({1}, {1}, DType::kS32);
  EXPECT_EQ(c.Values(c.b.Add(big, one)), V({-2147483648.0}));
}

TEST(InterpreterOps, F16AdditionOverflowsPerOp) {
  Case c;
  int32_t x = c.Param({2}, {65504, 1}, DType::kF16);
  int32_t y = c.Param({2}, {16, 1.0 / 2048}, DType::kF16);
  // 65520 rounds to inf; 1 + 2^-11 is a tie between 1 and 1 + 2^-10 and goes to even (1).
  EXPECT_EQ(c.Values(c.b.Add(x, y)), V({kInf, 1.0}));
}

TEST(InterpreterOps, BroadcastInDim) {
  Case c;
  int32_t x = c.Param({3}, {1, 2, 3});
  EXPECT_EQ(c.Values(c.b.BroadcastInDim(x, {2, 3}, {1})), V({1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(c.Values(c.b.BroadcastInDim(x, {3, 2}, {0})), V({1, 1, 2, 2, 3, 3}));
  int32_t y = c.Param({2, 1}, {5, 7});
  // y's dim 1 has size 1 and stretches to 2; output dim 1 (size 3) is new.
  EXPECT_EQ(c.Values(c.b.BroadcastInDim(y, {2, 3, 2}, {0, 2})),
            V({5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7}));
  int32_t s = c.Param({}, {4});
  EXPECT_EQ(c.Values(c.b.BroadcastInDim(s, {2}, {})), V({4, 4}));
}

TEST(InterpreterOps, ReshapeAndTranspose) {
  Case c;
  int32_t x = c.Param({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(c.Values(c.b.Reshape(x, {3, 2})), V({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(c.Values(c.b.Transpose(x, {1, 0})), V({1, 4, 2, 5, 3, 6}));
  // [2, 2, 3] -> perm {2, 0, 1} -> [3, 2, 2]: out[k][i][j] = x[i][j][k].
  int32_t y = c.Param({2, 2, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  EXPECT_EQ(c.Values(c.b.Transpose(y, {2, 0, 1})), V({0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
}

TEST(InterpreterOps, Slice) {
  Case c;
  int32_t x = c.Param({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(c.Values(c.b.Slice(x, {1}, {8}, {3})), V({1, 4, 7}));
  EXPECT_EQ(c.Values(c.b.Slice(x, {4}, {4}, {1})), V({}));
  int32_t y = c.Param({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  EXPECT_EQ(c.Values(c.b.Slice(y, {1, 0}, {3, 4}, {1, 2})), V({10, 12, 20, 22}));
}

TEST(InterpreterOps, Concatenate) {
  Case c;
  int32_t a = c.Param({2, 1}, {1, 2});
  int32_t b = c.Param({2, 2}, {3, 4, 5, 6});
  EXPECT_EQ(c.Values(c.b.Concatenate({a, b}, 1)), V({1, 3, 4, 2, 5, 6}));
  int32_t d = c.Param({1, 2}, {7, 8});
  EXPECT_EQ(c.Values(c.b.Concatenate({b, d, d}, 0)), V({3, 4, 5, 6, 7, 8, 7, 8}));
}

TEST(InterpreterOps, PadNegativeAndInterior) {
  Case c;
  int32_t x = c.Param({3}, {1, 2, 3});
  // interior 1: [1 9 2 9 3]; lo -1 crops the 1; hi 2 appends two 9s.
  EXPECT_EQ(c.Values(c.b.Pad(x, 9, {-1}, {2}, {1})), V({9, 2, 9, 3, 9, 9}));
  // lo -2 crops into the interior padding; hi -1 crops the 3.
  EXPECT_EQ(c.Values(c.b.Pad(x, 9, {-2}, {-1}, {1})), V({2, 9}));
  EXPECT_EQ(c.Values(c.b.Pad(x, 0, {2}, {0}, {0})), V({0, 0, 1, 2, 3}));
  int32_t y = c.Param({2, 2}, {1, 2, 3, 4});
  // Rows: lo 1, interior 1 -> [pad, r0, pad, r1]; cols: lo -1 drops col 0, hi 1 adds one.
  EXPECT_EQ(c.Values(c.b.Pad(y, 0, {1, -1}, {0, 1}, {1, 0})), V({0, 0, 2, 0, 0, 0, 4, 0}));
}

TEST(InterpreterOps, Reverse) {
  Case c;
  int32_t x = c.Param({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(c.Values(c.b.Reverse(x, {1})), V({3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(c.Values(c.b.Reverse(x, {0})), V({4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(c.Values(c.b.Reverse(x, {0, 1})), V({6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(c.Values(c.b.Reverse(x, {})), V({1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace alpa
