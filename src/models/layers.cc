#include "models/layers.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace alpa {
namespace models {

int32_t Weight(GraphBuilder& b, Dims shape, DType dtype, const std::string& name) {
  return b.Parameter(std::move(shape), dtype, TensorRole::kParameter, name);
}

int32_t Input(GraphBuilder& b, Dims shape, DType dtype, const std::string& name) {
  return b.Parameter(std::move(shape), dtype, TensorRole::kInput, name);
}

int32_t AddBias(GraphBuilder& b, int32_t x, int32_t bias) {
  if (!b.ok()) return -1;
  return b.Add(x, b.BroadcastTo(bias, b.shape(x)));
}

int32_t Dense(GraphBuilder& b, int32_t x, int64_t out, Bias bias, const std::string& name) {
  if (!b.ok()) return -1;
  int64_t in = b.shape(x).back();
  int32_t w = Weight(b, {in, out}, b.dtype(x), name + ".w");
  int32_t y = b.MatMul(x, w);
  if (bias == Bias::kLearned) y = AddBias(b, y, Weight(b, {out}, b.dtype(x), name + ".b"));
  return y;
}

int32_t Unreduce(GraphBuilder& b, int32_t reduced, const Dims& shape, const Dims& reduced_dims) {
  Dims kept;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    bool is_reduced = false;
    for (int64_t r : reduced_dims) is_reduced = is_reduced || r == d;
    if (!is_reduced) kept.push_back(d);
  }
  return b.BroadcastInDim(reduced, shape, kept);
}

int32_t LayerNorm(GraphBuilder& b, int32_t x, const std::string& name, double eps) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(x);
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  const double inv_n = 1.0 / static_cast<double>(shape.back());
  // Statistics through reduce_sum (never a dot with a ones vector: that would add dots).
  int32_t mean = b.Scale(b.ReduceSum(x, {last}), inv_n);
  int32_t centered = b.Sub(x, Unreduce(b, mean, shape, {last}));
  int32_t var = b.Scale(b.ReduceSum(b.Mul(centered, centered), {last}), inv_n);
  int32_t rstd = b.Unary(OpKind::kRsqrt, b.Add(var, b.ScalarLike(eps, var)));
  int32_t normed = b.Mul(centered, Unreduce(b, rstd, shape, {last}));
  int32_t gamma = Weight(b, {shape.back()}, b.dtype(x), name + ".g");
  int32_t beta = Weight(b, {shape.back()}, b.dtype(x), name + ".b");
  return AddBias(b, b.Mul(normed, b.BroadcastTo(gamma, shape)), beta);
}

int32_t Softmax(GraphBuilder& b, int32_t x) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(x);
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  // The row maximum only keeps exp in range: the softmax does not depend on it, so neither does
  // its gradient (Op::stop_gradient).
  const int32_t row_max = b.ReduceMax(x, {last});
  b.SetStopGradient(row_max);
  int32_t max = Unreduce(b, row_max, shape, {last});
  int32_t e = b.Unary(OpKind::kExp, b.Sub(x, max));
  return b.Div(e, Unreduce(b, b.ReduceSum(e, {last}), shape, {last}));
}

int32_t SelfAttention(GraphBuilder& b, int32_t x, int64_t heads, AttentionMask mask,
                      const std::string& name) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(x);  // [B, s, h]
  const int64_t batch = shape[0], seq = shape[1], hidden = shape[2];
  const int64_t head_dim = hidden / heads;
  int32_t qkv = Dense(b, x, b.CheckedProduct(3, hidden, name + ".qkv width 3 * hidden"),
                      Bias::kLearned, name + ".qkv");
  // Head-major columns (Megatron's layout): splitting the fused weight's columns into n pieces
  // splits the heads, so tensor parallelism needs no communication before the attention.
  qkv = b.Reshape(qkv, {batch, seq, heads, 3, head_dim});
  auto part = [&](int64_t i) {
    int32_t p = b.Slice(qkv, {0, 0, 0, i, 0}, {batch, seq, heads, i + 1, head_dim});
    return b.Reshape(p, {batch, seq, heads, head_dim});
  };
  int32_t q = part(0), k = part(1), v = part(2);
  return Dense(b, ScaledDotProductAttention(b, q, k, v, mask), hidden, Bias::kLearned,
               name + ".out");
}

