// Alpa's MoE LM (alpa/model/moe.py): BERT-style post-LN bidirectional transformer whose every
// `moe_every`-th layer (the first, third, ... by default, as Alpa) replaces the MLP with a
// GShard top-2 mixture of experts; the other layers keep a dense gelu MLP. Both MLPs are
// mlp_ratio * hidden wide (Alpa: 8). With these rules the presets match their names within
// 4 % (moe-70b: 2048 / 32 layers / 64 experts = 70.4e9 parameters).
//
// Routing (lingvo / Alpa top2_gating) runs in f32 on [G, S, E] (G groups of S tokens): softmax
// gates, top-1 by reduce_max + compare, top-2 the same after masking the first, positions in
// each expert's buffer by a cumulative sum (reduce_window sum, no dot_general), tokens past the
// capacity C = ceil(capacity_factor * 2 * S / E) dropped. The dispatch and combine tensors are
// [G, S, E, C]; the expert einsums are dot_generals with the expert dim as a batch dim.
// embed=0 drops the embedding, its layer norm and the LM head: the input is hidden states
// x [B, s, h] and the loss the mean squared error against y [B, s, h] (Alpa's MoE layer
// auto-sharding test).
#include <cmath>

#include "core/util/number_text.h"
#include "models/layers.h"

