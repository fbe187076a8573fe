// The op cases the CUDA kernels are checked on: small random graphs of one op each, for every
// op kind and the dtypes it takes, with edge shapes (scalars, size 1, 7, 33, empty) and edge
// values (NaN, +-inf, -0, huge, rounding ties, integer extremes). Shared by the host test of the
// kernels' math (kernel_math_test.cc) and the GPU test (kernels_gpu_test.cc), which compare a
// kernel's result with the interpreter's EvaluateOp.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/ir/graph_builder.h"
#include "exec/cpu/interpreter.h"

namespace alpa {
namespace kernel_cases {

// One op to run: op `id` of `graph` on `operands` (values of the operand ops' dtypes).
struct KernelCase {
  std::string name;  // "add f32 [7]": kind, dtype, shape and what is special
  Graph graph;
  int32_t id = -1;
  std::vector<HostTensor> operands;
  int64_t contracted = 0;  // terms per output of a contraction (for its tolerance), else 0
};

inline const std::vector<DType>& FloatTypes() {
  static const std::vector<DType> types{DType::kF32, DType::kF16, DType::kBF16, DType::kF64};
  return types;
}

// Values of `dtype` for n elements; `edges` mixes in the edge values of the dtype.
inline std::vector<double> RandomValues(DType dtype, int64_t n, std::mt19937_64& rng, bool edges,
                                        double scale = 3.0) {
  std::uniform_real_distribution<double> uniform(-scale, scale);
  std::uniform_int_distribution<int> pick(0, 9);
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> edge_values;
  if (IsFloating(dtype)) {
    // Ties of each format's rounding (1 + half an ulp of bf16, f16), huge, tiny, +-0, inf, NaN.
    edge_values = {nan,
                   inf,
                   -inf,
                   -0.0,
                   0.0,
                   1.0 + std::ldexp(1.0, -8),
                   1.0 + std::ldexp(1.0, -11),
                   65504.0,
                   70000.0,
                   1e30,
                   -3e38,
                   1e-8,
                   6e-8,
                   1e-40,
                   0.5,
                   -2.5};
  } else if (dtype == DType::kS8) {
    edge_values = {127, -128, 0, -1, 1, 100, -100};
  } else if (dtype == DType::kS32) {
    edge_values = {2147483647.0, -2147483648.0, 0, -1, 65536, -65536, 46341};
  } else if (dtype == DType::kS64) {
    edge_values = {9007199254740992.0, -9007199254740992.0, 0, -1, 4294967296.0, 3037000500.0};
  } else {
    edge_values = {0, 1};
  }
  std::uniform_int_distribution<size_t> edge(0, edge_values.size() - 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) {
    if (edges && pick(rng) < 3) {
      x = edge_values[edge(rng)];
    } else if (dtype == DType::kPred) {
      x = pick(rng) < 5 ? 0.0 : 1.0;
    } else if (IsInteger(dtype)) {
      x = std::trunc(uniform(rng) * 10.0);
    } else {
      x = uniform(rng);
    }
    // Integer memory has no -0 (the interpreter's integers can hold it).
    x = IsFloating(dtype) ? RoundToDType(x, dtype) : RoundToDType(x, dtype) + 0.0;
  }
  return v;
}

// Builds cases: parameters with random values, then one op.
class CaseBuilder {
 public:
  explicit CaseBuilder(uint64_t seed) : rng_(seed) {}

  std::mt19937_64& rng() { return rng_; }

  // Starts a new case.
  void Begin() {
    b_ = GraphBuilder();
    values_.clear();
  }
  int32_t Param(const Dims& shape, DType dtype, bool edges, double scale = 3.0) {
    return ParamWith(shape, dtype, RandomValues(dtype, cpu_elements(shape), rng_, edges, scale));
  }
  int32_t ParamWith(const Dims& shape, DType dtype, std::vector<double> values) {
    const int32_t id =
        b_.Parameter(shape, dtype, TensorRole::kInput, "p" + std::to_string(values_.size()));
    values_.push_back(HostTensor{shape, dtype, std::move(values)});
    return id;
  }
  GraphBuilder& b() { return b_; }

