// The backward driver (accumulation, unreachable entries, phases, layers, errors), the optimizer
// update formulas (checked numerically with the CPU reference interpreter) and
// BuildTrainingGraph (structure, and a few training steps that lower an MLP's loss).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/autodiff/autodiff.h"
#include "core/ir/graph_builder.h"
#include "exec/cpu/interpreter.h"

namespace alpa {
namespace {

constexpr DType kF64 = DType::kF64;

HostTensor Tensor(Dims shape, DType dtype, std::vector<double> data) {
  return HostTensor{std::move(shape), dtype, std::move(data)};
}

std::vector<HostTensor> Evaluate(const Graph& graph, const HostFeeds& feeds,
                                 const std::vector<int32_t>& fetch) {
  Result<std::vector<HostTensor>> r = Interpret(graph, feeds, fetch);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : std::vector<HostTensor>(fetch.size());
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i]))) << "element " << i;
  }
}

// ---- Driver ----

TEST(AutodiffTest, UnreachableWrtGetsZeros) {
  GraphBuilder b;
  int32_t x = b.Parameter({3}, kF64, TensorRole::kParameter, "x");
  int32_t unused = b.Parameter({2, 2}, kF64, TensorRole::kParameter, "unused");
  int32_t loss = b.ReduceSum(b.Mul(x, x), {0});
  Result<std::vector<int32_t>> grads = AppendBackward(b, loss, {x, unused});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  int32_t gz = grads.value()[1];
  EXPECT_EQ(b.op(gz).kind, OpKind::kConstant);
  EXPECT_EQ(b.op(gz).shape, (Dims{2, 2}));
  EXPECT_EQ(b.op(gz).role, TensorRole::kGradient);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  HostFeeds feeds;
  feeds[x] = Tensor({3}, kF64, {1, -2, 3});
  std::vector<HostTensor> v = Evaluate(g.value(), feeds, grads.value());
  EXPECT_EQ(v[0].data, (std::vector<double>{2, -4, 6}));
  EXPECT_EQ(v[1].data, (std::vector<double>{0, 0, 0, 0}));
}

TEST(AutodiffTest, SharedSubexpressionsAccumulate) {
  // h = 3x used three times: loss = sum(h * h + h) -> dL/dx = 3 (2h + 1).
  GraphBuilder b;
  int32_t x = b.Parameter({3}, kF64, TensorRole::kParameter, "x");
  int32_t h = b.Scale(x, 3.0);
  int32_t loss = b.ReduceSum(b.Add(b.Mul(h, h), h), {0});
  Result<std::vector<int32_t>> grads = AppendBackward(b, loss, {x});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  HostFeeds feeds;
  feeds[x] = Tensor({3}, kF64, {1, 0.5, -2});
  std::vector<HostTensor> v = Evaluate(g.value(), feeds, grads.value());
  EXPECT_EQ(v[0].data, (std::vector<double>{21, 12, -33}));
}

TEST(AutodiffTest, StopGradientMakesAnOpAConstant) {
  // loss = sum(x * s) with s = stop_gradient(2x): dL/dx = s = 2x (not 4x), and nothing is
  // differentiated through s.
  GraphBuilder b;
  int32_t x = b.Parameter({3}, kF64, TensorRole::kParameter, "x");
  int32_t s = b.Scale(x, 2.0);
  b.SetStopGradient(s);
  int32_t loss = b.ReduceSum(b.Mul(x, s), {0});
  const int32_t forward_ops = b.graph().size();
  Result<std::vector<int32_t>> grads = AppendBackward(b, loss, {x});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  // The backward: the loss's seed, its broadcast and one multiply by s (no mul by 2 for s's VJP).
  int32_t multiplies = 0;
  for (int32_t i = forward_ops; i < b.graph().size(); ++i) {
    multiplies += b.op(i).kind == OpKind::kMul ? 1 : 0;
  }
  EXPECT_EQ(multiplies, 1);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  HostFeeds feeds;
  feeds[x] = Tensor({3}, kF64, {1, -2, 0.5});
  std::vector<HostTensor> v = Evaluate(g.value(), feeds, grads.value());
  EXPECT_EQ(v[0].data, (std::vector<double>{2, -4, 1}));
}

