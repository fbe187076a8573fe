// The fused attention kernels (exec/cuda/flash_attention.h) against a double-precision reference
// computed from the formulas on the same 16-bit inputs: the host emulation of the kernels
// (their tiling, masking, indexing and synchronisation, without a GPU), then the GPU kernels
// against both when a GPU is present. Also the shapes the kernels refuse, and that the launchers
// refuse them before any CUDA call.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_assert.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/flash_attention.h"
#include "exec/cuda/kernel_math.h"

namespace alpa {
namespace cuda {
namespace {

// Error bounds, relative to the largest magnitude of the reference result. Each output is
// rounded once to the storage (a relative error of at most 2^-9 for bf16, 2^-11 for f16), and P
// and dS are rounded to the storage before their tensor-core products, which adds errors of the
// same relative size to each term of sums whose terms have mixed signs or sum to at most the
// largest output. The bounds leave a factor of about 3 over those roundings; a wrong mask,
// index or rescaling gives errors of order 1.
constexpr double kBf16Tolerance = 1e-2;
constexpr double kF16Tolerance = 2e-3;
// lse (relative to max(1, |lse|)) is f32 from exact 16-bit products: f32 sums and exp / log only.
constexpr double kLseTolerance = 1e-5;

constexpr uint16_t kUnwritten = 0x7e7e;  // a NaN in f16, 8.4e37 in bf16: never a result

// Memory orders of a [batch, heads, seq, head_dim] view.
enum class Layout {
  kBhsd,            // dense, as named
  kBshd,            // [batch, seq, heads, head_dim]: the projections' output
  kBhds,            // [batch, heads, head_dim, seq]: a transposed result (dV of dot_general)
  kBhsdPaddedRows,  // dense but rows head_dim + 8 apart: gaps that must stay unwritten
};

struct Dims4 {
  int64_t batch, heads, seq, dim;
};

// A view over its own buffer (16-bit elements) with a tail past the view's last element.
struct Tensor {
  Dims4 dims{};
  int64_t stride[4] = {0, 0, 0, 0};
  std::vector<uint16_t> bits;

