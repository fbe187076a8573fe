// Llama (Touvron et al. 2023, Llama 2 and Llama 3; HF transformers' LlamaForCausalLM): token
// embedding without a position table, pre-norm decoder blocks (x += attn(rms(x));
// x += mlp(rms(x))), final RMSNorm, untied LM head, mean cross-entropy over tokens.
//   RMSNorm      x * rsqrt(mean(x^2) + 1e-5) * g, no bias.
//   attention    q, k, v projections without bias; rotary embeddings on q and k (rotate-half
//                form: x * cos + [-x2, x1] * sin); grouped-query attention: k and v have kv_heads
//                heads, each shared by heads / kv_heads query heads; causal mask; o projection.
//   MLP          down(silu(gate(x)) * up(x)), no biases, `ffn` the intermediate size; silu is
//                composed as x / (1 + exp(-x)) (the IR has no sigmoid).
// Parameters, with d = hidden / heads and f = ffn:
//   2 V h + h + L (2 h^2 + 2 h kv_heads d + 3 h f + 2 h)
// (embedding and head, final norm; per block q and o, k and v, gate / up / down, two norms).
//
// The rotary tables are data: inputs "rope.cos" and "rope.sin" [batch, seq, head_dim] of the
// model dtype, the cos / sin of position * theta^(-2i/d) per token (both halves of the last dim
// repeat the d/2 frequencies), as HF computes them from position_ids. The IR has no sin / cos
// and its constants are splats, so the tables cannot be made in the graph; as batch-leading
// inputs they are split with the tokens by data parallelism and microbatching, like every other
// input, and they admit any position ids (packed sequences).
//
// Ops that feed one call are made in separate statements, in a fixed order: the op order (and so
// the graph JSON, which a forward graph built op by op through the C ABI or Python reproduces)
// must not depend on the compiler's order of evaluating function arguments.
//
// embed=0 drops the embedding, the final norm and the head: the inputs are hidden states
// x [B, s, h] (and the rotary tables), the loss the mean squared error against y [B, s, h].
#include "models/layers.h"

namespace alpa {
namespace models {
namespace {

constexpr double kRmsNormEpsilon = 1e-5;

struct LlamaShape {
  TransformerShape transformer;
  int64_t kv_heads = 1;
  int64_t head_dim = 1;
  int64_t ffn = 1;
};

LlamaShape ReadLlamaShape(SpecReader& r) {
  LlamaShape s;
  s.transformer = ReadTransformerShape(r);
  s.kv_heads = r.NonNegativeInt("kv_heads");
  s.ffn = r.PositiveInt("ffn");
  if (!r.ok()) return s;
  const int64_t heads = s.transformer.heads;
  if (s.kv_heads == 0) s.kv_heads = heads;
  s.head_dim = s.transformer.hidden / heads;
  if (heads % s.kv_heads != 0) {
    r.Fail("heads (" + std::to_string(heads) + ") must be a multiple of kv_heads (" +
           std::to_string(s.kv_heads) + ")");
  } else if (s.head_dim % 2 != 0) {
    r.Fail("the head size hidden / heads (" + std::to_string(s.head_dim) +
           ") must be even for the rotary embedding");
  }
  return s;
}

// x * rsqrt(mean(x^2) + eps) * g over the last dim; the scale "<name>.g" (ones).
int32_t RmsNorm(GraphBuilder& b, int32_t x, const std::string& name) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(x);
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  int32_t mean_square =
      b.Scale(b.ReduceSum(b.Mul(x, x), {last}), 1.0 / static_cast<double>(shape.back()));
  int32_t rms_inverse =
      b.Unary(OpKind::kRsqrt, b.Add(mean_square, b.ScalarLike(kRmsNormEpsilon, mean_square)));
  int32_t normed = b.Mul(x, Unreduce(b, rms_inverse, shape, {last}));
  int32_t gain = Weight(b, {shape.back()}, b.dtype(x), name + ".g");
  return b.Mul(normed, b.BroadcastTo(gain, shape));
}

// silu(x) = x * sigmoid(x) = x / (1 + exp(-x)).
int32_t Silu(GraphBuilder& b, int32_t x) {
  if (!b.ok()) return -1;
  int32_t exp_neg_x = b.Unary(OpKind::kExp, b.Unary(OpKind::kNeg, x));
  int32_t denominator = b.Add(b.ScalarLike(1.0, x), exp_neg_x);
  return b.Div(x, denominator);
}

// down(silu(gate(x)) * up(x)), no biases.
int32_t SwiGluMlp(GraphBuilder& b, int32_t x, int64_t ffn, const std::string& name) {
  if (!b.ok()) return -1;
  const int64_t hidden = b.shape(x).back();
  int32_t gate = Silu(b, Dense(b, x, ffn, Bias::kNone, name + ".gate"));
  int32_t up = Dense(b, x, ffn, Bias::kNone, name + ".up");
  return Dense(b, b.Mul(gate, up), hidden, Bias::kNone, name + ".down");
}

// The per-token rotary tables, broadcast over the heads of x [B, s, n, d].
struct RotaryTables {
  int32_t cos = -1;  // [B, s, d]
  int32_t sin = -1;
};

// x * cos + rotate_half(x) * sin with rotate_half(x) = [-x[d/2:], x[:d/2]] on x [B, s, n, d].
int32_t ApplyRotary(GraphBuilder& b, int32_t x, const RotaryTables& tables) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(x);
  const int64_t half = shape[3] / 2;
  int32_t first = b.Slice(x, {0, 0, 0, 0}, {shape[0], shape[1], shape[2], half});
  int32_t second = b.Slice(x, {0, 0, 0, half}, {shape[0], shape[1], shape[2], shape[3]});
  int32_t rotated = b.Concatenate({b.Unary(OpKind::kNeg, second), first}, 3);
  int32_t cos = b.BroadcastInDim(tables.cos, shape, {0, 1, 3});
  int32_t sin = b.BroadcastInDim(tables.sin, shape, {0, 1, 3});
  int32_t rotated_sin = b.Mul(rotated, sin);
  int32_t x_cos = b.Mul(x, cos);
  return b.Add(x_cos, rotated_sin);
}

// k or v [B, s, kv_heads, d] -> [B, s, heads, d], query head i reading kv head i / group (HF's
// repeat_kv): a broadcast to [B, s, kv_heads, group, d] and a reshape, which keeps a split of
// the kv heads a split of the query heads for the sharding.
int32_t RepeatKvHeads(GraphBuilder& b, int32_t x, int64_t heads) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(x);
  const int64_t group = heads / shape[2];
  if (group == 1) return x;
  int32_t repeated =
      b.BroadcastInDim(x, {shape[0], shape[1], shape[2], group, shape[3]}, {0, 1, 2, 4});
  return b.Reshape(repeated, {shape[0], shape[1], heads, shape[3]});
}

