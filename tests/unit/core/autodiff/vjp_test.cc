// Gradient checks of every VJP rule: for a small f64 graph with scalar loss
// sum(op(inputs) * fixed random weights), the gradients from AppendBackward (run by the CPU
// reference interpreter) must match central finite differences to a relative error < 1e-6.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/autodiff/autodiff.h"
#include "core/ir/graph_builder.h"
#include "exec/cpu/interpreter.h"

namespace alpa {
namespace {

constexpr DType kF64 = DType::kF64;

class GradCheck {
 public:
  explicit GradCheck(uint64_t seed = 42) : rng_(seed) {}

  GraphBuilder& b() { return b_; }

  // A differentiated f64 input, uniform in [lo, hi].
  int32_t Input(const Dims& shape, double lo = -1.0, double hi = 1.0) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> v(static_cast<size_t>(Count(shape)));
    for (double& e : v) e = u(rng_);
    return InputWith(shape, v);
  }
  // Values of magnitude in [0.2, 1.5] with random sign: away from the kinks at 0.
  int32_t InputAwayFromZero(const Dims& shape) {
    std::uniform_real_distribution<double> u(0.2, 1.5);
    std::bernoulli_distribution sign(0.5);
    std::vector<double> v(static_cast<size_t>(Count(shape)));
    for (double& e : v) e = sign(rng_) ? u(rng_) : -u(rng_);
    return InputWith(shape, v);
  }
  // Distinct values at least 0.05 apart, shuffled: no ties for max-like ops.
  int32_t InputDistinct(const Dims& shape, bool wrt = true) {
    std::vector<double> v(static_cast<size_t>(Count(shape)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05 * static_cast<double>(i) - 1.0;
    std::shuffle(v.begin(), v.end(), rng_);
    return InputWith(shape, v, wrt);
  }
  int32_t InputWith(const Dims& shape, const std::vector<double>& v, bool wrt = true) {
    int32_t id =
        b_.Parameter(shape, kF64, TensorRole::kInput, "in" + std::to_string(b_.graph().size()));
    feeds_[id] = HostTensor{shape, kF64, v};
    if (wrt) inputs_.push_back(id);
    return id;
  }
  // A fed input that is not differentiated (predicates' sources, indices).
  int32_t Data(const Dims& shape, DType dtype, const std::vector<double>& v) {
    int32_t id = b_.Parameter(shape, dtype, TensorRole::kInput, "data");
    feeds_[id] = HostTensor{shape, dtype, v};
    return id;
  }

  // Builds loss = sum(out * w), differentiates it and compares with finite differences.
  void Check(int32_t out, double tolerance = 1e-6, double h = 1e-5) {
    ASSERT_TRUE(b_.ok()) << b_.status().message();
    const Dims shape = b_.shape(out);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> wv(static_cast<size_t>(Count(shape)));
    for (double& e : wv) e = u(rng_);
    int32_t w = Data(shape, b_.dtype(out), wv);
    int32_t loss = b_.ReduceSum(b_.Mul(out, w), Iota(static_cast<int64_t>(shape.size())));
    if (b_.dtype(loss) != kF64) loss = b_.Convert(loss, kF64);
    Result<std::vector<int32_t>> grads = AppendBackward(b_, loss, inputs_);
    ASSERT_TRUE(grads.ok()) << grads.status().message();
    Result<Graph> graph = std::move(b_).Finish();
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    Result<std::vector<HostTensor>> ad = Interpret(graph.value(), feeds_, grads.value());
    ASSERT_TRUE(ad.ok()) << ad.status().message();
    for (size_t i = 0; i < inputs_.size(); ++i) {
      int32_t in = inputs_[i];
      const HostTensor& got = ad.value()[i];
      ASSERT_EQ(got.shape, graph.value().op(in).shape) << "gradient of input " << i;
      double max_err = 0.0, max_ref = 0.0;
      for (size_t e = 0; e < feeds_[in].data.size(); ++e) {
        double fd = FiniteDifference(graph.value(), loss, in, e, h);
        max_err = std::max(max_err, std::fabs(fd - got.data[e]));
        max_ref = std::max(max_ref, std::fabs(fd));
        ASSERT_TRUE(std::isfinite(got.data[e])) << "input " << i << " element " << e;
      }
      EXPECT_LE(max_err / std::max(max_ref, 1e-8), tolerance)
          << "input " << i << ": max abs error " << max_err << ", max |gradient| " << max_ref;
      EXPECT_GT(max_ref, 0.0) << "input " << i << " has an all-zero gradient: a weak check";
    }
  }

  static Dims Iota(int64_t n) {
    Dims d;
    for (int64_t i = 0; i < n; ++i) d.push_back(i);
    return d;
  }

 private:
  static int64_t Count(const Dims& shape) {
    int64_t c = 1;
    for (int64_t d : shape) c *= d;
    return c;
  }

  double Loss(const Graph& graph, int32_t loss, const HostFeeds& feeds) {
    Result<std::vector<HostTensor>> r = Interpret(graph, feeds, {loss});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r.value()[0].data[0] : 0.0;
  }

  double FiniteDifference(const Graph& graph, int32_t loss, int32_t in, size_t e, double h) {
    HostFeeds f = feeds_;
    double x = f[in].data[e];
    f[in].data[e] = x + h;
    double plus = Loss(graph, loss, f);
    f[in].data[e] = x - h;
    double minus = Loss(graph, loss, f);
    return (plus - minus) / (2 * h);
  }

  std::mt19937_64 rng_;
  GraphBuilder b_;
  HostFeeds feeds_;
  std::vector<int32_t> inputs_;
};

// ---- Elementwise unary ----

TEST(VjpTest, Unary) {
  struct Case {
    OpKind kind;
    double lo, hi;  // input range, inside the function's smooth domain
  };
  for (Case c : {Case{OpKind::kNeg, -1, 1}, Case{OpKind::kExp, -1, 1}, Case{OpKind::kLog, 0.2, 2},
                 Case{OpKind::kTanh, -2, 2}, Case{OpKind::kSqrt, 0.2, 2},
                 Case{OpKind::kRsqrt, 0.3, 2}, Case{OpKind::kGelu, -3, 3}}) {
    SCOPED_TRACE(OpKindName(c.kind));
    GradCheck t;
    t.Check(t.b().Unary(c.kind, t.Input({3, 4}, c.lo, c.hi)));
  }
}

TEST(VjpTest, AbsAndReluAwayFromZero) {
  for (OpKind kind : {OpKind::kAbs, OpKind::kRelu}) {
    SCOPED_TRACE(OpKindName(kind));
    GradCheck t;
    t.Check(t.b().Unary(kind, t.InputAwayFromZero({4, 5})));
  }
}

TEST(VjpTest, ConvertBetweenFloats) {
  {  // f64 -> f64 is exact.
    GradCheck t;
    t.Check(t.b().Convert(t.Input({2, 3}), kF64));
  }
  {  // f64 -> f32 -> (loss in f32, converted to f64): f32 rounding limits the difference quotient.
    GradCheck t;
    t.Check(t.b().Convert(t.Input({2, 3}), DType::kF32), 1e-4, 1e-2);
  }
}

TEST(VjpTest, ConvertFromOrToIntegerHasNoGradient) {
  GraphBuilder b;
  int32_t x = b.Parameter({3}, kF64, TensorRole::kInput, "x");
  int32_t i = b.Convert(x, DType::kS32);
  int32_t back = b.Convert(i, kF64);
  Result<std::vector<int32_t>> to_int = AppendVjp(b, i, b.ScalarLike(1.0, i));
  ASSERT_TRUE(to_int.ok());
  EXPECT_EQ(to_int.value(), std::vector<int32_t>{-1});
  Result<std::vector<int32_t>> from_int = AppendVjp(b, back, b.ScalarLike(1.0, back));
  ASSERT_TRUE(from_int.ok());
  EXPECT_EQ(from_int.value(), std::vector<int32_t>{-1});
}

// ---- Elementwise binary / select ----

TEST(VjpTest, SmoothBinary) {
  for (OpKind kind : {OpKind::kAdd, OpKind::kSub, OpKind::kMul}) {
    SCOPED_TRACE(OpKindName(kind));
    GradCheck t;
    int32_t x = t.Input({3, 4});
    t.Check(t.b().Binary(kind, x, t.Input({3, 4})));
  }
  {
    GradCheck t;
    int32_t x = t.Input({3, 4});
    t.Check(t.b().Div(x, t.InputAwayFromZero({3, 4})));
  }
  {
    GradCheck t;
    int32_t x = t.Input({3, 4}, 0.3, 2.0);
    t.Check(t.b().Binary(OpKind::kPow, x, t.Input({3, 4}, -2.0, 2.0)));
  }
}

TEST(VjpTest, SameOperandTwice) {
  GradCheck t;
  int32_t x = t.Input({5});
  t.Check(t.b().Mul(x, x));  // d/dx x^2 = 2x: both operand cotangents accumulate
}

TEST(VjpTest, MaxMinAwayFromTies) {
  for (OpKind kind : {OpKind::kMax, OpKind::kMin}) {
    SCOPED_TRACE(OpKindName(kind));
    GradCheck t;
    int32_t x = t.InputDistinct({4, 5});
    int32_t y = t.InputDistinct({4, 5});  // a different shuffle of the same grid: offset below
    int32_t shifted = t.b().Add(y, t.b().ScalarLike(0.025, y));
    t.Check(t.b().Binary(kind, x, shifted));
  }
}

TEST(VjpTest, SelectNotIntoPredicate) {
  GradCheck t;
  int32_t p = t.Data({6}, kF64, {1, -1, 2, -2, 0.5, -0.5});
  int32_t pred = t.b().Compare(Comparison::kGt, p, t.b().ScalarLike(0.0, p));
  int32_t x = t.Input({6});
  t.Check(t.b().Select(pred, x, t.Input({6})));
}

TEST(VjpTest, CompareHasNoGradient) {
  GraphBuilder b;
  int32_t x = b.Parameter({3}, kF64, TensorRole::kInput, "x");
  int32_t c = b.Compare(Comparison::kLt, x, x);
  Result<std::vector<int32_t>> r = AppendVjp(b, c, b.Constant(1.0, {3}, DType::kPred));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value(), (std::vector<int32_t>{-1, -1}));
}

// ---- Contractions ----

TEST(VjpTest, DotGeneralMatMul) {
  GradCheck t;
  int32_t x = t.Input({3, 4});
  t.Check(t.b().MatMul(x, t.Input({4, 5})));
}

TEST(VjpTest, DotGeneralBatchDimsInTheMiddle) {
  GradCheck t;
  int32_t x = t.Input({4, 2, 3});  // batch dim 1
  int32_t y = t.Input({3, 5, 2});  // batch dim 2
  DotDims d;
  d.lhs_batch = {1};
  d.rhs_batch = {2};
  d.lhs_contracting = {2};
  d.rhs_contracting = {0};
  t.Check(t.b().DotGeneral(x, y, d));  // [2, 4, 5]
}

TEST(VjpTest, DotGeneralPermutedBatchAndContracting) {
  GradCheck t;
  int32_t x = t.Input({2, 3, 4, 2});     // batch {3, 0}, contracting {2, 1}
  int32_t y = t.Input({4, 2, 3, 2, 3});  // batch {1, 3}, contracting {0, 2}
  DotDims d;
  d.lhs_batch = {3, 0};
  d.rhs_batch = {1, 3};
  d.lhs_contracting = {2, 1};
  d.rhs_contracting = {0, 2};
  t.Check(t.b().DotGeneral(x, y, d));  // [2, 2, 3]
}

struct ConvCase {
  const char* name;
  Dims x, w, strides, lo, hi, lhs_dilation, rhs_dilation;
  int64_t groups;
};

TEST(VjpTest, Convolution) {
  const ConvCase cases[] = {
      {"plain", {2, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 1},
      {"stride2_pad", {2, 3, 6, 5}, {4, 3, 3, 2}, {2, 2}, {1, 1}, {1, 0}, {1, 1}, {1, 1}, 1},
      {"rhs_dilation", {1, 2, 7, 6}, {3, 2, 2, 3}, {1, 2}, {0, 1}, {1, 0}, {1, 1}, {2, 2}, 1},
      {"groups2", {2, 4, 5, 4}, {6, 2, 3, 2}, {1, 1}, {1, 0}, {1, 1}, {1, 1}, {1, 1}, 2},
      {"lhs_dilation", {1, 2, 4, 3}, {3, 2, 3, 2}, {1, 1}, {2, 1}, {2, 1}, {2, 3}, {1, 1}, 1},
      {"negative_padding", {1, 2, 7, 6}, {2, 2, 3, 2}, {2, 1}, {-1, 1}, {0, -2}, {1, 1}, {1, 1}, 1},
      {"1d_stride_slack", {2, 2, 10}, {3, 2, 3}, {3}, {0}, {0}, {1}, {1}, 1},
      {"everything", {2, 4, 5, 6}, {4, 2, 2, 3}, {2, 3}, {1, -1}, {2, 1}, {2, 1}, {1, 2}, 2},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    GradCheck t;
    int32_t x = t.Input(c.x);
    int32_t w = t.Input(c.w);
    t.Check(
        t.b().Convolution(x, w, c.strides, c.lo, c.hi, c.lhs_dilation, c.rhs_dilation, c.groups));
  }
}

// ---- Data movement ----

TEST(VjpTest, BroadcastInDim) {
  {
    GradCheck t;
    t.Check(t.b().BroadcastInDim(t.Input({3}), {2, 3}, {1}));
  }
  {  // size-1 dims expanded, and a new dim in the middle
    GradCheck t;
    t.Check(t.b().BroadcastInDim(t.Input({1, 3, 1}), {2, 3, 4, 5}, {0, 1, 3}));
  }
  {
    GradCheck t;
    t.Check(t.b().BroadcastInDim(t.Input({}), {2, 3}, {}));
  }
}

TEST(VjpTest, ReshapeTransposeReverse) {
  {
    GradCheck t;
    t.Check(t.b().Reshape(t.Input({2, 3, 4}), {4, 6}));
  }
  {
    GradCheck t;
    t.Check(t.b().Transpose(t.Input({2, 3, 4}), {2, 0, 1}));
  }
  {
    GradCheck t;
    t.Check(t.b().Reverse(t.Input({2, 3, 4}), {0, 2}));
  }
}

TEST(VjpTest, SliceWithStrides) {
  {
    GradCheck t;
    t.Check(t.b().Slice(t.Input({7, 8}), {1, 0}, {7, 8}, {2, 3}));
  }
  {
    GradCheck t;
    t.Check(t.b().Slice(t.Input({5, 4}), {1, 1}, {4, 3}));
  }
}

TEST(VjpTest, Concatenate) {
  GradCheck t;
  int32_t a = t.Input({2, 1, 3});
  int32_t b = t.Input({2, 4, 3});
  int32_t c = t.Input({2, 2, 3});
  t.Check(t.b().Concatenate({a, b, c}, 1));
}

TEST(VjpTest, Pad) {
  {
    GradCheck t;
    t.Check(t.b().Pad(t.Input({3, 4}), 0.5, {1, 0}, {2, 1}, {1, 2}));
  }
  {  // negative padding crops, also into interior padding
    GradCheck t;
    t.Check(t.b().Pad(t.Input({4, 5}), -1.0, {-1, 2}, {1, -3}, {1, 1}));
  }
}

// ---- Reductions ----

TEST(VjpTest, ReduceSum) {
  {
    GradCheck t;
    t.Check(t.b().ReduceSum(t.Input({2, 3, 4}), {0, 2}));
  }
  {
    GradCheck t;
    t.Check(t.b().ReduceSum(t.Input({2, 3}), {0, 1}));
  }
}

TEST(VjpTest, ReduceMax) {
  {
    GradCheck t;
    t.Check(t.b().ReduceMax(t.InputDistinct({3, 5}), {1}));
  }
  {
    GradCheck t;
    t.Check(t.b().ReduceMax(t.InputDistinct({2, 3, 4}), {0, 2}));
  }
}

// Ties share the gradient equally (documented in vjp_rules.cc).
TEST(VjpTest, ReduceMaxTiesShare) {
  GraphBuilder b;
  int32_t x = b.Parameter({2, 3}, kF64, TensorRole::kInput, "x");
  int32_t m = b.ReduceMax(x, {1});
  int32_t g = b.Parameter({2}, kF64, TensorRole::kInput, "g");
  Result<std::vector<int32_t>> r = AppendVjp(b, m, g);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Result<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  HostFeeds feeds;
  feeds[x] = HostTensor{{2, 3}, kF64, {1, 5, 5, 7, 2, 7}};
  feeds[g] = HostTensor{{2}, kF64, {3, 10}};
  Result<std::vector<HostTensor>> v = Interpret(graph.value(), feeds, {r.value()[0]});
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v.value()[0].data, (std::vector<double>{0, 1.5, 1.5, 5, 0, 5}));
}

TEST(VjpTest, ReduceWindowSum) {
  {
    GradCheck t;
    t.Check(t.b().ReduceWindow(ReduceKind::kSum, t.Input({5, 6}), {3, 2}, {2, 1}, {1, 0}, {1, 1}));
  }
  {  // non-overlapping, 4-d pooling shape
    GradCheck t;
    t.Check(t.b().ReduceWindow(ReduceKind::kSum, t.Input({2, 2, 4, 4}), {1, 1, 2, 2}, {1, 1, 2, 2},
                               {0, 0, 0, 0}, {0, 0, 0, 0}));
  }
  {  // stride larger than the window: skipped elements get zero
    GradCheck t;
    t.Check(t.b().ReduceWindow(ReduceKind::kSum, t.Input({9}), {2}, {3}, {0}, {0}));
  }
}

TEST(VjpTest, ReduceWindowMax) {
  {
    GradCheck t;
    t.Check(t.b().ReduceWindow(ReduceKind::kMax, t.InputDistinct({2, 2, 4, 4}), {1, 1, 2, 2},
                               {1, 1, 2, 2}, {0, 0, 0, 0}, {0, 0, 0, 0}));
  }
  {  // overlapping windows with padding
    GradCheck t;
    t.Check(t.b().ReduceWindow(ReduceKind::kMax, t.InputDistinct({5, 6}), {3, 3}, {2, 1}, {1, 1},
                               {1, 0}));
  }
}

TEST(VjpTest, SelectAndScatterSource) {
  struct Case {
    Dims x, window, strides, lo, hi;
  };
  for (const Case& c : {Case{{4, 6}, {2, 2}, {2, 2}, {0, 0}, {0, 0}},
                        Case{{5, 6}, {3, 2}, {1, 2}, {1, 0}, {1, 1}}}) {
    GradCheck t;
    // x's gradient is zero almost everywhere: only the source is checked here.
    int32_t x = t.InputDistinct(c.x, /*wrt=*/false);
    // The source has the window output's shape.
    int32_t rw = t.b().ReduceWindow(ReduceKind::kMax, x, c.window, c.strides, c.lo, c.hi);
    const Dims window_out = t.b().shape(rw);  // a copy: Input appends ops
    int32_t src = t.Input(window_out);
    t.Check(t.b().SelectAndScatter(x, src, c.window, c.strides, c.lo, c.hi));
  }
}

// ---- Indexing ----

TEST(VjpTest, Gather) {
  {  // axis 0, repeated indices accumulate
    GradCheck t;
    int32_t x = t.Input({4, 3});
    int32_t idx = t.Data({5}, DType::kS32, {2, 0, 2, 3, 2});
    t.Check(t.b().Gather(x, idx, 0));
  }
  {  // axis 1 with 2-d indices
    GradCheck t;
    int32_t x = t.Input({2, 5, 3});
    int32_t idx = t.Data({2, 2}, DType::kS64, {4, 1, 1, 0});
    t.Check(t.b().Gather(x, idx, 1));
  }
}

TEST(VjpTest, ScatterAdd) {
  {
    GradCheck t;
    int32_t base = t.Input({4, 3});
    int32_t idx = t.Data({5}, DType::kS32, {2, 0, 2, 3, 2});
    int32_t upd = t.Input({5, 3});
    t.Check(t.b().ScatterAdd(base, idx, upd, 0));
  }
  {
    GradCheck t;
    int32_t base = t.Input({2, 4});
    int32_t idx = t.Data({3}, DType::kS32, {3, 3, 1});
    int32_t upd = t.Input({2, 3});
    t.Check(t.b().ScatterAdd(base, idx, upd, 1));
  }
}

// ---- Composite: a softmax cross-entropy-like chain through many rules at once ----

TEST(VjpTest, CompositeSoftmax) {
  GradCheck t;
  GraphBuilder& b = t.b();
  int32_t x = t.Input({3, 5});
  int32_t w = t.Input({5, 4});
  int32_t logits = b.MatMul(x, w);
  int32_t mx = b.BroadcastInDim(b.ReduceMax(logits, {1}), {3, 4}, {0});
  int32_t e = b.Unary(OpKind::kExp, b.Sub(logits, mx));
  int32_t s = b.BroadcastInDim(b.ReduceSum(e, {1}), {3, 4}, {0});
  t.Check(b.Unary(OpKind::kLog, b.Div(e, s)));
}

}  // namespace
}  // namespace alpa
