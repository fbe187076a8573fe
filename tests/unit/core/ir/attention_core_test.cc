// Attention cores: the score-sized values between Q K^T and the products reading P.
#include "core/ir/attention_core.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "models/model_zoo.h"

namespace alpa {
namespace {

int64_t Elements(const Op& op) {
  int64_t n = 1;
  for (int64_t d : op.shape) n *= d;
  return n;
}

struct CoreCounts {
  int forward_products = 0;  // score products (dot_generals) in the forward pass
  int backward_ops = 0;
  int other_sizes = 0;  // core ops whose size is not batch * heads * seq^2
  int parameters = 0;
};

CoreCounts CountCore(const Graph& graph, int64_t score_elements) {
  const std::vector<bool> core = AttentionCoreValues(graph);
  CoreCounts counts;
  for (int32_t v = 0; v < graph.size(); ++v) {
    if (!core[static_cast<size_t>(v)]) continue;
    const Op& op = graph.op(v);
    if (op.kind == OpKind::kDotGeneral && op.phase == Phase::kForward) ++counts.forward_products;
    if (op.phase == Phase::kBackward) ++counts.backward_ops;
    if (Elements(op) != score_elements) ++counts.other_sizes;
    if (op.kind == OpKind::kParameter) ++counts.parameters;
  }
  return counts;
}

TEST(AttentionCore, EveryGptLayerHasOneCoreAcrossItsPasses) {
  // batch 2, 4 heads, seq 64: scores of 2 * 4 * 64 * 64 elements; head dim 8.
  Result<Graph> g = BuildModel("gpt:layers=3,hidden=32,heads=4,seq=64,vocab=128,batch=2");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const CoreCounts counts = CountCore(g.value(), 2 * 4 * 64 * 64);
  EXPECT_EQ(counts.forward_products, 3);  // Q K^T per layer, not P V
  EXPECT_GT(counts.backward_ops, 3 * 3);  // dP = dO V^T and the softmax's gradient
  EXPECT_EQ(counts.other_sizes, 0);
  EXPECT_EQ(counts.parameters, 0);
}

// The products the attention kernels compute: per GPT layer Q K^T and P V, and in the backward
// dO V^T, P^T dO, dS K and dS^T Q, each at half its flops (the causal mask's select is in the
// core); BERT's (no mask) at all of them; nothing else.
TEST(AttentionCore, TheKernelsComputeHalfOfACausalCoresProducts) {
  for (const char* spec : {"gpt:layers=3,hidden=32,heads=4,seq=64,vocab=128,batch=2",
                           "bert:layers=3,hidden=32,heads=4,seq=64,vocab=128,batch=2"}) {
    SCOPED_TRACE(spec);
    Result<Graph> g = BuildModel(spec);
    ASSERT_TRUE(g.ok()) << g.status().message();
    const std::vector<double> work = AttentionProductWork(g.value());
    const double share = std::string(spec).rfind("gpt", 0) == 0 ? 0.5 : 1.0;
    int forward = 0, backward = 0;
    for (int32_t v = 0; v < g.value().size(); ++v) {
      const double w = work[static_cast<size_t>(v)];
      if (w == 0) continue;
      const Op& op = g.value().op(v);
      EXPECT_EQ(op.kind, OpKind::kDotGeneral) << v;
      EXPECT_EQ(w, share) << v;
      ++(op.phase == Phase::kForward ? forward : backward);
    }
    EXPECT_EQ(forward, 3 * 2);
    EXPECT_EQ(backward, 3 * 4);
  }
  Result<Graph> mlp = BuildModel("mlp:layers=2,hidden=16,batch=4");
  ASSERT_TRUE(mlp.ok()) << mlp.status().message();
  for (double w : AttentionProductWork(mlp.value())) EXPECT_EQ(w, 0.0);
}

TEST(AttentionCore, BertAndMoeLayersHaveCoresAndTheExpertDispatchIsNone) {
  // BERT: bidirectional attention. MoE: its dispatch and combine einsums are batched products
  // of computed values too (tokens x dispatch mask), but no softmax reads their results.
  Result<Graph> bert = BuildModel("bert:layers=2,hidden=32,heads=4,seq=64,vocab=128,batch=2");
  ASSERT_TRUE(bert.ok()) << bert.status().message();
  const CoreCounts b = CountCore(bert.value(), 2 * 4 * 64 * 64);
  EXPECT_EQ(b.forward_products, 2);
  EXPECT_EQ(b.other_sizes, 0);
  Result<Graph> moe =
      BuildModel("moe:layers=2,batch=8,seq=64,hidden=64,heads=4,experts=8,group=64,moe_every=1");
  ASSERT_TRUE(moe.ok()) << moe.status().message();
  const CoreCounts m = CountCore(moe.value(), 8 * 4 * 64 * 64);
  EXPECT_EQ(m.forward_products, 2);
  EXPECT_EQ(m.other_sizes, 0);
  EXPECT_EQ(m.parameters, 0);
}

TEST(AttentionCore, GraphsWithoutAttentionHaveNone) {
  for (const std::string spec :
       {"mlp:layers=3,batch=16,hidden=64",
        "wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=8,optimizer=momentum"}) {
    Result<Graph> g = BuildModel(spec);
    ASSERT_TRUE(g.ok()) << spec << ": " << g.status().message();
    const std::vector<bool> core = AttentionCoreValues(g.value());
    int n = 0;
    for (bool c : core) n += c ? 1 : 0;
    EXPECT_EQ(n, 0) << spec;
  }
}

// Around each GPT core, the fused kernels' views: per layer, Q, K and V's slices of the QKV
// product and their reshapes (6 ops), O's product and its transpose (the kernel writes O in the
// layout of the reshape after it: 2 ops), and in the backward dO's transpose and the reshape
// before it (the kernel reads dO in the reshape's operand: 2 ops), the dQ, dK, dV products with
// their transposes, reshapes and pads (12 ops) and the first of the two adds that sum them (the
// last is the kernels' output). Nothing else, and nothing in a graph without cores.
TEST(AttentionCore, TheKernelsViewsAreTheQkvSlicesTheGradientsPaddedSumAndTheOutputsLayout) {
  Result<Graph> g = BuildModel("gpt:layers=3,hidden=32,heads=4,seq=64,vocab=128,batch=2");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Graph& graph = g.value();
  const std::vector<bool> views = AttentionKernelViews(graph, AttentionCoreValues(graph));
  std::map<std::string, int> kinds;
  for (int32_t v = 0; v < graph.size(); ++v) {
    if (!views[static_cast<size_t>(v)]) continue;
    const Op& op = graph.op(v);
    ++kinds[std::string(OpKindName(op.kind)) + (op.phase == Phase::kForward ? " fwd" : " bwd")];
  }
  const std::map<std::string, int> want = {
      {"slice fwd", 9},       {"reshape fwd", 9},     {"dot_general fwd", 3},
      {"transpose fwd", 3},   {"dot_general bwd", 9}, {"transpose bwd", 9 + 3},
      {"reshape bwd", 9 + 3}, {"pad bwd", 9},         {"add bwd", 3},
  };
  EXPECT_EQ(kinds, want);
  Result<Graph> mlp = BuildModel("mlp:layers=2,hidden=16,batch=4");
  ASSERT_TRUE(mlp.ok()) << mlp.status().message();
  for (bool v : AttentionKernelViews(mlp.value(), AttentionCoreValues(mlp.value())))
    EXPECT_FALSE(v);
}

}  // namespace
}  // namespace alpa
