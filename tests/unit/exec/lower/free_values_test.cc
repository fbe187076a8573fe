// Free values (made from constants alone) in a reader's layout (exec/lower/free_values.h): a
// tensor-parallel device makes its tile of a constant, of an elementwise op of constants and of
// their broadcasts directly, never the whole value then a slice; an iota's tile is made whole.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/ir/graph_builder.h"
#include "exec/lower/free_values.h"
#include "exec/program/program.h"
#include "support/small_plans.h"

namespace alpa {
namespace {

ShardingSpec SplitDim(size_t rank, size_t dim) {
  ShardingSpec s = ShardingSpec::Replicated(rank);
  s.dims[dim] = {0};
  return s;
}

TEST(FreeValuesTest, ConstantsElementwiseOpsAndBroadcastsTileAnIotaDoesNot) {
  GraphBuilder b;
  const int32_t scale = b.Constant(0.125, {4, 8, 8}, DType::kF32);
  const int32_t doubled = b.Add(scale, scale);
  const int32_t row = b.Iota({8}, DType::kF32, 0);
  const int32_t rows = b.BroadcastInDim(row, {4, 8, 8}, {2});
  const int32_t splat = b.Constant(1.0, {8}, DType::kF32);
  const int32_t plane = b.BroadcastInDim(splat, {4, 8, 8}, {1});
  b.AddOutput(doubled);
  b.AddOutput(rows);
  b.AddOutput(plane);
  Result<Graph> g = std::move(b).Finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Graph& graph = g.value();
  EXPECT_TRUE(FreeValueTiles(graph, scale, SplitDim(3, 0)));
  EXPECT_TRUE(FreeValueTiles(graph, doubled, SplitDim(3, 1)));
  // Split along a new dim of the broadcast: the iota is made whole, the broadcast tiled.
  EXPECT_TRUE(FreeValueTiles(graph, rows, SplitDim(3, 0)));
  // Split along the iota's own dim: its tile holds other values than its first rows.
  EXPECT_FALSE(FreeValueTiles(graph, rows, SplitDim(3, 2)));
  EXPECT_FALSE(FreeValueTiles(graph, row, SplitDim(1, 0)));
  EXPECT_TRUE(FreeValueTiles(graph, row, ShardingSpec::Replicated(1)));
  EXPECT_TRUE(FreeValueTiles(graph, plane, SplitDim(3, 1)));
  // Partial sums are never made directly.
  ShardingSpec partial = ShardingSpec::Replicated(3);
  partial.partial = {0};
  EXPECT_FALSE(FreeValueTiles(graph, scale, partial));

  const ShardingSpec back = BroadcastOperandLayout(graph.op(plane), {8}, SplitDim(3, 1));
  ASSERT_EQ(back.dims.size(), 1u);
  EXPECT_EQ(back.dims[0], std::vector<int32_t>{0});
  EXPECT_TRUE(BroadcastOperandLayout(graph.op(plane), {8}, SplitDim(3, 0)).IsReplicated());
}

// On a GPT split over 2 devices by heads, the attention's scale, mask fill and mask broadcast
// are made at the local [batch, heads / 2, seq, seq] shape: no device writes a value of the
// whole [batch, heads, seq, seq] shape, and no slice reads a constant.
TEST(FreeValuesTest, ATensorParallelGptMakesNoWholeScoreSizedConstant) {
  for (const std::string dtype : {"f32", "bf16"}) {
    Result<ProgramSet> programs = testing::LowerSmallModel(
        "gpt:layers=2,hidden=32,heads=4,seq=128,vocab=16,batch=16,adam_eps=1e-5,dtype=" + dtype, 2,
        1);
    ASSERT_TRUE(programs.ok()) << programs.status().message();
    ASSERT_EQ(programs.value().programs.size(), 2u);
    for (const DeviceProgram& p : programs.value().programs) {
      int64_t local_scores = 0;
      std::vector<char> from_constant(p.buffers.size(), 0);
      for (const Instruction& in : p.code) {
        if (in.kind == InstructionKind::kRun && in.out >= 0) {
          const OpKind kind = LocalOpOf(p, in).kind;
          from_constant[static_cast<size_t>(in.out)] = kind == OpKind::kConstant;
          const Dims& shape = p.buffers[static_cast<size_t>(in.out)].shape;
          EXPECT_NE(shape, (Dims{16, 4, 128, 128})) << dtype << ": " << InstructionText(p, in);
          local_scores += shape == Dims{16, 2, 128, 128} ? 1 : 0;
        }
        if (in.kind == InstructionKind::kSlice) {
          EXPECT_FALSE(from_constant[static_cast<size_t>(in.in[0])])
              << dtype << ": " << InstructionText(p, in);
        }
      }
      EXPECT_GT(local_scores, 0) << dtype << ": the scores are split by heads";
    }
  }
}

}  // namespace
}  // namespace alpa