  // Finishes the case whose op is `id` (every parameter is an operand, in order); a case the
  // builder rejects is a bug of the case list, reported as a failed case named "invalid: ...".
  void End(const std::string& what, int32_t id, int64_t contracted = 0) {
    KernelCase c;
    c.id = id;
    c.contracted = contracted;
    if (!b_.ok()) {
      c.name = "invalid: " + what + ": " + b_.status().message();
      cases_.push_back(std::move(c));
      return;
    }
    const Op& op = b_.op(id);
    std::ostringstream name;
    name << OpKindName(op.kind) << " " << DTypeName(op.dtype) << " " << ShapeString(op.shape);
    if (!what.empty()) name << " (" << what << ")";
    c.name = name.str();
    c.graph = b_.graph();
    for (int32_t operand : op.operands) c.operands.push_back(values_[static_cast<size_t>(operand)]);
    cases_.push_back(std::move(c));
  }

  std::vector<KernelCase> Take() { return std::move(cases_); }

  static int64_t cpu_elements(const Dims& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }

 private:
  std::mt19937_64 rng_;
  GraphBuilder b_;
  std::vector<HostTensor> values_;
  std::vector<KernelCase> cases_;
};

inline const std::vector<Dims>& EdgeShapes() {
  static const std::vector<Dims> shapes{{}, {1}, {7}, {33}, {0}, {3, 5}, {2, 0, 3}, {2, 3, 9}};
  return shapes;
}

inline void AddElementwiseCases(CaseBuilder& cb) {
  const std::vector<OpKind> unary{OpKind::kNeg,   OpKind::kAbs,  OpKind::kExp,
                                  OpKind::kLog,   OpKind::kTanh, OpKind::kSqrt,
                                  OpKind::kRsqrt, OpKind::kGelu, OpKind::kRelu};
  const std::vector<OpKind> binary{OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv,
                                   OpKind::kMax, OpKind::kMin, OpKind::kPow};
  const std::vector<DType> all{DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                               DType::kS8,  DType::kS32, DType::kS64};
  for (const Dims& shape : EdgeShapes()) {
    for (DType t : all) {
      for (OpKind k : unary) {
        if (!IsFloating(t) && k != OpKind::kNeg && k != OpKind::kAbs && k != OpKind::kRelu)
          continue;
        cb.Begin();
        cb.End("edges", cb.b().Unary(k, cb.Param(shape, t, true)));
      }
      for (OpKind k : binary) {
        cb.Begin();
        // An integer power is formed in double and wrapped (as the interpreter does): beyond
        // 2^53 neither side's double power is exact, so its wrapped value is no defined result
        // to compare. Integer powers take operands of at most 30 and
        // exponents of at most 4 instead of the dtype's edges.
        const bool small_power = k == OpKind::kPow && !IsFloating(t);
        const int32_t x = cb.Param(shape, t, !small_power);
        const int32_t y = cb.Param(shape, t, !small_power, small_power ? 0.4 : 3.0);  // |y| <= 4
        cb.End("edges", cb.b().Binary(k, x, y));
      }
      for (int32_t c = 0; c < 6; ++c) {
        cb.Begin();
        const int32_t x = cb.Param(shape, t, true), y = cb.Param(shape, t, true);
        cb.End("edges", cb.b().Compare(static_cast<Comparison>(c), x, y));
      }
      cb.Begin();
      const int32_t p = cb.Param(shape, DType::kPred, false);
      const int32_t x = cb.Param(shape, t, true), y = cb.Param(shape, t, true);
      cb.End("", cb.b().Select(p, x, y));
    }
  }
  // convert between every pair of dtypes (floats to integers truncate and wrap or saturate).
  const std::vector<DType> every{DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                                 DType::kS8,  DType::kS32, DType::kS64,  DType::kPred};
  for (DType from : every) {
    for (DType to : every) {
      cb.Begin();
      const int32_t x = cb.Param({33}, from, true, from == DType::kPred ? 1.0 : 300.0);
      cb.End(std::string("from ") + DTypeName(from), cb.b().Convert(x, to));
    }
  }
  for (DType t : all) {
    cb.Begin();
    cb.End("", cb.b().Constant(-2.75e-3, {3, 7}, t));
    cb.Begin();
    cb.End("", cb.b().Iota({4, 9}, t, 1));
    cb.Begin();
    cb.End("", cb.b().Iota({5, 3, 2}, t, 0));
  }
}

inline void AddMovementCases(CaseBuilder& cb) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kS32, DType::kPred}) {
    cb.Begin();
    cb.End("", cb.b().BroadcastInDim(cb.Param({3, 1}, t, false), {2, 3, 7}, {1, 2}));
    cb.Begin();
    cb.End("scalar", cb.b().BroadcastInDim(cb.Param({}, t, false), {5, 1}, {}));
    cb.Begin();
    cb.End("", cb.b().Reshape(cb.Param({6, 7}, t, false), {2, 21}));
    cb.Begin();
    cb.End("", cb.b().Transpose(cb.Param({2, 3, 33}, t, false), {2, 0, 1}));
    cb.Begin();
    cb.End("empty", cb.b().Transpose(cb.Param({0, 3}, t, false), {1, 0}));
    cb.Begin();
    cb.End("strided", cb.b().Slice(cb.Param({9, 8}, t, false), {1, 2}, {8, 7}, {3, 2}));
    cb.Begin();
    const int32_t a = cb.Param({2, 3}, t, false), b1 = cb.Param({2, 0}, t, false),
                  c = cb.Param({2, 5}, t, false);
    cb.End("", cb.b().Concatenate({a, b1, c}, 1));
    cb.Begin();
    cb.End("interior", cb.b().Pad(cb.Param({3, 4}, t, false), 1.5, {1, 2}, {2, 0}, {1, 2}));
    cb.Begin();
    cb.End("negative", cb.b().Pad(cb.Param({7, 5}, t, false), -1.0, {-2, 1}, {-3, -1}, {0, 1}));
    cb.Begin();
    cb.End("", cb.b().Reverse(cb.Param({4, 7, 3}, t, false), {0, 2}));
  }
}

