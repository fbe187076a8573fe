// Materialised results under elementwise fusion: what a fused chain writes to memory.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "core/ir/fusion.h"
#include "core/ir/graph_builder.h"
#include "core/ir/transposed_product.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

TEST(FusionTest, AChainWritesOnlyWhatLeavesIt) {
  GraphBuilder b;
  const int32_t x = b.Parameter({8, 16}, DType::kF32, TensorRole::kInput, "x");
  const int32_t w = b.Parameter({16, 4}, DType::kF32, TensorRole::kParameter, "w");
  const int32_t e = b.Unary(OpKind::kExp, x);               // read only by the add
  const int32_t c = b.Constant(1.0, {8, 16}, DType::kF32);  // an inline fill
  const int32_t s = b.Add(e, c);                            // read by the dot
  const int32_t y = b.MatMul(s, w);                         // not fusible
  const int32_t sq = b.Mul(y, y);                           // read only by the reduction
  const int32_t loss = b.ReduceSum(sq, {0, 1});             // the fusion's root, an output
  b.AddOutput(loss);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::vector<bool> m = MaterializedResults(g.value());
  EXPECT_TRUE(m[static_cast<size_t>(x)]);  // parameters live in memory
  EXPECT_TRUE(m[static_cast<size_t>(w)]);
  EXPECT_FALSE(m[static_cast<size_t>(e)]);
  EXPECT_FALSE(m[static_cast<size_t>(c)]);
  EXPECT_TRUE(m[static_cast<size_t>(s)]);  // a matmul reads it from memory
  EXPECT_TRUE(m[static_cast<size_t>(y)]);
  EXPECT_FALSE(m[static_cast<size_t>(sq)]);
  EXPECT_TRUE(m[static_cast<size_t>(loss)]);
}

TEST(FusionTest, ValuesKeptForAnotherPhaseAreWritten) {
  GraphBuilder b;
  const int32_t x = b.Parameter({8}, DType::kF32, TensorRole::kInput, "x");
  const int32_t t = b.Unary(OpKind::kTanh, x);  // read by the backward pass
  const int32_t f = b.Mul(t, t);
  b.set_phase(Phase::kBackward);
  const int32_t g = b.Mul(t, x);
  b.AddOutput(f);
  b.AddOutput(g);
  Result<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const std::vector<bool> m = MaterializedResults(graph.value());
  EXPECT_TRUE(m[static_cast<size_t>(t)]);
  EXPECT_TRUE(m[static_cast<size_t>(f)]);
  EXPECT_TRUE(m[static_cast<size_t>(g)]);
}

TEST(FusionTest, ConstantsAndBroadcastsReadInAnotherPhaseAreRegenerated) {
  // The attention pattern: a scale (a splat constant) and a softmax denominator broadcast to
  // [rows, cols] are read again by the backward pass. A backward fusion makes the splat again
  // and broadcasts the stored [rows] sums again: neither [rows, cols] value is written, the
  // sums are.
  GraphBuilder b;
  const int32_t x = b.Parameter({8, 16}, DType::kF32, TensorRole::kInput, "x");
  const int32_t scale = b.Constant(0.5, {8, 16}, DType::kF32);
  const int32_t scaled = b.Mul(x, scale);
  const int32_t e = b.Unary(OpKind::kExp, scaled);
  const int32_t sums = b.ReduceSum(e, {1});
  const int32_t wide = b.BroadcastInDim(sums, {8, 16}, {0});
  const int32_t p = b.Div(e, wide);
  b.set_phase(Phase::kBackward);
  const int32_t g = b.Mul(b.Div(p, wide), scale);
  b.AddOutput(p);
  b.AddOutput(g);
  Result<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const std::vector<bool> m = MaterializedResults(graph.value());
  EXPECT_FALSE(m[static_cast<size_t>(scale)]);
  EXPECT_FALSE(m[static_cast<size_t>(wide)]);
  EXPECT_TRUE(m[static_cast<size_t>(sums)]);  // what the backward broadcasts again
  EXPECT_TRUE(m[static_cast<size_t>(p)]);     // read by the backward: written
  EXPECT_FALSE(m[static_cast<size_t>(scaled)]);
}

