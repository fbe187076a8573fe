// The moves the CUDA runner does by handing memory over (exec/cuda/buffer_handover.h), without
// a GPU: on the device programs of a bf16 GPT with Adam, the optimizer's new state goes into its
// persistent buffers without a copy; a replay of each program that swaps memory where the plan
// says, and tracks which buffer holds which block, finds every read of a buffer reading the
// block its value was written to; and a copy whose source is read again is copied.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/cuda/buffer_handover.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/cuda/storage_policy.h"
#include "support/small_plans.h"

namespace alpa::cuda {
namespace {

ProgramSet LowerGpt(const std::string& dtype, int64_t tensor_parallel) {
  Result<ProgramSet> programs = testing::LowerSmallModel(
      "gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=" + dtype, tensor_parallel);
  EXPECT_TRUE(programs.ok()) << programs.status().message();
  return programs.ok() ? std::move(programs).value() : ProgramSet{};
}

// Replays two steps of `p` as the runner runs it with `fusion` and `handover`, memory as block
// numbers: a write gives the buffer a new value (the block it holds, or a new one), a handover
// swaps or moves blocks. Returns an error for a read of a buffer whose block does not hold the
// value last written to the buffer, or empty.
std::string ReplayBlocks(const DeviceProgram& p, const FusionPlan& fusion,
                         const std::vector<char>& handover) {
  const size_t n = p.buffers.size();
  std::vector<int64_t> block(n, -1);     // per buffer: its block, -1 none
  std::vector<int64_t> value_of(n, -1);  // per buffer: the value it should hold
  std::vector<int64_t> holds;            // per block: the value it holds
  auto fresh_block = [&]() {
    holds.push_back(-1);
    return static_cast<int64_t>(holds.size()) - 1;
  };
  int64_t values = 0;
  for (size_t b = 0; b < n; ++b) {
    if (!p.buffers[b].persistent) continue;
    block[b] = fresh_block();
    value_of[b] = holds[static_cast<size_t>(block[b])] = values++;
  }
  for (int step = 0; step < 2; ++step) {
    for (size_t i = 0; i < p.code.size(); ++i) {
      if (!fusion.skip.empty() && fusion.skip[i]) continue;
      const Instruction& in = p.code[i];
      std::vector<int32_t> reads = in.in, writes = {in.out};
      if (!fusion.group_at.empty() && fusion.group_at[i] >= 0) {
        reads = fusion.groups[static_cast<size_t>(fusion.group_at[i])].inputs;
        writes = FusedGroupWrites(fusion.groups[static_cast<size_t>(fusion.group_at[i])]);
      }
      if (in.kind == InstructionKind::kFree) {
        block[static_cast<size_t>(in.in[0])] = -1;
        continue;
      }
      for (int32_t r : reads) {
        const size_t ur = static_cast<size_t>(r);
        if (block[ur] < 0 || holds[static_cast<size_t>(block[ur])] != value_of[ur]) {
          return "step " + std::to_string(step) + " instruction " + std::to_string(i) + " (" +
                 InstructionText(p, in) + ") reads buffer " + std::to_string(r) +
                 " without its value";
        }
      }
      if (in.out < 0) continue;
      if (handover[i]) {
        const size_t src = static_cast<size_t>(in.in[0]), out = static_cast<size_t>(in.out);
        std::swap(block[src], block[out]);  // a move when out holds none
        value_of[out] = value_of[src];
        value_of[src] = -1;
      } else {
        for (int32_t w : writes) {
          const size_t out = static_cast<size_t>(w);
          if (block[out] < 0) block[out] = fresh_block();
          value_of[out] = holds[static_cast<size_t>(block[out])] = values++;
        }
      }
      if (!fusion.free_after.empty()) {
        for (int32_t b : fusion.free_after[i]) block[static_cast<size_t>(b)] = -1;
      }
    }
  }
  return "";
}

TEST(BufferHandoverTest, TheOptimizersNewStateIsHandedOverAndEveryReadFindsItsValue) {
  for (const std::string dtype : {"bf16", "f32"}) {
    for (int64_t tp : {1, 2}) {
      const ProgramSet programs = LowerGpt(dtype, tp);
      ASSERT_EQ(static_cast<int64_t>(programs.programs.size()), tp);
      const DeviceProgram& p = programs.programs[0];
      const std::vector<DType> storage = StorageDTypes(p);
      for (bool fused : {false, true}) {
        const FusionPlan fusion = fused ? PlanFusion(p, storage) : FusionPlan{};
        const std::vector<char> handover = PlanHandovers(p, storage, fusion);
        int64_t copies = 0, handed = 0;
        for (size_t i = 0; i < p.code.size(); ++i) {
          const Instruction& in = p.code[i];
          if (in.kind != InstructionKind::kCopy) continue;
          ++copies;
          if (!fusion.skip.empty() && fusion.skip[i]) {
            ++handed;  // a merged group stores the value there itself
            continue;
          }
          if (!handover[i]) continue;
          ++handed;
          EXPECT_TRUE(p.buffers[static_cast<size_t>(in.out)].persistent ||
                      !p.buffers[static_cast<size_t>(in.in[0])].persistent);
        }
        const std::string where =
            dtype + " tp " + std::to_string(tp) + (fused ? " fused" : " unfused");
        // Adam's new m, v and parameters of every tensor: most copies need no kernel (handed
        // over, or replaced by a merged group's store).
        EXPECT_GT(copies, 0) << where;
        EXPECT_GT(handed * 2, copies) << where << ": " << handed << " of " << copies;
        EXPECT_EQ(ReplayBlocks(p, fusion, handover), "") << where;
      }
    }
  }
}

// b1 = copy(b0); b2 = neg(b0) when `read_again`; free b0.
DeviceProgram CopyThenRead(bool read_again) {
  DeviceProgram p;
  testing::AddBuffers(p, 3, {8}, DType::kF32);
  const int32_t neg = testing::AddElementwiseLocalOp(p, OpKind::kNeg, 1, {8}, DType::kF32);
  testing::AddInstruction(p, InstructionKind::kFeed, 0, {});
  testing::AddInstruction(p, InstructionKind::kCopy, 1, {0});
  if (read_again) testing::AddInstruction(p, InstructionKind::kRun, 2, {0}, neg);
  testing::AddInstruction(p, InstructionKind::kFree, -1, {0});
  return p;
}

TEST(BufferHandoverTest, ACopyWhoseSourceIsReadAgainIsCopied) {
  const DeviceProgram dies = CopyThenRead(false);
  EXPECT_EQ(PlanHandovers(dies, StorageDTypes(dies), FusionPlan{})[1], 1);
  const DeviceProgram read = CopyThenRead(true);
  EXPECT_EQ(PlanHandovers(read, StorageDTypes(read), FusionPlan{})[1], 0);
  // A source kept for the next step (never freed) is copied too.
  DeviceProgram kept = CopyThenRead(false);
  kept.code.pop_back();
  EXPECT_EQ(PlanHandovers(kept, StorageDTypes(kept), FusionPlan{})[1], 0);
}

}  // namespace
}  // namespace alpa::cuda
