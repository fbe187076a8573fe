// One family member of each kind, tiny and in f32, trained for a few steps on one fixed batch
// with the CPU reference interpreter (updates fed back as the next parameters): the loss must
// go down. This runs the zoo's graphs, autodiff and the optimizer end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "exec/cpu/interpreter.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Fan-in scaled uniform weights (LN / BN scales 1, biases 0), random inputs; integer inputs
// (tokens, labels) uniform in [0, int_range).
HostFeeds InitialFeeds(const Graph& g, int64_t int_range, uint32_t seed) {
  std::mt19937 rng(seed);
  HostFeeds feeds;
  for (int32_t id = 0; id < g.size(); ++id) {
    const Op& op = g.op(id);
    if (op.kind != OpKind::kParameter) continue;
    HostTensor t;
    t.shape = op.shape;
    t.dtype = op.dtype;
    int64_t n = 1;
    for (int64_t d : op.shape) n *= d;
    t.data.assign(static_cast<size_t>(n), 0.0);
    if (op.role == TensorRole::kParameter) {
      const size_t rank = op.shape.size();
      double fan_in = 1;
      if (rank == 2) fan_in = static_cast<double>(op.shape[0]);
      if (rank == 3) fan_in = static_cast<double>(op.shape[1]);
      if (rank == 4) fan_in = static_cast<double>(op.shape[1] * op.shape[2] * op.shape[3]);
      const double a = std::sqrt(3.0 / fan_in);
      std::uniform_real_distribution<double> u(-a, a);
      for (double& v : t.data) {
        if (rank == 1) {
          v = EndsWith(op.name, ".g") ? 1.0 : 0.0;
        } else {
          v = u(rng);
        }
      }
    } else if (op.role == TensorRole::kInput) {
      if (IsInteger(op.dtype)) {
        std::uniform_int_distribution<int64_t> u(0, int_range - 1);
        for (double& v : t.data) v = static_cast<double>(u(rng));
      } else {
        std::normal_distribution<double> u(0.0, 1.0);
        for (double& v : t.data) v = u(rng);
      }
    }  // optimizer state (Adam moments, step counter): zeros
    feeds[id] = std::move(t);
  }
  // f32 master copies start as their half-precision parameter's value.
  for (int32_t id = 0; id < g.size(); ++id) {
    const Op& op = g.op(id);
    if (op.role != TensorRole::kOptimizerState || !EndsWith(op.name, ".master")) continue;
    const std::string param = op.name.substr(0, op.name.size() - 7);
    for (int32_t p = 0; p < g.size(); ++p) {
      if (g.op(p).kind == OpKind::kParameter && g.op(p).name == param) {
        feeds[id].data = feeds[p].data;
      }
    }
  }
  return feeds;
}

// Runs `steps` training steps and returns the loss before each.
std::vector<double> Train(const std::string& spec, int64_t int_range, int steps) {
  Result<Graph> built = BuildModel(spec);
  EXPECT_TRUE(built.ok()) << spec << ": " << built.status().message();
  if (!built.ok()) return {};
  const Graph& g = built.value();
  HostFeeds feeds = InitialFeeds(g, int_range, 1234);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    Result<std::vector<HostTensor>> out = Interpret(g, feeds, g.outputs);
    EXPECT_TRUE(out.ok()) << spec << ": " << out.status().message();
    if (!out.ok()) return losses;
    losses.push_back(out.value()[0].data.at(0));
    for (size_t i = 1; i < g.outputs.size(); ++i) {
      const int32_t target = g.op(g.outputs[i]).alias_of;
      if (target >= 0) feeds[target] = out.value()[i];
    }
  }
  return losses;
}

void ExpectLearns(const std::string& spec, int64_t int_range, int steps, double factor) {
  std::vector<double> losses = Train(spec, int_range, steps);
  ASSERT_EQ(losses.size(), static_cast<size_t>(steps)) << spec;
  for (double l : losses) EXPECT_TRUE(std::isfinite(l)) << spec;
  EXPECT_LT(losses.back(), factor * losses.front())
      << spec << ": " << losses.front() << " -> " << losses.back();
  for (size_t i = 1; i < losses.size(); ++i) {
    EXPECT_LT(losses[i], losses[i - 1]) << spec << " step " << i;
  }
}

TEST(TrainingStepTest, MlpMseLearns) {
  ExpectLearns("mlp:layers=3,hidden=8,batch=16,lr=0.01", 1, 4, 0.95);
}

TEST(TrainingStepTest, MlpCrossEntropyWithSgdLearns) {
  ExpectLearns("mlp:layers=2,hidden=8,batch=16,loss=ce,optimizer=sgd,lr=0.5", 8, 4, 0.95);
}

TEST(TrainingStepTest, GptLearns) {
  ExpectLearns("gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=2,dtype=f32,lr=0.01", 16, 4,
               0.95);
}

TEST(TrainingStepTest, LlamaLearns) {
  ExpectLearns(
      "llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=16,batch=2,dtype=f32,"
      "lr=0.01",
      16, 4, 0.95);
}

TEST(TrainingStepTest, BertLearns) {
  ExpectLearns("bert:layers=1,hidden=16,heads=2,seq=8,vocab=16,batch=2,dtype=f32,lr=0.01", 16, 4,
               0.95);
}

TEST(TrainingStepTest, MoeLearns) {
  ExpectLearns(
      "moe:layers=2,hidden=16,heads=2,experts=4,seq=8,vocab=16,batch=2,group=8,dtype=f32,"
      "lr=0.01",
      16, 4, 0.95);
}

