// The attention regions the CUDA runner hands to the fused attention kernels
// (exec/cuda/attention_plan.h), without a GPU: on the device programs of bf16 GPTs (one device
// and tensor parallel on two, several microbatches) every layer's attention is found with its
// backward (Q, K, V read in the QKV product, O written and dO read in the projections' layout,
// dQ, dK, dV written into the QKV product's gradient); each region's ops, evaluated one by one by
// the interpreter on random Q, K, V and dO, compute what its views say the kernels compute (O, dQ,
// dK, dV from the formulas in f64, and the kernels' own code run on the host); a replay of the
// program as the runner runs it finds every buffer live where it is read; and graphs that are not
// attention are left alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "exec/cpu/interpreter.h"
#include "exec/cuda/attention_plan.h"
#include "exec/cuda/flash_attention.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/storage_policy.h"
#include "exec/lower/lower_plan.h"
#include "exec/runtime/tensor_boxes.h"
#include "lifetime_replay.h"
#include "support/plan_equivalence_cases.h"
#include "support/small_plans.h"

namespace alpa::cuda {
namespace {

ProgramSet Lower(const std::string& model, int64_t tensor_parallel, int64_t microbatches = 2) {
  Result<ProgramSet> programs =
      testing::LowerSmallModel(model + ",adam_eps=1e-5", tensor_parallel, microbatches);
  EXPECT_TRUE(programs.ok()) << programs.status().message();
  return programs.ok() ? std::move(programs).value() : ProgramSet{};
}

const char* kGpt = "gpt:layers=2,hidden=64,heads=2,seq=40,vocab=16,batch=4,dtype=bf16";

// Element (b, h, s, d) of a view over `data`.
double& At(std::vector<double>& data, const AttentionOperand& x, int64_t b, int64_t h, int64_t s,
           int64_t d) {
  return data[static_cast<size_t>(x.offset + b * x.stride[0] + h * x.stride[1] + s * x.stride[2] +
                                  d * x.stride[3])];
}

// The buffers the region's kernels write (dQ, dK and dV may share one), as the formulas give them.
using Reference = std::map<int32_t, std::vector<double>>;

// The attention and its gradients from the formulas, in f64, on `r`'s views of the buffers.
Reference AttentionInDouble(const AttentionRegion& r, std::map<int32_t, std::vector<double>>& v) {
  const AttentionShape& s = r.shape;
  Reference out;
  out[r.o.buffer].assign(v[r.o.buffer].size(), 0.0);
  if (r.has_backward()) {
    for (int32_t b : AttentionWrites(r, true)) out[b].assign(v[b].size(), 0.0);
  }
  const double scale = s.scale;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      std::vector<double> p(static_cast<size_t>(s.q_seq * s.k_seq), 0.0);
      for (int64_t i = 0; i < s.q_seq; ++i) {
        double max = -1e300;
        std::vector<double> row(static_cast<size_t>(s.k_seq), 0.0);
        for (int64_t j = 0; j < s.k_seq; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < s.head_dim; ++d)
            dot += At(v[r.q.buffer], r.q, b, h, i, d) * At(v[r.k.buffer], r.k, b, h, j, d);
          row[static_cast<size_t>(j)] = scale * dot;
          if (!(s.causal && j > i)) max = std::max(max, scale * dot);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < s.k_seq; ++j) {
          const double e = s.causal && j > i ? 0.0 : std::exp(row[static_cast<size_t>(j)] - max);
          p[static_cast<size_t>(i * s.k_seq + j)] = e;
          sum += e;
        }
        for (int64_t j = 0; j < s.k_seq; ++j) p[static_cast<size_t>(i * s.k_seq + j)] /= sum;
        for (int64_t d = 0; d < s.head_dim; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < s.k_seq; ++j)
            acc += p[static_cast<size_t>(i * s.k_seq + j)] * At(v[r.v.buffer], r.v, b, h, j, d);
          At(out[r.o.buffer], r.o, b, h, i, d) = acc;
        }
      }
      if (!r.has_backward()) continue;
      for (int64_t i = 0; i < s.q_seq; ++i) {
        std::vector<double> dp(static_cast<size_t>(s.k_seq), 0.0);
        double rowsum = 0.0;
        for (int64_t j = 0; j < s.k_seq; ++j) {
          double acc = 0.0;
          for (int64_t d = 0; d < s.head_dim; ++d)
            acc += At(v[r.d_o.buffer], r.d_o, b, h, i, d) * At(v[r.v.buffer], r.v, b, h, j, d);
          dp[static_cast<size_t>(j)] = acc;
          rowsum += acc * p[static_cast<size_t>(i * s.k_seq + j)];
        }
        for (int64_t j = 0; j < s.k_seq; ++j) {
          const double pij = p[static_cast<size_t>(i * s.k_seq + j)];
          const double ds = scale * pij * (dp[static_cast<size_t>(j)] - rowsum);
          for (int64_t d = 0; d < s.head_dim; ++d) {
            At(out[r.dv.buffer], r.dv, b, h, j, d) += pij * At(v[r.d_o.buffer], r.d_o, b, h, i, d);
            At(out[r.dq.buffer], r.dq, b, h, i, d) += ds * At(v[r.k.buffer], r.k, b, h, j, d);
            At(out[r.dk.buffer], r.dk, b, h, j, d) += ds * At(v[r.q.buffer], r.q, b, h, i, d);
          }
        }
      }
    }
  }
  return out;
}

