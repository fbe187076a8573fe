// Which free values a device computes directly in a reader's layout (see free_values.h).
#include "exec/lower/free_values.h"

namespace alpa {

ShardingSpec BroadcastOperandLayout(const Op& b, const Dims& operand_shape,
                                    const ShardingSpec& want) {
  ShardingSpec back;
  back.dims.assign(operand_shape.size(), {});
  back.partial = want.partial;
  for (size_t i = 0; i < operand_shape.size() && i < b.attrs.dims.size(); ++i) {
    const size_t od = static_cast<size_t>(b.attrs.dims[i]);
    if (od < b.shape.size() && od < want.dims.size() && operand_shape[i] == b.shape[od]) {
      back.dims[i] = want.dims[od];
    }
  }
  return back;
}

bool FreeValueTiles(const Graph& graph, int32_t id, const ShardingSpec& want) {
  if (id < 0 || id >= graph.size() || !want.partial.empty()) return false;
  if (want.IsReplicated()) return true;
  const Op& op = graph.op(id);
  if (op.kind == OpKind::kConstant) return true;
  if (op.kind == OpKind::kBroadcastInDim) {
    if (op.operands.size() != 1) return false;
    const int32_t x = op.operands[0];
    if (x < 0 || x >= graph.size()) return false;
    return FreeValueTiles(graph, x, BroadcastOperandLayout(op, graph.op(x).shape, want));
  }
  if (!IsElementwise(op.kind)) return false;
  for (int32_t x : op.operands) {
    if (x < 0 || x >= graph.size() || graph.op(x).shape != op.shape) return false;
    if (!FreeValueTiles(graph, x, want)) return false;
  }
  return true;
}

}  // namespace alpa
