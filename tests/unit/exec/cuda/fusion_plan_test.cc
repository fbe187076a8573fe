// The fusion of elementwise chains (exec/cuda/fusion_plan.h), without a GPU: on the device
// programs of a bf16 GPT (one device, and tensor parallel on two), the plan fuses the softmax
// and the optimizer's chains, and row reductions with the chains they sum; a replay of each program
// as the runner runs it (skips, deferred frees) finds every buffer written before it is read and
// never read after it is freed; every group's host value (FusedValueAt, the kernels' math) equals
// its ops evaluated one by one by the interpreter on random inputs; and the kernels' source
// compiles with NVRTC for sm_90.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/ir/fusion.h"
#include "exec/cpu/interpreter.h"
#include "exec/cuda/attention_plan.h"
#include "exec/cuda/fused_source.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/runtime_compiler.h"
#include "exec/cuda/storage_policy.h"
#include "exec/lower/lower_plan.h"
#include "exec/runtime/tensor_boxes.h"
#include "fused_group_check.h"
#include "lifetime_replay.h"
#include "solvers/auto_sharding/op_strategies.h"
#include "support/small_plans.h"

namespace alpa::cuda {
namespace {

ProgramSet LowerGpt(
    const std::string& dtype, int64_t tensor_parallel,
    const std::string& shape = "layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8") {
  Result<ProgramSet> programs = testing::LowerSmallModel(
      "gpt:" + shape + ",dtype=" + dtype + ",adam_eps=1e-5", tensor_parallel);
  EXPECT_TRUE(programs.ok()) << programs.status().message();
  return programs.ok() ? std::move(programs).value() : ProgramSet{};
}

TEST(FusionPlanTest, Bf16GptFusesItsChainsAndEachGroupEqualsItsOps) {
  for (int64_t tp : {1, 2}) {
    const ProgramSet programs = LowerGpt("bf16", tp);
    ASSERT_EQ(static_cast<int64_t>(programs.programs.size()), tp);
    const DeviceProgram& p = programs.programs[0];
    const std::vector<DType> storage = StorageDTypes(p);
    const FusionPlan plan = PlanFusion(p, storage);
    ASSERT_FALSE(plan.groups.empty());
    int64_t runs = 0, launches = 0;
    bool softmax = false;
    for (size_t i = 0; i < p.code.size(); ++i) {
      if (p.code[i].kind != InstructionKind::kRun) continue;
      ++runs;
      if (!plan.skip[i]) ++launches;
    }
    for (const FusedGroup& g : plan.groups) {
      bool exp = false, broadcast = false;
      for (const FusedNode& n : g.nodes) {
        exp = exp || (n.kind == FusedNodeKind::kOp && n.op == OpKind::kExp);
        broadcast = broadcast || n.kind == FusedNodeKind::kBroadcastLoad;
      }
      softmax = softmax || (exp && broadcast);
      const Instruction& root = p.code[static_cast<size_t>(g.root)];
      if (root.kind == InstructionKind::kRun) {
        EXPECT_NE(LocalOpOf(p, root).kind, OpKind::kBroadcastInDim);
      }
    }
    // x - broadcast(max) and its exp run as one kernel; a third or more of the ops are fused.
    EXPECT_TRUE(softmax) << "tp " << tp;
    EXPECT_LT(launches * 3, runs * 2) << "tp " << tp << ": " << launches << " of " << runs;
    EXPECT_EQ(ReplayLifetimes(p, plan), "") << "tp " << tp;
    std::mt19937_64 rng(11);
    for (const FusedGroup& g : plan.groups) ExpectGroupEqualsItsOps(p, g, rng);
  }
}

// Rows of the attention scores (2,048 of them and more per microbatch: enough to fill a GPU a
// warp each) are summed straight from the chains that compute them; the loss (one output)
// is left to the reduce kernels.
TEST(FusionPlanTest, ManyRowsAreReducedFromTheirChainAndOneOutputIsNot) {
  const ProgramSet programs =
      LowerGpt("bf16", 1, "layers=1,hidden=32,heads=2,seq=64,vocab=16,batch=32");
  ASSERT_EQ(programs.programs.size(), 1u);
  const DeviceProgram& p = programs.programs[0];
  const FusionPlan plan = PlanFusion(p, StorageDTypes(p));
  int64_t reductions = 0;
  std::mt19937_64 rng(9);
  for (const FusedGroup& g : plan.groups) {
    if (g.row == 0) continue;
    ++reductions;
    EXPECT_GE(g.elements, kMinFusedRowReductions);
    EXPECT_EQ(g.nodes.back().kind, FusedNodeKind::kReduce);
    ExpectGroupEqualsItsOps(p, g, rng);
  }
  EXPECT_GE(reductions, 2);  // the softmax backward's two sums
  EXPECT_EQ(ReplayLifetimes(p, plan), "");
  const FusedSource source = FusedKernelsSource(plan.groups);
  for (const std::string& unit : source.units) {
    Result<std::string> cubin = CompileToCubin(unit, 9, 0, "rows");
    ASSERT_TRUE(cubin.ok()) << cubin.status().message() << "\n" << unit;
  }
}

// The bytes the kernels of a program's planned instructions read and write: as the runner runs
// them (its fusion plan: a group reads its inputs once and writes its root), and as the planner's
// single-reader fusion model prices them (core/ir/fusion.h SingleReaderMaterializedResults and
// ChargedReads on each piece's graph, what a calibration with `single_reader_fusion` prices),
// both over the program's own (local) buffer sizes.
struct Traffic {
  int64_t runner = 0, model = 0;
  int64_t fused = 0;        // instructions the runner computes inside another's kernel
  std::string differences;  // instructions one side fuses and the other writes
};

int64_t BytesOf(const DeviceProgram& p, int32_t b) {
  const Buffer& buffer = p.buffers[static_cast<size_t>(b)];
  return ElementCountOf(buffer.shape) * DTypeBytes(buffer.dtype);
}

// What a calibration's fusion keys price on a piece's graph (the planner's own pricing).
PricedTraffic PricingOf(const Graph& graph, ElementwiseFusion fusion, bool fuse_attention) {
  Calibration calibration;
  calibration.fuse_elementwise = fusion != ElementwiseFusion::kNone;
  calibration.single_reader_fusion = fusion == ElementwiseFusion::kSingleReader;
  calibration.fuse_attention = fuse_attention;
  return TrafficPricedBy(graph, calibration);
}

// `attention`: the runner with its attention regions on the fused kernels (each kernel reads
// its views' buffers once and writes its outputs).
Traffic RunnerAndModelTraffic(const std::string& model, int64_t tensor_parallel,
                              ElementwiseFusion priced = ElementwiseFusion::kSingleReader,
                              bool attention = false) {
  Traffic t;
  Result<testing::SmallPlan> small = testing::PlanSmallModel(model, tensor_parallel, 1);
  if (!small.ok()) {
    t.differences = small.status().message();
    return t;
  }
  const PipelinePlan& plan = small.value().plan;
  LowerOptions options;
  options.whole_batch = &small.value().whole;
  Result<ProgramSet> programs = LowerPlan(plan, options);
  if (!programs.ok()) {
    t.differences = programs.status().message();
    return t;
  }
  for (const DeviceProgram& p : programs.value().programs) {
    const std::vector<DType> storage = StorageDTypes(p);
    const FusionPlan fusion = PlanFusion(
        p, storage, attention ? PlanAttention(p, storage) : std::vector<AttentionRegion>{});
    if (attention && fusion.attention.empty()) t.differences += "no attention region\n";
    std::set<int32_t> stored;  // what merged groups write besides their roots' values
    for (const FusedGroup& g : fusion.groups) {
      for (const FusedStore& st : g.stores) stored.insert(st.buffer);
      for (int32_t m : g.members) {  // a copy the group stores in place of: its source's value
        const Instruction& c = p.code[static_cast<size_t>(m)];
        if (c.kind == InstructionKind::kCopy) stored.insert(c.in[0]);
      }
    }
    const PlannedStage& stage = plan.stages[static_cast<size_t>(p.stage)];
    std::vector<std::vector<bool>> written;
    std::vector<std::vector<std::vector<bool>>> charged;
    for (const StagePiece& piece : stage.pieces) {
      PricedTraffic pricing = PricingOf(piece.subgraph->graph, priced, attention);
      written.push_back(std::move(pricing.materialized));
      charged.push_back(std::move(pricing.charged_reads));
    }
    for (size_t i = 0; i < p.code.size(); ++i) {
      const Instruction& in = p.code[i];
      if (in.kind != InstructionKind::kRun || in.piece < 0 || in.piece_op < 0) continue;
      const size_t piece = static_cast<size_t>(in.piece), op = static_cast<size_t>(in.piece_op);
      const bool runner_fuses = fusion.skip[i] != 0 && stored.count(in.out) == 0;
      const bool model_fuses = !written[piece][op];
      if (!fusion.skip[i]) {
        const int32_t group = fusion.group_at[i];
        std::vector<int32_t> reads =
            group >= 0 ? fusion.groups[static_cast<size_t>(group)].inputs : in.in;
        std::vector<int32_t> writes =
            group >= 0 ? FusedGroupWrites(fusion.groups[static_cast<size_t>(group)])
                       : std::vector<int32_t>{in.out};
        const int32_t region = fusion.attention_at[i];
        if (region >= 0) {
          const AttentionRegion& r = fusion.attention[static_cast<size_t>(region)];
          const bool backward = r.backward_at == static_cast<int32_t>(i);
          reads = backward ? AttentionBackwardReads(r) : AttentionForwardReads(r);
          writes = AttentionWrites(r, backward);
        }
        std::sort(reads.begin(), reads.end());
        reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
        for (int32_t b : reads) t.runner += BytesOf(p, b);
        for (int32_t b : writes) t.runner += BytesOf(p, b);
      }
      if (!model_fuses) t.model += BytesOf(p, in.out);
      for (size_t k = 0; k < in.in.size() && k < charged[piece][op].size(); ++k) {
        if (charged[piece][op][k]) t.model += BytesOf(p, in.in[k]);
      }
      t.fused += runner_fuses ? 1 : 0;
      if (runner_fuses != model_fuses) {
        t.differences += "  " + InstructionText(p, in) + ": the runner " +
                         (runner_fuses ? "fuses it" : "writes it") + ", the model " +
                         (model_fuses ? "fuses it" : "writes it") + "\n";
      }
    }
  }
  return t;
}

// The planner prices the memory traffic the runner's kernels make, within 2.5 % (0.979-0.997
// when written), on every device program of one device and of tensor parallelism on two: small
// models whose attention has 2,048 rows and more, and the GPT layer of bench/gpu. The model
// replays the runner's rules on each piece's graph in op order, its merged kernels
// (group_merge.h: each weight's Adam update one kernel) included; what it cannot see are the
// program's exact buffer lifetimes, which decide a few groups the runner drops because they
// would keep their inputs alive longer than the buffers they save (Keepable), and the
// reduce-scatters the program adds between kernels under tensor parallelism (1.9 GB of the GPT
// layer's 89.2 per device on two). The XLA-style model (MaterializedResults) prices under 0.85x
// (about 0.81x) of what the runner moves on the GPT layer.
TEST(FusionPlanTest, ThePlannersSingleReaderModelPricesTheRunnersTraffic) {
  const std::vector<std::string> models = {
      "gpt:layers=2,hidden=32,heads=4,seq=128,vocab=16,batch=16,adam_eps=1e-5,dtype=bf16",
      "gpt:layers=2,hidden=32,heads=4,seq=128,vocab=16,batch=16,adam_eps=1e-5,dtype=f32",
      "gpt:layers=1,embed=0,hidden=4096,heads=32,seq=2048,batch=8,dtype=bf16",
  };
  for (const std::string& model : models) {
    for (int64_t tp : {1, 2}) {
      const Traffic t = RunnerAndModelTraffic(model, tp);
      ASSERT_GT(t.fused, 0) << model << " on " << tp << " devices: " << t.differences;
      std::printf("%s on %lld devices: the runner's kernels move %.2f GB, the model prices %.2f\n",
                  model.c_str(), static_cast<long long>(tp), static_cast<double>(t.runner) / 1e9,
                  static_cast<double>(t.model) / 1e9);
      const double ratio = static_cast<double>(t.model) / static_cast<double>(t.runner);
      EXPECT_NEAR(ratio, 1.0, 0.025)
          << model << " on " << tp << " devices: the model prices " << t.model
          << " bytes, the runner moves " << t.runner << "; where they differ:\n"
          << t.differences;
    }
  }
  const Traffic xla = RunnerAndModelTraffic(models.back(), 1, ElementwiseFusion::kXla);
  EXPECT_LT(static_cast<double>(xla.model), 0.85 * static_cast<double>(xla.runner));
}

// With the attention regions on the fused kernels (attention_plan.h: reading Q, K and V in the
// fused QKV product and writing their gradients into its gradient), the runner's kernels move
// under half the bytes (29.7 GB of 84.1 on one device: the rest is the MLP, the norms and Adam),
// and a calibration with `fuse_attention` and `single_reader_fusion` (the cores and the kernels'
// views priced on chip: core/ir/attention_core.h) prices them within 6 % (1.005x on one device,
// 0.962x per device on two). The model does not see the row statistics the kernels keep (4 bytes
// per query row), that the backward reads O and the QKV product again, nor what decides 1.2 GB
// on two devices (1.9 GB without the kernels): [8, 2048, 4096] adds the program reads
// with a reduce-scatter, which a piece's graph does not hold, and groups the runner drops for
// their buffers' lifetimes (Keepable).
TEST(FusionPlanTest, TheFusedAttentionModelPricesTheRunnersTrafficWithItsAttentionKernels) {
  const std::string model = "gpt:layers=1,embed=0,hidden=4096,heads=32,seq=2048,batch=8,dtype=bf16";
  for (int64_t tp : {1, 2}) {
    const Traffic before = RunnerAndModelTraffic(model, tp);
    const Traffic t = RunnerAndModelTraffic(model, tp, ElementwiseFusion::kSingleReader, true);
    std::printf(
        "%s on %lld devices with the attention kernels: the runner's kernels move %.2f GB "
        "(%.2f without them), the model prices %.2f\n",
        model.c_str(), static_cast<long long>(tp), static_cast<double>(t.runner) / 1e9,
        static_cast<double>(before.runner) / 1e9, static_cast<double>(t.model) / 1e9);
    EXPECT_LT(static_cast<double>(t.runner), 0.5 * static_cast<double>(before.runner));
    const double ratio = static_cast<double>(t.model) / static_cast<double>(t.runner);
    EXPECT_NEAR(ratio, 1.0, 0.06) << "on " << tp << " devices; where they differ:\n"
                                  << t.differences;
  }
}

TEST(FusionPlanTest, F32GroupsEqualTheirOpsAndUnfusibleKindsStayAlone) {
  const ProgramSet programs = LowerGpt("f32", 1);
  ASSERT_EQ(programs.programs.size(), 1u);
  const DeviceProgram& p = programs.programs[0];
  const FusionPlan plan = PlanFusion(p, StorageDTypes(p));
  ASSERT_FALSE(plan.groups.empty());
  EXPECT_EQ(ReplayLifetimes(p, plan), "");
  std::mt19937_64 rng(5);
  for (const FusedGroup& g : plan.groups) {
    // exp, log, tanh, rsqrt and gelu ending in f32 run on the double path: never fused.
    EXPECT_FALSE(Approximate(g)) << "group at instruction " << g.root;
    ExpectGroupEqualsItsOps(p, g, rng);
  }
}

// b2 = neg(b0); [b0 overwritten by a copy of b1]; b3 = b2 + b1: neg fuses into the add only
// where b0 still holds the value neg read.
DeviceProgram NegThenAdd(bool overwrite) {
  DeviceProgram p;
  testing::AddBuffers(p, 4, {8}, DType::kBF16);
  const int32_t neg = testing::AddElementwiseLocalOp(p, OpKind::kNeg, 1, {8}, DType::kBF16);
  const int32_t add = testing::AddElementwiseLocalOp(p, OpKind::kAdd, 2, {8}, DType::kBF16);
  testing::AddInstruction(p, InstructionKind::kFeed, 0, {});
  testing::AddInstruction(p, InstructionKind::kFeed, 1, {});
  testing::AddInstruction(p, InstructionKind::kRun, 2, {0}, neg);
  if (overwrite) testing::AddInstruction(p, InstructionKind::kCopy, 0, {1});
  testing::AddInstruction(p, InstructionKind::kRun, 3, {2, 1}, add);
  return p;
}

TEST(FusionPlanTest, AnInputWrittenBeforeTheRootKeepsItsReaderAlone) {
  const DeviceProgram kept = NegThenAdd(false);
  const FusionPlan fused = PlanFusion(kept, StorageDTypes(kept));
  ASSERT_EQ(fused.groups.size(), 1u);
  EXPECT_EQ(fused.groups[0].members, std::vector<int32_t>{2});
  EXPECT_EQ(fused.groups[0].root, 3);
  const DeviceProgram overwritten = NegThenAdd(true);
  const FusionPlan alone = PlanFusion(overwritten, StorageDTypes(overwritten));
  // neg and add each run alone: groups of one, nothing skipped.
  ASSERT_EQ(alone.groups.size(), 2u);
  for (const FusedGroup& g : alone.groups) EXPECT_TRUE(g.members.empty()) << g.root;
  for (char skip : alone.skip) EXPECT_EQ(skip, 0);
}

// b2 = neg(b0) is read by two ops of one chain (b3 = b2 + b1, b4 = b2 * b1) whose root is
// b5 = b3 * b4; b5 is read by two roots (b6 = neg(b5), b7 = abs(b5)).
DeviceProgram AValueReadTwiceInOneChainAndOneReadByTwoChains() {
  DeviceProgram p;
  testing::AddBuffers(p, 8, {8}, DType::kBF16);
  const int32_t neg = testing::AddElementwiseLocalOp(p, OpKind::kNeg, 1, {8}, DType::kBF16);
  const int32_t abs = testing::AddElementwiseLocalOp(p, OpKind::kAbs, 1, {8}, DType::kBF16);
  const int32_t add = testing::AddElementwiseLocalOp(p, OpKind::kAdd, 2, {8}, DType::kBF16);
  const int32_t mul = testing::AddElementwiseLocalOp(p, OpKind::kMul, 2, {8}, DType::kBF16);
  testing::AddInstruction(p, InstructionKind::kFeed, 0, {});
  testing::AddInstruction(p, InstructionKind::kFeed, 1, {});
  testing::AddInstruction(p, InstructionKind::kRun, 2, {0}, neg);
  testing::AddInstruction(p, InstructionKind::kRun, 3, {2, 1}, add);
  testing::AddInstruction(p, InstructionKind::kRun, 4, {2, 1}, mul);
  testing::AddInstruction(p, InstructionKind::kRun, 5, {3, 4}, mul);
  testing::AddInstruction(p, InstructionKind::kRun, 6, {5}, neg);
  testing::AddInstruction(p, InstructionKind::kRun, 7, {5}, abs);
  return p;
}

// A value whose readers are all in one group is computed once inside it; a value read by two
// groups is stored (never computed twice).
TEST(FusionPlanTest, AValueReadTwiceInOneGroupIsFusedAndOneReadByTwoGroupsIsStored) {
  const DeviceProgram p = AValueReadTwiceInOneChainAndOneReadByTwoChains();
  const FusionPlan plan = PlanFusion(p, StorageDTypes(p));
  ASSERT_EQ(plan.groups.size(), 3u);
  const FusedGroup& chain = plan.groups[0];
  EXPECT_EQ(chain.root, 5);
  EXPECT_EQ(chain.members, (std::vector<int32_t>{2, 3, 4}));
  EXPECT_EQ(chain.inputs, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(chain.nodes.size(), 6u);  // two loads, neg once, add, mul and the root
  for (size_t gi = 1; gi < plan.groups.size(); ++gi) {
    EXPECT_TRUE(plan.groups[gi].members.empty()) << plan.groups[gi].root;
    EXPECT_EQ(plan.groups[gi].inputs, std::vector<int32_t>{5}) << plan.groups[gi].root;
  }
  EXPECT_EQ(ReplayLifetimes(p, plan), "");
  std::mt19937_64 rng(3);
  for (const FusedGroup& g : plan.groups) ExpectGroupEqualsItsOps(p, g, rng);
}

// The instruction that writes buffer b, or -1.
int32_t WriterOf(const DeviceProgram& p, int32_t b) {
  for (size_t i = 0; i < p.code.size(); ++i) {
    if (p.code[i].kind == InstructionKind::kRun && p.code[i].out == b)
      return static_cast<int32_t>(i);
  }
  return -1;
}

// The tanh-GeLU's backward (autodiff's: t = tanh(u) read by 1 + t and t * t, x * x read by
// x * x^2 and 3k x^2, every one feeding dx = dy * (left + right)) is one kernel that reads x and
// dy and writes dx: t and x * x are its members, computed once, never stored.
TEST(FusionPlanTest, TheGeluBackwardIsOneKernelReadingXAndDyAndWritingDx) {
  const ProgramSet programs = LowerGpt("bf16", 1);
  ASSERT_EQ(programs.programs.size(), 1u);
  const DeviceProgram& p = programs.programs[0];
  const FusionPlan plan = PlanFusion(p, StorageDTypes(p));
  EXPECT_EQ(ReplayLifetimes(p, plan), "");
  std::mt19937_64 rng(13);
  int64_t tanhs = 0;
  for (size_t i = 0; i < p.code.size(); ++i) {
    if (p.code[i].kind != InstructionKind::kRun || LocalOpOf(p, p.code[i]).kind != OpKind::kTanh)
      continue;
    ++tanhs;
    const int32_t tanh = static_cast<int32_t>(i);
    const FusedGroup* gelu = nullptr;
    for (const FusedGroup& g : plan.groups) {
      if (std::binary_search(g.members.begin(), g.members.end(), tanh)) gelu = &g;
    }
    ASSERT_NE(gelu, nullptr) << "tanh at instruction " << tanh << " is stored\n" << ProgramText(p);
    // The root: dy * (left + right), the add a member.
    const Instruction& root = p.code[static_cast<size_t>(gelu->root)];
    EXPECT_EQ(LocalOpOf(p, root).kind, OpKind::kMul);
    const int32_t sum = WriterOf(p, root.in[1]);
    ASSERT_GE(sum, 0);
    EXPECT_EQ(LocalOpOf(p, p.code[static_cast<size_t>(sum)]).kind, OpKind::kAdd);
    EXPECT_TRUE(std::binary_search(gelu->members.begin(), gelu->members.end(), sum));
    // x * x and t * t: members that read one value twice, x (an input) and t (the tanh).
    int32_t square = -1, tanh_square = -1;
    for (int32_t m : gelu->members) {
      const Instruction& in = p.code[static_cast<size_t>(m)];
      if (LocalOpOf(p, in).kind != OpKind::kMul || in.in.size() != 2 || in.in[0] != in.in[1]) {
        continue;
      }
      (WriterOf(p, in.in[0]) == tanh ? tanh_square : square) = m;
    }
    ASSERT_GE(square, 0) << "group at instruction " << gelu->root;
    EXPECT_GE(tanh_square, 0) << "group at instruction " << gelu->root;
    const int32_t x = p.code[static_cast<size_t>(square)].in[0];
    EXPECT_EQ(gelu->inputs, (std::vector<int32_t>{root.in[0], x}))
        << "group at instruction " << gelu->root;
    EXPECT_TRUE(plan.skip[static_cast<size_t>(tanh)]);
    EXPECT_TRUE(plan.skip[static_cast<size_t>(square)]);
    ExpectGroupEqualsItsOps(p, *gelu, rng);
  }
  EXPECT_GT(tanhs, 0);
}

// A program of 200,000 chained elementwise ops (a graph file may hold one): planned without
// running out of stack; the chain is too large for one kernel, so its ops run alone, each merged
// into its one reader (group_merge.h) while the kernel stays within kMaxFusedGroupNodes values:
// kernels of 47 ops (a load and 47 negations).
TEST(FusionPlanTest, AVeryLongChainIsPlannedAndRunsInKernelsWithinTheLimits) {
  DeviceProgram p;
  const int32_t n = 200000;
  testing::AddBuffers(p, n + 1, {64}, DType::kBF16);
  const int32_t neg = testing::AddElementwiseLocalOp(p, OpKind::kNeg, 1, {64}, DType::kBF16);
  testing::AddInstruction(p, InstructionKind::kFeed, 0, {});
  for (int32_t i = 0; i < n; ++i)
    testing::AddInstruction(p, InstructionKind::kRun, i + 1, {i}, neg);
  const FusionPlan plan = PlanFusion(p, StorageDTypes(p));
  for (const FusedGroup& g : plan.groups) {
    EXPECT_LE(g.nodes.size(), static_cast<size_t>(kMaxFusedGroupNodes)) << g.root;
    EXPECT_TRUE(g.stores.empty()) << g.root;  // each value has one reader: nothing is kept
  }
  EXPECT_EQ(plan.groups.size(), static_cast<size_t>((n + 46) / 47));
  EXPECT_EQ(ReplayLifetimes(p, plan), "");
}

TEST(FusionPlanTest, TheKernelsCompileForHopperWithoutAGpu) {
  for (const std::string dtype : {"bf16", "f32"}) {
    const ProgramSet programs = LowerGpt(dtype, 2);
    ASSERT_FALSE(programs.programs.empty());
    const DeviceProgram& p = programs.programs[0];
    const FusionPlan plan = PlanFusion(p, StorageDTypes(p));
    ASSERT_FALSE(plan.groups.empty());
    const FusedSource source = FusedKernelsSource(plan.groups);
    // The chain of every layer and microbatch is one kernel.
    EXPECT_LT(source.units.size() * 2, plan.groups.size()) << dtype;
    for (const std::string& unit : source.units) {
      Result<std::string> cubin = CompileToCubin(unit, 9, 0, dtype);
      ASSERT_TRUE(cubin.ok()) << cubin.status().message() << "\n" << unit;
      EXPECT_GT(cubin.value().size(), 1000u);
    }
  }
}

TEST(FusionPlanTest, ACompileErrorNamesTheCallerAndCarriesTheLog) {
  Result<std::string> cubin = CompileToCubin("this is not CUDA", 9, 0, "the test's kernels");
  ASSERT_FALSE(cubin.ok());
  EXPECT_NE(cubin.status().message().find("the test's kernels"), std::string::npos);
  EXPECT_NE(cubin.status().message().find("error"), std::string::npos) << cubin.status().message();
}

}  // namespace
}  // namespace alpa::cuda