inline void AddReduceCases(CaseBuilder& cb) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kS32}) {
    const bool edges = t != DType::kS32;
    cb.Begin();
    cb.End("rows", cb.b().ReduceSum(cb.Param({3, 4, 33}, t, false), {2}));
    cb.Begin();
    cb.End("outer", cb.b().ReduceMax(cb.Param({7, 5, 3}, t, edges), {0, 2}));
    cb.Begin();
    cb.End("all", cb.b().ReduceSum(cb.Param({2, 3, 7}, t, false), {0, 1, 2}));
    cb.Begin();
    cb.End("none", cb.b().ReduceSum(cb.Param({2, 7}, t, false), {}));
    cb.Begin();
    cb.End("empty rows", cb.b().ReduceMax(cb.Param({2, 0}, t, false), {1}));
    cb.Begin();
    cb.End("long rows", cb.b().ReduceSum(cb.Param({3, 4100}, t, false), {1}));
    cb.Begin();
    cb.End("long rows", cb.b().ReduceMax(cb.Param({2, 5000}, t, edges), {1}));
    cb.Begin();
    cb.End("long columns", cb.b().ReduceSum(cb.Param({1100, 3}, t, false), {0}));
    // Split reductions (reduce_body.h's ReduceSplit): a long row in 129 chunks of blocks, and
    // 1500 short columns in 2 chunks of threads.
    cb.Begin();
    cb.End("split row", cb.b().ReduceSum(cb.Param({(1 << 18) + 3}, t, false), {0}));
    cb.Begin();
    cb.End("warp rows", cb.b().ReduceSum(cb.Param({2048, 1030}, t, false), {1}));
    cb.Begin();
    cb.End("split columns", cb.b().ReduceMax(cb.Param({64, 1500}, t, edges), {0}));
    cb.Begin();
    cb.End("2d pad", cb.b().ReduceWindow(ReduceKind::kMax, cb.Param({5, 7}, t, false), {2, 3},
                                         {1, 2}, {1, 0}, {0, 2}));
    cb.Begin();
    cb.End("1d",
           cb.b().ReduceWindow(ReduceKind::kSum, cb.Param({33}, t, false), {4}, {3}, {2}, {1}));
    cb.Begin();
    {
      const int32_t x = cb.Param({6, 7}, t, false);
      const int32_t s = cb.Param({5, 3}, t, false);
      cb.End("overlap", cb.b().SelectAndScatter(x, s, {2, 3}, {1, 2}, {0, 0}, {0, 0}));
    }
    cb.Begin();
    {
      // Ties: a few distinct values only.
      std::vector<double> tied(66);
      for (size_t i = 0; i < tied.size(); ++i) tied[i] = static_cast<double>((i * 7) % 3);
      const int32_t x = cb.ParamWith({66}, t, tied);
      const int32_t s = cb.Param({22}, t, false);
      cb.End("ties, padding", cb.b().SelectAndScatter(x, s, {4}, {3}, {1}, {2}));
    }
  }
}