  int64_t Offset(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return b * stride[0] + h * stride[1] + s * stride[2] + d * stride[3];
  }
  AttentionView View() {
    AttentionView v;
    v.data = bits.data();
    for (int i = 0; i < 4; ++i) v.stride[i] = stride[i];
    return v;
  }
};

Tensor MakeTensor(Dims4 dims, Layout layout) {
  const int64_t b = dims.batch, h = dims.heads, s = dims.seq, d = dims.dim;
  Tensor t;
  t.dims = dims;
  int64_t elements = b * h * s * d;
  switch (layout) {
    case Layout::kBhsd:
      t.stride[0] = h * s * d, t.stride[1] = s * d, t.stride[2] = d, t.stride[3] = 1;
      break;
    case Layout::kBshd:
      t.stride[0] = s * h * d, t.stride[1] = d, t.stride[2] = h * d, t.stride[3] = 1;
      break;
    case Layout::kBhds:
      t.stride[0] = h * d * s, t.stride[1] = d * s, t.stride[2] = 1, t.stride[3] = s;
      break;
    case Layout::kBhsdPaddedRows:
      t.stride[0] = h * s * (d + 8), t.stride[1] = s * (d + 8), t.stride[2] = d + 8;
      t.stride[3] = 1;
      elements = b * h * s * (d + 8);
      break;
  }
  t.bits.assign(static_cast<size_t>(elements + 64), kUnwritten);
  return t;
}

FloatFormat FormatOf(DType storage) { return storage == DType::kBF16 ? kBF16Format : kF16Format; }

double Decode(DType storage, uint16_t bits) { return DecodeFloat(bits, FormatOf(storage)); }

void FillRandom(Tensor* t, DType storage, double range, std::mt19937* rng) {
  std::uniform_real_distribution<double> uniform(-range, range);
  const Dims4& n = t->dims;
  for (int64_t b = 0; b < n.batch; ++b) {
    for (int64_t h = 0; h < n.heads; ++h) {
      for (int64_t s = 0; s < n.seq; ++s) {
        for (int64_t d = 0; d < n.dim; ++d) {
          t->bits[static_cast<size_t>(t->Offset(b, h, s, d))] =
              static_cast<uint16_t>(EncodeFloat(uniform(*rng), FormatOf(storage)));
        }
      }
    }
  }
}

// The view's elements as double, dense [batch, heads, seq, dim].
std::vector<double> Values(const Tensor& t, DType storage) {
  std::vector<double> out;
  const Dims4& n = t.dims;
  for (int64_t b = 0; b < n.batch; ++b) {
    for (int64_t h = 0; h < n.heads; ++h) {
      for (int64_t s = 0; s < n.seq; ++s) {
        for (int64_t d = 0; d < n.dim; ++d) {
          out.push_back(Decode(storage, t.bits[static_cast<size_t>(t.Offset(b, h, s, d))]));
        }
      }
    }
  }
  return out;
}

// Elements of the buffer outside the view that differ from kUnwritten.
int64_t WrittenOutsideView(const Tensor& t) {
  std::vector<bool> inside(t.bits.size(), false);
  const Dims4& n = t.dims;
  for (int64_t b = 0; b < n.batch; ++b) {
    for (int64_t h = 0; h < n.heads; ++h) {
      for (int64_t s = 0; s < n.seq; ++s) {
        for (int64_t d = 0; d < n.dim; ++d)
          inside[static_cast<size_t>(t.Offset(b, h, s, d))] = true;
      }
    }
  }
  int64_t count = 0;
  for (size_t i = 0; i < t.bits.size(); ++i) count += !inside[i] && t.bits[i] != kUnwritten;
  return count;
}

// max |got - want| / max |want|.
double RelativeError(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    const double error = std::fabs(got[i] - want[i]);
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
  }
  return worst / std::max(scale, 1e-30);
}

struct AttentionCase {
  std::string name;
  DType storage = DType::kBF16;
  bool causal = false;
  int64_t batch = 1, heads = 1, q_seq = 1, k_seq = 1, head_dim = 16;
  double input_range = 2.0;  // inputs uniform in [-range, range]
  bool strided = false;  // Q, V, dK as [b, s, h, d], O and dQ with padded rows, dV as [b, h, d, s]

  AttentionShape Shape() const {
    AttentionShape s;
    s.batch = batch, s.heads = heads, s.q_seq = q_seq, s.k_seq = k_seq, s.head_dim = head_dim;
    s.storage = storage;
    s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    s.causal = causal;
    return s;
  }
  double Tolerance() const { return storage == DType::kBF16 ? kBf16Tolerance : kF16Tolerance; }
};

void PrintTo(const AttentionCase& c, std::ostream* out) { *out << c.name; }

// Every tensor of one forward and backward pass, in host memory.
struct AttentionData {
  Tensor q, k, v, o, d_o, dq, dk, dv;
  std::vector<float> lse, scratch;

  explicit AttentionData(const AttentionCase& c) {
    const Dims4 qd{c.batch, c.heads, c.q_seq, c.head_dim};
    const Dims4 kd{c.batch, c.heads, c.k_seq, c.head_dim};
    const bool s = c.strided;
    q = MakeTensor(qd, s ? Layout::kBshd : Layout::kBhsd);
    k = MakeTensor(kd, Layout::kBhsd);
    v = MakeTensor(kd, s ? Layout::kBshd : Layout::kBhsd);
    o = MakeTensor(qd, s ? Layout::kBhsdPaddedRows : Layout::kBhsd);
    d_o = MakeTensor(qd, Layout::kBhsd);
    dq = MakeTensor(qd, s ? Layout::kBhsdPaddedRows : Layout::kBhsd);
    dk = MakeTensor(kd, s ? Layout::kBshd : Layout::kBhsd);
    dv = MakeTensor(kd, s ? Layout::kBhds : Layout::kBhsd);
    std::mt19937 rng(static_cast<uint32_t>(c.q_seq * 7919 + c.k_seq * 131 + c.head_dim));
    for (Tensor* t : {&q, &k, &v}) FillRandom(t, c.storage, c.input_range, &rng);
    FillRandom(&d_o, c.storage, 1.0, &rng);
    const AttentionShape shape = c.Shape();
    lse.assign(static_cast<size_t>(AttentionLseBytes(shape)) / sizeof(float), NAN);
    scratch.assign(static_cast<size_t>(AttentionBackwardScratchBytes(shape)) / sizeof(float), NAN);
  }

