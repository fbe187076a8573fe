// Multi-output fusion (exec/cuda/group_merge.h), without a GPU: on a bf16 GPT's device program
// every weight's Adam update (the mean of its gradients over two microbatches, the new moments,
// the new master weight and its bf16 copy) is one kernel that stores the new state into its
// persistent buffers in place of the copies; each
// merged group's stores and root equal its ops and copies evaluated one by one; a replay of the
// program as the runner runs it finds every read's buffer live; and a result that another
// instruction reads is not merged.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "exec/cuda/fused_source.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/cuda/group_merge.h"
#include "exec/cuda/runtime_compiler.h"
#include "exec/cuda/storage_policy.h"
#include "exec/lower/lower_plan.h"
#include "fused_group_check.h"
#include "lifetime_replay.h"
#include "support/small_plans.h"

namespace alpa::cuda {
namespace {

// The persistent buffers a group writes (its stores' and its root's).
std::vector<std::string> PersistentWrites(const DeviceProgram& p, const FusedGroup& g) {
  std::vector<std::string> names;
  for (int32_t b : FusedGroupWrites(g)) {
    if (p.buffers[static_cast<size_t>(b)].persistent)
      names.push_back(p.buffers[static_cast<size_t>(b)].name);
  }
  return names;
}

TEST(GroupMergeTest, EachWeightsAdamUpdateIsOneKernelStoringItsNewState) {
  for (int64_t tp : {1, 2}) {
    Result<ProgramSet> programs = testing::LowerSmallModel(
        "gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=bf16,adam_eps=1e-5", tp);
    ASSERT_TRUE(programs.ok()) << programs.status().message();
    const DeviceProgram& p = programs.value().programs[0];
    const std::vector<DType> storage = StorageDTypes(p);
    const FusionPlan plan = PlanFusion(p, storage);
    // Per weight with Adam state: its m, v and master buffers.
    int64_t masters = 0;
    for (const Buffer& b : p.buffers) {
      if (b.persistent && b.name.size() > 7 && b.name.substr(b.name.size() - 7) == ".master") {
        ++masters;
      }
    }
    ASSERT_GT(masters, 0) << ProgramText(p);
    int64_t updates = 0;
    std::mt19937_64 rng(5);
    for (const FusedGroup& g : plan.groups) {
      if (g.stores.empty()) continue;
      // The new m, v and master stored where the copies would have put them; the root is the
      // bf16 weight (its copy into the parameter is handed over).
      const std::vector<std::string> names = PersistentWrites(p, g);
      ASSERT_EQ(names.size(), 3u) << "group at instruction " << g.root;
      const std::string weight = names[0].substr(0, names[0].rfind('.'));
      for (const char* suffix : {".m", ".v", ".master"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), weight + suffix), names.end())
            << weight << suffix << " in the group at instruction " << g.root;
      }
      EXPECT_EQ(g.nodes.back().storage, DType::kBF16) << weight;
      ++updates;
      ExpectGroupEqualsItsOps(p, g, rng);
    }
    EXPECT_EQ(updates, masters) << "tp " << tp;
    // The mean of the two microbatches' gradients is computed inside the update's kernel where
    // that kernel reads it (a weight's, read by a transpose to the weight's layout, is not).
    int64_t scales = 0, fused_scales = 0;
    for (size_t i = 0; i < p.code.size(); ++i) {
      if (p.code[i].kind != InstructionKind::kScale) continue;
      ++scales;
      fused_scales += plan.skip[i] ? 1 : 0;
      for (const FusedGroup& g : plan.groups) {
        if (g.stores.empty()) continue;
        EXPECT_EQ(std::count(g.inputs.begin(), g.inputs.end(), p.code[i].out), 0)
            << InstructionText(p, p.code[i]) << " is read by the update at " << g.root;
      }
    }
    EXPECT_GT(fused_scales, 0) << "tp " << tp << ": none of " << scales;
    EXPECT_EQ(ReplayLifetimes(p, plan), "") << "tp " << tp;
    for (const std::string& unit : FusedKernelsSource(plan.groups).units) {
      Result<std::string> cubin = CompileToCubin(unit, 9, 0, "merged groups");
      ASSERT_TRUE(cubin.ok()) << cubin.status().message() << "\n" << unit;
    }
  }
}