// Evaluates buffer b as the program computes it (its writer and, before it, its operands' writers),
// the region's inputs taken from `values`.
void Evaluate(const DeviceProgram& p, int32_t b, std::map<int32_t, HostTensor>& values) {
  if (values.count(b) != 0) return;
  int32_t writer = -1;
  for (size_t i = 0; i < p.code.size(); ++i) {
    if (p.code[i].kind != InstructionKind::kFree && p.code[i].out == b)
      writer = static_cast<int32_t>(i);
  }
  ASSERT_GE(writer, 0) << "buffer " << b;
  const Instruction& in = p.code[static_cast<size_t>(writer)];
  ASSERT_EQ(in.kind, InstructionKind::kRun) << InstructionText(p, in);
  std::vector<const HostTensor*> operands;
  for (int32_t x : in.in) {
    Evaluate(p, x, values);
    operands.push_back(&values[x]);
  }
  const Graph& local = p.local_ops[static_cast<size_t>(in.local_op)];
  values[b] = EvaluateValidatedOp(local, local.size() - 1, operands,
                                  in.round ? ResultRounding::kRound : ResultRounding::kKeepExact);
}

// The largest |got - want| over a buffer, against the largest |want|.
void ExpectClose(const std::vector<double>& got, const std::vector<double>& want, double tolerance,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  EXPECT_LE(worst, tolerance * scale) << what << ": worst " << worst << " of " << scale;
}

std::vector<unsigned char> Encode(const std::vector<double>& values, DType storage) {
  std::vector<unsigned char> bytes(values.size() * static_cast<size_t>(DTypeBytes(storage)));
  for (size_t i = 0; i < values.size(); ++i)
    StoreElement(bytes.data(), storage, static_cast<int64_t>(i), values[i]);
  return bytes;
}

std::vector<double> Decode(const std::vector<unsigned char>& bytes, DType storage) {
  std::vector<double> values(bytes.size() / static_cast<size_t>(DTypeBytes(storage)));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = LoadFloat(bytes.data(), storage, static_cast<int64_t>(i));
  return values;
}

