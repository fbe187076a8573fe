// The CPU interpreter on dot_general and convolution: small hand-computed cases, and general
// configurations against naive formulas written out here.
#include <vector>

#include <gtest/gtest.h>

#include "interpreter_test_util.h"

namespace alpa {
namespace {

using testing_interp::Case;
using V = std::vector<double>;

// Distinct, exactly representable values: 0.5 * (i % 13) - 2 + 0.25 * (i / 13).
V Ramp(int64_t n) {
  V v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(0.5 * static_cast<double>(i % 13) - 2.0 + 0.25 * static_cast<double>(i / 13));
  return v;
}

TEST(InterpreterDot, MatMul) {
  Case c;
  int32_t a = c.Param({2, 2}, {1, 2, 3, 4});
  int32_t b = c.Param({2, 2}, {5, 6, 7, 8});
  EXPECT_EQ(c.Values(c.b.MatMul(a, b)), V({19, 22, 43, 50}));
  // Contracting lhs dim 0 with rhs dim 0: a^T b = [[26, 30], [38, 44]].
  EXPECT_EQ(c.Values(c.b.DotGeneral(a, b, {{}, {}, {0}, {0}})), V({26, 30, 38, 44}));
  // Both dims contracted, crossed: sum a[i][j] b[j][i] = trace(a b) = 19 + 50.
  EXPECT_EQ(c.Values(c.b.DotGeneral(a, b, {{}, {}, {0, 1}, {1, 0}})), V({69}));
  // No contraction: the outer product [2, 2, 2, 2].
  int32_t u = c.Param({2}, {1, 2});
  int32_t w = c.Param({3}, {1, 10, 100});
  EXPECT_EQ(c.Values(c.b.DotGeneral(u, w, {})), V({1, 10, 100, 2, 20, 200}));
}

TEST(InterpreterDot, BatchDimsInTheMiddle) {
  // lhs [2 (free), 3 (batch), 4 (contracting)], rhs [4 (contracting), 3 (batch), 5 (free)]
  // -> [3, 2, 5] with out[b][i][j] = sum_k lhs[i][b][k] rhs[k][b][j].
  Case c;
  V lv = Ramp(24), rv = Ramp(60);
  int32_t lhs = c.Param({2, 3, 4}, lv);
  int32_t rhs = c.Param({4, 3, 5}, rv);
  int32_t d = c.b.DotGeneral(lhs, rhs, {{1}, {1}, {2}, {0}});
  ASSERT_EQ(c.b.shape(d), Dims({3, 2, 5}));
  V expect;
  for (int b = 0; b < 3; ++b) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 5; ++j) {
        double s = 0;
        for (int k = 0; k < 4; ++k)
          s += lv[static_cast<size_t>(i * 12 + b * 4 + k)] *
               rv[static_cast<size_t>(k * 15 + b * 5 + j)];
        expect.push_back(s);
      }
    }
  }
  EXPECT_EQ(c.Values(d), expect);
}

TEST(InterpreterDot, TwoBatchDimsSwapped) {
  // lhs [2 (b0), 3 (k), 4 (b1)], rhs [4 (b1), 2 (b0), 3 (k)]; batch pairs (0,1), (2,0).
  Case c;
  V lv = Ramp(24), rv = Ramp(24);
  int32_t lhs = c.Param({2, 3, 4}, lv);
  int32_t rhs = c.Param({4, 2, 3}, rv);
  int32_t d = c.b.DotGeneral(lhs, rhs, {{0, 2}, {1, 0}, {1}, {2}});
  ASSERT_EQ(c.b.shape(d), Dims({2, 4}));
  V expect;
  for (int b0 = 0; b0 < 2; ++b0) {
    for (int b1 = 0; b1 < 4; ++b1) {
      double s = 0;
      for (int k = 0; k < 3; ++k)
        s += lv[static_cast<size_t>(b0 * 12 + k * 4 + b1)] *
             rv[static_cast<size_t>(b1 * 6 + b0 * 3 + k)];
      expect.push_back(s);
    }
  }
  EXPECT_EQ(c.Values(d), expect);
}

TEST(InterpreterDot, Bf16AccumulatesInDoubleAndRoundsOnce) {
  Case c;
  // 256 + 1 + 1: rounding after every addition would lose both ones (bf16 has 8 significant
  // bits, so 257 rounds to 256); one rounding of 258 keeps them.
  int32_t a = c.Param({3}, {256, 1, 1}, DType::kBF16);
  int32_t b = c.Param({3}, {1, 1, 1}, DType::kBF16);
  EXPECT_EQ(c.Values(c.b.DotGeneral(a, b, {{}, {}, {0}, {0}})), V({258}));
}

TEST(InterpreterConv, LhsDilationByHand) {
  // x [1, 2, 3] dilated by 2 -> [1 0 2 0 3], padded 1/1 -> [0 1 0 2 0 3 0]; kernel [1, 10].
  Case c;
  int32_t x = c.Param({1, 1, 3}, {1, 2, 3});
  int32_t w = c.Param({1, 1, 2}, {1, 10});
  EXPECT_EQ(c.Values(c.b.Convolution(x, w, {1}, {1}, {1}, {2}, {1})), V({10, 1, 20, 2, 30, 3}));
}