inline void AddIndexingCases(CaseBuilder& cb) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kS32}) {
    for (DType it : {DType::kS32, DType::kS64}) {
      // Indices beyond both ends, clamped.
      const std::vector<double> idx{0, 4, -3, 9, 2, 2, 1};
      cb.Begin();
      {
        const int32_t x = cb.Param({5, 33}, t, false);
        const int32_t i = cb.ParamWith({7}, it, idx);
        cb.End("rows", cb.b().Gather(x, i, 0));
      }
      cb.Begin();
      {
        const int32_t x = cb.Param({3, 5, 2}, t, false);
        const int32_t i = cb.ParamWith({7}, it, idx);
        cb.End("middle axis", cb.b().Gather(x, i, 1));
      }
      cb.Begin();
      {
        const int32_t x = cb.Param({5, 33}, t, false);
        const int32_t i = cb.ParamWith({7}, it, idx);
        const int32_t u = cb.Param({7, 33}, t, false);
        cb.End("repeated rows", cb.b().ScatterAdd(x, i, u, 0));
      }
      cb.Begin();
      {
        const int32_t x = cb.Param({3, 5, 2}, t, false);
        const int32_t i = cb.ParamWith({7}, it, idx);
        const int32_t u = cb.Param({3, 7, 2}, t, false);
        cb.End("middle axis", cb.b().ScatterAdd(x, i, u, 1));
      }
    }
  }
}