TEST(FusionTest, AFusionReadsEachMaterialisedValueOnce) {
  // exp(x) * x is one fusion reading x once; the dot reads x in a kernel of its own, and
  // y * y reads y once.
  GraphBuilder b;
  const int32_t x = b.Parameter({8, 8}, DType::kF32, TensorRole::kInput, "x");
  const int32_t e = b.Unary(OpKind::kExp, x);
  const int32_t ex = b.Mul(e, x);
  const int32_t y = b.MatMul(x, ex);
  const int32_t yy = b.Mul(y, y);
  b.AddOutput(yy);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::vector<bool> m = MaterializedResults(g.value());
  const std::vector<std::vector<bool>> charged = ChargedReads(g.value(), m);
  EXPECT_EQ(charged[static_cast<size_t>(e)], std::vector<bool>({true}));
  EXPECT_EQ(charged[static_cast<size_t>(ex)], std::vector<bool>({false, false}));
  EXPECT_EQ(charged[static_cast<size_t>(y)], std::vector<bool>({true, true}));
  EXPECT_EQ(charged[static_cast<size_t>(yy)], std::vector<bool>({true, false}));
}

TEST(FusionTest, ASplatReadByTwoChainsDoesNotJoinThem) {
  // Both chains read x and the same constant; the constant is made again inside each, so each
  // chain is a kernel of its own and reads x.
  GraphBuilder b;
  const int32_t x = b.Parameter({8}, DType::kF32, TensorRole::kInput, "x");
  const int32_t c = b.Constant(2.0, {8}, DType::kF32);
  const int32_t first = b.Mul(x, c);
  const int32_t second = b.Add(x, c);
  b.AddOutput(first);
  b.AddOutput(second);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::vector<std::vector<bool>> charged =
      ChargedReads(g.value(), MaterializedResults(g.value()));
  EXPECT_TRUE(charged[static_cast<size_t>(first)][0]);
  EXPECT_TRUE(charged[static_cast<size_t>(second)][0]);
}

// The single-reader model (libalpa's CUDA runner): a value stays in registers only where its
// readers are in one kernel (`scaled` is read by two); a splat or a broadcast for every
// elementwise reader; a row reduction takes in a chain only with 2,048 rows or more; exp ending
// in f32 is not on the runner's float path.
TEST(FusionTest, SingleReaderFusionWritesAValueReadByTwoKernels) {
  GraphBuilder b;
  const int32_t x = b.Parameter({4096, 16}, DType::kBF16, TensorRole::kInput, "x");
  const int32_t v = b.Parameter({4096}, DType::kBF16, TensorRole::kInput, "v");
  const int32_t scale = b.Constant(0.5, {4096, 16}, DType::kBF16);
  const int32_t scaled = b.Mul(x, scale);  // read by the sum's kernel and by wide's: written
  const int32_t shifted = b.Sub(scaled, b.BroadcastInDim(v, {4096, 16}, {0}));
  const int32_t e = b.Unary(OpKind::kExp, shifted);  // bf16 exp: inside the sum's kernel
  const int32_t sum = b.ReduceSum(e, {1});           // 4,096 rows: a fused root
  const int32_t twice = b.Add(scaled, scaled);       // the second reader of `scaled`
  const int32_t wide = b.Convert(twice, DType::kF32);
  const int32_t ef = b.Unary(OpKind::kExp, wide);  // exp ending in f32: alone
  b.AddOutput(sum);
  b.AddOutput(ef);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::vector<bool> m = SingleReaderMaterializedResults(g.value());
  EXPECT_FALSE(m[static_cast<size_t>(scale)]);  // a splat made in each reader
  EXPECT_TRUE(m[static_cast<size_t>(scaled)]);
  EXPECT_FALSE(m[static_cast<size_t>(shifted)]);
  EXPECT_FALSE(m[static_cast<size_t>(e)]);
  EXPECT_TRUE(m[static_cast<size_t>(sum)]);
  EXPECT_FALSE(m[static_cast<size_t>(twice)]);
  EXPECT_TRUE(m[static_cast<size_t>(wide)]);  // read by an op that runs alone
  EXPECT_TRUE(m[static_cast<size_t>(ef)]);
  // The XLA-style model keeps `scaled` in registers for both readers.
  EXPECT_FALSE(MaterializedResults(g.value())[static_cast<size_t>(scaled)]);
}

