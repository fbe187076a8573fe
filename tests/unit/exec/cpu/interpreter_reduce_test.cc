// The CPU interpreter on reductions, windows (reduce_window, select_and_scatter) and indexing
// (gather, scatter_add), against hand-computed values.
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "interpreter_test_util.h"

namespace alpa {
namespace {

using testing_interp::Case;
using V = std::vector<double>;
const double kInf = std::numeric_limits<double>::infinity();

TEST(InterpreterReduce, SumAndMax) {
  Case c;
  // x[i][j][k] = 100 i + 10 j + k, shape [2, 3, 2].
  int32_t x = c.Param({2, 3, 2}, {0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121});
  // Over dims {0, 2}: for j: sum of (100 i + 10 j + k) = 4 * 10 j + 202.
  EXPECT_EQ(c.Values(c.b.ReduceSum(x, {0, 2})), V({202, 242, 282}));
  EXPECT_EQ(c.Values(c.b.ReduceMax(x, {1})), V({20, 21, 120, 121}));
  EXPECT_EQ(c.Values(c.b.ReduceSum(x, {0, 1, 2})), V({726}));
  EXPECT_EQ(c.Values(c.b.ReduceSum(x, {})), c.feeds[x].data);
  int32_t empty = c.Param({2, 0}, {});
  EXPECT_EQ(c.Values(c.b.ReduceMax(empty, {1})), V({-kInf, -kInf}));  // max of nothing
  EXPECT_EQ(c.Values(c.b.ReduceSum(empty, {1})), V({0, 0}));
}

TEST(InterpreterReduce, WindowWithPadding1d) {
  Case c;
  // Padded [P 1 3 2 5 4 P]; windows of 2, stride 2: [P 1] [3 2] [5 4].
  int32_t x = c.Param({5}, {1, 3, 2, 5, 4});
  EXPECT_EQ(c.Values(c.b.ReduceWindow(ReduceKind::kMax, x, {2}, {2}, {1}, {1})), V({1, 3, 5}));
  EXPECT_EQ(c.Values(c.b.ReduceWindow(ReduceKind::kSum, x, {2}, {2}, {1}, {1})), V({1, 5, 9}));
  // A window entirely in the padding holds only the identity.
  int32_t y = c.Param({2}, {-3, -4});
  EXPECT_EQ(c.Values(c.b.ReduceWindow(ReduceKind::kMax, y, {2}, {1}, {2}, {0})),
            V({-kInf, -3, -3}));
  EXPECT_EQ(c.Values(c.b.ReduceWindow(ReduceKind::kSum, y, {2}, {1}, {2}, {0})), V({0, -3, -7}));
}

TEST(InterpreterReduce, WindowWithPadding2d) {
  Case c;
  // x = [[1 2 3] [4 5 6] [7 8 9]], window 2x2, stride 1, one padding row on top, one padding
  // column on the right: 3x3 windows.
  int32_t x = c.Param({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(c.Values(c.b.ReduceWindow(ReduceKind::kSum, x, {2, 2}, {1, 1}, {1, 0}, {0, 1})),
            V({3, 5, 3, 12, 16, 9, 24, 28, 15}));
  EXPECT_EQ(c.Values(c.b.ReduceWindow(ReduceKind::kMax, x, {2, 2}, {1, 1}, {1, 0}, {0, 1})),
            V({2, 3, 3, 5, 6, 6, 8, 9, 9}));
  // Stride 2 without padding: one window [[1 2] [4 5]].
  EXPECT_EQ(c.Values(c.b.ReduceWindow(ReduceKind::kMax, x, {2, 2}, {2, 2}, {0, 0}, {0, 0})),
            V({5}));
}

TEST(InterpreterReduce, SelectAndScatterOverlapAndTies) {
  Case c;
  // Overlapping windows of 3, stride 1, all with their maximum (9) at index 2: 1 + 2 + 4 there.
  int32_t x = c.Param({5}, {1, 3, 9, 2, 0});
  int32_t s = c.Param({3}, {1, 2, 4});
  EXPECT_EQ(c.Values(c.b.SelectAndScatter(x, s, {3}, {1}, {0}, {0})), V({0, 0, 7, 0, 0}));
  // Ties: the first maximum of each window wins ({1 5 5} -> index 1; {5 2 7} -> index 4).
  int32_t x2 = c.Param({6}, {1, 5, 5, 2, 7, 7});
  int32_t s2 = c.Param({2}, {10, 20});
  EXPECT_EQ(c.Values(c.b.SelectAndScatter(x2, s2, {3}, {2}, {0}, {0})), V({0, 10, 0, 0, 20, 0}));
  // All equal: window [i, i + 1] selects i.
  int32_t x3 = c.Param({4}, {4, 4, 4, 4});
  int32_t s3 = c.Param({3}, {1, 2, 3});
  EXPECT_EQ(c.Values(c.b.SelectAndScatter(x3, s3, {2}, {1}, {0}, {0})), V({1, 2, 3, 0}));
}

TEST(InterpreterReduce, SelectAndScatterPaddingNeverSelected) {
  Case c;
  // Padded [P -5 -3 P], windows of 2: [P -5] -> 0, [-5 -3] -> 1, [-3 P] -> 1.
  int32_t x = c.Param({2}, {-5, -3});
  int32_t s = c.Param({3}, {1, 2, 3});
  EXPECT_EQ(c.Values(c.b.SelectAndScatter(x, s, {2}, {1}, {1}, {1})), V({1, 5}));
  // Even -inf elements are chosen over padding.
  int32_t xi = c.Param({2}, {-kInf, -kInf});
  EXPECT_EQ(c.Values(c.b.SelectAndScatter(xi, s, {2}, {1}, {1}, {1})), V({3, 3}));
  // A window entirely in the padding drops its source element.
  int32_t x2 = c.Param({1}, {8});
  int32_t s2 = c.Param({3}, {1, 2, 4});
  EXPECT_EQ(c.Values(c.b.SelectAndScatter(x2, s2, {1}, {1}, {1}, {1})), V({2}));
}

TEST(InterpreterReduce, SelectAndScatter2dTieIsRowMajor) {
  Case c;
  // One 2x2 window with maxima at (0, 1) and (1, 0): (0, 1) comes first in row-major order.
  int32_t x = c.Param({2, 2}, {1, 2, 2, 1});
  int32_t s = c.Param({1, 1}, {5});
  EXPECT_EQ(c.Values(c.b.SelectAndScatter(x, s, {2, 2}, {1, 1}, {0, 0}, {0, 0})), V({0, 5, 0, 0}));
  // Max-pool 2x2 stride 2 on 4x4 with padding 1: windows cover [P..], check one full case.
  int32_t y = c.Param({3, 3}, {1, 2, 3, 4, 9, 6, 7, 8, 5});
  int32_t s2 = c.Param({2, 2}, {1, 10, 100, 1000});
  // Padded 4x4 (lo 1 on both dims, hi 0): windows rows {-1,0},{1,2} x cols {-1,0},{1,2}.
  // (0,0): {1} -> (0,0); (0,1): {2,3} -> (0,2); (1,0): {4,7} -> (2,0); (1,1): {9,6,8,5} -> (1,1).
  EXPECT_EQ(c.Values(c.b.SelectAndScatter(y, s2, {2, 2}, {2, 2}, {1, 1}, {0, 0})),
            V({1, 0, 10, 0, 1000, 0, 100, 0, 0}));
}

TEST(InterpreterIndex, GatherAxis0Clamped) {
  Case c;
  int32_t x = c.Param({3, 2}, {1, 2, 3, 4, 5, 6});
  int32_t idx = c.Param({4}, {2, 0, -1, 7}, DType::kS32);
  int32_t g = c.b.Gather(x, idx, 0);
  EXPECT_EQ(c.b.shape(g), Dims({4, 2}));
  EXPECT_EQ(c.Values(g), V({5, 6, 1, 2, 1, 2, 5, 6}));
}

TEST(InterpreterIndex, GatherAxis1MatrixIndices) {
  Case c;
  int32_t x = c.Param({3, 2}, {1, 2, 3, 4, 5, 6});
  int32_t idx = c.Param({2, 2}, {1, 0, 5, -3}, DType::kS64);  // clamps to [[1 0] [1 0]]
  int32_t g = c.b.Gather(x, idx, 1);
  EXPECT_EQ(c.b.shape(g), Dims({3, 2, 2}));
  EXPECT_EQ(c.Values(g), V({2, 1, 2, 1, 4, 3, 4, 3, 6, 5, 6, 5}));
}

TEST(InterpreterIndex, ScatterAddAxis0Clamped) {
  Case c;
  int32_t base = c.Param({3, 2}, {1, 1, 1, 1, 1, 1});
  int32_t idx = c.Param({4}, {2, 0, -1, 7}, DType::kS32);
  int32_t upd = c.Param({4, 2}, {1, 2, 10, 20, 100, 200, 1000, 2000});
  // Row 2 gets updates 0 and 3, row 0 gets updates 1 and 2 (-1 clamps to 0), row 1 nothing.
  EXPECT_EQ(c.Values(c.b.ScatterAdd(base, idx, upd, 0)), V({111, 221, 1, 1, 1002, 2003}));
}

TEST(InterpreterIndex, ScatterAddAxis1) {
  Case c;
  int32_t base = c.Param({2, 3}, {0, 0, 0, 0, 0, 0});
  int32_t idx = c.Param({2}, {2, 9}, DType::kS32);  // both land on column 2
  int32_t upd = c.Param({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(c.Values(c.b.ScatterAdd(base, idx, upd, 1)), V({0, 0, 3, 0, 0, 7}));
}

TEST(InterpreterIndex, GatherScatterAddAreAdjoint) {
  // <gather(x, i), u> == <x, scatter_add(0, i, u)> for any x, u (the VJP pair).
  Case c;
  V xv = {0.5, -1, 2, 3, -0.25, 4, 1.5, -2};
  V uv = {1, 2, -3, 0.5, 4, -1, 2, 0.25, -0.5, 3, 1, -2};
  int32_t x = c.Param({2, 4}, xv);
  int32_t idx = c.Param({2, 3}, {3, 0, 3, -2, 1, 10}, DType::kS32);
  int32_t u = c.Param({2, 2, 3}, uv);
  int32_t zero = c.b.Constant(0, {2, 4}, DType::kF64);
  V g = c.Values(c.b.Gather(x, idx, 1));
  V s = c.Values(c.b.ScatterAdd(zero, idx, u, 1));
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < g.size(); ++i) lhs += g[i] * uv[i];
  for (size_t i = 0; i < s.size(); ++i) rhs += xv[i] * s[i];
  EXPECT_DOUBLE_EQ(lhs, rhs);
  EXPECT_NE(lhs, 0.0);
}

}  // namespace
}  // namespace alpa
