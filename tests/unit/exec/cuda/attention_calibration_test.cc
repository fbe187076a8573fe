// The attention `alpa calibrate` times (exec/cuda/attention_calibration.h), without a GPU: a shape
// the kernels compute, and flops equal to what the planner prices the products of the same
// attention at in a GPT layer's graph under a calibration that measured the kernels (so that the
// fitted efficiency, priced back, gives the measured time).
#include "exec/cuda/attention_calibration.h"

#include <gtest/gtest.h>

#include <string>

#include "core/ir/attention_core.h"
#include "models/model_zoo.h"
#include "solvers/auto_sharding/op_strategies.h"

namespace alpa::cuda {
namespace {

TEST(AttentionCalibration, TheCaseHasThePlannersFlopsForTheSameAttention) {
  Result<AttentionCalibrationCase> made = AttentionCalibrationCaseFor(2);
  ASSERT_TRUE(made.ok()) << made.status().message();
  const AttentionCalibrationCase& c = made.value();
  EXPECT_EQ(AttentionUnsupportedReason(c.shape), "");
  EXPECT_TRUE(c.shape.causal);
  EXPECT_EQ(c.shape.storage, DType::kBF16);
  EXPECT_EQ(c.name, "attention causal bf16 [batch 2, heads 32, seq 2048, head_dim 128]");

  Result<Graph> g =
      BuildModel("gpt:layers=1,embed=0,hidden=4096,heads=32,seq=2048,batch=2,dtype=bf16");
  ASSERT_TRUE(g.ok()) << g.status().message();
  Calibration calibration;
  calibration.fuse_attention = true;
  calibration.attention_efficiency = 0.4;
  const PricedTraffic priced = TrafficPricedBy(g.value(), calibration);
  ASSERT_EQ(priced.attention_work.size(), static_cast<size_t>(g.value().size()));
  double forward = 0, backward = 0;
  for (int32_t id = 0; id < g.value().size(); ++id) {
    const PricedFlops p = FlopsPricedFor(
        g.value(), id, AttentionWorkOf(priced.attention_work, static_cast<size_t>(id)));
    if (p.cls != ComputeClass::kAttention) continue;
    (g.value().op(id).phase == Phase::kForward ? forward : backward) += p.flops;
  }
  EXPECT_EQ(forward, c.forward_flops);
  EXPECT_EQ(backward, c.backward_flops);
  // Q K^T at 2 sequences, 32 heads, 2048 x 2048 scores of 128-long dot products, half of them.
  EXPECT_EQ(c.forward_flops, 2 * 0.5 * 2.0 * (2.0 * 32 * 2048 * 2048) * 128);
  EXPECT_EQ(c.backward_flops, 2 * c.forward_flops);

  // Without the kernels measured (or without fuse_attention) every product is a matmul.
  calibration.attention_efficiency = 0;
  EXPECT_TRUE(TrafficPricedBy(g.value(), calibration).attention_work.empty());
  calibration.attention_efficiency = 0.4;
  calibration.fuse_attention = false;
  EXPECT_TRUE(TrafficPricedBy(g.value(), calibration).attention_work.empty());
}

TEST(AttentionCalibration, ABatchOutOfRangeIsRefused) {
  for (int64_t batch : {0, -3, 65}) {
    Result<AttentionCalibrationCase> made = AttentionCalibrationCaseFor(batch);
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(made.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(made.status().message().find("batch must be in [1, 64]"), std::string::npos);
  }
}

}  // namespace
}  // namespace alpa::cuda
