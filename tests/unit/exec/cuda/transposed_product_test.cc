// The products the CUDA runner computes transposed (exec/cuda/transposed_product.h), without a
// GPU: on the device programs of a bf16 GPT (one device and tensor parallel on two, one
// microbatch: with several, the transpose reads the summed gradient once a step) every weight
// matrix's gradient, transpose(dot(g, x)), is one product of the
// swapped operands written into the transpose's buffer; that product, evaluated by the
// interpreter on random operands, equals the dot and the transpose run one by one, bit for bit;
// its GEMM reads both operands in place; the lifetimes replay with the dots' own results never
// allocated; and a dot read by anything else, a transpose that does not swap its free dims, or
// ALPA_CUDA_TRANSPOSED_PRODUCTS=0 leave the pair alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/ir/graph_builder.h"
#include "exec/cpu/interpreter.h"
#include "exec/cuda/contraction_body.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/cuda/storage_policy.h"
#include "exec/cuda/transposed_product.h"
#include "exec/lower/lower_plan.h"
#include "lifetime_replay.h"
#include "support/small_plans.h"

namespace alpa::cuda {
namespace {

HostTensor RandomTensor(const Op& op, std::mt19937_64& rng) {
  std::normal_distribution<double> value(0.0, 1.0);
  HostTensor t;
  t.shape = op.shape;
  t.dtype = op.dtype;
  for (int64_t i = 0; i < ElementCountOf(op.shape); ++i)
    t.data.push_back(RoundToDType(value(rng), op.dtype));
  return t;
}

// The swapped product on random operands against the dot and the transpose one by one.
void ExpectProductEqualsDotThenTranspose(const DeviceProgram& p, const TransposedProduct& t,
                                         std::mt19937_64& rng) {
  const Instruction& dot = p.code[static_cast<size_t>(t.dot_at)];
  const Instruction& transpose = p.code[static_cast<size_t>(t.transpose_at)];
  const Graph& dot_graph = p.local_ops[static_cast<size_t>(dot.local_op)];
  const Graph& transpose_graph = p.local_ops[static_cast<size_t>(transpose.local_op)];
  ASSERT_TRUE(ValidateGraph(t.swapped).ok()) << InstructionText(p, dot);
  const Op& product = t.swapped.op(t.swapped.size() - 1);
  const HostTensor lhs = RandomTensor(dot_graph.op(dot_graph.ops.back().operands[0]), rng);
  const HostTensor rhs = RandomTensor(dot_graph.op(dot_graph.ops.back().operands[1]), rng);
  const HostTensor d =
      EvaluateValidatedOp(dot_graph, dot_graph.size() - 1, {&lhs, &rhs}, ResultRounding::kRound);
  const HostTensor want = EvaluateValidatedOp(transpose_graph, transpose_graph.size() - 1, {&d},
                                              ResultRounding::kRound);
  const HostTensor got =
      EvaluateValidatedOp(t.swapped, t.swapped.size() - 1, {&rhs, &lhs}, ResultRounding::kRound);
  EXPECT_EQ(product.shape, p.buffers[static_cast<size_t>(transpose.out)].shape);
  EXPECT_EQ(got.shape, want.shape);
  EXPECT_EQ(got.data, want.data) << InstructionText(p, dot);
  // cuBLASLt reads both operands where they are, as it did the dot's.
  const GemmPlan before = PlanGemm(dot_graph, dot_graph.size() - 1);
  const GemmPlan after = PlanGemm(t.swapped, t.swapped.size() - 1);
  EXPECT_TRUE(before.lhs_permutation.empty() && before.rhs_permutation.empty());
  EXPECT_TRUE(after.lhs_permutation.empty() && after.rhs_permutation.empty());
}

TEST(TransposedProductTest, EveryWeightGradientOfABf16GptIsOneProduct) {
  std::mt19937_64 rng(5);
  for (int64_t tp : {1, 2}) {
    SCOPED_TRACE("tensor parallel " + std::to_string(tp));
    Result<ProgramSet> programs = testing::LowerSmallModel(
        "gpt:layers=2,hidden=32,heads=2,seq=16,vocab=16,batch=8,dtype=bf16,adam_eps=1e-5", tp, 1);
    ASSERT_TRUE(programs.ok()) << programs.status().message();
    for (const DeviceProgram& p : programs.value().programs) {
      const std::vector<DType> storage = StorageDTypes(p);
      const FusionPlan plan = PlanFusion(p, storage);
      // 2 layers x (qkv, attention out, MLP up, MLP down).
      EXPECT_EQ(plan.products.size(), 8u) << ProgramText(p);
      for (const TransposedProduct& t : plan.products) {
        const Instruction& transpose = p.code[static_cast<size_t>(t.transpose_at)];
        const Op& op = LocalOpOf(p, transpose);
        EXPECT_NE(op.name.find(".w.grad"), std::string::npos) << InstructionText(p, transpose);
        EXPECT_EQ(plan.product_at[static_cast<size_t>(t.dot_at)], &t - plan.products.data());
        EXPECT_TRUE(plan.skip[static_cast<size_t>(t.transpose_at)]);
        ExpectProductEqualsDotThenTranspose(p, t, rng);
      }
      EXPECT_EQ(ReplayLifetimes(p, plan), "");
      // The dots' own results are never held: the peak does not grow.
      ASSERT_EQ(setenv("ALPA_CUDA_TRANSPOSED_PRODUCTS", "0", 1), 0);
      const FusionPlan without = PlanFusion(p, storage);
      ASSERT_EQ(unsetenv("ALPA_CUDA_TRANSPOSED_PRODUCTS"), 0);
      EXPECT_TRUE(without.products.empty());
      EXPECT_LE(ReplayBuffers(p, plan).peak_bytes, ReplayBuffers(p, without).peak_bytes);
    }
  }
}

// A program of one dot (x [4, 6] . w [6, 5] -> [4, 5]) and a transpose of its result.
DeviceProgram DotThenTranspose(Dims perm, bool another_reader, bool persistent) {
  DeviceProgram p;
  testing::AddBuffers(p, 2, {4, 6}, DType::kBF16);           // b0 x, b1
  p.buffers[1].shape = {6, 5};                               // b1 w
  p.buffers[0].persistent = p.buffers[1].persistent = true;  // held across steps
  testing::AddBuffers(p, 1, {4, 5}, DType::kBF16);           // b2 the dot
  p.buffers[2].persistent = persistent;
  testing::AddBuffers(p, 1, {5, 4}, DType::kBF16);  // b3 the transpose
  testing::AddBuffers(p, 1, {4, 5}, DType::kBF16);  // b4 another reader's
  if (perm != Dims{1, 0}) p.buffers[3].shape = {4, 5};
  GraphBuilder dot_graph;
  const int32_t x = dot_graph.Parameter({4, 6}, DType::kBF16, TensorRole::kInput, "x");
  const int32_t w = dot_graph.Parameter({6, 5}, DType::kBF16, TensorRole::kInput, "w");
  DotDims dims;
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  dot_graph.DotGeneral(x, w, dims);
  p.local_ops.push_back(std::move(dot_graph).Finish().value());
  GraphBuilder transpose_graph;
  const int32_t d = transpose_graph.Parameter({4, 5}, DType::kBF16, TensorRole::kInput, "d");
  transpose_graph.Transpose(d, perm);
  p.local_ops.push_back(std::move(transpose_graph).Finish().value());
  testing::AddInstruction(p, InstructionKind::kRun, 2, {0, 1}, 0);
  testing::AddInstruction(p, InstructionKind::kRun, 3, {2}, 1);
  if (another_reader) p.local_ops.push_back(p.local_ops[1]);
  if (another_reader) testing::AddInstruction(p, InstructionKind::kRun, 4, {2}, 2);
  if (!persistent) testing::AddInstruction(p, InstructionKind::kFree, -1, {2});
  return p;
}

TEST(TransposedProductTest, OnlyAPairWhereTheTransposeAloneReadsTheDotAndSwapsItsDims) {
  const std::vector<char> none(4, 0);
  const DeviceProgram pair = DotThenTranspose({1, 0}, false, false);
  const std::vector<TransposedProduct> found =
      PlanTransposedProducts(pair, StorageDTypes(pair), none);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].dot_at, 0);
  EXPECT_EQ(found[0].transpose_at, 1);
  const FusionPlan plan = PlanFusion(pair, StorageDTypes(pair));
  EXPECT_TRUE(plan.skip[1]);  // the transpose
  EXPECT_TRUE(plan.skip[2]);  // the dot's result's kFree
  EXPECT_EQ(plan.product_at[0], 0);
  EXPECT_EQ(ReplayLifetimes(pair, plan), "");
  std::mt19937_64 rng(3);
  ExpectProductEqualsDotThenTranspose(pair, found[0], rng);

  for (const DeviceProgram& p :
       {DotThenTranspose({0, 1}, false, false), DotThenTranspose({1, 0}, true, false),
        DotThenTranspose({1, 0}, false, true)}) {
    EXPECT_TRUE(PlanTransposedProducts(p, StorageDTypes(p), none).empty()) << ProgramText(p);
  }
  // Replaced by an attention region: left to it.
  EXPECT_TRUE(PlanTransposedProducts(pair, StorageDTypes(pair), {1, 0, 0}).empty());
  // Turned off.
  ASSERT_EQ(setenv("ALPA_CUDA_TRANSPOSED_PRODUCTS", "0", 1), 0);
  EXPECT_TRUE(PlanFusion(pair, StorageDTypes(pair)).products.empty());
  ASSERT_EQ(unsetenv("ALPA_CUDA_TRANSPOSED_PRODUCTS"), 0);
}

}  // namespace
}  // namespace alpa::cuda