TEST(AutodiffTest, ASoftmaxWithItsMaxStoppedHasTheSameGradientInFewerOps) {
  // sum(softmax(x) * w) over rows of 5, with and without the max marked: the same gradient
  // (the max's cotangent is zero in exact arithmetic), and no compare of x with its max.
  auto build = [](bool stop, int32_t* x, int32_t* w, std::vector<int32_t>* grads,
                  int32_t* backward_ops, int32_t* compares) {
    GraphBuilder b;
    *x = b.Parameter({3, 5}, kF64, TensorRole::kParameter, "x");
    *w = b.Parameter({3, 5}, kF64, TensorRole::kInput, "w");
    const int32_t m = b.ReduceMax(*x, {1});
    if (stop) b.SetStopGradient(m);
    const int32_t e = b.Unary(OpKind::kExp, b.Sub(*x, b.BroadcastInDim(m, {3, 5}, {0})));
    const int32_t p = b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {1}), {3, 5}, {0}));
    const int32_t loss = b.ReduceSum(b.Mul(p, *w), {0, 1});
    const int32_t forward_ops = b.graph().size();
    Result<std::vector<int32_t>> g = AppendBackward(b, loss, {*x});
    EXPECT_TRUE(g.ok()) << g.status().message();
    *grads = g.ok() ? g.value() : std::vector<int32_t>{};
    *backward_ops = b.graph().size() - forward_ops;
    *compares = 0;
    for (int32_t i = forward_ops; i < b.graph().size(); ++i) {
      *compares += b.op(i).kind == OpKind::kCompare ? 1 : 0;
    }
    Result<Graph> graph = std::move(b).Finish();
    EXPECT_TRUE(graph.ok()) << graph.status().message();
    return graph.ok() ? std::move(graph).value() : Graph{};
  };
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<double> xs(15), ws(15);
  for (double& v : xs) v = u(rng);
  for (double& v : ws) v = u(rng);
  std::vector<double> gradients[2];
  int32_t ops[2] = {0, 0}, compares[2] = {0, 0};
  for (int stop = 0; stop < 2; ++stop) {
    int32_t x = -1, w = -1, n = 0, c = 0;
    std::vector<int32_t> grads;
    const Graph g = build(stop == 1, &x, &w, &grads, &n, &c);
    ASSERT_EQ(grads.size(), 1u);
    HostFeeds feeds;
    feeds[x] = Tensor({3, 5}, kF64, xs);
    feeds[w] = Tensor({3, 5}, kF64, ws);
    gradients[stop] = Evaluate(g, feeds, grads)[0].data;
    ops[stop] = n;
    compares[stop] = c;
  }
  ExpectNear(gradients[1], gradients[0], 1e-12);
  EXPECT_EQ(compares[0], 1);  // reduce_max's VJP finds the maxima
  EXPECT_EQ(compares[1], 0);
  EXPECT_LT(ops[1] + 5, ops[0]);
}

TEST(AutodiffTest, LossItselfAndDuplicateWrt) {
  GraphBuilder b;
  int32_t x = b.Parameter({}, kF64, TensorRole::kParameter, "x");
  int32_t loss = b.Mul(x, x);
  Result<std::vector<int32_t>> grads = AppendBackward(b, loss, {x, loss, x});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  EXPECT_EQ(grads.value()[0], grads.value()[2]);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok());
  HostFeeds feeds;
  feeds[x] = Tensor({}, kF64, {1.5});
  std::vector<HostTensor> v = Evaluate(g.value(), feeds, grads.value());
  EXPECT_EQ(v[0].data[0], 3.0);
  EXPECT_EQ(v[1].data[0], 1.0);
}