  AttentionForwardArgs Forward(const AttentionCase& c) {
    AttentionForwardArgs a;
    a.shape = c.Shape();
    a.q = q.View(), a.k = k.View(), a.v = v.View(), a.o = o.View();
    a.lse = lse.data();
    return a;
  }
  AttentionBackwardArgs Backward(const AttentionCase& c) {
    AttentionBackwardArgs a;
    a.shape = c.Shape();
    a.q = q.View(), a.k = k.View(), a.v = v.View(), a.o = o.View(), a.d_o = d_o.View();
    a.lse = lse.data();
    a.dq = dq.View(), a.dk = dk.View(), a.dv = dv.View();
    a.scratch = scratch.data();
    return a;
  }
};

// The formulas in double on the 16-bit inputs (dense [batch, heads, seq, dim] results); D uses
// the O the backward is given, as the kernels' definition says.
struct Reference {
  std::vector<double> o, lse, dq, dk, dv;
};

Reference ComputeReference(const AttentionCase& c, const AttentionData& data) {
  const std::vector<double> q = Values(data.q, c.storage), k = Values(data.k, c.storage),
                            v = Values(data.v, c.storage), o_given = Values(data.o, c.storage),
                            d_o = Values(data.d_o, c.storage);
  const int64_t nq = c.q_seq, nk = c.k_seq, nd = c.head_dim;
  const double scale = static_cast<double>(c.Shape().scale);
  Reference r;
  r.o.assign(q.size(), 0.0);
  r.dq.assign(q.size(), 0.0);
  r.dk.assign(k.size(), 0.0);
  r.dv.assign(k.size(), 0.0);
  std::vector<double> p(static_cast<size_t>(nk)), dp(static_cast<size_t>(nk));
  for (int64_t bh = 0; bh < c.batch * c.heads; ++bh) {
    const double* qh = &q[static_cast<size_t>(bh * nq * nd)];
    const double* kh = &k[static_cast<size_t>(bh * nk * nd)];
    const double* vh = &v[static_cast<size_t>(bh * nk * nd)];
    const double* gh = &d_o[static_cast<size_t>(bh * nq * nd)];
    const double* oh = &o_given[static_cast<size_t>(bh * nq * nd)];
    for (int64_t i = 0; i < nq; ++i) {
      double row_max = -INFINITY;
      for (int64_t j = 0; j < nk; ++j) {
        double s = 0.0;
        for (int64_t d = 0; d < nd; ++d) s += qh[i * nd + d] * kh[j * nd + d];
        p[static_cast<size_t>(j)] = (c.causal && j > i) ? -INFINITY : s * scale;
        row_max = std::max(row_max, p[static_cast<size_t>(j)]);
      }
      double sum = 0.0;
      for (double& x : p) sum += (x = std::exp(x - row_max));
      for (double& x : p) x /= sum;
      r.lse.push_back(row_max + std::log(sum));
      double row_dot = 0.0;
      for (int64_t d = 0; d < nd; ++d) row_dot += gh[i * nd + d] * oh[i * nd + d];
      for (int64_t j = 0; j < nk; ++j) {
        double x = 0.0;
        for (int64_t d = 0; d < nd; ++d) x += gh[i * nd + d] * vh[j * nd + d];
        dp[static_cast<size_t>(j)] = x;
      }
      for (int64_t j = 0; j < nk; ++j) {
        const double pj = p[static_cast<size_t>(j)];
        const double ds = pj * (dp[static_cast<size_t>(j)] - row_dot);
        for (int64_t d = 0; d < nd; ++d) {
          r.o[static_cast<size_t>((bh * nq + i) * nd + d)] += pj * vh[j * nd + d];
          r.dq[static_cast<size_t>((bh * nq + i) * nd + d)] += scale * ds * kh[j * nd + d];
          r.dk[static_cast<size_t>((bh * nk + j) * nd + d)] += scale * ds * qh[i * nd + d];
          r.dv[static_cast<size_t>((bh * nk + j) * nd + d)] += pj * gh[i * nd + d];
        }
      }
    }
  }
  return r;
}

// The largest errors of one pass against the reference.
struct PassErrors {
  double o = 0, lse = 0, dq = 0, dk = 0, dv = 0;
};

PassErrors ErrorsOf(const AttentionCase& c, const AttentionData& data, const Reference& r) {
  PassErrors e;
  e.o = RelativeError(Values(data.o, c.storage), r.o);
  for (size_t i = 0; i < r.lse.size(); ++i) {
    const double error = std::fabs(data.lse[i] - r.lse[i]) / std::max(1.0, std::fabs(r.lse[i]));
    e.lse = std::isnan(error) ? INFINITY : std::max(e.lse, error);
  }
  e.dq = RelativeError(Values(data.dq, c.storage), r.dq);
  e.dk = RelativeError(Values(data.dk, c.storage), r.dk);
  e.dv = RelativeError(Values(data.dv, c.storage), r.dv);
  return e;
}

void ExpectWithinTolerance(const AttentionCase& c, const PassErrors& e) {
  EXPECT_LE(e.o, c.Tolerance()) << "O";
  EXPECT_LE(e.lse, kLseTolerance) << "lse";
  EXPECT_LE(e.dq, c.Tolerance()) << "dQ";
  EXPECT_LE(e.dk, c.Tolerance()) << "dK";
  EXPECT_LE(e.dv, c.Tolerance()) << "dV";
}

void ExpectOnlyViewsWritten(const AttentionData& data) {
  EXPECT_EQ(WrittenOutsideView(data.o), 0) << "O";
  EXPECT_EQ(WrittenOutsideView(data.dq), 0) << "dQ";
  EXPECT_EQ(WrittenOutsideView(data.dk), 0) << "dK";
  EXPECT_EQ(WrittenOutsideView(data.dv), 0) << "dV";
}

std::string Describe(const PassErrors& e) {
  char text[160];
  std::snprintf(text, sizeof(text), "o %.3g lse %.3g dq %.3g dk %.3g dv %.3g", e.o, e.lse, e.dq,
                e.dk, e.dv);
  return text;
}

AttentionCase Case(const std::string& name, DType storage, bool causal, int64_t batch,
                   int64_t heads, int64_t q_seq, int64_t k_seq, int64_t head_dim, bool strided) {
  AttentionCase c;
  c.name = name;
  c.storage = storage;
  c.causal = causal;
  c.batch = batch, c.heads = heads, c.q_seq = q_seq, c.k_seq = k_seq, c.head_dim = head_dim;
  c.strided = strided;
  return c;
}

constexpr bool kCausal = true, kFull = false;
constexpr bool kStrided = true, kDense = false;

// Sequences of 1, 17, 64 and 100 (one block, part of one, exactly one, a block and a part) and
// 130 (three key blocks: the running max and sum rescaled twice), head_dim 16 to 128.
std::vector<AttentionCase> Cases() {
  std::vector<AttentionCase> cases = {
      Case("bf16_causal_seq1_d16", DType::kBF16, kCausal, 1, 1, 1, 1, 16, kDense),
      Case("f16_full_seq1_d64", DType::kF16, kFull, 1, 2, 1, 1, 64, kStrided),
      Case("bf16_causal_seq17_d64_b2h3", DType::kBF16, kCausal, 2, 3, 17, 17, 64, kStrided),
      Case("f16_full_seq64_d128", DType::kF16, kFull, 1, 1, 64, 64, 128, kDense),
      Case("bf16_causal_seq100_d128_b2h3", DType::kBF16, kCausal, 2, 3, 100, 100, 128, kStrided),
      Case("f16_causal_seq100_d16", DType::kF16, kCausal, 1, 2, 100, 100, 16, kStrided),
      Case("bf16_full_q17_k100_d64", DType::kBF16, kFull, 2, 1, 17, 100, 64, kStrided),
      Case("f16_full_q100_k130_d32", DType::kF16, kFull, 1, 1, 100, 130, 32, kDense),
      Case("bf16_causal_seq130_d32", DType::kBF16, kCausal, 1, 1, 130, 130, 32, kDense),
  };
  // Peaked rows (scores spread over tens): the running maximum changes between key blocks.
  AttentionCase peaked =
      Case("f16_causal_seq100_d64_peaked", DType::kF16, kCausal, 1, 1, 100, 100, 64, kDense);
  peaked.input_range = 6.0;
  cases.push_back(peaked);
  return cases;
}

class FlashAttentionOnHost : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(FlashAttentionOnHost, MatchesTheDoublePrecisionFormulas) {
  const AttentionCase& c = GetParam();
  AttentionData data(c);
  const Status forward = RunAttentionForwardOnHost(data.Forward(c));
  ASSERT_TRUE(forward.ok()) << forward.message();
  const Status backward = RunAttentionBackwardOnHost(data.Backward(c));
  ASSERT_TRUE(backward.ok()) << backward.message();
  const PassErrors errors = ErrorsOf(c, data, ComputeReference(c, data));
  RecordProperty("errors", Describe(errors));
  ExpectWithinTolerance(c, errors);
  ExpectOnlyViewsWritten(data);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashAttentionOnHost, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<AttentionCase>& param) {
                           return param.param.name;
                         });

// Each tensor moved one element later in its buffer (the views 2 bytes off 16-byte alignment)
// against the same tensors aligned: the rows are read one element at a time instead of in
// 16-byte packs (AttentionViewPacked), and every output bit is the same.
TEST(FlashAttentionOnHost, PackedAndElementwiseReadsGiveTheSameBits) {
  const AttentionCase c = Case("packs", DType::kBF16, kCausal, 2, 3, 70, 70, 32, kStrided);
  AttentionData aligned(c), shifted(c);
  Tensor* const tensors[] = {&shifted.q,   &shifted.k,  &shifted.v,  &shifted.o,
                             &shifted.d_o, &shifted.dq, &shifted.dk, &shifted.dv};
  for (Tensor* t : tensors) t->bits.insert(t->bits.begin(), kUnwritten);
  auto moved = [](AttentionView v) {
    v.data = static_cast<uint16_t*>(v.data) + 1;
    return v;
  };
  AttentionForwardArgs fa = aligned.Forward(c), fs = shifted.Forward(c);
  fs.q = moved(fs.q), fs.k = moved(fs.k), fs.v = moved(fs.v), fs.o = moved(fs.o);
  EXPECT_TRUE(AttentionViewPacked(fa.q, c.head_dim));
  EXPECT_TRUE(AttentionViewPacked(fa.k, c.head_dim));
  EXPECT_FALSE(AttentionViewPacked(fs.q, c.head_dim));
  ASSERT_TRUE(RunAttentionForwardOnHost(fa).ok());
  ASSERT_TRUE(RunAttentionForwardOnHost(fs).ok());
  AttentionBackwardArgs ba = aligned.Backward(c), bs = shifted.Backward(c);
  bs.q = moved(bs.q), bs.k = moved(bs.k), bs.v = moved(bs.v), bs.o = moved(bs.o);
  bs.d_o = moved(bs.d_o), bs.dq = moved(bs.dq), bs.dk = moved(bs.dk), bs.dv = moved(bs.dv);
  ASSERT_TRUE(RunAttentionBackwardOnHost(ba).ok());
  ASSERT_TRUE(RunAttentionBackwardOnHost(bs).ok());
  EXPECT_EQ(aligned.lse, shifted.lse);
  const Tensor* const outputs[][2] = {{&aligned.o, &shifted.o},
                                      {&aligned.dq, &shifted.dq},
                                      {&aligned.dk, &shifted.dk},
                                      {&aligned.dv, &shifted.dv}};
  for (const auto& pair : outputs) {
    const std::vector<uint16_t>& a = pair[0]->bits;
    const std::vector<uint16_t> b(pair[1]->bits.begin() + 1, pair[1]->bits.end());
    EXPECT_EQ(a, b);
  }
}

TEST(FlashAttentionOnHost, CausalRowsIgnoreLaterKeysExactly) {
  // Changing the last key and value changes no output row but the last one, bit for bit.
  const AttentionCase c = Case("causal", DType::kBF16, kCausal, 1, 1, 70, 70, 32, kDense);
  AttentionData first(c), second(c);
  for (int64_t d = 0; d < c.head_dim; ++d) {
    second.k.bits[static_cast<size_t>(second.k.Offset(0, 0, 69, d))] ^= 0x0101;
    second.v.bits[static_cast<size_t>(second.v.Offset(0, 0, 69, d))] ^= 0x0101;
  }
  ASSERT_TRUE(RunAttentionForwardOnHost(first.Forward(c)).ok());
  ASSERT_TRUE(RunAttentionForwardOnHost(second.Forward(c)).ok());
  for (int64_t i = 0; i < 69; ++i) {
    for (int64_t d = 0; d < c.head_dim; ++d) {
      const size_t at = static_cast<size_t>(first.o.Offset(0, 0, i, d));
      ASSERT_EQ(first.o.bits[at], second.o.bits[at]) << "row " << i << " dim " << d;
    }
    ASSERT_EQ(first.lse[static_cast<size_t>(i)], second.lse[static_cast<size_t>(i)]);
  }
}

AttentionShape SupportedShape() {
  AttentionShape s;
  s.batch = 2, s.heads = 3, s.q_seq = 100, s.k_seq = 100, s.head_dim = 64;
  s.storage = DType::kBF16;
  s.causal = true;
  return s;
}

TEST(AttentionUnsupportedReason, AcceptsBf16AndF16WithHeadDimsOf16To128) {
  for (DType storage : {DType::kBF16, DType::kF16}) {
    for (int64_t head_dim : {16, 32, 48, 64, 80, 96, 112, 128}) {
      AttentionShape s = SupportedShape();
      s.storage = storage;
      s.head_dim = head_dim;
      EXPECT_EQ(AttentionUnsupportedReason(s), "") << head_dim;
    }
  }
  AttentionShape cross = SupportedShape();
  cross.causal = false;
  cross.q_seq = 1;
  EXPECT_EQ(AttentionUnsupportedReason(cross), "");
}

TEST(AttentionUnsupportedReason, NamesWhatTheKernelsDoNotCompute) {
  struct Refusal {
    AttentionShape shape;
    std::string says;
  };
  std::vector<Refusal> refusals;
  AttentionShape s = SupportedShape();
  s.storage = DType::kF32;
  refusals.push_back({s, "f32"});
  s = SupportedShape();
  s.storage = DType::kF64;
  refusals.push_back({s, "f64"});
  for (int64_t head_dim : {0, 8, 24, 136, 256}) {
    s = SupportedShape();
    s.head_dim = head_dim;
    refusals.push_back({s, "head_dim " + std::to_string(head_dim)});
  }
  s = SupportedShape();
  s.k_seq = 101;
  refusals.push_back({s, "causal"});
  s = SupportedShape();
  s.q_seq = 0;
  refusals.push_back({s, "empty"});
  s = SupportedShape();
  s.causal = false;
  s.k_seq = 0;
  refusals.push_back({s, "empty"});
  s = SupportedShape();
  s.batch = 0;
  refusals.push_back({s, "positive"});
  s = SupportedShape();
  s.heads = -1;
  refusals.push_back({s, "positive"});
  s = SupportedShape();
  s.batch = int64_t{1} << 31;
  refusals.push_back({s, "beyond int32"});
  s = SupportedShape();
  s.batch = int64_t{1} << 20;
  s.heads = int64_t{1} << 10;
  s.q_seq = s.k_seq = 4096;
  refusals.push_back({s, "blocks are beyond int32"});
  for (const Refusal& r : refusals) {
    const std::string reason = AttentionUnsupportedReason(r.shape);
    EXPECT_NE(reason.find(r.says), std::string::npos) << "'" << reason << "' lacks " << r.says;
    EXPECT_EQ(AttentionLseBytes(r.shape), 0) << r.says;
  }
}

TEST(AttentionUnsupportedReason, RowBuffersHoldOneFloatPerQueryRow) {
  EXPECT_EQ(AttentionLseBytes(SupportedShape()), 2 * 3 * 100 * 4);
  EXPECT_EQ(AttentionBackwardScratchBytes(SupportedShape()), 2 * 3 * 100 * 4);
}

// Views whose pointers would fault (or fail a CUDA call) if the launchers used them.
AttentionView Poisoned() {
  AttentionView v;
  v.data = reinterpret_cast<void*>(uintptr_t{16});
  return v;
}

TEST(FlashAttentionLaunch, RefusesUnsupportedShapesBeforeAnyCudaCall) {
  AttentionForwardArgs forward;
  forward.shape = SupportedShape();
  forward.shape.head_dim = 24;
  forward.q = forward.k = forward.v = forward.o = Poisoned();
  forward.lse = reinterpret_cast<float*>(uintptr_t{16});
  AttentionBackwardArgs backward;
  backward.shape = SupportedShape();
  backward.shape.storage = DType::kF32;
  backward.q = backward.k = backward.v = backward.o = backward.d_o = Poisoned();
  backward.dq = backward.dk = backward.dv = Poisoned();
  backward.lse = reinterpret_cast<const float*>(uintptr_t{16});
  backward.scratch = reinterpret_cast<void*>(uintptr_t{16});
  const cudaStream_t bad_stream = reinterpret_cast<cudaStream_t>(uintptr_t{16});

  const Status f = LaunchAttentionForward(forward, bad_stream);
  EXPECT_EQ(f.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.message().find("head_dim 24"), std::string::npos) << f.message();
  const Status b = LaunchAttentionBackward(backward, bad_stream);
  EXPECT_EQ(b.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.message().find("f32"), std::string::npos) << b.message();
  EXPECT_EQ(RunAttentionForwardOnHost(forward).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RunAttentionBackwardOnHost(backward).code(), StatusCode::kInvalidArgument);
}

TEST(FlashAttentionLaunch, RefusesNullPointers) {
  AttentionForwardArgs forward;
  forward.shape = SupportedShape();
  forward.q = forward.k = forward.v = forward.o = Poisoned();
  const Status f = LaunchAttentionForward(forward, nullptr);
  EXPECT_EQ(f.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.message().find("lse is null"), std::string::npos) << f.message();
  AttentionBackwardArgs backward;
  backward.shape = SupportedShape();
  backward.q = backward.k = backward.v = backward.o = backward.d_o = Poisoned();
  backward.dq = backward.dv = Poisoned();
  const Status b = RunAttentionBackwardOnHost(backward);
  EXPECT_EQ(b.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.message().find("dk.data is null"), std::string::npos) << b.message();
}

// ---- On a GPU: the real kernels against the host emulation and the reference ----

// Device copies of a host case's buffers; the views point into device memory.
class DeviceData {
 public:
  ~DeviceData() {
    for (void* p : allocations_) cudaFree(p);
  }
  // A device copy of `bytes` at `host`, or null.
  void* Upload(const void* host, size_t bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
    allocations_.push_back(p);
    if (cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) return nullptr;
    return p;
  }
  AttentionView Upload(const Tensor& t) {
    AttentionView v;
    v.data = Upload(t.bits.data(), t.bits.size() * sizeof(uint16_t));
    for (int i = 0; i < 4; ++i) v.stride[i] = t.stride[i];
    return v;
  }

