// Selective recomputation reruns the attention cores' forward ops that the backward reads, and
// nothing in graphs without attention.
#include "core/ir/recompute.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/ir/attention_core.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

Graph Build(const char* spec) {
  Result<Graph> g = BuildModel(spec);
  EXPECT_TRUE(g.ok()) << spec << ": " << g.status().message();
  return g.ok() ? std::move(g).value() : Graph{};
}

int Count(const std::vector<bool>& v) {
  int n = 0;
  for (bool b : v) n += b ? 1 : 0;
  return n;
}

TEST(SelectiveRecompute, RerunsEachGptLayersForwardCoreAndNothingElse) {
  // 3 layers, 4 heads of 8, seq 64: scores of 2 x 4 x 64 x 64 elements.
  const Graph g = Build("gpt:layers=3,hidden=32,heads=4,seq=64,vocab=128,batch=2");
  const std::vector<bool> rerun = SelectivelyRecomputedOps(g);
  const std::vector<bool> core = AttentionCoreValues(g);
  ASSERT_EQ(rerun.size(), static_cast<size_t>(g.size()));
  int score_products = 0;
  for (int32_t v = 0; v < g.size(); ++v) {
    if (!rerun[static_cast<size_t>(v)]) continue;
    const Op& op = g.op(v);
    EXPECT_TRUE(core[static_cast<size_t>(v)]) << op.name;
    EXPECT_EQ(op.phase, Phase::kForward) << op.name;
    EXPECT_NE(op.kind, OpKind::kParameter) << op.name;
    EXPECT_EQ(op.shape, (Dims{2, 4, 64, 64})) << op.name;
    if (op.kind == OpKind::kDotGeneral) ++score_products;
    // Closed: a rerun op's forward core operands are rerun too (else it could not run).
    for (int32_t u : op.operands) {
      if (core[static_cast<size_t>(u)] && g.op(u).phase == Phase::kForward &&
          g.op(u).kind != OpKind::kParameter) {
        EXPECT_TRUE(rerun[static_cast<size_t>(u)]) << g.op(u).name << " feeds " << op.name;
      }
    }
  }
  EXPECT_EQ(score_products, 3);  // Q K^T of every layer
  // Every forward core value the backward reads is rerun.
  for (const Op& op : g.ops) {
    if (op.phase != Phase::kBackward) continue;
    for (int32_t u : op.operands) {
      if (core[static_cast<size_t>(u)] && g.op(u).phase == Phase::kForward) {
        EXPECT_TRUE(rerun[static_cast<size_t>(u)]) << g.op(u).name << " read by " << op.name;
      }
    }
  }
}

TEST(SelectiveRecompute, GraphsWithoutAttentionRerunNothing) {
  for (const char* spec : {"mlp:layers=2,hidden=16,batch=8",
                           "wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=8",
                           // Scores no larger than Q (seq 8 = head dim 8): no core to spare.
                           "gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8"}) {
    const Graph g = Build(spec);
    EXPECT_EQ(Count(SelectivelyRecomputedOps(g)), 0) << spec;
  }
}

TEST(SelectiveRecompute, NamesRoundTripAndUnknownWordsAreRejected) {
  for (Recompute r : {Recompute::kNone, Recompute::kFull, Recompute::kSelective}) {
    EXPECT_EQ(ParseRecompute(RecomputeName(r)), r);
  }
  EXPECT_EQ(RecomputeName(Recompute::kSelective), "selective");
  EXPECT_FALSE(ParseRecompute("partial").has_value());
  EXPECT_FALSE(ParseRecompute("").has_value());
}

}  // namespace
}  // namespace alpa