TEST(AutodiffTest, PhasesLayersAndRolesStamped) {
  GraphBuilder b;
  b.set_layer(0);
  int32_t x = b.Parameter({2, 3}, kF64, TensorRole::kInput, "x");
  int32_t w0 = b.Parameter({3, 4}, kF64, TensorRole::kParameter, "w0");
  int32_t h = b.Unary(OpKind::kTanh, b.MatMul(x, w0));
  b.set_layer(1);
  int32_t w1 = b.Parameter({4, 1}, kF64, TensorRole::kParameter, "w1");
  int32_t loss = b.ReduceSum(b.MatMul(h, w1), {0, 1});
  const int32_t forward_size = b.graph().size();
  b.set_layer(7);  // the context must be restored afterwards
  Result<std::vector<int32_t>> grads = AppendBackward(b, loss, {w0, w1});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  EXPECT_EQ(b.layer(), 7);
  EXPECT_EQ(b.phase(), Phase::kForward);
  const Graph& g = b.graph();
  std::map<int32_t, int> ops_per_layer;
  for (int32_t i = forward_size; i < g.size(); ++i) {
    EXPECT_EQ(g.op(i).phase, Phase::kBackward) << DescribeOp(g, i);
    ops_per_layer[g.op(i).layer]++;
  }
  EXPECT_GT(ops_per_layer[0], 0);
  EXPECT_GT(ops_per_layer[1], 0);
  EXPECT_EQ(ops_per_layer.size(), 2u);
  EXPECT_EQ(g.op(grads.value()[0]).layer, 0);
  EXPECT_EQ(g.op(grads.value()[1]).layer, 1);
  EXPECT_EQ(g.op(grads.value()[0]).role, TensorRole::kGradient);
  EXPECT_EQ(g.op(grads.value()[1]).name, "w1.grad");
  EXPECT_EQ(g.op(grads.value()[0]).shape, (Dims{3, 4}));
  // x is an input, not in wrt: no cotangent of x's shape is computed (the driver prunes it).
  for (int32_t i = forward_size; i < g.size(); ++i) {
    if (g.op(i).kind == OpKind::kDotGeneral) {
      EXPECT_NE(g.op(i).shape, (Dims{2, 3}));
    }
  }
}