// Runs region r's ops one by one on random Q, K, V, dO, and checks O, dQ, dK, dV against the
// formulas on r's views (the matcher's claim) and against the kernels' code run on the host.
void ExpectRegionIsAttention(const DeviceProgram& p, const AttentionRegion& r,
                             std::mt19937_64& rng) {
  std::normal_distribution<double> value(0.0, 1.0);
  std::map<int32_t, HostTensor> values;
  std::vector<int32_t> inputs = AttentionForwardReads(r);
  if (r.has_backward()) inputs.push_back(r.d_o.buffer);
  for (int32_t b : inputs) {
    const Buffer& buffer = p.buffers[static_cast<size_t>(b)];
    HostTensor& t = values[b];
    t.shape = buffer.shape;
    t.dtype = buffer.dtype;
    for (int64_t i = 0; i < ElementCountOf(buffer.shape); ++i)
      t.data.push_back(RoundToDType(2.0 * value(rng), buffer.dtype));
  }
  std::vector<int32_t> outputs = {r.o.buffer};
  if (r.has_backward()) {
    for (int32_t b : AttentionWrites(r, true)) outputs.push_back(b);
  }
  for (int32_t b : outputs) {
    Evaluate(p, b, values);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::map<int32_t, std::vector<double>> data;
  for (auto& [b, t] : values) data[b] = t.data;
  Reference want = AttentionInDouble(r, data);
  // The program rounds S, P and the products' inputs to bf16 on the way: a few bf16 ulps.
  for (int32_t b : outputs) ExpectClose(data[b], want[b], 5e-2, "buffer " + std::to_string(b));
  // The kernels' code on the host, on the same inputs (where they compute the region).
  if (!AttentionUnsupportedReason(r.shape).empty()) return;
  for (int32_t b : outputs) {
    if (p.buffers[static_cast<size_t>(b)].dtype != r.shape.storage) return;
  }
  std::map<int32_t, std::vector<unsigned char>> bytes;
  for (int32_t b : inputs) bytes[b] = Encode(data[b], r.shape.storage);
  for (int32_t b : outputs)
    bytes[b] = Encode(std::vector<double>(data[b].size(), 0.0), r.shape.storage);
  auto view = [&](const AttentionOperand& x) {
    AttentionView v;
    v.data = bytes[x.buffer].data() + x.offset * DTypeBytes(r.shape.storage);
    for (int k = 0; k < 4; ++k) v.stride[k] = x.stride[k];
    return v;
  };
  std::vector<float> lse(static_cast<size_t>(AttentionLseBytes(r.shape)) / sizeof(float));
  AttentionForwardArgs fwd;
  fwd.shape = r.shape;
  fwd.q = view(r.q);
  fwd.k = view(r.k);
  fwd.v = view(r.v);
  fwd.o = view(r.o);
  fwd.lse = lse.data();
  ASSERT_TRUE(RunAttentionForwardOnHost(fwd).ok());
  ExpectClose(Decode(bytes[r.o.buffer], r.shape.storage), want[r.o.buffer], 2e-2, "the kernel's O");
  if (!r.has_backward()) return;
  AttentionBackwardArgs bwd;
  bwd.shape = r.shape;
  bwd.q = fwd.q;
  bwd.k = fwd.k;
  bwd.v = fwd.v;
  bwd.o = fwd.o;
  bwd.d_o = view(r.d_o);
  bwd.lse = lse.data();
  bwd.dq = view(r.dq);
  bwd.dk = view(r.dk);
  bwd.dv = view(r.dv);
  std::vector<unsigned char> scratch(static_cast<size_t>(AttentionBackwardScratchBytes(r.shape)));
  bwd.scratch = scratch.data();
  ASSERT_TRUE(RunAttentionBackwardOnHost(bwd).ok());
  for (int32_t b : AttentionWrites(r, true)) {
    ExpectClose(Decode(bytes[b], r.shape.storage), want[b], 3e-2,
                "the kernel's buffer " + std::to_string(b));
  }
}

TEST(AttentionPlanTest, EveryLayersAttentionOfABf16GptIsARegionThatComputesAttention) {
  std::mt19937_64 rng(11);
  for (int64_t tp : {1, 2}) {
    SCOPED_TRACE("tensor parallel " + std::to_string(tp));
    const ProgramSet programs = Lower(kGpt, tp);
    ASSERT_EQ(programs.programs.size(), static_cast<size_t>(tp));
    for (const DeviceProgram& p : programs.programs) {
      const std::vector<DType> storage = StorageDTypes(p);
      const std::vector<AttentionRegion> regions = PlanAttention(p, storage);
      // 2 layers x 2 microbatches, each with its backward.
      ASSERT_EQ(regions.size(), 4u) << ProgramText(p);
      for (const AttentionRegion& r : regions) {
        EXPECT_TRUE(r.has_backward());
        EXPECT_TRUE(r.shape.causal);
        EXPECT_EQ(r.shape.storage, DType::kBF16);
        // The microbatch's 2 sequences and 2 heads, or their shards (the solver's choice).
        EXPECT_EQ(4 % (r.shape.batch * r.shape.heads), 0);
        EXPECT_EQ(r.shape.batch * r.shape.heads * 40 * 32 * 3,
                  ElementCountOf(p.buffers[static_cast<size_t>(r.q.buffer)].shape));
        EXPECT_EQ(r.shape.q_seq, 40);
        EXPECT_EQ(r.shape.k_seq, 40);
        EXPECT_EQ(r.shape.head_dim, 32);
        EXPECT_FLOAT_EQ(r.shape.scale,
                        static_cast<float>(RoundToDType(1.0 / std::sqrt(32.0), DType::kBF16)));
        EXPECT_LT(r.forward_at, r.backward_at);
        // Q, K and V read in the fused QKV product, dQ, dK and dV written into its gradient.
        EXPECT_EQ(r.q.buffer, r.k.buffer);
        EXPECT_EQ(r.q.buffer, r.v.buffer);
        EXPECT_EQ(r.dq.buffer, r.dk.buffer);
        EXPECT_EQ(r.dq.buffer, r.dv.buffer);
        EXPECT_NE(r.q.offset, r.k.offset);
        // O written, and dO read, in the projections' [batch, seq, heads * head_dim] layout:
        // no transpose between the kernels and the output projection, either way.
        EXPECT_EQ(p.buffers[static_cast<size_t>(r.o.buffer)].shape.size(), 3u);
        EXPECT_EQ(p.buffers[static_cast<size_t>(r.d_o.buffer)].shape.size(), 3u);
        EXPECT_EQ(r.o.stride[2], r.shape.heads * 32);
        EXPECT_EQ(r.d_o.stride[2], r.shape.heads * 32);
        ExpectRegionIsAttention(p, r, rng);
      }
      const FusionPlan plan = PlanFusion(p, storage, regions);
      EXPECT_EQ(ReplayLifetimes(p, plan), "");
      for (const FusedGroup& g : plan.groups) {
        for (const AttentionRegion& r : plan.attention) {
          for (int32_t m : g.members)
            EXPECT_FALSE(std::binary_search(r.members.begin(), r.members.end(), m));
          EXPECT_FALSE(std::binary_search(r.members.begin(), r.members.end(), g.root));
        }
      }
    }
  }
}

// Across the plan-equivalence cases (every family, tensor and pipeline parallelism, full and
// selective recomputation, ZeRO, GPipe, ZB-H1 and interleaved schedules), every region the
// matcher finds computes attention on its views, and the runner's lifetimes hold with them.
// The cases are f32, which the kernels do not take (AttentionKernelFit::kAny: the matching alone).
TEST(AttentionPlanTest, EveryRegionOfThePlanEquivalenceCasesComputesAttention) {
  std::mt19937_64 rng(7);
  int64_t with_backward = 0, forward_only = 0, cases_with_regions = 0;
  for (const testing::EquivalenceCase& c : testing::EquivalenceCases()) {
    SCOPED_TRACE(c.name);
    Result<testing::PlannedCase> planned = testing::PlanEquivalenceCase(c);
    ASSERT_TRUE(planned.ok()) << planned.status().message();
    LowerOptions options;
    options.whole_batch = &planned.value().whole;
    options.schedule = c.schedule;
    Result<ProgramSet> programs = LowerPlan(planned.value().plan, options);
    ASSERT_TRUE(programs.ok()) << programs.status().message();
    bool found_any = false;
    for (const DeviceProgram& p : programs.value().programs) {
      const std::vector<DType> storage = StorageDTypes(p);
      const std::vector<AttentionRegion> regions =
          PlanAttention(p, storage, AttentionKernelFit::kAny);
      for (const AttentionRegion& r : regions) {
        ExpectRegionIsAttention(p, r, rng);
        if (::testing::Test::HasFatalFailure()) return;
        ++(r.has_backward() ? with_backward : forward_only);
        found_any = true;
      }
      EXPECT_EQ(ReplayLifetimes(p, PlanFusion(p, storage, regions)), "");
    }
    cases_with_regions += found_any ? 1 : 0;
  }
  std::printf("%lld cases with regions: %lld regions with their backward, %lld forward only\n",
              static_cast<long long>(cases_with_regions), static_cast<long long>(with_backward),
              static_cast<long long>(forward_only));
  EXPECT_GT(with_backward, 0);
  EXPECT_GT(forward_only, 0);  // recomputation runs a forward again for the backward
}

TEST(AttentionPlanTest, ABidirectionalBertAttentionIsARegionWithoutAMask) {
  const ProgramSet programs =
      Lower("bert:layers=1,hidden=32,heads=2,seq=24,vocab=16,batch=4,dtype=bf16", 1);
  ASSERT_EQ(programs.programs.size(), 1u);
  const DeviceProgram& p = programs.programs[0];
  const std::vector<AttentionRegion> regions = PlanAttention(p, StorageDTypes(p));
  ASSERT_EQ(regions.size(), 2u);
  std::mt19937_64 rng(3);
  for (const AttentionRegion& r : regions) {
    EXPECT_FALSE(r.shape.causal);
    EXPECT_TRUE(r.has_backward());
    ExpectRegionIsAttention(p, r, rng);
  }
}

TEST(AttentionPlanTest, F32ProgramsAndOtherGraphsHaveNoRegions) {
  const ProgramSet f32 =
      Lower("gpt:layers=1,hidden=32,heads=2,seq=16,vocab=16,batch=4,dtype=f32", 1);
  ASSERT_EQ(f32.programs.size(), 1u);
  EXPECT_TRUE(PlanAttention(f32.programs[0], StorageDTypes(f32.programs[0])).empty());
  const ProgramSet mlp = Lower("mlp:layers=2,hidden=32,batch=8,dtype=bf16", 1);
  ASSERT_EQ(mlp.programs.size(), 1u);
  EXPECT_TRUE(PlanAttention(mlp.programs[0], StorageDTypes(mlp.programs[0])).empty());
}

// A copy of `p` whose causal compare is `c` (the mask's compare of iotas).
DeviceProgram WithMaskComparison(DeviceProgram p, Comparison c) {
  for (Graph& local : p.local_ops) {
    if (local.size() > 0 && local.ops.back().kind == OpKind::kCompare)
      local.ops.back().attrs.comparison = c;
  }
  return p;
}

TEST(AttentionPlanTest, AMaskThatIsNotCausalOrAScaleThatDiffersIsNotAttention) {
  const ProgramSet programs = Lower(kGpt, 1, 1);
  ASSERT_EQ(programs.programs.size(), 1u);
  const DeviceProgram& p = programs.programs[0];
  ASSERT_EQ(PlanAttention(p, StorageDTypes(p)).size(), 2u);
  // key < query (the diagonal masked) and key >= query are not the causal mask.
  for (Comparison c : {Comparison::kLt, Comparison::kGe, Comparison::kEq}) {
    const DeviceProgram changed = WithMaskComparison(p, c);
    EXPECT_TRUE(PlanAttention(changed, StorageDTypes(changed)).empty()) << ComparisonName(c);
  }
  // The first region's backward scales by twice the forward's constant (its own copy of it).
  const std::vector<AttentionRegion> regions = PlanAttention(p, StorageDTypes(p));
  DeviceProgram rescaled = p;
  bool changed = false;
  for (int32_t m : regions[0].members) {
    const Instruction& in = p.code[static_cast<size_t>(m)];
    if (changed || m < regions[0].forward_at || LocalOpOf(p, in).kind != OpKind::kMul) continue;
    for (int32_t b : in.in) {
      for (Instruction& w : rescaled.code) {
        if (w.kind != InstructionKind::kRun || w.out != b) continue;
        Graph local = rescaled.local_ops[static_cast<size_t>(w.local_op)];
        if (local.ops.back().kind != OpKind::kConstant) continue;
        local.ops.back().attrs.value *= 2.0;
        rescaled.local_ops.push_back(local);
        w.local_op = static_cast<int32_t>(rescaled.local_ops.size()) - 1;
        changed = true;
      }
    }
  }
  ASSERT_TRUE(changed);
  EXPECT_EQ(PlanAttention(rescaled, StorageDTypes(rescaled)).size(), 1u);
}

}  // namespace
}  // namespace alpa::cuda