// n = neg(x) is read twice inside z's kernel (by a and by m): computed there once, never
// written. z is read by two kernels (o1's and o2's): written. The same holds for a chain that
// ends in a row reduction (n2 read twice inside the sum's kernel).
TEST(FusionTest, SingleReaderFusionKeepsAValueReadTwiceInOneKernel) {
  GraphBuilder b;
  const int32_t x = b.Parameter({4096, 16}, DType::kBF16, TensorRole::kInput, "x");
  const int32_t y = b.Parameter({4096, 16}, DType::kBF16, TensorRole::kInput, "y");
  const int32_t n = b.Unary(OpKind::kNeg, x);
  const int32_t a = b.Add(n, y);
  const int32_t m = b.Mul(n, y);
  const int32_t z = b.Mul(a, m);
  const int32_t o1 = b.Unary(OpKind::kNeg, z);
  const int32_t o2 = b.Unary(OpKind::kAbs, z);
  const int32_t n2 = b.Unary(OpKind::kNeg, y);
  const int32_t sum = b.ReduceSum(b.Mul(n2, b.Add(n2, x)), {1});
  b.AddOutput(o1);
  b.AddOutput(o2);
  b.AddOutput(sum);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::vector<bool> written = SingleReaderMaterializedResults(g.value());
  EXPECT_FALSE(written[static_cast<size_t>(n)]);
  EXPECT_FALSE(written[static_cast<size_t>(a)]);
  EXPECT_FALSE(written[static_cast<size_t>(m)]);
  EXPECT_TRUE(written[static_cast<size_t>(z)]);
  EXPECT_FALSE(written[static_cast<size_t>(n2)]);
  EXPECT_TRUE(written[static_cast<size_t>(sum)]);
  // z's kernel reads y once: a pays for it, m does not.
  const std::vector<std::vector<bool>> charged = ChargedReads(g.value(), written);
  EXPECT_TRUE(charged[static_cast<size_t>(n)][0]);
  EXPECT_TRUE(charged[static_cast<size_t>(a)][1]);
  EXPECT_FALSE(charged[static_cast<size_t>(m)][1]);
}

TEST(FusionTest, SingleReaderFusionLeavesFewRowsToTheReduceKernels) {
  GraphBuilder b;
  const int32_t x = b.Parameter({1024, 16}, DType::kF32, TensorRole::kInput, "x");
  const int32_t sq = b.Mul(x, x);
  const int32_t sum = b.ReduceSum(sq, {1});  // 1,024 rows: the reduce kernels read `sq`
  b.AddOutput(sum);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(SingleReaderMaterializedResults(g.value())[static_cast<size_t>(sq)]);
  EXPECT_FALSE(MaterializedResults(g.value())[static_cast<size_t>(sq)]);
}

// A group whose inputs would outlive their last reader by more bytes than its members save runs
// its ops alone, as the runner's Keepable decides. m = a1 + a2 is read once, by z = m * p3; a1
// and a2 are read last by m, so fusing m into z keeps both alive until z (16 KiB) to save m
// (8 KiB): m is written. With p2 (a parameter, alive anyway) in place of a2, 8 KiB are held to
// save 8 KiB: m stays in registers.
TEST(FusionTest, SingleReaderFusionDropsAGroupThatHoldsMoreThanItSaves) {
  for (const bool second_is_parameter : {false, true}) {
    GraphBuilder b;
    const int32_t p1 = b.Parameter({64, 32}, DType::kF32, TensorRole::kInput, "p1");
    const int32_t p2 = b.Parameter({64, 32}, DType::kF32, TensorRole::kInput, "p2");
    const int32_t p3 = b.Parameter({64, 32}, DType::kF32, TensorRole::kInput, "p3");
    const int32_t a1 = b.Unary(OpKind::kNeg, p1);
    const int32_t o1 = b.Unary(OpKind::kAbs, a1);  // a1's first reader: a1 is written
    const int32_t a2 = b.Unary(OpKind::kNeg, p2);
    const int32_t o2 = b.Unary(OpKind::kAbs, a2);
    const int32_t m = b.Add(a1, second_is_parameter ? p2 : a2);
    const int32_t z = b.Mul(m, p3);
    b.AddOutput(o1);
    b.AddOutput(o2);
    b.AddOutput(z);
    Result<Graph> g = std::move(b).Finish();
    ASSERT_TRUE(g.ok()) << g.status().message();
    const std::vector<bool> written = SingleReaderMaterializedResults(g.value());
    EXPECT_EQ(written[static_cast<size_t>(m)], !second_is_parameter) << second_is_parameter;
    EXPECT_TRUE(written[static_cast<size_t>(a1)]);
  }
}

