// The llama family: preset sizes against the published parameter counts, the graph's structure,
// its loss against a direct implementation of the Llama forward pass (RMSNorm, rotary
// embeddings, grouped-query causal attention, SwiGLU, untied head), and its autodiff gradients
// against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/autodiff/autodiff.h"
#include "core/ir/graph_builder.h"
#include "core/ir/graph_stats.h"
#include "exec/cpu/interpreter.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

// Published sizes: Llama 2 paper / model cards (7B 6.74B, 13B 13.02B, 70B 68.98B); Llama 3
// model card (8B 8.03B, 70B 70.55B). Also the architecture arithmetic, with d = hidden / heads:
//   P = 2 V h + h + L (2 h^2 + 2 h kv_heads d + 3 h ffn + 2 h)
// e.g. llama2-7b: 2 * 32000 * 4096 + 4096 + 32 * (2 * 4096^2 + 2 * 4096^2 + 3 * 4096 * 11008
// + 2 * 4096) = 6,738,415,616.
TEST(LlamaTest, PresetsMatchPublishedParameterCounts) {
  const std::map<std::string, double> published = {{"llama2-7b", 6.74e9},
                                                   {"llama2-13b", 13.02e9},
                                                   {"llama2-70b", 68.98e9},
                                                   {"llama3-8b", 8.03e9},
                                                   {"llama3-70b", 70.55e9}};
  int presets = 0;
  for (const ModelPreset& p : ModelPresets()) {
    if (p.family != "llama") continue;
    SCOPED_TRACE(p.name);
    ++presets;
    ASSERT_EQ(published.count(p.name), 1u);
    Result<ModelSpec> spec = ParseModelSpec(p.name + ":training=0");
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    Result<Graph> g = BuildForwardModel(spec.value());
    ASSERT_TRUE(g.ok()) << g.status().message();
    const int64_t params = ComputeGraphStats(g.value()).parameter_count;
    EXPECT_NEAR(static_cast<double>(params) / published.at(p.name), 1.0, 0.005) << params;
    auto key = [&](const char* k) { return std::stoll(spec.value().keys.at(k)); };
    const int64_t h = key("hidden"), l = key("layers"), heads = key("heads"), kv = key("kv_heads"),
                  f = key("ffn"), v = key("vocab");
    const int64_t d = h / heads;
    EXPECT_EQ(params, 2 * v * h + h + l * (2 * h * h + 2 * h * kv * d + 3 * h * f + 2 * h));
  }
  EXPECT_EQ(presets, 5);
}

TEST(LlamaTest, DefaultsAndPresetKeys) {
  ModelSpec s = ParseModelSpec("llama").value();
  EXPECT_EQ(s.keys.at("dtype"), "bf16");
  EXPECT_EQ(s.keys.at("master_weights"), "1");
  EXPECT_EQ(s.keys.at("kv_heads"), "0");
  EXPECT_EQ(s.keys.at("seq"), "4096");
  ModelSpec l3 = ParseModelSpec("llama3-8b").value();
  EXPECT_EQ(l3.keys.at("seq"), "8192");
  EXPECT_EQ(l3.keys.at("kv_heads"), "8");
  EXPECT_EQ(l3.keys.at("vocab"), "128256");
}

TEST(LlamaTest, SpecErrorsNameTheKeys) {
  Result<Graph> g = BuildModel("llama:hidden=64,heads=4,kv_heads=3,ffn=8,layers=1,seq=4,vocab=8");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("heads (4) must be a multiple of kv_heads (3)"),
            std::string::npos)
      << g.status().message();
  g = BuildModel("llama:hidden=12,heads=4,ffn=8,layers=1,seq=4,vocab=8,batch=1");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("hidden / heads (3) must be even"), std::string::npos)
      << g.status().message();
  EXPECT_FALSE(ParseModelSpec("llama:heads=0").ok());
  EXPECT_FALSE(ParseModelSpec("llama:ffn=0").ok());
}

int64_t CountOps(const Graph& g, OpKind kind, Phase phase) {
  int64_t n = 0;
  for (const Op& op : g.ops) n += op.kind == kind && op.phase == phase ? 1 : 0;
  return n;
}