// embed=0: the bare layer stacks of Alpa's layer-level tests (hidden states in, MSE out).
TEST(TrainingStepTest, LayerStacksWithoutEmbeddingLearn) {
  ExpectLearns("bert:layers=1,hidden=16,heads=2,seq=8,batch=2,dtype=f32,lr=0.01,embed=0", 1, 4,
               0.95);
  ExpectLearns(
      "moe:layers=1,hidden=16,heads=2,experts=4,seq=8,batch=2,group=8,moe_every=1,dtype=f32,"
      "lr=0.01,embed=0",
      1, 4, 0.95);
}

TEST(TrainingStepTest, WideResNetLearns) {
  ExpectLearns(
      "wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=4,optimizer=momentum,"
      "lr=0.05",
      10, 4, 0.95);
}

// Mixed precision: f16 parameters with f32 master weights still train.
TEST(TrainingStepTest, GptF16WithMasterWeightsLearns) {
  const std::string spec = "gpt:layers=1,hidden=16,heads=2,seq=8,vocab=16,batch=2,lr=0.01";
  Result<Graph> g = BuildModel(spec);
  ASSERT_TRUE(g.ok()) << g.status().message();
  int64_t masters = 0, params = 0;
  for (const Op& op : g.value().ops) {
    masters += op.role == TensorRole::kOptimizerState && EndsWith(op.name, ".master") ? 1 : 0;
    params += op.kind == OpKind::kParameter && op.role == TensorRole::kParameter ? 1 : 0;
  }
  EXPECT_EQ(masters, params);
  ExpectLearns(spec, 16, 4, 0.95);
}

int32_t FindOp(const Graph& g, const std::string& name) {
  for (int32_t id = 0; id < g.size(); ++id) {
    if (g.op(id).name == name) return id;
  }
  return -1;
}

// GShard top-2 routing with a tight capacity: every expert slot holds at most one token, every
// token at most two slots in distinct experts, kept tokens' top-1 expert is their gate argmax,
// the combine weights of a token with two slots sum to 1, and each expert's slots fill from 0.
TEST(TrainingStepTest, MoeRoutingRespectsCapacity) {
  Result<Graph> built = BuildModel(
      "moe:layers=1,hidden=16,heads=2,experts=4,seq=8,vocab=16,batch=4,group=16,"
      "capacity_factor=0.5,dtype=f32,training=0");
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph& g = built.value();
  const int32_t dispatch = FindOp(g, "h0.moe.dispatch"), combine = FindOp(g, "h0.moe.combine"),
                gates = FindOp(g, "h0.moe.gates");
  ASSERT_GE(dispatch, 0);
  ASSERT_GE(combine, 0);
  ASSERT_GE(gates, 0);
  const Dims shape = g.op(dispatch).shape;  // [G, S, E, C]
  ASSERT_EQ(shape, (Dims{2, 16, 4, 4}));    // C = ceil(0.5 * 2 * 16 / 4)
  Result<std::vector<HostTensor>> out =
      Interpret(g, InitialFeeds(g, 16, 7), {dispatch, combine, gates});
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<double>& d = out.value()[0].data;
  const std::vector<double>& c = out.value()[1].data;
  const std::vector<double>& p = out.value()[2].data;
  const int64_t G = shape[0], S = shape[1], E = shape[2], C = shape[3];
  auto at = [&](int64_t gi, int64_t s, int64_t e, int64_t k) {
    return static_cast<size_t>(((gi * S + s) * E + e) * C + k);
  };
  int64_t kept = 0;
  for (int64_t gi = 0; gi < G; ++gi) {
    for (int64_t e = 0; e < E; ++e) {
      int64_t used = 0;
      for (int64_t k = 0; k < C; ++k) {
        double n = 0;
        for (int64_t s = 0; s < S; ++s) n += d[at(gi, s, e, k)];
        EXPECT_LE(n, 1.0);
        // Slots fill in order: a used slot follows only used slots.
        if (n > 0) {
          EXPECT_EQ(used, k);
        }
        used += n > 0 ? 1 : 0;
      }
      kept += used;
    }
    for (int64_t s = 0; s < S; ++s) {
      int64_t slots = 0;
      double weight = 0;
      int64_t best = 0;
      for (int64_t e = 0; e < E; ++e) {
        const size_t pe = static_cast<size_t>((gi * S + s) * E + e);
        if (p[pe] > p[static_cast<size_t>((gi * S + s) * E + best)]) best = e;
        int64_t in_e = 0;
        for (int64_t k = 0; k < C; ++k) {
          in_e += d[at(gi, s, e, k)] > 0 ? 1 : 0;
          weight += c[at(gi, s, e, k)];
          EXPECT_EQ(c[at(gi, s, e, k)] > 0, d[at(gi, s, e, k)] > 0);
        }
        EXPECT_LE(in_e, 1);
        slots += in_e;
      }
      EXPECT_LE(slots, 2);
      if (slots == 2) {
        EXPECT_NEAR(weight, 1.0, 1e-6);
      }
      if (slots == 0) {
        EXPECT_EQ(weight, 0.0);
      }
      bool best_has_slot = false;
      for (int64_t k = 0; k < C; ++k) best_has_slot = best_has_slot || d[at(gi, s, best, k)] > 0;
      if (slots == 2) {
        EXPECT_TRUE(best_has_slot);
      }
    }
  }
  // 64 tokens x 2 choices compete for 2 groups x 4 experts x 4 slots = 32 slots.
  EXPECT_GT(kept, 16);
  EXPECT_LE(kept, 32);
}

}  // namespace
}  // namespace alpa
