// Model zoo: preset sizes against the closed-form counts of REFERENCE §6, training-step FLOPs,
// spec parsing errors, layer indices and graph validity.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "core/ir/graph_stats.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

int64_t Key(const ModelSpec& spec, const std::string& key) { return std::stoll(spec.keys.at(key)); }

Graph MustBuild(const std::string& spec) {
  Result<Graph> g = BuildModel(spec);
  EXPECT_TRUE(g.ok()) << spec << ": " << g.status().message();
  return g.ok() ? std::move(g).value() : Graph{};
}

int64_t CountKind(const Graph& g, OpKind kind, Phase phase) {
  int64_t n = 0;
  for (const Op& op : g.ops) n += op.kind == kind && op.phase == phase ? 1 : 0;
  return n;
}

std::vector<std::string> PresetNames(const std::string& family) {
  std::vector<std::string> names;
  for (const ModelPreset& p : ModelPresets()) {
    if (p.family == family) names.push_back(p.name);
  }
  return names;
}

TEST(ModelPresetsTest, TableIsCompleteAndParses) {
  std::set<std::string> names;
  for (const ModelPreset& p : ModelPresets()) {
    EXPECT_TRUE(names.insert(p.name).second) << "duplicate preset " << p.name;
    Result<ModelSpec> s = ParseModelSpec(p.name);
    ASSERT_TRUE(s.ok()) << p.name << ": " << s.status().message();
    EXPECT_EQ(s.value().family, p.family);
    EXPECT_EQ(s.value().preset, p.name);
    EXPECT_GT(p.nominal_params, 0);
  }
  EXPECT_EQ(PresetNames("gpt").size(), 7u);
  EXPECT_EQ(PresetNames("moe").size(), 7u);
  EXPECT_EQ(PresetNames("wresnet").size(), 7u);
  EXPECT_EQ(PresetNames("llama").size(), 5u);
  EXPECT_EQ(ModelFamilyHelp().size(), 6u);
}

// REFERENCE §6: parameters 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) within 0.5 %, training dot
// FLOPs 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) within 1 %.
TEST(ModelZooTest, GptPresetsMatchClosedForms) {
  for (const std::string& name : PresetNames("gpt")) {
    SCOPED_TRACE(name);
    ModelSpec spec = ParseModelSpec(name).value();
    const long double h = Key(spec, "hidden"), l = Key(spec, "layers"), s = Key(spec, "seq"),
                      v = Key(spec, "vocab"), b = Key(spec, "batch");
    Graph g = MustBuild(name);
    GraphStats st = ComputeGraphStats(g);
    const long double params = 12 * l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l * h));
    EXPECT_NEAR(static_cast<double>(st.parameter_count / params), 1.0, 0.005);
    const long double flops = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
    EXPECT_NEAR(static_cast<double>(st.dot_flops / flops), 1.0, 0.01);
    // Six matmuls per block plus the LM head, each with two backward dots.
    const int64_t forward_dots = 6 * static_cast<int64_t>(l) + 1;
    EXPECT_EQ(CountKind(g, OpKind::kDotGeneral, Phase::kForward), forward_dots);
    EXPECT_EQ(CountKind(g, OpKind::kDotGeneral, Phase::kBackward), 2 * forward_dots);
  }
}

TEST(ModelZooTest, GptForwardFlopsAreOneThird) {
  Graph g = MustBuild("gpt-1.3b:training=0");
  GraphStats st = ComputeGraphStats(g);
  const long double h = 2048, l = 24, s = 1024, v = 51200, b = 1024;
  const long double flops = 24 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
  EXPECT_NEAR(static_cast<double>(st.dot_flops / flops), 1.0, 1e-9);
  EXPECT_EQ(st.ops_by_phase.count("backward"), 0u);
}

void ExpectNearNominal(const std::string& family, double tolerance) {
  for (const ModelPreset& p : ModelPresets()) {
    if (p.family != family) continue;
    SCOPED_TRACE(p.name);
    Result<ModelSpec> spec = ParseModelSpec(p.name + ":training=0");
    ASSERT_TRUE(spec.ok());
    Result<Graph> g = BuildForwardModel(spec.value());
    ASSERT_TRUE(g.ok()) << g.status().message();
    const double params = static_cast<double>(ComputeGraphStats(g.value()).parameter_count);
    EXPECT_NEAR(params / static_cast<double>(p.nominal_params), 1.0, tolerance) << params;
  }
}