const Op* FindNamed(const Graph& g, const std::string& name) {
  for (const Op& op : g.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// Nine matmuls per block (q, k, v, o, scores, context, gate, up, down) plus the head, each with
// two backward dots; k and v are [h, kv_heads * d]; the head is its own weight; no position table.
TEST(LlamaTest, TrainingGraphStructure) {
  Result<Graph> built = BuildModel(
      "llama:layers=3,hidden=32,heads=4,kv_heads=2,ffn=48,seq=8,vocab=16,batch=2,dtype=f32");
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph& g = built.value();
  EXPECT_EQ(CountOps(g, OpKind::kDotGeneral, Phase::kForward), 9 * 3 + 1);
  EXPECT_EQ(CountOps(g, OpKind::kDotGeneral, Phase::kBackward), 2 * (9 * 3 + 1));
  ASSERT_NE(FindNamed(g, "h0.attn.k.w"), nullptr);
  EXPECT_EQ(FindNamed(g, "h0.attn.k.w")->shape, (Dims{32, 16}));
  EXPECT_EQ(FindNamed(g, "h2.attn.v.w")->shape, (Dims{32, 16}));
  EXPECT_EQ(FindNamed(g, "h1.attn.q.w")->shape, (Dims{32, 32}));
  EXPECT_EQ(FindNamed(g, "h1.mlp.gate.w")->shape, (Dims{32, 48}));
  EXPECT_EQ(FindNamed(g, "h1.mlp.down.w")->shape, (Dims{48, 32}));
  ASSERT_NE(FindNamed(g, "lm_head.w"), nullptr);
  EXPECT_EQ(FindNamed(g, "lm_head.w")->shape, (Dims{32, 16}));
  EXPECT_EQ(FindNamed(g, "wpe"), nullptr);
  EXPECT_EQ(FindNamed(g, "h0.attn_norm.b"), nullptr);  // RMSNorm has no bias
  ASSERT_NE(FindNamed(g, "rope.cos"), nullptr);
  EXPECT_EQ(FindNamed(g, "rope.cos")->role, TensorRole::kInput);
  EXPECT_EQ(FindNamed(g, "rope.cos")->shape, (Dims{2, 8, 8}));
  EXPECT_TRUE(ValidateGraph(g).ok()) << ValidateGraph(g).message();
  EXPECT_EQ(ComputeGraphStats(g).num_layers, 5);
}

// ---- The forward pass, written out directly ----

constexpr int64_t kBatch = 2, kSeq = 5, kHidden = 16, kHeads = 4, kKvHeads = 2, kFfn = 24,
                  kVocab = 11, kLayers = 2, kHeadDim = kHidden / kHeads;
const char* kTinySpec =
    "llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=5,vocab=11,batch=2,dtype=f64,"
    "training=0";

using Matrix = std::vector<double>;  // row-major

// Random weights (norm gains around 1), tokens and labels, and the rotary tables of positions
// 0 .. seq-1 with theta 10000.
HostFeeds TinyFeeds(const Graph& g) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> weight(-0.5, 0.5);
  std::uniform_int_distribution<int64_t> token(0, kVocab - 1);
  HostFeeds feeds;
  for (int32_t id = 0; id < g.size(); ++id) {
    const Op& op = g.op(id);
    if (op.kind != OpKind::kParameter) continue;
    HostTensor t{op.shape, op.dtype, {}};
    int64_t n = 1;
    for (int64_t d : op.shape) n *= d;
    for (int64_t i = 0; i < n; ++i) {
      if (op.name == "tokens" || op.name == "labels") {
        t.data.push_back(static_cast<double>(token(rng)));
      } else if (op.name == "rope.cos" || op.name == "rope.sin") {
        const int64_t position = (i / kHeadDim) % kSeq, lane = i % kHeadDim % (kHeadDim / 2);
        const double angle =
            static_cast<double>(position) *
            std::pow(10000.0, -2.0 * static_cast<double>(lane) / static_cast<double>(kHeadDim));
        t.data.push_back(op.name == "rope.cos" ? std::cos(angle) : std::sin(angle));
      } else if (op.shape.size() == 1) {
        t.data.push_back(1.0 + weight(rng));
      } else {
        t.data.push_back(weight(rng));
      }
    }
    feeds[id] = std::move(t);
  }
  return feeds;
}

class ReferenceLlama {
 public:
  ReferenceLlama(const Graph& g, const HostFeeds& feeds) : g_(g), feeds_(feeds) {}

  double Loss() {
    const std::vector<double>& tokens = Named("tokens");
    const std::vector<double>& labels = Named("labels");
    double total = 0.0;
    for (int64_t b = 0; b < kBatch; ++b) {
      Matrix x(kSeq * kHidden);
      for (int64_t t = 0; t < kSeq; ++t) {
        const int64_t tok = static_cast<int64_t>(tokens[static_cast<size_t>(b * kSeq + t)]);
        for (int64_t c = 0; c < kHidden; ++c) {
          x[At(t, c, kHidden)] = Named("wte")[At(tok, c, kHidden)];
        }
      }
      for (int64_t l = 0; l < kLayers; ++l) {
        const std::string p = "h" + std::to_string(l);
        Matrix attn = Attention(b, RmsNorm(x, Named(p + ".attn_norm.g")), p + ".attn");
        for (size_t i = 0; i < x.size(); ++i) x[i] += attn[i];
        Matrix mlp = Mlp(RmsNorm(x, Named(p + ".mlp_norm.g")), p + ".mlp");
        for (size_t i = 0; i < x.size(); ++i) x[i] += mlp[i];
      }
      Matrix logits =
          MatMul(RmsNorm(x, Named("norm_f.g")), Named("lm_head.w"), kSeq, kHidden, kVocab);
      for (int64_t t = 0; t < kSeq; ++t) {
        double max = -1e300, sum = 0.0;
        for (int64_t c = 0; c < kVocab; ++c) max = std::max(max, logits[At(t, c, kVocab)]);
        for (int64_t c = 0; c < kVocab; ++c) sum += std::exp(logits[At(t, c, kVocab)] - max);
        const int64_t label = static_cast<int64_t>(labels[static_cast<size_t>(b * kSeq + t)]);
        total += std::log(sum) + max - logits[At(t, label, kVocab)];
      }
    }
    return total / static_cast<double>(kBatch * kSeq);
  }

 private:
  static size_t At(int64_t row, int64_t col, int64_t cols) {
    return static_cast<size_t>(row * cols + col);
  }

  const std::vector<double>& Named(const std::string& name) {
    for (int32_t id = 0; id < g_.size(); ++id) {
      if (g_.op(id).kind == OpKind::kParameter && g_.op(id).name == name) {
        return feeds_.at(id).data;
      }
    }
    ADD_FAILURE() << "no parameter " << name;
    static const std::vector<double> kEmpty(1024, 0.0);
    return kEmpty;
  }

  static Matrix MatMul(const Matrix& a, const Matrix& w, int64_t rows, int64_t in, int64_t out) {
    Matrix y(static_cast<size_t>(rows * out), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < in; ++k) {
        for (int64_t c = 0; c < out; ++c) y[At(r, c, out)] += a[At(r, k, in)] * w[At(k, c, out)];
      }
    }
    return y;
  }

  static Matrix RmsNorm(const Matrix& x, const std::vector<double>& gain) {
    Matrix y(x.size());
    for (int64_t t = 0; t < kSeq; ++t) {
      double sum = 0.0;
      for (int64_t c = 0; c < kHidden; ++c) sum += x[At(t, c, kHidden)] * x[At(t, c, kHidden)];
      const double scale = 1.0 / std::sqrt(sum / kHidden + 1e-5);
      for (int64_t c = 0; c < kHidden; ++c) {
        y[At(t, c, kHidden)] = x[At(t, c, kHidden)] * scale * gain[static_cast<size_t>(c)];
      }
    }
    return y;
  }

  // Rotate-half rotary embedding of one head vector at token t of sample b.
  void Rotate(int64_t b, int64_t t, double* head) {
    const std::vector<double>& cos = Named("rope.cos");
    const std::vector<double>& sin = Named("rope.sin");
    const int64_t half = kHeadDim / 2;
    std::vector<double> rotated(static_cast<size_t>(kHeadDim));
    for (int64_t i = 0; i < kHeadDim; ++i) {
      rotated[static_cast<size_t>(i)] = i < half ? -head[i + half] : head[i - half];
    }
    for (int64_t i = 0; i < kHeadDim; ++i) {
      const size_t at = static_cast<size_t>((b * kSeq + t) * kHeadDim + i);
      head[i] = head[i] * cos[at] + rotated[static_cast<size_t>(i)] * sin[at];
    }
  }

  Matrix Attention(int64_t b, const Matrix& x, const std::string& p) {
    const int64_t kv_width = kKvHeads * kHeadDim;
    Matrix q = MatMul(x, Named(p + ".q.w"), kSeq, kHidden, kHidden);
    Matrix k = MatMul(x, Named(p + ".k.w"), kSeq, kHidden, kv_width);
    Matrix v = MatMul(x, Named(p + ".v.w"), kSeq, kHidden, kv_width);
    for (int64_t t = 0; t < kSeq; ++t) {
      for (int64_t h = 0; h < kHeads; ++h) Rotate(b, t, &q[At(t, h * kHeadDim, kHidden)]);
      for (int64_t h = 0; h < kKvHeads; ++h) Rotate(b, t, &k[At(t, h * kHeadDim, kv_width)]);
    }
    Matrix context(static_cast<size_t>(kSeq * kHidden), 0.0);
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t kv = h / (kHeads / kKvHeads);  // grouped: consecutive heads share a kv head
      for (int64_t t = 0; t < kSeq; ++t) {
        std::vector<double> scores;
        for (int64_t u = 0; u <= t; ++u) {  // causal
          double s = 0.0;
          for (int64_t i = 0; i < kHeadDim; ++i) {
            s += q[At(t, h * kHeadDim + i, kHidden)] * k[At(u, kv * kHeadDim + i, kv_width)];
          }
          scores.push_back(s / std::sqrt(static_cast<double>(kHeadDim)));
        }
        const double max = *std::max_element(scores.begin(), scores.end());
        double sum = 0.0;
        for (double& s : scores) sum += (s = std::exp(s - max));
        for (int64_t u = 0; u <= t; ++u) {
          for (int64_t i = 0; i < kHeadDim; ++i) {
            context[At(t, h * kHeadDim + i, kHidden)] +=
                scores[static_cast<size_t>(u)] / sum * v[At(u, kv * kHeadDim + i, kv_width)];
          }
        }
      }
    }
    return MatMul(context, Named(p + ".o.w"), kSeq, kHidden, kHidden);
  }

  Matrix Mlp(const Matrix& x, const std::string& p) {
    Matrix gate = MatMul(x, Named(p + ".gate.w"), kSeq, kHidden, kFfn);
    Matrix up = MatMul(x, Named(p + ".up.w"), kSeq, kHidden, kFfn);
    for (size_t i = 0; i < gate.size(); ++i) {
      gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
    }
    return MatMul(gate, Named(p + ".down.w"), kSeq, kFfn, kHidden);
  }

  const Graph& g_;
  const HostFeeds& feeds_;
};

