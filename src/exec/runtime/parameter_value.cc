#include "exec/runtime/parameter_value.h"

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

}  // namespace alpa
