// The CUDA kernels' math and index helpers (exec/cuda/*_body.h, kernel_math.h, strided_index.h)
// run on the host against the CPU interpreter: every op kind and dtype of kernel_cases.h, the
// rounding to every dtype on edge values, and the walks on edge shapes. Built in every build
// (with or without CUDA): these headers need no CUDA.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "exec/cpu/eval.h"
#include "exec/cpu/interpreter.h"
#include "exec/cuda/contraction_body.h"
#include "exec/cuda/indexing_body.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/op_rounding.h"
#include "exec/cuda/reduce_body.h"
#include "exec/cuda/strided_index.h"
#include "exec/runtime/masked_indexing.h"
#include "kernel_cases.h"

namespace alpa {
namespace cuda {
namespace {

using kernel_cases::KernelCase;

bool SameDouble(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return BitsOfDouble(a) == BitsOfDouble(b);
}

// A tensor's bytes at a storage dtype, as the GPU holds it.
struct Buffer {
  DType storage = DType::kF32;
  std::vector<unsigned char> bytes;
  Dims shape;

  Buffer(const Dims& s, DType t) : storage(t), shape(s) {
    bytes.assign(static_cast<size_t>(ElementsOf(s) * DTypeBytes(t)) + 8, 0);
  }
  static Buffer Of(const HostTensor& t) {
    Buffer b(t.shape, t.dtype);
    for (size_t i = 0; i < t.data.size(); ++i) {
      StoreElement(b.data(), t.dtype, static_cast<int64_t>(i), t.data[i]);
    }
    return b;
  }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  HostTensor Read(DType dtype) const {
    HostTensor t{shape, dtype, {}};
    for (int64_t i = 0; i < ElementsOf(shape); ++i)
      t.data.push_back(LoadElement(data(), storage, i));
    return t;
  }
};

// The reduction of [begin, end) as the block (warp) kernels do it: 256 (32) strided partial
// results combined in a tree (lower index = earlier).
double BlockReduce(const ReduceArgs& r, int64_t x_base, int64_t begin, int64_t end,
                   int threads = kReduceBlockThreads) {
  std::vector<double> partial(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    partial[static_cast<size_t>(t)] = ReduceChunk(r, x_base, begin + t, end, threads);
  for (int half = threads / 2; half > 0; half /= 2) {
    for (int t = 0; t < half; ++t) {
      partial[static_cast<size_t>(t)] = CombineReduce(r.is_max, partial[static_cast<size_t>(t)],
                                                      partial[static_cast<size_t>(t + half)]);
    }
  }
  return partial[0];
}

// The kernels' per-element bodies run over every element on the host, dispatched like LaunchOp.
HostTensor HostRun(const KernelCase& c, bool round, DType out_storage) {
  const Op& op = c.graph.op(c.id);
  std::vector<Buffer> in;
  for (const HostTensor& t : c.operands) in.push_back(Buffer::Of(t));
  Buffer out(op.shape, out_storage);
  const OutputRounding rounding = ForStorage(RoundingFor(op, round), out_storage);
  const int64_t n = ElementsOf(op.shape);
  switch (op.kind) {
    case OpKind::kConstant:
      for (int64_t i = 0; i < n; ++i)
        StoreElement(out.data(), out_storage, i, FinishValue(op.attrs.value, rounding));
      break;
    case OpKind::kIota: {
      const Dims s = DenseStrides(op.shape);
      const size_t axis = static_cast<size_t>(op.attrs.axis);
      for (int64_t i = 0; i < n; ++i) {
        StoreElement(out.data(), out_storage, i,
                     FinishValue(static_cast<double>((i / s[axis]) % op.shape[axis]), rounding));
      }
      break;
    }
    case OpKind::kBroadcastInDim:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kConcatenate:
    case OpKind::kPad:
    case OpKind::kReverse: {
      if (op.kind == OpKind::kPad) {
        for (int64_t i = 0; i < n; ++i)
          StoreElement(out.data(), out_storage, i, FinishValue(op.attrs.value, rounding));
      }
      Result<std::vector<CopyPiece>> pieces = MovementPieces(c.graph, c.id);
      EXPECT_TRUE(pieces.ok()) << pieces.status().message();
      if (!pieces.ok()) return {};
      for (const CopyPiece& p : pieces.value()) {
        const Buffer& src = in[static_cast<size_t>(p.operand)];
        // As LaunchStridedCopy: the simplified walk, and stored bytes moved where they may be.
        CopyArgs args{src.data(),  src.storage, out.data(),
                      out_storage, rounding,    SimplifyWalk(p.walk)};
        for (int64_t i = 0; i < p.walk.count; ++i) {
          if (!CopiesBytes(args)) {
            CopyAt(args, i);
          } else if (DTypeBytes(src.storage) == 1) {
            RawCopyAt<uint8_t>(args, i);
          } else if (DTypeBytes(src.storage) == 2) {
            RawCopyAt<uint16_t>(args, i);
          } else if (DTypeBytes(src.storage) == 4) {
            RawCopyAt<uint32_t>(args, i);
          } else {
            RawCopyAt<uint64_t>(args, i);
          }
        }
      }
      break;
    }
    case OpKind::kReduceSum:
    case OpKind::kReduceMax: {
      Result<ReduceArgs> r = ReduceArgsFor(c.graph, c.id);
      EXPECT_TRUE(r.ok()) << r.status().message();
      if (!r.ok()) return {};
      ReduceArgs a = r.value();
      a.x = in[0].data();
      a.x_storage = in[0].storage;
      a.out = out.data();
      a.out_storage = out_storage;
      a.rounding = rounding;
      const ReduceSplit split = ReduceSplitFor(a, n);
      if (split.chunks > 1) {  // the split kernels: partial results, then their combination
        std::vector<double> partial(static_cast<size_t>(n * split.chunks));
        for (int64_t k = 0; k < split.chunks; ++k) {
          const int64_t begin = k * split.chunk;
          const int64_t end = std::min(a.reduced.count, begin + split.chunk);
          for (int64_t o = 0; o < n; ++o) {
            int64_t x_base = 0, out_offset = 0;
            WalkOffsets(a.kept, o, &x_base, &out_offset);
            partial[static_cast<size_t>(k * n + o)] = UsesBlockReduce(a, n)
                                                          ? BlockReduce(a, x_base, begin, end)
                                                          : ReduceChunk(a, x_base, begin, end, 1);
          }
        }
        for (int64_t o = 0; o < n; ++o) CombineSplitAt(a, partial.data(), n, split.chunks, o);
        break;
      }
      for (int64_t o = 0; o < n; ++o) {
        if (UsesBlockReduce(a, n)) {
          int64_t x_base = 0, out_offset = 0;
          WalkOffsets(a.kept, o, &x_base, &out_offset);
          const int threads = UsesWarpReduce(a, n) ? kWarpThreads : kReduceBlockThreads;
          StoreElement(a.out, out_storage, out_offset,
                       FinishValue(BlockReduce(a, x_base, 0, a.reduced.count, threads), rounding));
        } else {
          ReduceOutputAt(a, o);
        }
      }
      break;
    }
    case OpKind::kReduceWindow:
    case OpKind::kSelectAndScatter: {
      Result<WindowArgs> w = WindowArgsFor(c.graph, c.id);
      EXPECT_TRUE(w.ok()) << w.status().message();
      if (!w.ok()) return {};
      WindowArgs a = w.value();
      a.x = in[0].data();
      a.x_storage = in[0].storage;
      if (op.kind == OpKind::kReduceWindow) {
        const bool is_max = op.attrs.reduce == ReduceKind::kMax;
        for (int64_t t = 0; t < n; ++t) {
          StoreElement(out.data(), out_storage, t,
                       FinishValue(WindowReduceAt(a, is_max, t), rounding));
        }
      } else {
        std::vector<double> acc(static_cast<size_t>(n), 0.0);
        const int64_t windows = ElementsOf(in[1].shape);
        for (int64_t t = 0; t < windows; ++t) {
          const int64_t target = WindowArgmaxAt(a, t);
          if (target >= 0)
            acc[static_cast<size_t>(target)] += LoadElement(in[1].data(), in[1].storage, t);
        }
        for (int64_t i = 0; i < n; ++i) {
          StoreElement(out.data(), out_storage, i,
                       FinishValue(acc[static_cast<size_t>(i)], rounding));
        }
      }
      break;
    }
    case OpKind::kGather:
    case OpKind::kScatterAdd: {
      IndexingArgs a = IndexingArgsFor(c.graph, c.id, 0, -1);
      a.indices = in[1].data();
      if (op.kind == OpKind::kGather) {
        for (int64_t e = 0; e < n; ++e) {
          const int64_t offset = IndexedTableOffset(a, e);
          StoreElement(out.data(), out_storage, e,
                       offset < 0 ? 0.0 : LoadElement(in[0].data(), in[0].storage, offset));
        }
      } else {
        std::vector<double> acc(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i)
          acc[static_cast<size_t>(i)] = LoadElement(in[0].data(), in[0].storage, i);
        const int64_t updates = ElementsOf(in[2].shape);
        for (int64_t e = 0; e < updates; ++e) {
          const int64_t offset = IndexedTableOffset(a, e);
          if (offset >= 0)
            acc[static_cast<size_t>(offset)] += LoadElement(in[2].data(), in[2].storage, e);
        }
        for (int64_t i = 0; i < n; ++i) {
          StoreElement(out.data(), out_storage, i,
                       FinishValue(acc[static_cast<size_t>(i)], rounding));
        }
      }
      break;
    }
    case OpKind::kDotGeneral: {
      Result<DotArgs> d = DotArgsFor(c.graph, c.id);
      EXPECT_TRUE(d.ok()) << d.status().message();
      if (!d.ok()) return {};
      DotArgs a = d.value();
      a.lhs = in[0].data();
      a.lhs_storage = in[0].storage;
      a.rhs = in[1].data();
      a.rhs_storage = in[1].storage;
      a.out = out.data();
      a.out_storage = out_storage;
      a.rounding = rounding;
      for (int64_t i = 0; i < n; ++i) DotOutputAt(a, i);
      break;
    }
    case OpKind::kConvolution: {
      Result<ConvArgs> cv = ConvArgsFor(c.graph, c.id);
      EXPECT_TRUE(cv.ok()) << cv.status().message();
      if (!cv.ok()) return {};
      ConvArgs a = cv.value();
      a.x = in[0].data();
      a.x_storage = in[0].storage;
      a.w = in[1].data();
      a.w_storage = in[1].storage;
      a.out = out.data();
      a.out_storage = out_storage;
      a.rounding = rounding;
      for (int64_t i = 0; i < n; ++i) ConvOutputAt(a, i);
      break;
    }
    default: {
      ElementwiseArgs a;
      a.kind = op.kind;
      a.comparison = op.attrs.comparison;
      a.operand_count = static_cast<int32_t>(in.size());
      for (size_t k = 0; k < in.size(); ++k) {
        a.in[k] = in[k].data();
        a.in_storage[k] = in[k].storage;
      }
      a.out = out.data();
      a.out_storage = out_storage;
      a.rounding = rounding;
      for (int64_t i = 0; i < n; ++i) {
        if (UsesFloatPath(a)) {
          FloatElementwiseAt(a, i);
        } else {
          ElementwiseAt(a, i);
        }
      }
      break;
    }
  }
  return out.Read(op.dtype);
}

std::vector<const HostTensor*> Pointers(const KernelCase& c) {
  std::vector<const HostTensor*> p;
  for (const HostTensor& t : c.operands) p.push_back(&t);
  return p;
}

TEST(KernelMath, RoundToEqualsTheInterpretersRounding) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> bits;
  std::uniform_int_distribution<int> exponent(-160, 140);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::vector<double> values{0.0,
                             -0.0,
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(),
                             65504.0,
                             65519.99,
                             65520.0,
                             -65520.0,
                             3.4028235677973366e38,
                             3.4028235e38 * 1.0000001,
                             1e-320,
                             std::ldexp(1.0, -149),
                             std::ldexp(1.0, -150),
                             std::ldexp(3.0, -151),
                             std::ldexp(1.0, -24),
                             std::ldexp(1.0, -25),
                             std::ldexp(3.0, -26),
                             2147483647.5,
                             -2147483648.9,
                             2147483648.0,
                             4294967296.0 + 5,
                             9.3e18,
                             -9.3e18,
                             1e300,
                             127.9,
                             128.0,
                             -129.0,
                             255.0,
                             0.5,
                             -0.5};
  for (int i = 0; i < 20000; ++i) {
    values.push_back(DoubleOfBits(bits(rng)));  // any double, NaN payloads and subnormals included
    values.push_back((i % 2 ? -1 : 1) * std::ldexp(mantissa(rng), exponent(rng)));
  }
  // Ties of each format: a representable value plus half its ulp.
  for (int i = 0; i < 4000; ++i) {
    const double base = std::ldexp(mantissa(rng), exponent(rng) / 4);
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      const double r = RoundToDType(base, t);
      values.push_back(r + kernel_cases::UlpOf(r, t) / 2);
      values.push_back(-(r - kernel_cases::UlpOf(r, t) / 2));
    }
  }
  for (double v : values) {
    for (int32_t t = 0; t < kNumDTypes; ++t) {
      const DType dtype = static_cast<DType>(t);
      const double want = RoundToDType(v, dtype);
      ASSERT_TRUE(SameDouble(RoundTo(v, dtype), want))
          << DTypeName(dtype) << " of " << v << " (bits " << std::hex << BitsOfDouble(v) << std::dec
          << "): " << RoundTo(v, dtype) << ", expected " << want;
      // Storing rounds the same way, and loading gives the stored value back.
      std::vector<unsigned char> cell(8, 0);
      StoreElement(cell.data(), dtype, 0, v);
      // (Integer memory holds no -0: the loaded value equals the interpreter's.)
      const double loaded = LoadElement(cell.data(), dtype, 0);
      ASSERT_TRUE(IsFloating(dtype) ? SameDouble(loaded, want) : loaded == want)
          << DTypeName(dtype) << " " << v;
    }
  }
}

TEST(KernelMath, Bf16EncodingEqualsTheGeneralEncoding) {
  // Random doubles over bf16's whole exponent range and beyond, exact ties, and the values next
  // to them and to the range's ends.
  std::mt19937_64 rng(7);
  std::vector<double> values = {
      0.0,      -0.0,   1.0,  -1.0, 3.3895313892515355e38, 3.4e38, -3.4e38, 1.1754943508222875e-38,
      1.17e-38, 5e-324, 1e308};
  for (int e = -140; e <= 130; ++e) {
    for (int k = 0; k < 64; ++k) {
      const double m = 1.0 + std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      values.push_back(std::ldexp(k % 2 == 0 ? m : -m, e));
      // A tie: a bf16 value plus half its spacing, and its neighbours.
      const double bf = std::ldexp(1.0 + static_cast<double>(k) / 128.0, e);
      const double tie = bf + std::ldexp(1.0, e - 8);
      values.push_back(tie);
      values.push_back(std::nextafter(tie, 0.0));
      values.push_back(std::nextafter(tie, 1e300));
    }
  }
  for (double v : values) {
    EXPECT_EQ(EncodeBf16(v), EncodeFloat(v, kBF16Format)) << v;
  }
  EXPECT_EQ(EncodeBf16(std::numeric_limits<double>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(DecodeFloat(EncodeBf16(std::nan("")), kBF16Format)));
}

TEST(KernelMath, PowerEqualsTheHostsPow) {
  // The exact integral powers and everything else (pow itself).
  const std::vector<double> xs{0.0,
                               -0.0,
                               1.0,
                               -1.0,
                               2.0,
                               -3.0,
                               7.0,
                               94906265.0,
                               1e16,
                               0.5,
                               -2.5,
                               std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::quiet_NaN()};
  const std::vector<double> ys{
      0.0,  1.0,  2.0,  3.0,  5.0, 31.0, 52.0,
      53.0, 64.0, 65.0, -1.0, 0.5, -2.0, std::numeric_limits<double>::infinity()};
  for (double x : xs) {
    for (double y : ys) {
      EXPECT_TRUE(SameDouble(Power(x, y), std::pow(x, y))) << x << " ^ " << y;
    }
  }
}

TEST(KernelMath, EverySixteenBitPatternRoundTrips) {
  for (FloatFormat f : {kF16Format, kBF16Format}) {
    const DType dtype = f.mantissa_bits == 10 ? DType::kF16 : DType::kBF16;
    for (uint32_t p = 0; p < 65536; ++p) {
      const double v = DecodeFloat(p, f);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(DecodeFloat(EncodeFloat(v, f), f)));
        continue;
      }
      ASSERT_EQ(EncodeFloat(v, f), p) << DTypeName(dtype) << " pattern " << p;
      ASSERT_TRUE(SameDouble(RoundToDType(v, dtype), v)) << DTypeName(dtype) << " pattern " << p;
    }
  }
}

TEST(KernelMath, WalkOffsetsEqualTheInterpretersWalk) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> rank_of(0, kMaxKernelRank);
  std::uniform_int_distribution<int64_t> size_of(0, 4), stride_of(-9, 9);
  for (int trial = 0; trial < 500; ++trial) {
    const int rank = rank_of(rng);
    Dims shape, sa, sb;
    for (int d = 0; d < rank; ++d) {
      shape.push_back(trial % 5 == 0 ? size_of(rng) : 1 + size_of(rng) % 3);
      sa.push_back(stride_of(rng));
      sb.push_back(stride_of(rng));
    }
    std::vector<std::pair<int64_t, int64_t>> want, got;
    cpu::ForEach2(shape, sa, 100, sb, -3, [&](int64_t a, int64_t b) { want.emplace_back(a, b); });
    Result<StridedWalk> w = MakeWalk(shape, sa, 100, sb, -3, "walk");
    ASSERT_TRUE(w.ok());
    ASSERT_EQ(w.value().count, static_cast<int64_t>(want.size())) << ShapeString(shape);
    for (int64_t i = 0; i < w.value().count; ++i) {
      int64_t a = 0, b = 0;
      WalkOffsets(w.value(), i, &a, &b);
      got.emplace_back(a, b);
    }
    EXPECT_EQ(got, want) << ShapeString(shape);
  }
  EXPECT_EQ(MakeWalk(Dims(9, 1), Dims(9, 1), 0, Dims(9, 1), 0, "op 3").status().code(),
            StatusCode::kUnsupported);
}