// A chain of 200,001 elementwise ops (a graph file may hold one): no deep recursion, one pass
// to find it too large for one kernel, and every op of it then runs alone, each merged into its
// one reader while the kernel stays within kMaxFusedGroupNodes values (a load and 47 ops), as in
// the runner: one value in 47 is written.
TEST(FusionTest, SingleReaderFusionOfAVeryLongChainRunsInKernelsWithinTheLimits) {
  GraphBuilder b;
  int32_t x = b.Parameter({64}, DType::kF32, TensorRole::kInput, "x");
  const int32_t first = b.Unary(OpKind::kNeg, x);
  x = first;
  for (int i = 0; i < 200000; ++i) x = b.Unary(OpKind::kNeg, x);
  b.AddOutput(x);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::vector<bool> m = SingleReaderMaterializedResults(g.value());
  int64_t written = 0;
  for (int32_t id = first; id <= x; ++id) written += m[static_cast<size_t>(id)] ? 1 : 0;
  EXPECT_EQ(written, (200001 + 46) / 47);
  EXPECT_FALSE(m[static_cast<size_t>(first)]);
  EXPECT_TRUE(m[static_cast<size_t>(x)]);
}

// Adam's update of one weight, as the runner merges it (exec/cuda/group_merge.h): the new
// moments m1 and v1 are read only by the new master weight's kernel, which only the bf16
// copy's reads: one kernel computes all four, writes each (they replace parameters) and reads
// m1 and v1 from registers, the gradient g once. `g2` (g * g, read only inside v1's group) is
// never written.
TEST(FusionTest, SingleReaderFusionMergesAWeightsUpdateIntoOneKernel) {
  GraphBuilder b;
  const Dims shape = {4096, 64};
  const int32_t g = b.Parameter(shape, DType::kF32, TensorRole::kGradient, "g");
  const int32_t w = b.Parameter(shape, DType::kF32, TensorRole::kOptimizerState, "w.master");
  const int32_t m = b.Parameter(shape, DType::kF32, TensorRole::kOptimizerState, "w.m");
  const int32_t v = b.Parameter(shape, DType::kF32, TensorRole::kOptimizerState, "w.v");
  const int32_t w16 = b.Parameter(shape, DType::kBF16, TensorRole::kParameter, "w");
  const int32_t m1 = b.Add(b.Mul(m, b.Constant(0.9, shape, DType::kF32)),
                           b.Mul(g, b.Constant(0.1, shape, DType::kF32)));
  const int32_t g2 = b.Mul(g, g);
  const int32_t v1 = b.Add(b.Mul(v, b.Constant(0.999, shape, DType::kF32)),
                           b.Mul(g2, b.Constant(0.001, shape, DType::kF32)));
  const int32_t step =
      b.Div(m1, b.Add(b.Unary(OpKind::kSqrt, v1), b.Constant(1e-8, shape, DType::kF32)));
  const int32_t w1 = b.Sub(w, b.Mul(step, b.Constant(1e-3, shape, DType::kF32)));
  const int32_t w16_1 = b.Convert(w1, DType::kBF16);
  for (const auto& [update, parameter] : {std::pair{m1, m}, {v1, v}, {w1, w}, {w16_1, w16}}) {
    b.SetAlias(update, parameter);
    b.AddOutput(update);
  }
  Result<Graph> built = std::move(b).Finish();
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph& graph = built.value();
  const SingleReaderFusion fusion = PlanSingleReaderFusion(graph);
  for (int32_t x : {m1, v1, w1, w16_1}) {
    EXPECT_TRUE(fusion.materialized[static_cast<size_t>(x)]) << x;
    EXPECT_EQ(fusion.kernel_of[static_cast<size_t>(x)], w16_1) << x;
  }
  EXPECT_FALSE(fusion.materialized[static_cast<size_t>(g2)]);
  EXPECT_FALSE(fusion.materialized[static_cast<size_t>(step)]);
  // Paid reads: g, m, v and w once each; m1 and v1 come from registers.
  const std::vector<std::vector<bool>> charged =
      ChargedReads(graph, fusion.materialized, fusion.kernel_of);
  int64_t paid = 0;
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    for (size_t k = 0; k < op.operands.size(); ++k) {
      if (!charged[static_cast<size_t>(id)][k]) continue;
      ++paid;
      EXPECT_NE(op.operands[k], m1) << id;
      EXPECT_NE(op.operands[k], v1) << id;
      EXPECT_NE(op.operands[k], w1) << id;
    }
  }
  EXPECT_EQ(paid, 4);
  // Over the fusions joined by unwritten values alone (no kernels given), m1 is read again.
  EXPECT_TRUE(ChargedReads(graph, fusion.materialized)[static_cast<size_t>(step)][0]);
}

