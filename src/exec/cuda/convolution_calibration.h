// The convolutions `alpa calibrate` times (calibration.h): a wide ResNet block's convolutions in
// bf16, forward and backward, as the runner runs them (LaunchOp: cuDNN, dnn_convolution.h), so
// that the calibration's `convolution` efficiency is what the runner reaches on them.
// Host code: the cases are made and checked without a GPU; calibration.cu times them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {
namespace cuda {

struct ConvolutionCalibrationCase {
  std::string name;  // e.g. "convolution 3x3 forward bf16 [64, 256, 28, 28] x [256, 256, 3, 3]"
  Graph graph;       // the operands (parameters), then the convolution
  int32_t id = -1;   // the convolution
  // As the planner counts them (OpFlops, core/ir/graph_stats.h): the input gradient's count
  // includes the input dilation's holes (4x the products cuDNN computes at stride 2), as the
  // planner prices that op.
  double flops = 0;
};

// The cases at `batch` images of 28 x 28 (a wide ResNet's third stage, 256 channels):
//  - a 3x3 forward convolution (padding 1) and a 1x1 one (1024 to 256 channels, 14 x 14);
//  - the input gradient of a strided 3x3 (an input dilation: cuDNN's backward data);
//  - the weight gradient of a 3x3 as autodiff writes it (a forward convolution of the input
//    and the output gradient with their batch and feature dims swapped).
// InvalidArgument for a batch that is not positive or beyond 4,096.
Result<std::vector<ConvolutionCalibrationCase>> ConvolutionCalibrationCases(int64_t batch);

}  // namespace cuda
}  // namespace alpa