// Walks of tensors beyond 2^32 elements: indices on either side of 2^32 (the 32-bit and the
// 64-bit division paths) and dims beyond 2^32 themselves, against the index's digits computed
// by hand.
TEST(KernelMath, WalkOffsetsOfTensorsBeyondFourBillionElements) {
  const int64_t big = (int64_t{1} << 33) + 7;
  const std::vector<Dims> shapes = {{3, big}, {big, 5}, {70000, 70000, 3}, {2, 65536, 65537}};
  for (const Dims& shape : shapes) {
    const Dims sa = DenseStrides(shape);
    Dims sb(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) sb[d] = -static_cast<int64_t>(d) - 2;
    Result<StridedWalk> w = MakeWalk(shape, sa, 0, sb, 1000, "walk");
    ASSERT_TRUE(w.ok());
    const int64_t count = w.value().count;
    for (int64_t flat : {int64_t{0}, int64_t{1}, int64_t{0xfffffffe}, int64_t{0xffffffff},
                         int64_t{0x100000000}, int64_t{0x100000001}, count / 2, count - 1}) {
      int64_t want_b = 1000, rest = flat;
      for (size_t d = shape.size(); d-- > 0;) {
        want_b += (rest % shape[d]) * sb[d];
        rest /= shape[d];
      }
      int64_t a = 0, b = 0;
      WalkOffsets(w.value(), flat, &a, &b);
      EXPECT_EQ(a, flat) << ShapeString(shape) << " at " << flat;  // dense strides: a = flat
      EXPECT_EQ(b, want_b) << ShapeString(shape) << " at " << flat;
    }
  }
}