// Every softmax of the zoo (attention, MoE gates, the loss) subtracts its row maximum under
// stop_gradient (a maximum that only picks the top expert feeds a compare, which no gradient
// crosses anyway); the transformers' training graphs differentiate no maximum: their backward
// has no compare, which is how reduce_max's VJP finds the maxima.
TEST(ModelZooTest, SoftmaxMaximaAreStopGradientAndTheBackwardFindsNoMaxima) {
  struct Case {
    const char* spec;
    bool backward_without_compares;  // no relu, no max / min in the model
  };
  for (const Case& c :
       {Case{"gpt:layers=2,hidden=32,heads=2,seq=8,vocab=16,batch=2", true},
        Case{"bert:layers=2,hidden=32,heads=2,seq=8,vocab=16,batch=2", true},
        Case{"llama:layers=2,hidden=32,heads=4,kv_heads=2,ffn=48,seq=8,vocab=16,batch=2", true},
        Case{"moe:layers=2,hidden=32,heads=2,seq=8,vocab=16,batch=2,experts=4", false}}) {
    const Graph g = MustBuild(c.spec);
    int64_t softmax_maxima = 0, backward_compares = 0;
    for (int32_t id = 0; id < g.size(); ++id) {
      const Op& op = g.op(id);
      backward_compares += op.phase == Phase::kBackward && op.kind == OpKind::kCompare ? 1 : 0;
      if (op.kind != OpKind::kSub || op.phase != Phase::kForward) continue;
      // x - broadcast(reduce_max(x)): a softmax's shift.
      const Op& shift = g.op(op.operands[1]);
      if (shift.kind != OpKind::kBroadcastInDim) continue;
      const int32_t max = shift.operands[0];
      if (g.op(max).kind != OpKind::kReduceMax || g.op(max).operands[0] != op.operands[0]) continue;
      ++softmax_maxima;
      EXPECT_TRUE(g.op(max).stop_gradient) << c.spec << ": op " << max;
    }
    EXPECT_GT(softmax_maxima, 0) << c.spec;
    if (c.backward_without_compares) {
      EXPECT_EQ(backward_compares, 0) << c.spec;
    }
  }
}

TEST(ModelZooTest, MoePresetsMatchTheirNames) { ExpectNearNominal("moe", 0.05); }
TEST(ModelZooTest, WideResNetPresetsMatchTheirNames) { ExpectNearNominal("wresnet", 0.05); }
TEST(ModelZooTest, BertPresetsMatchTheirNames) { ExpectNearNominal("bert", 0.05); }

TEST(ModelZooTest, MoeExactParameterCount) {
  // moe-380m: 4 MoE + 4 dense layers of h = 768, E = 8, ff = 8h, vocab 32000, seq 1024.
  const int64_t h = 768, e = 8, ff = 8 * h, v = 32000, s = 1024;
  const int64_t attn = 4 * h * h + 4 * h + 2 * h;  // qkv + out (+ biases) + ln1
  const int64_t dense = attn + 2 * h * ff + ff + h + 2 * h;
  const int64_t moe = attn + h * e + 2 * e * h * ff + 2 * h;
  const int64_t expected = 4 * dense + 4 * moe + (v + s) * h + 2 * h + v;
  Graph g = MustBuild("moe-380m:training=0");
  EXPECT_EQ(ComputeGraphStats(g).parameter_count, expected);
}

TEST(ModelZooTest, WideResNetExactParameterCount) {
  // One bottleneck per stage, 2 stages, base 4, width 2, 10 classes:
  // stem 7*7*3*4 + bn 8; stage 0 (f=4, in 4): 4*4 + 9*4*8 + 8*16 + proj 4*16, bns 2*(4+8+16+16);
  // stage 1 (f=8, in 16): 16*8 + 9*8*16 + 16*32 + proj 16*32, bns 2*(8+16+32+32); fc 32*10+10.
  const int64_t expected =
      (588 + 8) + (16 + 288 + 128 + 64 + 88) + (128 + 1152 + 512 + 512 + 176) + 330;
  Graph g =
      MustBuild("wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=2,training=0");
  EXPECT_EQ(ComputeGraphStats(g).parameter_count, expected);
}

