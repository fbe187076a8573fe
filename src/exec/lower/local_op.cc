#include "exec/lower/local_op.h"

#include <string>

namespace alpa {

Result<Graph> BuildLocalOp(const Graph& graph, int32_t id, const std::vector<Dims>& operand_shapes,
                           const Dims& result_shape) {
  const Op& global = graph.op(id);
  if (operand_shapes.size() != global.operands.size()) {
    return InternalError(DescribeOp(graph, id) + ": " + std::to_string(operand_shapes.size()) +
                         " local operand shapes for " + std::to_string(global.operands.size()) +
                         " operands");
  }
  Graph local;
  for (size_t k = 0; k < operand_shapes.size(); ++k) {
    const Op& src = graph.op(global.operands[k]);
    Op in;
    in.kind = OpKind::kParameter;
    in.shape = operand_shapes[k];
    in.dtype = src.dtype;
    in.role = TensorRole::kInput;
    in.name = src.name;
    local.ops.push_back(std::move(in));
  }
  Op op = global;
  for (size_t k = 0; k < op.operands.size(); ++k) op.operands[k] = static_cast<int32_t>(k);
  op.alias_of = -1;
  op.shape = result_shape;
  if (op.kind == OpKind::kSlice && !operand_shapes.empty()) {
    const Dims& in_shape = operand_shapes[0];
    const Dims& full = graph.op(global.operands[0]).shape;
    for (size_t d = 0; d < in_shape.size() && d < op.attrs.limits.size(); ++d) {
      if (in_shape[d] != full[d]) {
        op.attrs.starts[d] = 0;
        op.attrs.limits[d] = in_shape[d];
      }
    }
  }
  const int32_t local_id = local.size();
  Op inferred = op;
  Status s = InferOpType(local, local_id, inferred);
  if (!s.ok()) {
    return InternalError("the local computation of " + DescribeOp(graph, id) +
                         " does not fit its layouts: " + s.message());
  }
  if (inferred.shape != result_shape) {
    return InternalError("the local computation of " + DescribeOp(graph, id) + " gives " +
                         ShapeString(inferred.shape) + ", its layout holds " +
                         ShapeString(result_shape));
  }
  local.ops.push_back(std::move(inferred));
  local.outputs = {local_id};
  return local;
}

}  // namespace alpa