 private:
  std::vector<void*> allocations_;
};

bool Download(Tensor* t, const AttentionView& v) {
  return cudaMemcpy(t->bits.data(), v.data, t->bits.size() * sizeof(uint16_t),
                    cudaMemcpyDeviceToHost) == cudaSuccess;
}

bool Download(std::vector<float>* x, const void* device) {
  return cudaMemcpy(x->data(), device, x->size() * sizeof(float), cudaMemcpyDeviceToHost) ==
         cudaSuccess;
}

TEST(FlashAttentionOnGpu, KernelsMatchTheHostEmulationAndTheFormulas) {
  std::string why;
  if (CudaDeviceCount(&why) == 0) GTEST_SKIP() << "no GPU (" << why << "): host emulation only";
  cudaDeviceProp prop{};
  ASSERT_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 8) GTEST_SKIP() << "the kernels need sm_80 or newer; GPU 0 is " << prop.name;
  for (const AttentionCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    // The host emulation's forward, then its backward from that O and lse.
    AttentionData host(c);
    ASSERT_TRUE(RunAttentionForwardOnHost(host.Forward(c)).ok());
    AttentionData gpu = host;  // inputs, and the host's O and lse for the backward
    ASSERT_TRUE(RunAttentionBackwardOnHost(host.Backward(c)).ok());

    DeviceData device;
    AttentionForwardArgs forward = gpu.Forward(c);
    AttentionData gpu_forward(c);  // receives the GPU's O and lse
    forward.q = device.Upload(gpu.q);
    forward.k = device.Upload(gpu.k);
    forward.v = device.Upload(gpu.v);
    forward.o = device.Upload(gpu_forward.o);
    forward.lse = static_cast<float*>(
        device.Upload(gpu_forward.lse.data(), gpu_forward.lse.size() * sizeof(float)));
    AttentionBackwardArgs backward = gpu.Backward(c);
    backward.q = forward.q, backward.k = forward.k, backward.v = forward.v;
    backward.o = device.Upload(gpu.o);
    backward.d_o = device.Upload(gpu.d_o);
    backward.lse =
        static_cast<float*>(device.Upload(gpu.lse.data(), gpu.lse.size() * sizeof(float)));
    backward.dq = device.Upload(gpu.dq);
    backward.dk = device.Upload(gpu.dk);
    backward.dv = device.Upload(gpu.dv);
    backward.scratch = device.Upload(gpu.scratch.data(), gpu.scratch.size() * sizeof(float));
    const std::vector<const void*> uploaded = {
        forward.q.data,   forward.k.data,   forward.v.data,    forward.o.data,
        forward.lse,      backward.o.data,  backward.d_o.data, backward.lse,
        backward.dq.data, backward.dk.data, backward.dv.data,  backward.scratch};
    for (const void* p : uploaded) {
      ASSERT_NE(p, nullptr) << "device allocation or copy failed";
    }
    const Status f = LaunchAttentionForward(forward, nullptr);
    ASSERT_TRUE(f.ok()) << f.message();
    const Status b = LaunchAttentionBackward(backward, nullptr);
    ASSERT_TRUE(b.ok()) << b.message();
    ASSERT_CUDA(cudaDeviceSynchronize());
    ASSERT_TRUE(Download(&gpu_forward.o, forward.o));
    ASSERT_TRUE(Download(&gpu_forward.lse, forward.lse));
    ASSERT_TRUE(Download(&gpu.dq, backward.dq));
    ASSERT_TRUE(Download(&gpu.dk, backward.dk));
    ASSERT_TRUE(Download(&gpu.dv, backward.dv));
    gpu.o = gpu_forward.o;  // for the comparison of O only: D used the host's O on both
    gpu.lse = gpu_forward.lse;

    const Reference reference = ComputeReference(c, host);
    const PassErrors against_reference = ErrorsOf(c, gpu, reference);
    RecordProperty("errors_" + c.name, Describe(against_reference));
    ExpectWithinTolerance(c, against_reference);
    ExpectOnlyViewsWritten(gpu);
    // Against the emulation: the same algorithm; only the order of the tile products' sums and
    // the last bits of exp / log differ, which move a result across a rounding boundary at most.
    Reference emulated;
    emulated.o = Values(host.o, c.storage);
    emulated.lse.assign(host.lse.begin(), host.lse.end());
    emulated.dq = Values(host.dq, c.storage);
    emulated.dk = Values(host.dk, c.storage);
    emulated.dv = Values(host.dv, c.storage);
    ExpectWithinTolerance(c, ErrorsOf(c, gpu, emulated));
  }
}

}  // namespace
}  // namespace cuda
}  // namespace alpa