// The CUDA runner computes transpose(dot(a, b)) swapping the dot's free dims as dot(b, a)
// (exec/cuda/transposed_product.h): its replay never writes such a dot's own result, and the
// transpose reads nothing (the product's operands are read by the dot, the result written once).
TEST(FusionTest, SingleReaderFusionNeverWritesAProductTheRunnerComputesTransposed) {
  GraphBuilder b;
  const int32_t x = b.Parameter({4, 6}, DType::kBF16, TensorRole::kInput, "x");
  const int32_t g = b.Parameter({4, 5}, DType::kBF16, TensorRole::kInput, "g");
  DotDims dims;  // dW^T = x^T g: [6, 5], contracting the 4 rows
  dims.lhs_contracting = {0};
  dims.rhs_contracting = {0};
  const int32_t dot = b.DotGeneral(x, g, dims);
  const int32_t dw = b.Transpose(dot, {1, 0});
  const int32_t kept = b.DotGeneral(x, g, dims);  // also read as it is: written
  const int32_t twice = b.Add(b.Transpose(kept, {1, 0}), b.Transpose(kept, {1, 0}));
  b.AddOutput(dw);
  b.AddOutput(twice);
  Result<Graph> built = std::move(b).Finish();
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph& graph = built.value();
  EXPECT_TRUE(TransposeSwapsProduct(graph.op(dot), graph, graph.op(dw)));
  EXPECT_EQ(SwappedDotDims(dims).lhs_contracting, (Dims{0}));
  const std::vector<bool> transposed = ProductsReadTransposed(graph);
  EXPECT_TRUE(transposed[static_cast<size_t>(dot)]);
  EXPECT_FALSE(transposed[static_cast<size_t>(kept)]);
  const std::vector<bool> single = PricedResults(graph, ElementwiseFusion::kSingleReader, false);
  EXPECT_FALSE(single[static_cast<size_t>(dot)]);
  EXPECT_TRUE(single[static_cast<size_t>(dw)]);
  EXPECT_TRUE(single[static_cast<size_t>(kept)]);
  EXPECT_TRUE(PricedResults(graph, ElementwiseFusion::kXla, false)[static_cast<size_t>(dot)]);

  // A GPT's weight matrices: each gradient is such a product (4 a layer); nothing else is.
  Result<Graph> gpt = BuildModel("gpt:layers=2,hidden=32,heads=4,seq=16,vocab=64,batch=2");
  ASSERT_TRUE(gpt.ok()) << gpt.status().message();
  int products = 0;
  const std::vector<bool> gpt_transposed = ProductsReadTransposed(gpt.value());
  for (int32_t id = 0; id < gpt.value().size(); ++id) {
    if (!gpt_transposed[static_cast<size_t>(id)]) continue;
    ++products;
    EXPECT_EQ(gpt.value().op(id).phase, Phase::kBackward) << id;
  }
  EXPECT_EQ(products, 2 * 4);
}

}  // namespace
}  // namespace alpa
