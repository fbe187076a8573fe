// Issue 21, items 1 and 3: model-zoo specs whose sizes overflow int64 are refused with a
// message naming the op or the keys (they crashed, or printed negative PiB, before).
#include <gtest/gtest.h>

#include <string>

#include "core/ir/graph_stats.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

void ExpectRefused(const std::string& spec, StatusCode code, const std::string& words) {
  Result<Graph> g = BuildModel(spec);
  ASSERT_FALSE(g.ok()) << spec << " built";
  EXPECT_EQ(g.status().code(), code) << g.status().message();
  EXPECT_NE(g.status().message().find(words), std::string::npos) << g.status().message();
}

TEST(ModelSizeLimits, ModelsPast2To63BytesAreRefusedNamingTheOp) {
  ExpectRefused("mlp:hidden=2000000000,dtype=f16", StatusCode::kInvalidGraph, "'fc1.w'");
  ExpectRefused("gpt:hidden=1000000000,heads=1", StatusCode::kInvalidGraph, "'h0.mlp.fc1.w'");
  ExpectRefused("bert:hidden=1000000000,heads=1", StatusCode::kInvalidGraph, "'h0.mlp.fc1.w'");
  // Its optimizer state read "-2072.5 PiB" in `alpa graph`.
  ExpectRefused("gpt:hidden=100000000,heads=1", StatusCode::kInvalidGraph, "2^63");
}

TEST(ModelSizeLimits, DerivedSizesThatOverflowAreRefusedNamingTheKeys) {
  ExpectRefused("moe:mlp_ratio=4611686018427387904,layers=1", StatusCode::kInvalidArgument,
                "mlp_ratio * hidden");
  ExpectRefused("moe:batch=4611686018427387904,seq=4,layers=1", StatusCode::kInvalidArgument,
                "batch * seq");
  // 70 stages double the filters 69 times (a shift past 63 bits before): the weights pass
  // 2^63 bytes first.
  std::string stages = "1";
  for (int i = 1; i < 70; ++i) stages += "-1";
  ExpectRefused("wresnet:image=8,batch=1,channels=1,stages=" + stages, StatusCode::kInvalidGraph,
                "2^63");
}

// Found by fuzz_model_spec: an MoE routing op past the limit left a -1 id whose dims the next
// helper read (undefined behaviour under UBSan).
TEST(ModelSizeLimits, AFailedMoeRoutingOpIsAnError) {
  ExpectRefused("moe:hidden=16,layers=1,experts=2,heads=2,seq=7,batch=0710000000000000",
                StatusCode::kInvalidGraph, "2^63");
}

TEST(ModelSizeLimits, ALargeModelWithinTheLimitHasExactPositiveTotals) {
  // 7e11 parameters: 1.4 TB of f16 weights, sums well past 2^32 yet below 2^63.
  Result<Graph> g = BuildModel("gpt:hidden=100000,heads=1,layers=2,vocab=1000,seq=8,batch=1");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const GraphStats s = ComputeGraphStats(g.value());
  EXPECT_GT(s.parameter_count, int64_t{200000000000});
  EXPECT_EQ(s.parameter_bytes, 2 * s.parameter_count);  // f16
  // Adam: m and v and the f32 master copy, 12 bytes per parameter.
  EXPECT_EQ(s.optimizer_state_bytes, 12 * s.parameter_count + 4);  // + the f32 step counter
}

}  // namespace
}  // namespace alpa
