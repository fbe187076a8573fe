// GPT (Alpa's benchmark model): learned token + position embeddings, pre-LN causal transformer
// blocks, final layer norm, LM head tied to the token embedding, mean cross-entropy over tokens.
// Parameters: 12 l h^2 + 13 l h + (V + s) h + 2 h; training dot FLOPs:
// 72 B s l h^2 (1 + s / (6 h) + V / (12 l h)) (REFERENCE §6).
// embed=0 drops the embeddings, the final layer norm and the LM head: the input is hidden
// states x [B, s, h] and the loss the mean squared error against y [B, s, h].
#include "models/layers.h"

namespace alpa {
namespace models {

Result<Graph> BuildGptForward(const ModelSpec& spec) {
  SpecReader reader(spec);
  const TransformerShape transformer = ReadTransformerShape(reader);
  if (!reader.ok()) return reader.status();

  GraphBuilder b;
  b.set_layer(0);
  LayerStackInput in = TransformerInput(b, transformer);
  const int64_t ff = b.CheckedProduct(4, transformer.hidden, "the MLP width 4 * hidden");
  int32_t x = in.x;
  for (int64_t i = 0; i < transformer.layers; ++i) {
    b.set_layer(static_cast<int32_t>(i + 1));
    const std::string p = "h" + std::to_string(i);
    x = b.Add(x, SelfAttention(b, LayerNorm(b, x, p + ".ln1"), transformer.heads,
                               AttentionMask::kCausal, p + ".attn"));
    x = b.Add(x, GeluMlp(b, LayerNorm(b, x, p + ".ln2"), ff, p + ".mlp"));
  }
  b.set_layer(static_cast<int32_t>(transformer.layers + 1));
  if (transformer.embed) x = LayerNorm(b, x, "ln_f");
  int32_t loss = TransformerLoss(b, transformer, in, x, Bias::kNone);
  b.SetName(loss, "loss");
  b.AddOutput(loss);
  return std::move(b).Finish();
}

}  // namespace models
}  // namespace alpa