TEST(ModelSpecTest, DefaultsAndOverrides) {
  ModelSpec s = ParseModelSpec("gpt-350m:batch=8,layers=2").value();
  EXPECT_EQ(s.family, "gpt");
  EXPECT_EQ(s.keys.at("batch"), "8");
  EXPECT_EQ(s.keys.at("layers"), "2");
  EXPECT_EQ(s.keys.at("hidden"), "1024");
  EXPECT_EQ(s.keys.at("dtype"), "f16");
  EXPECT_EQ(s.keys.at("master_weights"), "1");
  ModelSpec m = ParseModelSpec("mlp").value();
  EXPECT_EQ(m.keys.at("layers"), "6");
  EXPECT_EQ(m.keys.at("hidden"), "32");
  EXPECT_EQ(m.keys.at("batch"), "256");
  EXPECT_EQ(m.keys.at("dtype"), "f32");
  EXPECT_EQ(m.keys.at("master_weights"), "0");
  EXPECT_EQ(ParseModelSpec("gpt:dtype=f32").value().keys.at("master_weights"), "0");
}

void ExpectSpecError(const std::string& spec, const std::string& fragment) {
  Result<ModelSpec> s = ParseModelSpec(spec);
  ASSERT_FALSE(s.ok()) << spec;
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find(fragment), std::string::npos) << s.status().message();
}

TEST(ModelSpecTest, ErrorsNameTheOffendingPart) {
  ExpectSpecError("gpt:hidden=abc",
                  "model spec \"gpt:hidden=abc\": hidden must be a positive integer");
  ExpectSpecError("gpt-40b", "unknown model \"gpt-40b\" (try `alpa models`)");
  ExpectSpecError("gpt:foo=1", "unknown key \"foo\"");
  ExpectSpecError("gpt:foo=1", "valid keys: adam_eps, batch, dtype, embed, heads, hidden");
  ExpectSpecError("gpt:layers=0", "layers must be a positive integer");
  ExpectSpecError("gpt:layers=-3", "layers must be a positive integer");
  ExpectSpecError("gpt:layers", "expected key=value");
  ExpectSpecError("gpt:", "nothing after ':'");
  ExpectSpecError("mlp:dtype=s32", "dtype must be a floating dtype");
  ExpectSpecError("mlp:optimizer=lamb", "optimizer must be one of: sgd momentum adam");
  ExpectSpecError("wresnet:layers=34", "layers must be one of: 50 101");
  ExpectSpecError("wresnet:stages=3-x", "stages must be positive integers");
  ExpectSpecError("moe:capacity_factor=-1", "capacity_factor must be a positive number");
  ExpectSpecError("mlp:training=2", "training must be 0 or 1");
  ExpectSpecError("bert:embed=2", "embed must be 0 or 1");
  ExpectSpecError("mlp:embed=0", "unknown key \"embed\" for family mlp");
}

TEST(ModelSpecTest, BuildErrorsNameTheKey) {
  Result<Graph> g = BuildModel("gpt:hidden=100,heads=3,layers=1,batch=1,seq=4,vocab=8");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("hidden (100) must be divisible by heads (3)"),
            std::string::npos)
      << g.status().message();
  g = BuildModel("moe:batch=3,seq=5,group=4,hidden=64,layers=1,vocab=8");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("must be a multiple of group"), std::string::npos);
  ModelSpec bad;
  bad.family = "transformer";
  EXPECT_FALSE(BuildModel(bad).ok());
}