// Other families and optimizers (f32 and bf16, momentum, attention with grouped KV heads,
// experts, convolutions), tensor parallel on two: every merged group's stores and root equal its
// ops run one by one, the lifetimes replay, and some groups merge in each.
TEST(GroupMergeTest, MergedGroupsOfOtherModelsEqualTheirOps) {
  const std::vector<std::string> models = {
      "mlp:layers=2,hidden=16,batch=8",
      "mlp:layers=2,hidden=32,batch=8,dtype=bf16",
      "bert:layers=1,hidden=32,heads=2,seq=24,vocab=16,batch=4,dtype=bf16",
      "llama:hidden=16,heads=4,kv_heads=2,ffn=32,layers=1,seq=8,vocab=16,batch=4",
      "moe:hidden=16,layers=2,experts=2,heads=2,seq=8,vocab=16,batch=4",
      "wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=8,optimizer=momentum",
  };
  std::mt19937_64 rng(13);
  for (const std::string& model : models) {
    for (int64_t tp : {1, 2}) {
      Result<ProgramSet> programs = testing::LowerSmallModel(model, tp);
      ASSERT_TRUE(programs.ok()) << model << ": " << programs.status().message();
      for (const DeviceProgram& p : programs.value().programs) {
        const FusionPlan plan = PlanFusion(p, StorageDTypes(p));
        EXPECT_EQ(ReplayLifetimes(p, plan), "") << model << " tp " << tp;
        int64_t merged = 0;
        for (const FusedGroup& g : plan.groups) {
          if (g.stores.empty()) continue;
          ++merged;
          ExpectGroupEqualsItsOps(p, g, rng);
        }
        EXPECT_GT(merged, 0) << model << " tp " << tp << " device " << p.device;
      }
    }
  }
}

// b2 = b0 + b1 (b1 persistent state); b1 = copy(b2); [b3 = copy(b2) when `read_elsewhere`];
// b4 = b1 * b0: the sum is stored into b1 by the product's kernel, unless another instruction
// reads it.
DeviceProgram UpdateThenRead(bool read_elsewhere) {
  DeviceProgram p;
  testing::AddBuffers(p, 5, {64}, DType::kF32);
  p.buffers[1].persistent = true;
  const int32_t add = testing::AddElementwiseLocalOp(p, OpKind::kAdd, 2, {64}, DType::kF32);
  const int32_t mul = testing::AddElementwiseLocalOp(p, OpKind::kMul, 2, {64}, DType::kF32);
  testing::AddInstruction(p, InstructionKind::kFeed, 0, {});
  testing::AddInstruction(p, InstructionKind::kRun, 2, {0, 1}, add);
  testing::AddInstruction(p, InstructionKind::kCopy, 1, {2});
  if (read_elsewhere) testing::AddInstruction(p, InstructionKind::kCopy, 3, {2});
  testing::AddInstruction(p, InstructionKind::kFree, -1, {2});
  testing::AddInstruction(p, InstructionKind::kRun, 4, {1, 0}, mul);
  return p;
}

TEST(GroupMergeTest, AResultCopiedIntoItsStateIsStoredThereByItsOneReader) {
  const DeviceProgram p = UpdateThenRead(false);
  const FusionPlan plan = PlanFusion(p, StorageDTypes(p));
  ASSERT_EQ(plan.groups.size(), 1u);
  const FusedGroup& g = plan.groups[0];
  EXPECT_EQ(g.root, 4);
  EXPECT_EQ(g.members, (std::vector<int32_t>{1, 2}));  // the sum and the copy
  ASSERT_EQ(g.stores.size(), 1u);
  EXPECT_EQ(g.stores[0].buffer, 1);
  EXPECT_EQ(g.inputs, (std::vector<int32_t>{0, 1}));  // the old state, read before it is stored
  EXPECT_TRUE(plan.skip[3]);                          // the sum's temporary is never allocated
  EXPECT_EQ(ReplayLifetimes(p, plan), "");
  std::mt19937_64 rng(9);
  ExpectGroupEqualsItsOps(p, g, rng);

  const DeviceProgram read = UpdateThenRead(true);
  const FusionPlan alone = PlanFusion(read, StorageDTypes(read));
  ASSERT_EQ(alone.groups.size(), 2u);
  for (const FusedGroup& kept : alone.groups) EXPECT_TRUE(kept.stores.empty()) << kept.root;
}

}  // namespace
}  // namespace alpa::cuda
