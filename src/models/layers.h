// Shared building blocks of the model zoo, written against GraphBuilder (forward ops only; the
// backward pass comes from autodiff). Every helper broadcasts explicitly (binary ops of the IR
// need identical shapes) and never uses dot_general outside real matrix products, so the
// training-step FLOPs of a model are exactly 3x its forward matmul FLOPs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/graph_builder.h"
#include "core/util/status.h"
#include "models/model_zoo.h"

namespace alpa {
namespace models {

// A trainable weight (TensorRole::kParameter).
int32_t Weight(GraphBuilder& b, Dims shape, DType dtype, const std::string& name);
// Data fed each step (TensorRole::kInput).
int32_t Input(GraphBuilder& b, Dims shape, DType dtype, const std::string& name);

// Whether a dense layer or an LM head adds a learned bias.
enum class Bias { kNone, kLearned };
// Whether attention sees only earlier positions (GPT) or the whole sequence (BERT).
enum class AttentionMask { kBidirectional, kCausal };

// x + bias, bias broadcast along x's trailing dims.
int32_t AddBias(GraphBuilder& b, int32_t x, int32_t bias);
// x [..., in] . w [in, out] (+ bias [out]) -> [..., out]. Weights named "<name>.w" / "<name>.b".
int32_t Dense(GraphBuilder& b, int32_t x, int64_t out, Bias bias, const std::string& name);
// Broadcasts a reduced tensor (x with dims `reduced` removed) back to `shape`.
int32_t Unreduce(GraphBuilder& b, int32_t reduced, const Dims& shape, const Dims& reduced_dims);
// Layer norm over the last dim with learnable scale ("<name>.g", ones) and bias ("<name>.b").
int32_t LayerNorm(GraphBuilder& b, int32_t x, const std::string& name, double eps = 1e-5);
// Softmax over the last dim (max-subtracted).
int32_t Softmax(GraphBuilder& b, int32_t x);
// Multi-head self-attention on x [B, s, h]: fused qkv dense (bias), scores scaled by
// 1/sqrt(h/heads), a causal mask by iota/compare/select with -1e4, output dense (bias).
int32_t SelfAttention(GraphBuilder& b, int32_t x, int64_t heads, AttentionMask mask,
                      const std::string& name);
// Attention of q, k, v [B, s, heads, d] (one kv head per query head): scores scaled by
// 1/sqrt(d), for kCausal a mask by iota/compare/select with -1e4, softmax, then the context
// [B, s, heads * d] (heads-major columns). SelfAttention's core, shared with the llama family.
int32_t ScaledDotProductAttention(GraphBuilder& b, int32_t q, int32_t k, int32_t v,
                                  AttentionMask mask);
// dense(ff, bias) -> gelu -> dense(h, bias).
int32_t GeluMlp(GraphBuilder& b, int32_t x, int64_t ff, const std::string& name);
// Mean over N of the softmax cross-entropy of logits [N, C] with integer labels [N]; the
// one-hot comes from iota + compare (no dot_general). The result is an f32 scalar (f64 for f64
// logits).
int32_t SoftmaxCrossEntropy(GraphBuilder& b, int32_t logits, int32_t labels);
// Mean of (x - y)^2 over all elements, as an f32 scalar (f64 for f64 inputs).
int32_t MeanSquaredError(GraphBuilder& b, int32_t x, int32_t y);
// The f32 mean of all elements of x (f64 when x is f64).
int32_t MeanAll(GraphBuilder& b, int32_t x);

// Token embedding (gather from "wte" [vocab, h]) plus learned position embedding ("wpe"
// [s, h]) of tokens [B, s].
struct Embedding {
  int32_t output = -1;       // [B, s, h]
  int32_t token_table = -1;  // wte, reused by a tied LM head
};
Embedding TokenAndPositionEmbedding(GraphBuilder& b, int32_t tokens, int64_t vocab, int64_t hidden,
                                    DType dtype);
// LM head tied to the token embedding (logits = x . wte^T, plus a learned bias "lm.b" [V] when
// Bias::kLearned), then the mean softmax cross-entropy over all B * s tokens.
int32_t TiedLmLoss(GraphBuilder& b, int32_t x, int32_t token_table, int32_t labels, Bias bias);

// Typed access to a parsed spec's keys; the first error is kept and names the key.
class SpecReader {
 public:
  explicit SpecReader(const ModelSpec& spec) : spec_(spec) {}
  int64_t PositiveInt(const std::string& key);
  int64_t NonNegativeInt(const std::string& key);
  double PositiveFloat(const std::string& key);
  bool Bool(const std::string& key);
  DType Dtype(const std::string& key);
  std::string String(const std::string& key);
  // Records a cross-key error ("hidden must be divisible by heads").
  void Fail(const std::string& message);
  const Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

 private:
  const std::string* Find(const std::string& key);
  const ModelSpec& spec_;
  Status status_;
};

// The common keys of the transformer families (gpt, bert, moe); heads = 0 means hidden / 64.
// embed = false: a bare layer stack (hidden states in, mean squared error out), as the
// layer-level auto-sharding tests of Alpa use.
struct TransformerShape {
  int64_t batch = 1, seq = 1, hidden = 1, layers = 1, heads = 1, vocab = 1;
  DType dtype = DType::kF32;
  bool embed = true;
};
TransformerShape ReadTransformerShape(SpecReader& r);

// The inputs of a transformer and what the first block reads (layer 0 ops).
struct LayerStackInput {
  int32_t x = -1;            // [B, s, h]: the embedding output, or the input "x" when !embed
  int32_t token_table = -1;  // wte (embed only)
  int32_t labels = -1;       // integer labels [B, s] (embed), or the target "y" [B, s, h]
};
// embed: inputs "tokens" and "labels" [B, s] (s32) and the token + position embedding;
// else inputs "x" and "y" [B, s, h] of the model dtype.
LayerStackInput TransformerInput(GraphBuilder& b, const TransformerShape& t);
// embed: the tied LM loss of x (with the "lm.b" bias when `lm_bias` is Bias::kLearned); else the
// mean squared error of x against y.
int32_t TransformerLoss(GraphBuilder& b, const TransformerShape& t, const LayerStackInput& in,
                        int32_t x, Bias lm_bias);

// "model spec \"gpt:...\": " (or the preset name), the prefix of every spec error.
std::string SpecLabel(const ModelSpec& spec);

// Forward graphs of each family (outputs[0] = scalar loss).
Result<Graph> BuildMlpForward(const ModelSpec& spec);
Result<Graph> BuildGptForward(const ModelSpec& spec);
Result<Graph> BuildBertForward(const ModelSpec& spec);
Result<Graph> BuildMoeForward(const ModelSpec& spec);
Result<Graph> BuildWideResNetForward(const ModelSpec& spec);
Result<Graph> BuildLlamaForward(const ModelSpec& spec);

}  // namespace models
}  // namespace alpa