TEST(KernelMath, BoxWalkCopiesTheBoxAndRejectsBoxesOutside) {
  // A [2, 3] box at (1, 2) of a [4, 7] tensor to (0, 1) of a [2, 5] one.
  Result<StridedWalk> w = BoxWalk({4, 7}, {1, 2}, {2, 5}, {0, 1}, {2, 3});
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::vector<std::pair<int64_t, int64_t>> got;
  for (int64_t i = 0; i < w.value().count; ++i) {
    int64_t a = 0, b = 0;
    WalkOffsets(w.value(), i, &a, &b);
    got.emplace_back(a, b);
  }
  const std::vector<std::pair<int64_t, int64_t>> want{{9, 1},  {10, 2}, {11, 3},
                                                      {16, 6}, {17, 7}, {18, 8}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(BoxWalk({4, 7}, {3, 2}, {2, 5}, {0, 1}, {2, 3}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BoxWalk({4, 7}, {1}, {2, 5}, {0, 1}, {2, 3}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(BoxWalk({4, 0}, {1, 0}, {2, 5}, {0, 1}, {2, 0}).ok());  // empty box
}

TEST(KernelMath, EveryOpKindAndDTypeEqualsTheInterpreter) {
  const std::vector<KernelCase> cases = kernel_cases::AllCases(1);
  std::vector<bool> seen(256, false);
  for (const KernelCase& c : cases) {
    ASSERT_EQ(c.name.rfind("invalid", 0), std::string::npos) << c.name;
    Result<HostTensor> want = EvaluateOp(c.graph, c.id, Pointers(c));
    ASSERT_TRUE(want.ok()) << c.name << ": " << want.status().message();
    const OpKind kind = c.graph.op(c.id).kind;
    seen[static_cast<size_t>(kind)] = true;
    // Only the block reductions sum in another order (still in double), and exp, log, tanh,
    // rsqrt and gelu ending in bf16 run in float (float_math.h's ApproximateFloatKind): one ulp.
    const bool reordered = (kind == OpKind::kReduceSum || kind == OpKind::kReduceMax) ||
                           (ApproximateFloatKind(kind) && c.graph.op(c.id).dtype == DType::kBF16);
    const HostTensor got = HostRun(c, true, c.graph.op(c.id).dtype);
    // f64 sums in another order differ in the last bits of double.
    const double abs_tol = reordered && want.value().dtype == DType::kF64 ? 1e-10 : 0.0;
    const std::string error =
        kernel_cases::Compare(c, got, want.value(), reordered ? 1.0 : 0.0, abs_tol);
    EXPECT_EQ(error, "");
  }
  for (OpKind kind : AllOpKinds()) {
    if (kind == OpKind::kParameter) continue;
    EXPECT_TRUE(seen[static_cast<size_t>(kind)]) << "no case for " << OpKindName(kind);
  }
}

TEST(KernelMath, UnroundedResultsKeepF32Precision) {
  // A 16-bit float op stored in f32 without rounding: the interpreter's kKeepExact rounded to
  // f32 (the storage), as a partial sum that a later reduction completes.
  for (const KernelCase& c : kernel_cases::AllCases(2)) {
    const Op& op = c.graph.op(c.id);
    if (op.dtype != DType::kBF16 && op.dtype != DType::kF16) continue;
    HostTensor want =
        EvaluateValidatedOp(c.graph, c.id, Pointers(c), alpa::ResultRounding::kKeepExact);
    for (double& v : want.data) v = RoundToDType(v, DType::kF32);
    want.dtype = DType::kF32;
    HostTensor got = HostRun(c, false, DType::kF32);
    got.dtype = DType::kF32;
    const bool reordered = op.kind == OpKind::kReduceSum || op.kind == OpKind::kReduceMax;
    EXPECT_EQ(kernel_cases::Compare(c, got, want, reordered ? 1.0 : 0.0, 0.0), "");
  }
}

TEST(KernelMath, MaskedIndexingEqualsTheRuntimes) {
  for (const KernelCase& c : kernel_cases::AllCases(3)) {
    const Op& op = c.graph.op(c.id);
    if (op.kind != OpKind::kGather && op.kind != OpKind::kScatterAdd) continue;
    // The table holds rows [2, 2 + rows) of an axis of rows + 3.
    const int64_t rows = c.operands[0].shape[static_cast<size_t>(op.attrs.axis)];
    const int64_t offset = 2, size = rows + 3;
    HostTensor want{op.shape, op.dtype,
                    std::vector<double>(static_cast<size_t>(ElementsOf(op.shape)))};
    IndexingArgs a = IndexingArgsFor(c.graph, c.id, offset, size);
    const Buffer x = Buffer::Of(c.operands[0]), indices = Buffer::Of(c.operands[1]);
    a.indices = indices.data();
    std::vector<double> got;
    if (op.kind == OpKind::kGather) {
      MaskedGather(op, c.operands[0], c.operands[1], offset, size, want);
      for (int64_t e = 0; e < ElementsOf(op.shape); ++e) {
        const int64_t at = IndexedTableOffset(a, e);
        got.push_back(at < 0 ? 0.0 : LoadElement(x.data(), x.storage, at));
      }
    } else {
      MaskedScatterAdd(op, c.operands[0], c.operands[1], c.operands[2], offset, size, want);
      got = c.operands[0].data;
      for (int64_t e = 0; e < ElementsOf(c.operands[2].shape); ++e) {
        const int64_t at = IndexedTableOffset(a, e);
        if (at >= 0) got[static_cast<size_t>(at)] += c.operands[2].data[static_cast<size_t>(e)];
      }
    }
    EXPECT_EQ(got, want.data) << c.name;
  }
}

TEST(KernelMath, GemmPlanGivesTheDotProduct) {
  // The cuBLASLt path: operands transposed into [batch, M, K] / [batch, K, N] by the plan's
  // permutation (or read transposed in place), then a plain batched matmul.
  for (const KernelCase& c : kernel_cases::AllCases(4)) {
    const Op& op = c.graph.op(c.id);
    if (op.kind != OpKind::kDotGeneral || op.dtype != DType::kF64) continue;
    const GemmPlan p = PlanGemm(c.graph, c.id);
    auto arrange = [&](const HostTensor& t, const Dims& permutation) {
      if (permutation.empty()) return t.data;
      Dims strides;
      const Dims all = DenseStrides(t.shape);
      Dims shape;
      for (int64_t d : permutation) {
        strides.push_back(all[static_cast<size_t>(d)]);
        shape.push_back(t.shape[static_cast<size_t>(d)]);
      }
      Result<StridedWalk> w = MakeWalk(shape, strides, 0, DenseStrides(shape), 0, "t");
      std::vector<double> out(t.data.size());
      for (int64_t i = 0; i < w.value().count; ++i) {
        int64_t a = 0, b = 0;
        WalkOffsets(w.value(), i, &a, &b);
        out[static_cast<size_t>(b)] = t.data[static_cast<size_t>(a)];
      }
      return out;
    };
    const std::vector<double> a = arrange(c.operands[0], p.lhs_permutation);
    const std::vector<double> b = arrange(c.operands[1], p.rhs_permutation);
    std::vector<double> got;
    for (int64_t q = 0; q < p.batch; ++q) {
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
          double sum = 0.0;
          for (int64_t k = 0; k < p.k; ++k) {
            const int64_t ai = p.lhs_transposed ? (q * p.k + k) * p.m + i : (q * p.m + i) * p.k + k;
            const int64_t bi = p.rhs_transposed ? (q * p.n + j) * p.k + k : (q * p.k + k) * p.n + j;
            sum += a[static_cast<size_t>(ai)] * b[static_cast<size_t>(bi)];
          }
          got.push_back(sum);
        }
      }
    }
    Result<HostTensor> want = EvaluateOp(c.graph, c.id, Pointers(c));
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(got, want.value().data) << c.name;
  }
}

TEST(KernelMath, ModelSizedGpuCasesAreValidOps) {
  // The GPU test's large cases (kernels_gpu_test.cc) are checked here too, where CI runs: each
  // builds, and the kernels' bodies give the interpreter's values (1.6 s).
  for (const KernelCase& c : kernel_cases::LargeCases(6)) {
    ASSERT_EQ(c.name.rfind("invalid", 0), std::string::npos) << c.name;
    ASSERT_TRUE(ValidateGraph(c.graph).ok()) << c.name;
    ASSERT_EQ(c.operands.size(), c.graph.op(c.id).operands.size()) << c.name;
    Result<HostTensor> want = EvaluateOp(c.graph, c.id, Pointers(c));
    ASSERT_TRUE(want.ok()) << c.name << ": " << want.status().message();
    const HostTensor got = HostRun(c, true, c.graph.op(c.id).dtype);
    EXPECT_EQ(kernel_cases::Compare(c, got, want.value(), 1.0, 0.0), "");
  }
}

}  // namespace
}  // namespace cuda
}  // namespace alpa
