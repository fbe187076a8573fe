// The convolutions `alpa calibrate` times (exec/cuda/convolution_calibration.h), without a GPU:
// valid graphs, the cuDNN operation each maps onto (forward, or backward data for the input
// gradient), cuDNN's acceptance of its descriptors (where cuDNN 9 can be loaded), and the FLOPs
// as the planner counts them.
#include "exec/cuda/convolution_calibration.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/ir/graph_stats.h"
#include "exec/cuda/dnn_convolution.h"
#include "exec/cuda/dnn_convolution_geometry.h"
#include "exec/cuda/dnn_loader.h"

namespace alpa::cuda {
namespace {

TEST(ConvolutionCalibration, FourBf16CasesOnCudnnOperationsWithThePlannersFlops) {
  Result<std::vector<ConvolutionCalibrationCase>> cases = ConvolutionCalibrationCases(2);
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  ASSERT_EQ(cases.value().size(), 4u);
  const std::vector<DnnConvDirection> directions{
      DnnConvDirection::kForward, DnnConvDirection::kForward, DnnConvDirection::kBackwardData,
      DnnConvDirection::kForward};
  for (size_t i = 0; i < cases.value().size(); ++i) {
    const ConvolutionCalibrationCase& c = cases.value()[i];
    ASSERT_TRUE(ValidateGraph(c.graph).ok()) << c.name;
    EXPECT_EQ(c.graph.op(c.id).kind, OpKind::kConvolution) << c.name;
    EXPECT_EQ(c.graph.op(c.id).dtype, DType::kBF16) << c.name;
    EXPECT_EQ(c.flops, static_cast<double>(OpFlops(c.graph, c.id))) << c.name;
    Result<DnnConvGeometry> g = DnnConvGeometryFor(c.graph, c.id);
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.status().message();
    EXPECT_EQ(g.value().direction, directions[i]) << c.name;
    if (LoadDnn().ok()) {
      DnnConvRequest r;
      r.geometry = g.value();
      r.type = r.result_type = DType::kBF16;
      const Status accepted = CheckDnnConvolutionOperation(r, c.name);
      EXPECT_TRUE(accepted.ok()) << accepted.message();
    }
  }
  // The 3x3 forward convolution at batch 2: 2 x 256 x 28 x 28 outputs, each 256 x 9 products.
  EXPECT_EQ(cases.value()[0].flops, 2.0 * (2.0 * 256 * 28 * 28) * (256.0 * 9));
  EXPECT_EQ(cases.value()[0].name,
            "convolution 3x3 forward bf16 [2, 256, 28, 28] x [256, 256, 3, 3]");
  // The weight gradient's result is the kernel's shape with its first two dims swapped.
  EXPECT_EQ(cases.value()[3].graph.op(cases.value()[3].id).shape, (Dims{256, 256, 3, 3}));
  // The input gradient goes back to 28 x 28.
  EXPECT_EQ(cases.value()[2].graph.op(cases.value()[2].id).shape, (Dims{2, 256, 28, 28}));
}

TEST(ConvolutionCalibration, ABatchOutOfRangeIsRefused) {
  for (int64_t batch : {0, -1, 5000}) {
    Result<std::vector<ConvolutionCalibrationCase>> cases = ConvolutionCalibrationCases(batch);
    ASSERT_FALSE(cases.ok());
    EXPECT_EQ(cases.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(cases.status().message().find("batch must be in [1, 4096]"), std::string::npos);
  }
}

}  // namespace
}  // namespace alpa::cuda