// Tiny training graphs of every family: valid, loss first, layer indices 0 .. L+1 all present
// on forward ops, updates aliasing parameters.
TEST(ModelZooTest, TinyTrainingGraphsHaveLayersAndValidate) {
  const std::vector<std::pair<std::string, int32_t>> cases = {
      {"mlp:layers=3,hidden=8,batch=4", 3},
      {"gpt:layers=2,hidden=32,heads=2,seq=8,vocab=16,batch=2,dtype=f32", 2},
      {"bert:layers=2,batch=8,seq=8,hidden=128,heads=2", 2},
      {"bert:layers=2,batch=8,seq=8,hidden=128,heads=2,embed=0", 2},
      {"moe:layers=1,batch=64,seq=16,hidden=64,heads=4,experts=16,group=32,moe_every=1,embed=0", 1},
      {"gpt:layers=1,hidden=32,heads=2,seq=8,batch=2,dtype=f32,embed=0", 1},
      {"moe:layers=2,hidden=16,heads=2,experts=4,seq=8,vocab=16,batch=2", 2},
      {"wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=2", 2},
      {"llama:layers=2,hidden=32,heads=4,kv_heads=2,ffn=48,seq=8,vocab=16,batch=2", 2},
      {"llama:layers=1,hidden=32,heads=4,kv_heads=1,ffn=48,seq=8,batch=2,embed=0", 1}};
  for (const auto& [spec, blocks] : cases) {
    SCOPED_TRACE(spec);
    Graph g = MustBuild(spec);
    ASSERT_TRUE(ValidateGraph(g).ok()) << ValidateGraph(g).message();
    ASSERT_FALSE(g.outputs.empty());
    const Op& loss = g.op(g.outputs[0]);
    EXPECT_TRUE(loss.shape.empty());
    EXPECT_EQ(loss.dtype, DType::kF32);
    EXPECT_EQ(loss.name, "loss");
    std::set<int32_t> layers;
    int64_t updates = 0, params = 0;
    for (const Op& op : g.ops) {
      // Only optimizer-wide ops (the step counter) may belong to no layer.
      if (op.layer < 0) {
        EXPECT_EQ(op.phase, Phase::kUpdate) << op.name;
      }
      EXPECT_LE(op.layer, blocks + 1) << op.name;
      if (op.phase == Phase::kForward) layers.insert(op.layer);
      if (op.alias_of >= 0 && g.op(op.alias_of).role == TensorRole::kParameter) ++updates;
      if (op.kind == OpKind::kParameter && op.role == TensorRole::kParameter) ++params;
    }
    EXPECT_EQ(static_cast<int32_t>(layers.size()), blocks + 2);
    EXPECT_EQ(updates, params);
    EXPECT_EQ(ComputeGraphStats(g).num_layers, blocks + 2);
  }
}

TEST(ModelZooTest, MoeUsesExpertBatchedDots) {
  Graph g = MustBuild(
      "moe:layers=1,hidden=16,heads=2,experts=4,seq=8,vocab=16,batch=2,"
      "training=0");
  int64_t expert_dots = 0;
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::kDotGeneral) continue;
    const Op& rhs = g.op(op.operands[1]);
    if (rhs.kind == OpKind::kParameter && rhs.shape.size() == 3) {
      EXPECT_EQ(op.attrs.dot.rhs_batch, std::vector<int64_t>{0}) << op.name;
      EXPECT_EQ(op.shape[0], 4);  // experts lead the result
      ++expert_dots;
    }
  }
  EXPECT_EQ(expert_dots, 2);
  // Capacity 2 * 16 tokens / 4 experts = 8: dispatch / combine are [1, 16, 4, 8].
  bool found = false;
  for (const Op& op : g.ops) found = found || op.shape == Dims{1, 16, 4, 8};
  EXPECT_TRUE(found);
}

int64_t CountKind(const Graph& g, OpKind kind) {
  int64_t n = 0;
  for (const Op& op : g.ops) n += op.kind == kind ? 1 : 0;
  return n;
}