TEST(AutodiffTest, ErrorsNameTheProblem) {
  GraphBuilder b;
  int32_t x = b.Parameter({3}, kF64, TensorRole::kParameter, "x");
  int32_t v = b.Scale(x, 2.0);
  b.SetName(v, "vector_loss");
  Result<std::vector<int32_t>> r = AppendBackward(b, v, {x});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("vector_loss"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("scalar"), std::string::npos);

  int32_t i = b.ReduceSum(b.Convert(x, DType::kS32), {0});
  r = AppendBackward(b, i, {x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("s32"), std::string::npos) << r.status().message();

  int32_t loss = b.ReduceSum(x, {0});
  int32_t idx = b.Parameter({2}, DType::kS32, TensorRole::kInput, "idx");
  r = AppendBackward(b, loss, {idx});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("idx"), std::string::npos) << r.status().message();

  r = AppendBackward(b, 1000, {x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1000"), std::string::npos);
  EXPECT_TRUE(b.ok());  // argument errors do not poison the builder
}

// ---- Optimizer ----

// loss = sum(p * c): the gradient is c.
struct Tiny {
  GraphBuilder b;
  int32_t p = -1, c = -1, loss = -1, grad = -1;
  HostFeeds feeds;

  explicit Tiny(DType dtype = kF64) {
    p = b.Parameter({3}, dtype, TensorRole::kParameter, "p");
    c = b.Parameter({3}, dtype, TensorRole::kInput, "c");
    loss = b.ReduceSum(b.Mul(p, c), {0});
    if (dtype != kF64) loss = b.Convert(loss, DType::kF32);
    grad = AppendBackward(b, loss, {p}).value()[0];
    b.AddOutput(loss);
    feeds[p] = Tensor({3}, dtype, {1.0, -0.5, 2.0});
    feeds[c] = Tensor({3}, dtype, {0.25, -2.0, 0.5});
  }

  // The op named `name`, or -1.
  int32_t Find(const Graph& g, const std::string& name) const {
    for (int32_t i = 0; i < g.size(); ++i) {
      if (g.op(i).name == name) return i;
    }
    return -1;
  }
  // The op whose alias_of is `target`, or -1.
  static int32_t UpdateOf(const Graph& g, int32_t target) {
    for (int32_t i = 0; i < g.size(); ++i) {
      if (g.op(i).alias_of == target) return i;
    }
    return -1;
  }
};

TEST(OptimizerTest, Sgd) {
  Tiny t;
  OptimizerConfig config;
  config.kind = OptimizerKind::kSgd;
  config.learning_rate = 0.1;
  ASSERT_TRUE(AppendOptimizer(t.b, {t.p}, {t.grad}, config).ok());
  Result<Graph> g = std::move(t.b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  int32_t next = Tiny::UpdateOf(g.value(), t.p);
  ASSERT_GE(next, 0);
  EXPECT_EQ(g.value().op(next).phase, Phase::kUpdate);
  EXPECT_EQ(g.value().outputs, (std::vector<int32_t>{t.loss, next}));
  std::vector<HostTensor> v = Evaluate(g.value(), t.feeds, {next});
  ExpectNear(v[0].data, {1.0 - 0.025, -0.5 + 0.2, 2.0 - 0.05}, 1e-15);
}

TEST(OptimizerTest, Momentum) {
  Tiny t;
  OptimizerConfig config;
  config.kind = OptimizerKind::kMomentum;
  config.learning_rate = 0.1;
  config.momentum = 0.9;
  ASSERT_TRUE(AppendOptimizer(t.b, {t.p}, {t.grad}, config).ok());
  Result<Graph> g = std::move(t.b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  int32_t v = t.Find(g.value(), "p.momentum");
  ASSERT_GE(v, 0);
  EXPECT_EQ(g.value().op(v).role, TensorRole::kOptimizerState);
  int32_t v_next = Tiny::UpdateOf(g.value(), v), p_next = Tiny::UpdateOf(g.value(), t.p);
  ASSERT_GE(v_next, 0);
  ASSERT_GE(p_next, 0);
  t.feeds[v] = Tensor({3}, kF64, {1.0, 0.0, -1.0});
  std::vector<HostTensor> r = Evaluate(g.value(), t.feeds, {v_next, p_next});
  std::vector<double> want_v = {0.9 + 0.25, -2.0, -0.9 + 0.5};
  ExpectNear(r[0].data, want_v, 1e-15);
  ExpectNear(r[1].data, {1.0 - 0.1 * want_v[0], -0.5 - 0.1 * want_v[1], 2.0 - 0.1 * want_v[2]},
             1e-15);
}

TEST(OptimizerTest, AdamWithBiasCorrection) {
  Tiny t;
  OptimizerConfig config;  // Adam by default
  config.learning_rate = 0.01;
  config.beta1 = 0.8;
  config.beta2 = 0.95;
  config.epsilon = 1e-3;
  ASSERT_TRUE(AppendOptimizer(t.b, {t.p}, {t.grad}, config).ok());
  Result<Graph> g = std::move(t.b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Graph& graph = g.value();
  int32_t m = t.Find(graph, "p.m"), v = t.Find(graph, "p.v");
  int32_t step = t.Find(graph, "optimizer.step");
  ASSERT_GE(m, 0);
  ASSERT_GE(v, 0);
  ASSERT_GE(step, 0);
  EXPECT_EQ(graph.op(step).dtype, DType::kF32);
  EXPECT_EQ(graph.op(step).shape, Dims{});
  EXPECT_EQ(graph.op(step).role, TensorRole::kOptimizerState);
  int32_t step_next = Tiny::UpdateOf(graph, step);
  int32_t m_next = Tiny::UpdateOf(graph, m), v_next = Tiny::UpdateOf(graph, v);
  int32_t p_next = Tiny::UpdateOf(graph, t.p);
  // Every update op is an output, and every output after the loss is an update op.
  std::vector<int32_t> updates;
  for (int32_t i = 0; i < graph.size(); ++i) {
    if (graph.op(i).alias_of >= 0) updates.push_back(i);
  }
  EXPECT_EQ(updates.size(), 4u);
  ASSERT_EQ(graph.outputs.size(), 5u);
  for (int32_t u : updates) {
    EXPECT_NE(std::find(graph.outputs.begin(), graph.outputs.end(), u), graph.outputs.end());
    EXPECT_EQ(graph.op(u).phase, Phase::kUpdate);
  }

  const std::vector<double> p0 = {1.0, -0.5, 2.0}, gr = {0.25, -2.0, 0.5};
  const std::vector<double> m0 = {0.1, 0.2, -0.3}, v0 = {0.01, 0.5, 0.2};
  t.feeds[m] = Tensor({3}, kF64, m0);
  t.feeds[v] = Tensor({3}, kF64, v0);
  t.feeds[step] = Tensor({}, DType::kF32, {2});  // this is the third step
  std::vector<HostTensor> r = Evaluate(graph, t.feeds, {step_next, m_next, v_next, p_next});
  EXPECT_EQ(r[0].data[0], 3.0);
  std::vector<double> want_m, want_v, want_p;
  for (size_t i = 0; i < 3; ++i) {
    double mm = 0.8 * m0[i] + 0.2 * gr[i], vv = 0.95 * v0[i] + 0.05 * gr[i] * gr[i];
    double m_hat = mm / (1 - std::pow(0.8, 3)), v_hat = vv / (1 - std::pow(0.95, 3));
    want_m.push_back(mm);
    want_v.push_back(vv);
    want_p.push_back(p0[i] - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-3));
  }
  ExpectNear(r[1].data, want_m, 1e-14);
  ExpectNear(r[2].data, want_v, 1e-14);
  // The bias corrections are computed in f32 (the step counter's dtype).
  ExpectNear(r[3].data, want_p, 1e-7);

  // First step from zero state: p - lr g / (|g| + eps) exactly as the formula says.
  t.feeds[m] = Tensor({3}, kF64, {0, 0, 0});
  t.feeds[v] = Tensor({3}, kF64, {0, 0, 0});
  t.feeds[step] = Tensor({}, DType::kF32, {0});
  r = Evaluate(graph, t.feeds, {p_next});
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(r[0].data[i], p0[i] - 0.01 * gr[i] / (std::fabs(gr[i]) + 1e-3), 1e-8);
  }
}

TEST(OptimizerTest, MasterWeightsForHalfPrecision) {
  Tiny t(DType::kF16);
  OptimizerConfig config;
  config.kind = OptimizerKind::kSgd;
  config.learning_rate = 1e-3;  // too small a step for f16 near 1, not for the f32 master
  config.master_weights = true;
  ASSERT_TRUE(AppendOptimizer(t.b, {t.p}, {t.grad}, config).ok());
  Result<Graph> g = std::move(t.b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Graph& graph = g.value();
  int32_t master = t.Find(graph, "p.master");
  ASSERT_GE(master, 0);
  EXPECT_EQ(graph.op(master).dtype, DType::kF32);
  EXPECT_EQ(graph.op(master).role, TensorRole::kOptimizerState);
  int32_t master_next = Tiny::UpdateOf(graph, master), p_next = Tiny::UpdateOf(graph, t.p);
  ASSERT_GE(master_next, 0);
  ASSERT_GE(p_next, 0);
  EXPECT_EQ(graph.op(master_next).dtype, DType::kF32);
  EXPECT_EQ(graph.op(p_next).dtype, DType::kF16);
  EXPECT_EQ(graph.op(p_next).kind, OpKind::kConvert);
  EXPECT_EQ(graph.op(p_next).operands[0], master_next);

  // Master slightly off the f16 grid, as it is after a few steps.
  std::vector<double> m0 = {1.0 + 1e-4, -0.5, 2.0};
  t.feeds[master] = Tensor({3}, DType::kF32, {RoundToDType(m0[0], DType::kF32), -0.5, 2.0});
  std::vector<HostTensor> r = Evaluate(graph, t.feeds, {master_next, p_next});
  const std::vector<double> gr = {0.25, -2.0, 0.5};
  for (size_t i = 0; i < 3; ++i) {
    // Every op rounds to f32: the lr constant, lr * g, and the difference.
    auto f32 = [](double v) { return RoundToDType(v, DType::kF32); };
    double want = f32(f32(m0[i]) - f32(f32(1e-3) * gr[i]));
    EXPECT_EQ(r[0].data[i], want) << i;
    EXPECT_EQ(r[1].data[i], RoundToDType(r[0].data[i], DType::kF16)) << i;
  }
  // The master moved where an f16 update would have been lost in rounding.
  EXPECT_NE(r[0].data[0], t.feeds[master].data[0]);
}

TEST(OptimizerTest, RejectsBadPairs) {
  Tiny t;
  OptimizerConfig config;
  Status s = AppendOptimizer(t.b, {t.p}, {}, config);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = AppendOptimizer(t.b, {t.loss}, {t.loss}, config);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("parameter"), std::string::npos) << s.message();
  s = AppendOptimizer(t.b, {t.p, t.p}, {t.grad, t.grad}, config);
  EXPECT_NE(s.message().find("twice"), std::string::npos) << s.message();
  s = AppendOptimizer(t.b, {t.p}, {t.loss}, config);
  EXPECT_NE(s.message().find("does not fit"), std::string::npos) << s.message();
}

// ---- BuildTrainingGraph ----

// A two-layer MLP regression: loss = mean((tanh(x w1 + b1) w2 - y)^2).
Graph Mlp(int32_t* x, int32_t* y) {
  GraphBuilder b;
  *x = b.Parameter({8, 4}, DType::kF32, TensorRole::kInput, "x");
  *y = b.Parameter({8, 2}, DType::kF32, TensorRole::kInput, "y");
  b.set_layer(0);
  int32_t w1 = b.Parameter({4, 6}, DType::kF32, TensorRole::kParameter, "w1");
  int32_t b1 = b.Parameter({6}, DType::kF32, TensorRole::kParameter, "b1");
  int32_t h = b.Unary(OpKind::kTanh, b.Add(b.MatMul(*x, w1), b.BroadcastTo(b1, {8, 6})));
  b.set_layer(1);
  int32_t w2 = b.Parameter({6, 2}, DType::kF32, TensorRole::kParameter, "w2");
  int32_t d = b.Sub(b.MatMul(h, w2), *y);
  int32_t loss = b.Scale(b.ReduceSum(b.Mul(d, d), {0, 1}), 1.0 / 16);
  b.AddOutput(loss);
  return std::move(b).Finish().value();
}

TEST(TrainingGraphTest, StructureAndTrainingLowersTheLoss) {
  int32_t x = -1, y = -1;
  Graph forward = Mlp(&x, &y);
  const int32_t loss = forward.outputs[0];
  OptimizerConfig config;
  config.learning_rate = 0.05;
  Result<Graph> r = BuildTrainingGraph(forward, config);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Graph& g = r.value();
  ASSERT_TRUE(ValidateGraph(g).ok());
  EXPECT_EQ(g.outputs[0], loss);
  // 3 parameters x (param, m, v) + the step counter.
  int32_t num_updates = 0;
  for (int32_t id : g.outputs) num_updates += g.op(id).alias_of >= 0 ? 1 : 0;
  EXPECT_EQ(num_updates, 10);
  EXPECT_EQ(g.outputs.size(), 11u);

  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 0.5);
  HostFeeds feeds;
  for (int32_t i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::kParameter) continue;
    int64_t n = 1;
    for (int64_t d : op.shape) n *= d;
    HostTensor t{op.shape, op.dtype, std::vector<double>(static_cast<size_t>(n), 0.0)};
    if (op.role != TensorRole::kOptimizerState) {
      for (double& e : t.data) e = RoundToDType(normal(rng), op.dtype);
    }
    feeds[i] = t;
  }
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    std::vector<HostTensor> out = Evaluate(g, feeds, g.outputs);
    ASSERT_EQ(out.size(), g.outputs.size());
    if (step == 0) first = out[0].data[0];
    last = out[0].data[0];
    for (size_t k = 1; k < out.size(); ++k) feeds[g.op(g.outputs[k]).alias_of] = out[k];
  }
  EXPECT_LT(last, 0.5 * first) << "first loss " << first << ", after 30 steps " << last;
}