TEST(InterpreterConv, StrideByHand) {
  // x [1 2 3 4 5], kernel [1 1 1], stride 2: windows [1 2 3], [3 4 5].
  Case c;
  int32_t x = c.Param({1, 1, 5}, {1, 2, 3, 4, 5});
  int32_t w = c.Param({1, 1, 3}, {1, 1, 1});
  EXPECT_EQ(c.Values(c.b.Convolution(x, w, {2}, {0}, {0}, {1}, {1})), V({6, 12}));
}

struct ConvConfig {
  Dims x, w;  // [N, C, H, W], [O, C / groups, KH, KW]
  Dims strides, lo, hi, lhs_dilation, rhs_dilation;
  int64_t groups;
};

// out[n][o][t0][t1] = sum over c < C/groups, k0, k1 of
//   x[n][g * C/groups + c][i0][i1] * w[o][c][k0][k1],  g = o / (O / groups),
// where p = t * stride + k * rhs_dilation - lo must be a multiple of lhs_dilation and
// i = p / lhs_dilation inside the input.
V NaiveConv2d(const ConvConfig& cf, const V& x, const V& w, const Dims& out_shape) {
  const int64_t n_ = cf.x[0], c_ = cf.x[1], h_ = cf.x[2], w_ = cf.x[3];
  const int64_t o_ = cf.w[0], cg = cf.w[1], kh = cf.w[2], kw = cf.w[3];
  const int64_t og = o_ / cf.groups;
  V out;
  for (int64_t n = 0; n < n_; ++n) {
    for (int64_t o = 0; o < o_; ++o) {
      const int64_t g = o / og;
      for (int64_t t0 = 0; t0 < out_shape[2]; ++t0) {
        for (int64_t t1 = 0; t1 < out_shape[3]; ++t1) {
          double s = 0;
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t k0 = 0; k0 < kh; ++k0) {
              for (int64_t k1 = 0; k1 < kw; ++k1) {
                int64_t p0 = t0 * cf.strides[0] + k0 * cf.rhs_dilation[0] - cf.lo[0];
                int64_t p1 = t1 * cf.strides[1] + k1 * cf.rhs_dilation[1] - cf.lo[1];
                if (p0 < 0 || p1 < 0 || p0 % cf.lhs_dilation[0] || p1 % cf.lhs_dilation[1]) {
                  continue;
                }
                int64_t i0 = p0 / cf.lhs_dilation[0], i1 = p1 / cf.lhs_dilation[1];
                if (i0 >= h_ || i1 >= w_) continue;
                s += x[static_cast<size_t>(((n * c_ + g * cg + c) * h_ + i0) * w_ + i1)] *
                     w[static_cast<size_t>(((o * cg + c) * kh + k0) * kw + k1)];
              }
            }
          }
          out.push_back(s);
        }
      }
    }
  }
  return out;
}

void CheckConv(const ConvConfig& cf, const Dims& expect_shape) {
  Case c;
  V xv = Ramp(cf.x[0] * cf.x[1] * cf.x[2] * cf.x[3]);
  V wv = Ramp(cf.w[0] * cf.w[1] * cf.w[2] * cf.w[3]);
  int32_t x = c.Param(cf.x, xv);
  int32_t w = c.Param(cf.w, wv);
  int32_t y =
      c.b.Convolution(x, w, cf.strides, cf.lo, cf.hi, cf.lhs_dilation, cf.rhs_dilation, cf.groups);
  ASSERT_TRUE(c.b.ok()) << c.b.status().message();
  ASSERT_EQ(c.b.shape(y), expect_shape);
  V got = c.Values(y);
  V want = NaiveConv2d(cf, xv, wv, expect_shape);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << "element " << i;
}

TEST(InterpreterConv, StridePaddingRhsDilationGroups) {
  // H: dilated kernel (3 - 1) * 2 + 1 = 5, padded input 7 + 1 + 2 = 10, T = (10 - 5) / 2 + 1 = 3.
  // W: kernel 2, padded 6 + 0 + 1 = 7, stride 1 -> T = 6.
  CheckConv({{2, 4, 7, 6}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {2, 1}, {1, 1}, {2, 1}, 2}, {2, 6, 3, 6});
}

TEST(InterpreterConv, LhsDilationWithGroupsAndStride) {
  // H: dilated input (4 - 1) * 2 + 1 = 7, padded 7 + 2 + 2 = 11, kernel 3, stride 2 -> T = 5.
  // W: dilated input (3 - 1) * 3 + 1 = 7, padded 7 + 1 + 0 = 8, dilated kernel 3, stride 1 -> 6.
  CheckConv({{1, 3, 4, 3}, {3, 1, 3, 2}, {2, 1}, {2, 1}, {2, 0}, {2, 3}, {1, 2}, 3}, {1, 3, 5, 6});
}

TEST(InterpreterConv, NegativePaddingCrops) {
  // W: input 6 - 1 - 1 = 4, kernel 2 -> T = 3. H: 5 + 0 + 0, kernel 1, stride 2 -> T = 3.
  CheckConv({{1, 2, 5, 6}, {2, 2, 1, 2}, {2, 1}, {0, -1}, {0, -1}, {1, 1}, {1, 1}, 1},
            {1, 2, 3, 3});
}

}  // namespace
}  // namespace alpa