// embed=0 (Alpa's layer-level auto-sharding tests): hidden states x and target y [B, s, h] are
// the only inputs, the loss is their mean squared error, and nothing is gathered.
void ExpectBareLayerStack(const Graph& g, const Dims& shape) {
  std::vector<std::string> inputs;
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::kParameter && op.role == TensorRole::kInput) {
      inputs.push_back(op.name);
      EXPECT_EQ(op.shape, shape) << op.name;
      EXPECT_EQ(op.layer, 0) << op.name;
    }
    EXPECT_NE(op.name, "wte");
    EXPECT_NE(op.name, "wpe");
    EXPECT_NE(op.name, "lm.b");
  }
  EXPECT_EQ(inputs, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(CountKind(g, OpKind::kGather), 0);
  EXPECT_EQ(CountKind(g, OpKind::kScatterAdd), 0);
  ASSERT_FALSE(g.outputs.empty());
  EXPECT_EQ(g.op(g.outputs[0]).name, "loss");
  EXPECT_TRUE(g.op(g.outputs[0]).shape.empty());
}

TEST(ModelZooTest, BertLayerStackWithoutEmbedding) {
  const std::string spec = "bert:layers=2,batch=8,seq=8,hidden=128,heads=2,embed=0";
  EXPECT_EQ(ParseModelSpec("bert").value().keys.at("embed"), "1");
  Graph g = MustBuild(spec);
  ASSERT_TRUE(ValidateGraph(g).ok()) << ValidateGraph(g).message();
  ExpectBareLayerStack(g, {8, 8, 128});
  // Per block: qkv, q.k, probs.v, attention out, fc1, fc2; no LM head.
  EXPECT_EQ(CountKind(g, OpKind::kDotGeneral, Phase::kForward), 12);
  // Two backward dots each, less the gradient of the input x (nothing needs it).
  EXPECT_EQ(CountKind(g, OpKind::kDotGeneral, Phase::kBackward), 2 * 12 - 1);
  // Per block 12 h^2 + 13 h weights (qkv, out, fc1, fc2 with biases; two layer norms).
  const int64_t h = 128;
  EXPECT_EQ(ComputeGraphStats(g).parameter_count, 2 * (12 * h * h + 13 * h));
  std::set<int32_t> layers;
  for (const Op& op : g.ops) {
    if (op.phase == Phase::kForward) layers.insert(op.layer);
  }
  EXPECT_EQ(layers, (std::set<int32_t>{0, 1, 2, 3}));
  // The same blocks as the embedded model (which adds the LM head's dot).
  Graph embedded = MustBuild("bert:layers=2,batch=8,seq=8,hidden=128,heads=2");
  EXPECT_EQ(CountKind(embedded, OpKind::kDotGeneral, Phase::kForward), 13);
  EXPECT_EQ(CountKind(embedded, OpKind::kGather, Phase::kForward), 1);
}

TEST(ModelZooTest, MoeAndGptLayerStacksWithoutEmbedding) {
  Graph moe = MustBuild(
      "moe:layers=1,batch=64,seq=16,hidden=64,heads=4,experts=16,group=32,moe_every=1,"
      "embed=0");
  ASSERT_TRUE(ValidateGraph(moe).ok()) << ValidateGraph(moe).message();
  ExpectBareLayerStack(moe, {64, 16, 64});
  // Attention (4 dots); router, dispatch, two expert einsums, combine (5).
  EXPECT_EQ(CountKind(moe, OpKind::kDotGeneral, Phase::kForward), 4 + 5);
  bool expert_weights = false;
  for (const Op& op : moe.ops) {
    expert_weights = expert_weights || (op.name == "h0.moe.wi" && op.shape == Dims{16, 64, 512});
  }
  EXPECT_TRUE(expert_weights);

  Graph gpt = MustBuild("gpt:layers=2,batch=2,seq=8,hidden=32,heads=2,dtype=f32,embed=0");
  ASSERT_TRUE(ValidateGraph(gpt).ok()) << ValidateGraph(gpt).message();
  ExpectBareLayerStack(gpt, {2, 8, 32});
  EXPECT_EQ(CountKind(gpt, OpKind::kDotGeneral, Phase::kForward), 12);
}

TEST(ModelZooTest, BigPresetsBuildQuickly) {
  for (const std::string name : {"moe-70b", "wresnet-13b"}) {
    Graph g = MustBuild(name);
    GraphStats st = ComputeGraphStats(g);
    EXPECT_GT(st.dot_flops + st.conv_flops, 0) << name;
    EXPECT_GT(st.ops_by_phase["update"], 0) << name;
  }
}

}  // namespace
}  // namespace alpa