inline void AddContractionCases(CaseBuilder& cb) {
  struct DotShape {
    Dims lhs, rhs;
    DotDims dims;
    const char* what;
  };
  const std::vector<DotShape> dots{
      {{7, 33}, {33, 5}, {{}, {}, {1}, {0}}, "matmul"},
      {{1, 1}, {1, 1}, {{}, {}, {1}, {0}}, "1x1"},
      {{33, 7}, {33, 5}, {{}, {}, {0}, {0}}, "lhs transposed"},
      {{7, 33}, {5, 33}, {{}, {}, {1}, {1}}, "rhs transposed"},
      {{3, 4, 8}, {3, 8, 6}, {{0}, {0}, {2}, {1}}, "batched"},
      {{4, 3, 8}, {8, 3, 6}, {{1}, {1}, {2}, {0}}, "batch not leading"},
      {{2, 3, 4, 5}, {5, 4, 7}, {{}, {}, {2, 3}, {1, 0}}, "two contracting dims"},
      {{3, 0}, {0, 4}, {{}, {}, {1}, {0}}, "empty sum"},
      {{0, 4}, {4, 3}, {{}, {}, {1}, {0}}, "empty result"},
      {{2, 64, 40}, {2, 40, 24}, {{0}, {0}, {2}, {1}}, "tensor cores"}};
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kS32}) {
    for (const DotShape& d : dots) {
      cb.Begin();
      const int32_t x = cb.Param(d.lhs, t, false), y = cb.Param(d.rhs, t, false);
      int64_t k = 1;
      for (int64_t c : d.dims.lhs_contracting) k *= d.lhs[static_cast<size_t>(c)];
      cb.End(d.what, cb.b().DotGeneral(x, y, d.dims), k);
    }
    cb.Begin();
    {
      const int32_t x = cb.Param({2, 3, 9}, t, false), w = cb.Param({4, 3, 3}, t, false);
      cb.End("1d, stride 2, padding", cb.b().Convolution(x, w, {2}, {1}, {2}, {1}, {1}), 9);
    }
    cb.Begin();
    {
      const int32_t x = cb.Param({1, 4, 5, 6}, t, false), w = cb.Param({6, 2, 3, 2}, t, false);
      cb.End("2d, groups, dilations",
             cb.b().Convolution(x, w, {1, 2}, {1, 0}, {0, 1}, {2, 1}, {1, 2}, 2), 12);
    }
  }
}

// Model-sized cases for the GPU (tensor-core GEMM tiles, softmax rows, embedding tables): too
// slow for the interpreter in every host test, a fraction of a second once.
inline std::vector<KernelCase> LargeCases(uint64_t seed) {
  CaseBuilder cb(seed);
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    cb.Begin();
    {
      const int32_t x = cb.Param({4, 128, 256}, t, false), y = cb.Param({4, 256, 192}, t, false);
      cb.End("batched GEMM", cb.b().DotGeneral(x, y, {{0}, {0}, {2}, {1}}), 256);
    }
    cb.Begin();
    {
      const int32_t x = cb.Param({257, 129}, t, false), y = cb.Param({65, 129}, t, false);
      cb.End("odd sizes, rhs transposed", cb.b().DotGeneral(x, y, {{}, {}, {1}, {1}}), 129);
    }
    cb.Begin();
    {
      // Attention scores: [batch, seq, heads, dim] x [batch, seq, heads, dim] over dim, with
      // heads as a batch dim that is not leading (transposed into scratch).
      const int32_t q = cb.Param({2, 64, 4, 32}, t, false), k = cb.Param({2, 64, 4, 32}, t, false);
      cb.End("attention scores", cb.b().DotGeneral(q, k, {{0, 2}, {0, 2}, {3}, {3}}), 32);
    }
    cb.Begin();
    cb.End("softmax rows", cb.b().ReduceMax(cb.Param({32, 16384}, t, false), {1}));
    cb.Begin();
    cb.End("layer-norm rows", cb.b().ReduceSum(cb.Param({64, 4096}, t, false), {1}));
    cb.Begin();
    cb.End("bias gradient", cb.b().ReduceSum(cb.Param({4096, 64}, t, false), {0}));
    cb.Begin();
    cb.End("", cb.b().Transpose(cb.Param({64, 128, 96}, t, false), {2, 0, 1}));
    cb.Begin();
    {
      const int32_t table = cb.Param({1000, 256}, t, false);
      std::vector<double> idx(512);
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<double>((i * 37) % 1003);
      const int32_t i = cb.ParamWith({512}, DType::kS32, idx);
      cb.End("embedding", cb.b().Gather(table, i, 0));
    }
    cb.Begin();
    {
      const int32_t table = cb.Param({1000, 256}, t, false);
      std::vector<double> idx(512);
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<double>((i * 37) % 1003);
      const int32_t i = cb.ParamWith({512}, DType::kS32, idx);
      const int32_t u = cb.Param({512, 256}, t, false);
      cb.End("embedding gradient", cb.b().ScatterAdd(table, i, u, 0));
    }
    cb.Begin();
    cb.End("", cb.b().Unary(OpKind::kGelu, cb.Param({3, 1000, 37}, t, false)));
    cb.Begin();
    {
      // A ResNet block's 3x3 convolution (padding 1) and a strided one (cuDNN's engines).
      const int32_t x = cb.Param({2, 32, 14, 14}, t, false), w = cb.Param({64, 32, 3, 3}, t, false);
      cb.End("3x3 convolution", cb.b().Convolution(x, w, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
             32 * 9);
    }
    cb.Begin();
    {
      const int32_t x = cb.Param({2, 16, 15, 15}, t, false), w = cb.Param({32, 16, 3, 3}, t, false);
      cb.End("strided 3x3 convolution",
             cb.b().Convolution(x, w, {2, 2}, {1, 1}, {0, 0}, {1, 1}, {1, 1}), 16 * 9);
    }
    cb.Begin();
    {
      // The input gradient of a strided 3x3 (an input dilation: cuDNN's backward data).
      const int32_t x = cb.Param({2, 32, 7, 7}, t, false), w = cb.Param({16, 32, 3, 3}, t, false);
      cb.End("input-dilated 3x3 convolution",
             cb.b().Convolution(x, w, {1, 1}, {1, 1}, {2, 2}, {2, 2}, {1, 1}), 32 * 9);
    }
  }
  return cb.Take();
}