namespace alpa {
namespace models {
namespace {

struct MoeShape {
  int64_t experts = 1, group = 1, capacity = 1, ff = 1;
};

// Inclusive cumulative sum along dim 1 of [G, S, E].
int32_t CumSumTokens(GraphBuilder& b, int32_t x) {
  if (!b.ok()) return -1;  // x may be the -1 of a failed op: its shape has no dim 1
  const int64_t s = b.shape(x)[1];
  return b.ReduceWindow(ReduceKind::kSum, x, {1, s, 1}, {1, 1, 1}, {0, s - 1, 0}, {0, 0, 0});
}

int32_t Cast(GraphBuilder& b, int32_t x, DType dtype) {
  return b.dtype(x) == dtype ? x : b.Convert(x, dtype);
}

// Top-k mask of one routing round: 1.0 where gates equals its row maximum.
int32_t ArgmaxMask(GraphBuilder& b, int32_t gates) {
  const Dims shape = b.shape(gates);
  int32_t max = Unreduce(b, b.ReduceMax(gates, {2}), shape, {2});
  return b.Convert(b.Compare(Comparison::kEq, gates, max), DType::kF32);
}

// mask (keeps only positions < capacity) -> position of each token in its expert [G, S].
int32_t ClipToCapacity(GraphBuilder& b, int32_t& mask, int32_t pos, int64_t capacity) {
  int32_t fits = b.Compare(Comparison::kLt, pos, b.ScalarLike(static_cast<double>(capacity), pos));
  mask = b.Mul(mask, b.Convert(fits, DType::kF32));
  return b.ReduceSum(b.Mul(pos, mask), {2});
}

// x [B, s, h] -> [B, s, h].
int32_t MoeMlp(GraphBuilder& b, int32_t x, const MoeShape& m, const std::string& name) {
  if (!b.ok()) return -1;
  const Dims in_shape = b.shape(x);
  const DType dt = b.dtype(x);
  const int64_t h = in_shape[2];
  const int64_t tokens = b.CheckedProduct(in_shape[0], in_shape[1], name + " tokens batch * seq");
  const int64_t S = m.group, G = tokens / S, E = m.experts, C = m.capacity;
  int32_t xg = b.Reshape(x, {G, S, h});
  int32_t wg = Weight(b, {h, E}, dt, name + ".wg");
  int32_t gates = Softmax(b, Cast(b, b.MatMul(xg, wg), DType::kF32));  // [G, S, E] f32

  int32_t mask1 = ArgmaxMask(b, gates);
  int32_t rest = b.Mul(gates, b.Sub(b.ScalarLike(1.0, mask1), mask1));
  int32_t mask2 = ArgmaxMask(b, rest);

  int32_t pos1 = b.Sub(CumSumTokens(b, mask1), mask1);
  int32_t pos1_tok = ClipToCapacity(b, mask1, pos1, C);
  int32_t count1 = b.ReduceSum(mask1, {1});  // [G, E]: first choices kept per expert
  int32_t pos2 =
      b.Add(b.Sub(CumSumTokens(b, mask2), mask2), b.BroadcastInDim(count1, {G, S, E}, {0, 2}));
  int32_t pos2_tok = ClipToCapacity(b, mask2, pos2, C);

  int32_t g1 = b.ReduceSum(b.Mul(gates, mask1), {2});  // [G, S]; 0 where dropped
  int32_t g2 = b.ReduceSum(b.Mul(gates, mask2), {2});
  int32_t denom = b.Add(g1, g2);
  denom = b.Select(b.Compare(Comparison::kGt, denom, b.ScalarLike(0.0, denom)), denom,
                   b.ScalarLike(1.0, denom));
  g1 = b.Div(g1, denom);
  g2 = b.Div(g2, denom);

  const Dims gsec = {G, S, E, C};
  auto route = [&](int32_t mask, int32_t pos_tok) {  // [G, S, E, C] 0/1 in dt
    int32_t slot = b.Iota({G, S, C}, DType::kF32, 2);
    int32_t hit = b.Compare(Comparison::kEq, slot, b.BroadcastInDim(pos_tok, {G, S, C}, {0, 1}));
    return b.Mul(b.BroadcastInDim(Cast(b, mask, dt), gsec, {0, 1, 2}),
                 b.BroadcastInDim(b.Convert(hit, dt), gsec, {0, 1, 3}));
  };
  int32_t sel1 = route(mask1, pos1_tok), sel2 = route(mask2, pos2_tok);
  int32_t dispatch = b.Add(sel1, sel2);
  b.SetName(dispatch, name + ".dispatch");
  int32_t combine = b.Add(b.Mul(b.BroadcastInDim(Cast(b, g1, dt), gsec, {0, 1}), sel1),
                          b.Mul(b.BroadcastInDim(Cast(b, g2, dt), gsec, {0, 1}), sel2));

  b.SetName(combine, name + ".combine");
  b.SetName(gates, name + ".gates");

  DotDims d_in;  // [G,S,E,C] x [G,S,h] -> [G, E, C, h]
  d_in.lhs_batch = {0};
  d_in.rhs_batch = {0};
  d_in.lhs_contracting = {1};
  d_in.rhs_contracting = {1};
  int32_t expert_in = b.DotGeneral(dispatch, xg, d_in);
  int32_t wi = Weight(b, {E, h, m.ff}, dt, name + ".wi");
  int32_t wo = Weight(b, {E, m.ff, h}, dt, name + ".wo");
  DotDims d_wi;  // [G,E,C,h] x [E,h,f] -> [E, G, C, f]
  d_wi.lhs_batch = {1};
  d_wi.rhs_batch = {0};
  d_wi.lhs_contracting = {3};
  d_wi.rhs_contracting = {1};
  int32_t hidden = b.Unary(OpKind::kRelu, b.DotGeneral(expert_in, wi, d_wi));
  DotDims d_wo;  // [E,G,C,f] x [E,f,h] -> [E, G, C, h]
  d_wo.lhs_batch = {0};
  d_wo.rhs_batch = {0};
  d_wo.lhs_contracting = {3};
  d_wo.rhs_contracting = {1};
  int32_t expert_out = b.DotGeneral(hidden, wo, d_wo);
  DotDims d_out;  // [G,S,E,C] x [E,G,C,h] -> [G, S, h]
  d_out.lhs_batch = {0};
  d_out.rhs_batch = {1};
  d_out.lhs_contracting = {2, 3};
  d_out.rhs_contracting = {0, 2};
  int32_t out = b.DotGeneral(combine, expert_out, d_out);
  return b.Reshape(out, in_shape);
}

}  // namespace

Result<Graph> BuildMoeForward(const ModelSpec& spec) {
  SpecReader reader(spec);
  const TransformerShape transformer = ReadTransformerShape(reader);
  MoeShape moe_shape;
  moe_shape.experts = reader.PositiveInt("experts");
  const int64_t group = reader.PositiveInt("group");
  const double capacity_factor = reader.PositiveFloat("capacity_factor");
  const int64_t moe_every = reader.PositiveInt("moe_every");
  const int64_t mlp_ratio = reader.PositiveInt("mlp_ratio");
  if (!reader.ok()) return reader.status();
  if (__builtin_mul_overflow(mlp_ratio, transformer.hidden, &moe_shape.ff)) {
    reader.Fail("mlp_ratio * hidden (" + std::to_string(mlp_ratio) + " * " +
                std::to_string(transformer.hidden) + ") overflows int64");
  }
  int64_t tokens = 0;
  if (__builtin_mul_overflow(transformer.batch, transformer.seq, &tokens)) {
    reader.Fail("batch * seq (" + std::to_string(transformer.batch) + " * " +
                std::to_string(transformer.seq) + ") overflows int64");
  }
  if (!reader.ok()) return reader.status();
  // Small test models route all their tokens as one group.
  moe_shape.group = std::min(group, tokens);
  if (tokens % moe_shape.group != 0) {
    reader.Fail("batch * seq (" + std::to_string(tokens) + ") must be a multiple of group (" +
                std::to_string(group) + ")");
  }
  if (moe_shape.experts < 2) reader.Fail("experts must be at least 2 (top-2 routing)");
  if (!reader.ok()) return reader.status();
  const double capacity = std::ceil(capacity_factor * 2.0 * static_cast<double>(moe_shape.group) /
                                    static_cast<double>(moe_shape.experts));
  if (!(capacity < 9223372036854775808.0)) {  // the cast below needs it below 2^63
    reader.Fail("the expert capacity capacity_factor * 2 * group / experts (" +
                ExactDoubleText(capacity) + ") exceeds 2^63");
    return reader.status();
  }
  moe_shape.capacity = static_cast<int64_t>(capacity);

  GraphBuilder b;
  b.set_layer(0);
  LayerStackInput in = TransformerInput(b, transformer);
  int32_t x = transformer.embed ? LayerNorm(b, in.x, "emb.ln") : in.x;
  for (int64_t i = 0; i < transformer.layers; ++i) {
    b.set_layer(static_cast<int32_t>(i + 1));
    const std::string p = "h" + std::to_string(i);
    x = LayerNorm(b,
                  b.Add(x, SelfAttention(b, x, transformer.heads, AttentionMask::kBidirectional,
                                         p + ".attn")),
                  p + ".ln1");
    int32_t y = i % moe_every == 0 ? MoeMlp(b, x, moe_shape, p + ".moe")
                                   : GeluMlp(b, x, moe_shape.ff, p + ".mlp");
    x = LayerNorm(b, b.Add(x, y), p + ".ln2");
  }
  b.set_layer(static_cast<int32_t>(transformer.layers + 1));
  int32_t loss = TransformerLoss(b, transformer, in, x, Bias::kLearned);
  b.SetName(loss, "loss");
  b.AddOutput(loss);
  return std::move(b).Finish();
}

}  // namespace models
}  // namespace alpa