TEST(TrainingGraphTest, Errors) {
  int32_t x = -1, y = -1;
  Graph forward = Mlp(&x, &y);
  Graph no_outputs = forward;
  no_outputs.outputs.clear();
  Result<Graph> r = BuildTrainingGraph(no_outputs, OptimizerConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("outputs"), std::string::npos);
  Graph vector_loss = forward;
  vector_loss.outputs = {x};
  r = BuildTrainingGraph(vector_loss, OptimizerConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("scalar"), std::string::npos);
  Graph broken = forward;
  broken.ops[static_cast<size_t>(x)].shape = {3};  // stored type no longer matches its users
  r = BuildTrainingGraph(broken, OptimizerConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidGraph);
  // A training graph made a training graph again would differentiate its own update.
  Result<Graph> trained = BuildTrainingGraph(forward, OptimizerConfig{});
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  r = BuildTrainingGraph(trained.value(), OptimizerConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("already has a backward phase"), std::string::npos)
      << r.status().message();
  Graph no_weights = forward;
  for (Op& op : no_weights.ops) {
    if (op.role == TensorRole::kParameter) op.role = TensorRole::kInput;
  }
  r = BuildTrainingGraph(no_weights, OptimizerConfig{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no parameter op with role parameter"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace alpa