int32_t GroupedQueryAttention(GraphBuilder& b, int32_t x, const LlamaShape& llama,
                              const RotaryTables& tables, const std::string& name) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(x);  // [B, s, h]
  const int64_t batch = shape[0], seq = shape[1], hidden = shape[2];
  const int64_t heads = llama.transformer.heads, kv_heads = llama.kv_heads, d = llama.head_dim;
  const int64_t kv_width = kv_heads * d;  // <= hidden: heads is a multiple of kv_heads
  int32_t q = b.Reshape(Dense(b, x, hidden, Bias::kNone, name + ".q"), {batch, seq, heads, d});
  int32_t k = b.Reshape(Dense(b, x, kv_width, Bias::kNone, name + ".k"), {batch, seq, kv_heads, d});
  int32_t v = b.Reshape(Dense(b, x, kv_width, Bias::kNone, name + ".v"), {batch, seq, kv_heads, d});
  q = ApplyRotary(b, q, tables);
  k = ApplyRotary(b, k, tables);
  int32_t v_repeated = RepeatKvHeads(b, v, heads);
  int32_t k_repeated = RepeatKvHeads(b, k, heads);
  int32_t context = ScaledDotProductAttention(b, q, k_repeated, v_repeated, AttentionMask::kCausal);
  return Dense(b, context, hidden, Bias::kNone, name + ".o");
}

}  // namespace

Result<Graph> BuildLlamaForward(const ModelSpec& spec) {
  SpecReader reader(spec);
  const LlamaShape llama = ReadLlamaShape(reader);
  if (!reader.ok()) return reader.status();
  const TransformerShape& t = llama.transformer;

  GraphBuilder b;
  b.set_layer(0);
  int32_t x = -1, target = -1;
  if (t.embed) {
    int32_t tokens = Input(b, {t.batch, t.seq}, DType::kS32, "tokens");
    target = Input(b, {t.batch, t.seq}, DType::kS32, "labels");
    x = b.Gather(Weight(b, {t.vocab, t.hidden}, t.dtype, "wte"), tokens, 0);
  } else {
    x = Input(b, {t.batch, t.seq, t.hidden}, t.dtype, "x");
    target = Input(b, {t.batch, t.seq, t.hidden}, t.dtype, "y");
  }
  RotaryTables tables;
  tables.cos = Input(b, {t.batch, t.seq, llama.head_dim}, t.dtype, "rope.cos");
  tables.sin = Input(b, {t.batch, t.seq, llama.head_dim}, t.dtype, "rope.sin");
  for (int64_t i = 0; i < t.layers; ++i) {
    b.set_layer(static_cast<int32_t>(i + 1));
    const std::string p = "h" + std::to_string(i);
    x = b.Add(
        x, GroupedQueryAttention(b, RmsNorm(b, x, p + ".attn_norm"), llama, tables, p + ".attn"));
    x = b.Add(x, SwiGluMlp(b, RmsNorm(b, x, p + ".mlp_norm"), llama.ffn, p + ".mlp"));
  }
  b.set_layer(static_cast<int32_t>(t.layers + 1));
  int32_t loss = -1;
  if (t.embed) {
    int32_t logits = Dense(b, RmsNorm(b, x, "norm_f"), t.vocab, Bias::kNone, "lm_head");
    const int64_t tokens = b.CheckedProduct(t.batch, t.seq, "tokens batch * seq");
    int32_t flat_labels = b.Reshape(target, {tokens});
    int32_t flat_logits = b.Reshape(logits, {tokens, t.vocab});
    loss = SoftmaxCrossEntropy(b, flat_logits, flat_labels);
  } else {
    loss = MeanSquaredError(b, x, target);
  }
  b.SetName(loss, "loss");
  b.AddOutput(loss);
  return std::move(b).Finish();
}

}  // namespace models
}  // namespace alpa