// Every case, deterministic for a seed.
inline std::vector<KernelCase> AllCases(uint64_t seed) {
  CaseBuilder cb(seed);
  AddElementwiseCases(cb);
  AddMovementCases(cb);
  AddReduceCases(cb);
  AddIndexingCases(cb);
  AddContractionCases(cb);
  return cb.Take();
}

// The spacing of `dtype`'s values near |v| (0 for integers and pred).
inline double UlpOf(double v, DType dtype) {
  int mantissa = 0, min_exp = 0;
  switch (dtype) {
    case DType::kF32:
      mantissa = 23, min_exp = -126;
      break;
    case DType::kF16:
      mantissa = 10, min_exp = -14;
      break;
    case DType::kBF16:
      mantissa = 7, min_exp = -126;
      break;
    case DType::kF64:
      mantissa = 52, min_exp = -1022;
      break;
    default:
      return 0.0;
  }
  int e = 0;
  std::frexp(std::fabs(v), &e);
  const int exp = std::max(e - 1, min_exp);
  return std::ldexp(1.0, exp - mantissa);
}

// "" when got equals want within `ulps` ulps of the dtype plus `abs_tol`; else a message
// naming the case and the first bad element. NaN equals NaN; infinities must match.
inline std::string Compare(const KernelCase& c, const HostTensor& got, const HostTensor& want,
                           double ulps, double abs_tol) {
  if (got.data.size() != want.data.size()) {
    return c.name + ": " + std::to_string(got.data.size()) + " values, expected " +
           std::to_string(want.data.size());
  }
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double g = got.data[i], w = want.data[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (g == w) continue;
    const bool close = std::isfinite(g) && std::isfinite(w) &&
                       std::fabs(g - w) <= ulps * UlpOf(w, want.dtype) + abs_tol;
    if (!close) {
      std::ostringstream m;
      m.precision(17);
      m << c.name << ": element " << i << " is " << g << ", expected " << w;
      // The operands' elements at i, for elementwise ops.
      for (size_t k = 0; k < c.operands.size(); ++k) {
        if (c.operands[k].data.size() == want.data.size()) {
          m << (k == 0 ? " (operands " : ", ") << c.operands[k].data[i];
          if (k + 1 == c.operands.size()) m << ")";
        }
      }
      return m.str();
    }
  }
  return "";
}

}  // namespace kernel_cases
}  // namespace alpa
