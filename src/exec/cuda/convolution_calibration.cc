#include "exec/cuda/convolution_calibration.h"

#include <string>
#include <utility>
#include <vector>

#include "core/ir/graph_builder.h"
#include "core/ir/graph_stats.h"

namespace alpa {
namespace cuda {
namespace {

struct ConvShape {
  const char* what;
  Dims input, kernel;
  Dims strides, lo, hi, lhs_dilation;
};

Result<ConvolutionCalibrationCase> MakeCase(const ConvShape& s) {
  GraphBuilder b;
  const int32_t x = b.Parameter(s.input, DType::kBF16, TensorRole::kInput, "x");
  const int32_t w = b.Parameter(s.kernel, DType::kBF16, TensorRole::kParameter, "w");
  const int32_t y = b.Convolution(x, w, s.strides, s.lo, s.hi, s.lhs_dilation, Dims{1, 1});
  b.AddOutput(y);
  Result<Graph> graph = std::move(b).Finish();
  if (!graph.ok()) return graph.status();
  ConvolutionCalibrationCase c;
  c.name = std::string("convolution ") + s.what + " bf16 " + ShapeString(s.input) + " x " +
           ShapeString(s.kernel);
  c.id = y;
  // As the planner counts them, so that the efficiency prices its convolutions as measured.
  c.flops = static_cast<double>(OpFlops(graph.value(), y));
  c.graph = std::move(graph).value();
  return c;
}

}  // namespace

Result<std::vector<ConvolutionCalibrationCase>> ConvolutionCalibrationCases(int64_t batch) {
  if (batch < 1 || batch > 4096) {
    return InvalidArgument("convolution calibration: batch must be in [1, 4096] (got " +
                           std::to_string(batch) + ")");
  }
  const int64_t n = batch, c = 256;
  const std::vector<ConvShape> shapes{
      {"3x3 forward", {n, c, 28, 28}, {c, c, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {"1x1 forward", {n, 4 * c, 14, 14}, {c, 4 * c, 1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}},
      // The gradient of a 3x3 of stride 2 (padding 1) from 28 x 28 to 14 x 14, back to 28 x 28.
      {"3x3 stride-2 input gradient", {n, c, 14, 14}, {c, c, 3, 3}, {1, 1}, {1, 1}, {2, 2}, {2, 2}},
      // dW^T [C, K, 3, 3] = x^T [C, N, 28, 28] with dy^T [K, N, 28, 28] as the kernel.
      {"3x3 weight gradient", {c, n, 28, 28}, {c, n, 28, 28}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
  };
  std::vector<ConvolutionCalibrationCase> cases;
  for (const ConvShape& s : shapes) {
    Result<ConvolutionCalibrationCase> made = MakeCase(s);
    if (!made.ok()) return made.status();
    cases.push_back(std::move(made).value());
  }
  return cases;
}

}  // namespace cuda
}  // namespace alpa
