// The per-element math of the CUDA backend's gather and scatter_add for the host and the
// device: element e of gather's result (or of scatter_add's updates), of shape
// x[:axis] ++ indices ++ x[axis+1:], reads (or adds to) one row of the table, the index clamped
// into the whole axis; on a device that holds rows [axis_offset, axis_offset + rows) of a split
// axis of axis_size rows, an index outside them reads zero (adds nothing), as in
// exec/runtime/masked_indexing.cc.
#pragma once

#include <cstdint>

#include "core/ir/graph.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/strided_index.h"

namespace alpa {
namespace cuda {

struct IndexingArgs {
  const void* indices = nullptr;
  DType index_storage = DType::kS32;
  int64_t outer = 1, rows = 1, inner = 1;  // the table's shape around the axis (local rows)
  int64_t index_count = 0;
  int64_t axis_offset = 0, axis_size = 1;  // the whole axis: offset 0, size == rows
};

// The local row of a global index, or -1 when another device holds it.
ALPA_HD int64_t LocalRowOf(double index, int64_t axis_offset, int64_t rows, int64_t axis_size) {
  int64_t row = 0;
  if (index > 0.0) {  // also NaN -> 0
    row = index >= static_cast<double>(axis_size - 1) ? axis_size - 1 : static_cast<int64_t>(index);
  }
  row -= axis_offset;
  return row >= 0 && row < rows ? row : -1;
}

// The table offset element e reads / adds to, or -1 (a row of another device).
ALPA_HD int64_t IndexedTableOffset(const IndexingArgs& a, int64_t e) {
  const int64_t k = e % a.inner;
  const int64_t rest = e / a.inner;
  const int64_t j = rest % a.index_count;
  const int64_t o = rest / a.index_count;
  const int64_t row =
      LocalRowOf(LoadElement(a.indices, a.index_storage, j), a.axis_offset, a.rows, a.axis_size);
  return row < 0 ? -1 : (o * a.rows + row) * a.inner + k;
}

// gather / scatter_add op `id` (table: operand 0, indices: operand 1) with the launch's split;
// axis_size < 0: the axis is not split. The caller sets the indices pointer.
inline IndexingArgs IndexingArgsFor(const Graph& graph, int32_t id, int64_t axis_offset,
                                    int64_t axis_size) {
  const Op& op = graph.op(id);
  const Dims& x = graph.op(op.operands[0]).shape;
  const size_t axis = static_cast<size_t>(op.attrs.axis);
  IndexingArgs a;
  for (size_t i = 0; i < axis; ++i) a.outer *= x[i];
  a.rows = x[axis];
  for (size_t i = axis + 1; i < x.size(); ++i) a.inner *= x[i];
  a.index_count = ElementsOf(graph.op(op.operands[1]).shape);
  a.index_storage = graph.op(op.operands[1]).dtype;
  if (axis_size < 0) {
    a.axis_offset = 0;
    a.axis_size = a.rows;
  } else {
    a.axis_offset = axis_offset;
    a.axis_size = axis_size;
  }
  return a;
}

}  // namespace cuda
}  // namespace alpa