int32_t ScaledDotProductAttention(GraphBuilder& b, int32_t q, int32_t k, int32_t v,
                                  AttentionMask mask) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(q);  // [B, s, heads, d]
  const int64_t batch = shape[0], seq = shape[1], heads = shape[2], head_dim = shape[3];
  // scores [B, heads, s_q, s_k]
  DotDims qk;
  qk.lhs_batch = {0, 2};
  qk.rhs_batch = {0, 2};
  qk.lhs_contracting = {3};
  qk.rhs_contracting = {3};
  int32_t scores = b.DotGeneral(q, k, qk);
  scores = b.Scale(scores, 1.0 / std::sqrt(static_cast<double>(head_dim)));
  if (mask == AttentionMask::kCausal && b.ok()) {
    const Dims score_shape = b.shape(scores);
    int32_t row = b.Iota({seq, seq}, DType::kS32, 0);
    int32_t col = b.Iota({seq, seq}, DType::kS32, 1);
    int32_t allowed = b.Compare(Comparison::kLe, col, row);
    allowed = b.BroadcastInDim(allowed, score_shape, {2, 3});
    scores = b.Select(allowed, scores, b.ScalarLike(-1e4, scores));
  }
  int32_t probs = Softmax(b, scores);
  // context [B, heads, s_q, d]
  DotDims pv;
  pv.lhs_batch = {0, 1};
  pv.rhs_batch = {0, 2};
  pv.lhs_contracting = {3};
  pv.rhs_contracting = {1};
  int32_t ctx = b.DotGeneral(probs, v, pv);
  const int64_t width = b.CheckedProduct(heads, head_dim, "attention width heads * head_dim");
  return b.Reshape(b.Transpose(ctx, {0, 2, 1, 3}), {batch, seq, width});
}

int32_t GeluMlp(GraphBuilder& b, int32_t x, int64_t ff, const std::string& name) {
  if (!b.ok()) return -1;
  const int64_t hidden = b.shape(x).back();
  int32_t y = b.Unary(OpKind::kGelu, Dense(b, x, ff, Bias::kLearned, name + ".fc1"));
  return Dense(b, y, hidden, Bias::kLearned, name + ".fc2");
}

int32_t MeanAll(GraphBuilder& b, int32_t x) {
  if (!b.ok()) return -1;
  // Sum in f32: a mean over a million tokens overflows f16. f64 stays f64, so that gradient
  // checks of f64 models by finite differences keep their precision.
  const bool wide = b.dtype(x) == DType::kF32 || b.dtype(x) == DType::kF64;
  int32_t x32 = wide ? x : b.Convert(x, DType::kF32);
  Dims all;
  int64_t count = 1;
  for (size_t d = 0; d < b.shape(x).size(); ++d) {
    all.push_back(static_cast<int64_t>(d));
    count *= b.shape(x)[d];
  }
  return b.Scale(b.ReduceSum(x32, all), 1.0 / static_cast<double>(count));
}

int32_t SoftmaxCrossEntropy(GraphBuilder& b, int32_t logits, int32_t labels) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(logits);  // [N, C]
  // As in Softmax: log-sum-exp minus the picked logit does not depend on the shift.
  const int32_t row_max = b.ReduceMax(logits, {1});
  b.SetStopGradient(row_max);
  int32_t max = Unreduce(b, row_max, shape, {1});
  int32_t z = b.Sub(logits, max);
  int32_t lse = b.Unary(OpKind::kLog, b.ReduceSum(b.Unary(OpKind::kExp, z), {1}));
  int32_t classes = b.Iota(shape, b.dtype(labels), 1);
  int32_t hit = b.Compare(Comparison::kEq, classes, b.BroadcastInDim(labels, shape, {0}));
  int32_t one_hot = b.Convert(hit, b.dtype(logits));
  int32_t picked = b.ReduceSum(b.Mul(z, one_hot), {1});
  return MeanAll(b, b.Sub(lse, picked));
}

int32_t MeanSquaredError(GraphBuilder& b, int32_t x, int32_t y) {
  if (!b.ok()) return -1;
  int32_t d = b.Sub(x, y);
  return MeanAll(b, b.Mul(d, d));
}

Embedding TokenAndPositionEmbedding(GraphBuilder& b, int32_t tokens, int64_t vocab, int64_t hidden,
                                    DType dtype) {
  Embedding e;
  if (!b.ok()) return e;
  const Dims tok = b.shape(tokens);  // [B, s]
  const Dims out = {tok[0], tok[1], hidden};
  e.token_table = Weight(b, {vocab, hidden}, dtype, "wte");
  int32_t wpe = Weight(b, {tok[1], hidden}, dtype, "wpe");
  e.output = b.Add(b.Gather(e.token_table, tokens, 0), b.BroadcastTo(wpe, out));
  return e;
}

int32_t TiedLmLoss(GraphBuilder& b, int32_t x, int32_t token_table, int32_t labels, Bias bias) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(x);  // [B, s, h]
  const int64_t vocab = b.shape(token_table)[0];
  DotDims d;
  d.lhs_contracting = {2};
  d.rhs_contracting = {1};
  int32_t logits = b.DotGeneral(x, token_table, d);  // [B, s, V]
  if (bias == Bias::kLearned) logits = AddBias(b, logits, Weight(b, {vocab}, b.dtype(x), "lm.b"));
  const int64_t tokens = b.CheckedProduct(shape[0], shape[1], "tokens batch * seq");
  logits = b.Reshape(logits, {tokens, vocab});
  return SoftmaxCrossEntropy(b, logits, b.Reshape(labels, {tokens}));
}