TEST(LlamaTest, LossMatchesADirectImplementation) {
  Result<Graph> built = BuildModel(kTinySpec);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph& g = built.value();
  const HostFeeds feeds = TinyFeeds(g);
  Result<std::vector<HostTensor>> out = Interpret(g, feeds, {g.outputs[0]});
  ASSERT_TRUE(out.ok()) << out.status().message();
  const double expected = ReferenceLlama(g, feeds).Loss();
  EXPECT_NEAR(out.value()[0].data.at(0), expected, 1e-10 * std::fabs(expected));
  // The loss is not near ln(vocab): the weights matter, so the comparison has teeth.
  EXPECT_GT(std::fabs(expected - std::log(static_cast<double>(kVocab))), 0.05) << expected;
}

// Autodiff through RMSNorm, rotary embeddings, the grouped kv heads, silu and the untied head
// against central finite differences of the interpreted loss, a few elements per parameter.
TEST(LlamaTest, GradientsMatchFiniteDifferences) {
  Result<Graph> forward = BuildModel(kTinySpec);
  ASSERT_TRUE(forward.ok()) << forward.status().message();
  const int32_t loss = forward.value().outputs[0];
  std::vector<int32_t> params;
  for (int32_t id = 0; id < forward.value().size(); ++id) {
    const Op& op = forward.value().op(id);
    if (op.kind == OpKind::kParameter && op.role == TensorRole::kParameter) params.push_back(id);
  }
  HostFeeds feeds = TinyFeeds(forward.value());
  GraphBuilder b(forward.value());
  Result<std::vector<int32_t>> grads = AppendBackward(b, loss, params);
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  Result<Graph> with_backward = std::move(b).Finish();
  ASSERT_TRUE(with_backward.ok()) << with_backward.status().message();
  Result<std::vector<HostTensor>> ad = Interpret(with_backward.value(), feeds, grads.value());
  ASSERT_TRUE(ad.ok()) << ad.status().message();

  auto loss_at = [&](const HostFeeds& f) {
    Result<std::vector<HostTensor>> r = Interpret(forward.value(), f, {loss});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r.value()[0].data.at(0) : 0.0;
  };
  const double h = 1e-6;
  for (size_t i = 0; i < params.size(); ++i) {
    const Op& op = forward.value().op(params[i]);
    SCOPED_TRACE(op.name);
    const size_t n = feeds[params[i]].data.size();
    double max_error = 0.0, max_gradient = 0.0;
    for (size_t e : {size_t{0}, n / 2, n - 1}) {
      HostFeeds f = feeds;
      f[params[i]].data[e] += h;
      const double plus = loss_at(f);
      f[params[i]].data[e] -= 2 * h;
      const double minus = loss_at(f);
      const double fd = (plus - minus) / (2 * h);
      max_error = std::max(max_error, std::fabs(fd - ad.value()[i].data[e]));
      max_gradient = std::max(max_gradient, std::fabs(fd));
    }
    EXPECT_LE(max_error, 1e-6 * std::max(max_gradient, 1e-3)) << "max |gradient| " << max_gradient;
  }
}

}  // namespace
}  // namespace alpa
