// BERT as in Alpa's benchmark (HF Flax BERT): token + position embeddings followed by a layer
// norm, post-LN bidirectional blocks (x = LN(x + attn(x)); x = LN(x + mlp(x))), an MLM head tied
// to the token embedding with a bias. Simplifications: no token-type embedding, no head
// transform (dense + gelu + LN) and the loss covers every token (no 15 % masking), which keeps
// the graph's shapes and op mix while needing no mask input.
// embed=0 drops the embedding, its layer norm and the MLM head: the input is hidden states
// x [B, s, h] and the loss the mean squared error against y [B, s, h] (Alpa's BERT layer-stack
// auto-sharding test).
#include "models/layers.h"

namespace alpa {
namespace models {

Result<Graph> BuildBertForward(const ModelSpec& spec) {
  SpecReader reader(spec);
  const TransformerShape transformer = ReadTransformerShape(reader);
  if (!reader.ok()) return reader.status();

  GraphBuilder b;
  b.set_layer(0);
  LayerStackInput in = TransformerInput(b, transformer);
  const int64_t ff = b.CheckedProduct(4, transformer.hidden, "the MLP width 4 * hidden");
  int32_t x = transformer.embed ? LayerNorm(b, in.x, "emb.ln") : in.x;
  for (int64_t i = 0; i < transformer.layers; ++i) {
    b.set_layer(static_cast<int32_t>(i + 1));
    const std::string p = "h" + std::to_string(i);
    x = LayerNorm(b,
                  b.Add(x, SelfAttention(b, x, transformer.heads, AttentionMask::kBidirectional,
                                         p + ".attn")),
                  p + ".ln1");
    x = LayerNorm(b, b.Add(x, GeluMlp(b, x, ff, p + ".mlp")), p + ".ln2");
  }
  b.set_layer(static_cast<int32_t>(transformer.layers + 1));
  int32_t loss = TransformerLoss(b, transformer, in, x, Bias::kLearned);
  b.SetName(loss, "loss");
  b.AddOutput(loss);
  return std::move(b).Finish();
}

}  // namespace models
}  // namespace alpa