LayerStackInput TransformerInput(GraphBuilder& b, const TransformerShape& t) {
  LayerStackInput in;
  if (!t.embed) {
    in.x = Input(b, {t.batch, t.seq, t.hidden}, t.dtype, "x");
    in.labels = Input(b, {t.batch, t.seq, t.hidden}, t.dtype, "y");
    return in;
  }
  int32_t tokens = Input(b, {t.batch, t.seq}, DType::kS32, "tokens");
  in.labels = Input(b, {t.batch, t.seq}, DType::kS32, "labels");
  Embedding emb = TokenAndPositionEmbedding(b, tokens, t.vocab, t.hidden, t.dtype);
  in.x = emb.output;
  in.token_table = emb.token_table;
  return in;
}

int32_t TransformerLoss(GraphBuilder& b, const TransformerShape& t, const LayerStackInput& in,
                        int32_t x, Bias lm_bias) {
  if (!t.embed) return MeanSquaredError(b, x, in.labels);
  return TiedLmLoss(b, x, in.token_table, in.labels, lm_bias);
}

// ---- SpecReader ----

std::string SpecLabel(const ModelSpec& spec) {
  std::string text = spec.preset.empty() ? spec.family : spec.preset;
  return "model spec \"" + text + "\": ";
}

const std::string* SpecReader::Find(const std::string& key) {
  auto it = spec_.keys.find(key);
  if (it == spec_.keys.end()) {
    Fail("missing key \"" + key + "\"");
    return nullptr;
  }
  return &it->second;
}

void SpecReader::Fail(const std::string& message) {
  if (status_.ok()) status_ = InvalidArgument(SpecLabel(spec_) + message);
}

namespace {
bool ParseInt(const std::string& text, int64_t& value) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  value = static_cast<int64_t>(v);
  return true;
}
}  // namespace

int64_t SpecReader::PositiveInt(const std::string& key) {
  const std::string* text = Find(key);
  int64_t v = 0;
  if (text == nullptr) return 1;
  if (!ParseInt(*text, v) || v <= 0) {
    Fail(key + " must be a positive integer (got \"" + *text + "\")");
    return 1;
  }
  return v;
}

int64_t SpecReader::NonNegativeInt(const std::string& key) {
  const std::string* text = Find(key);
  int64_t v = 0;
  if (text == nullptr) return 0;
  if (!ParseInt(*text, v) || v < 0) {
    Fail(key + " must be a non-negative integer (got \"" + *text + "\")");
    return 0;
  }
  return v;
}

double SpecReader::PositiveFloat(const std::string& key) {
  const std::string* text = Find(key);
  if (text == nullptr) return 1.0;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text->c_str(), &end);
  if (text->empty() || errno != 0 || end != text->c_str() + text->size() || !(v > 0) ||
      !std::isfinite(v)) {
    Fail(key + " must be a positive number (got \"" + *text + "\")");
    return 1.0;
  }
  return v;
}

bool SpecReader::Bool(const std::string& key) {
  const std::string* text = Find(key);
  if (text == nullptr) return false;
  if (*text == "1" || *text == "true") return true;
  if (*text == "0" || *text == "false") return false;
  Fail(key + " must be 0 or 1 (got \"" + *text + "\")");
  return false;
}

DType SpecReader::Dtype(const std::string& key) {
  const std::string* text = Find(key);
  if (text == nullptr) return DType::kF32;
  Result<DType> d = ParseDType(*text);
  if (!d.ok() || !IsFloating(d.value())) {
    Fail(key + " must be a floating dtype: f32, f16, bf16 or f64 (got \"" + *text + "\")");
    return DType::kF32;
  }
  return d.value();
}

std::string SpecReader::String(const std::string& key) {
  const std::string* text = Find(key);
  return text == nullptr ? std::string() : *text;
}

TransformerShape ReadTransformerShape(SpecReader& r) {
  TransformerShape t;
  t.batch = r.PositiveInt("batch");
  t.seq = r.PositiveInt("seq");
  t.hidden = r.PositiveInt("hidden");
  t.layers = r.PositiveInt("layers");
  t.heads = r.NonNegativeInt("heads");
  t.vocab = r.PositiveInt("vocab");
  t.dtype = r.Dtype("dtype");
  t.embed = r.Bool("embed");
  if (t.heads == 0) t.heads = std::max<int64_t>(1, t.hidden / 64);
  if (r.ok() && t.hidden % t.heads != 0) {
    r.Fail("hidden (" + std::to_string(t.hidden) + ") must be divisible by heads (" +
           std::to_string(t.heads) + ")");
  }
  return t;
}

}  // namespace models
}  // namespace alpa
