#include "exec/runtime/runner_inputs.h"

#include <string>

#include "exec/runtime/tensor_boxes.h"

namespace alpa {

Result<const HostTensor*> CheckedParameterValue(const ParameterValue& value, const Graph& graph,
                                                int32_t tensor, int32_t device) {
  const HostTensor* full = value(tensor);
  if (full == nullptr) {
    return InvalidArgument("device " + std::to_string(device) + ": no value for " +
                           DescribeOp(graph, tensor));
  }
  const Dims& shape = graph.op(tensor).shape;
  if (full->shape != shape || full->size() != ElementCountOf(shape)) {
    return InvalidArgument("the value for " + DescribeOp(graph, tensor) + " has shape " +
                           ShapeString(full->shape) + ", expected " + ShapeString(shape));
  }
  return full;
}

Result<const HostTensor*> CheckedMicrobatchInput(const MicrobatchInput& input, const Graph& graph,
                                                 int32_t tensor, int64_t microbatch,
                                                 const std::vector<int64_t>& offsets,
                                                 const std::vector<int64_t>& sizes) {
  const HostTensor* full = input(tensor, microbatch);
  if (full == nullptr) {
    return InvalidArgument("no data for " + DescribeOp(graph, tensor) + " in microbatch " +
                           std::to_string(microbatch));
  }
  if (!BoxInside(full->shape, offsets, sizes) || full->size() != ElementCountOf(full->shape)) {
    return InvalidArgument("the data for " + DescribeOp(graph, tensor) + " has shape " +
                           ShapeString(full->shape) + ", expected " +
                           ShapeString(graph.op(tensor).shape));
  }
  return full;
}

}  // namespace alpa
