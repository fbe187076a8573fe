// Lowerings of indexing (hlo_lowering_util.h): gather and scatter that take whole slices along
// one axis (x[idx], jnp.take, x.at[idx].add(u)) as the IR's gather / scatter_add with
// transposes into HLO's dim order, and dynamic-slice with constant starts as a slice.
#include <algorithm>
#include <string>
#include <vector>

#include "import/hlo/hlo_lowering_util.h"

namespace alpa {
namespace {

// A gather / scatter that indexes one axis with whole slices of the others (numpy `take`,
// x[idx], x.at[idx].add(u)) is the IR's gather / scatter_add; the index array drops its
// index_vector_dim. `positions_of_window` says where the operand's other dims sit in the HLO
// result (offset_dims / update_window_dims). Returns the permutation from the IR's layout
// (x[:axis] ++ batch ++ x[axis+1:]) to the HLO's: HLO dim p = IR dim permutation[p]; kParse
// naming the attribute when the positions are not increasing dims of the result that leave
// exactly the index array's dims free.
Result<Dims> TakeLayout(const HloInstruction& instruction, const char* attribute,
                        const Dims& positions_of_window, int64_t axis, int64_t batch_rank,
                        int64_t result_rank) {
  bool valid = static_cast<int64_t>(positions_of_window.size()) + batch_rank == result_rank;
  for (size_t k = 0; valid && k < positions_of_window.size(); ++k) {
    const int64_t p = positions_of_window[k];
    valid = p >= 0 && p < result_rank && (k == 0 || p > positions_of_window[k - 1]);
  }
  if (!valid) {
    return InstructionError(instruction,
                            std::string(attribute) +
                                " must be increasing dims of the result, one per operand dim "
                                "but the indexed one",
                            StatusCode::kParse);
  }
  Dims permutation(static_cast<size_t>(result_rank), -1);
  for (size_t k = 0; k < positions_of_window.size(); ++k) {
    auto kk = static_cast<int64_t>(k);
    permutation[static_cast<size_t>(positions_of_window[k])] = kk < axis ? kk : kk + batch_rank;
  }
  int64_t j = 0;
  for (int64_t& p : permutation) {
    if (p < 0) p = axis + j++;
  }
  return permutation;
}

// The index array without its index_vector_dim (which must have size 1).
Result<int32_t> TakeIndices(GraphBuilder& b, const HloInstruction& instruction, int32_t indices,
                            int64_t index_vector_dim) {
  Dims shape = b.shape(indices);
  if (index_vector_dim == static_cast<int64_t>(shape.size())) return indices;
  if (index_vector_dim < 0 || index_vector_dim > static_cast<int64_t>(shape.size()) ||
      shape[static_cast<size_t>(index_vector_dim)] != 1) {
    return InstructionError(instruction,
                            "only one indexed dimension is supported "
                            "(index_vector_dim must have size 1)");
  }
  shape.erase(shape.begin() + index_vector_dim);
  return b.Reshape(indices, shape);
}

}  // namespace

Result<HloValue> LowerGather(HloLowering& lowering, const HloInstruction& instruction,
                             const std::vector<HloValue>& operands) {
  ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
  GraphBuilder& b = lowering.builder;
  int32_t x = operands[0].id;
  Result<Dims> offset_dims = IntListAttribute(instruction, "offset_dims");
  Result<Dims> collapsed = IntListAttribute(instruction, "collapsed_slice_dims");
  Result<Dims> start_map = IntListAttribute(instruction, "start_index_map");
  Result<Dims> slice_sizes = IntListAttribute(instruction, "slice_sizes");
  Result<Dims> batching = IntListAttribute(instruction, "operand_batching_dims", true);
  Result<int64_t> index_vector_dim = SingleIndexInteger(instruction, "index_vector_dim");
  for (const Status& s : {offset_dims.status(), collapsed.status(), start_map.status(),
                          slice_sizes.status(), batching.status(), index_vector_dim.status()}) {
    if (!s.ok()) return s;
  }
  const Dims& shape = b.shape(x);
  bool take = start_map.value().size() == 1 && collapsed.value() == start_map.value() &&
              batching.value().empty() && slice_sizes.value().size() == shape.size();
  int64_t axis = take ? start_map.value()[0] : 0;
  take = take && axis >= 0 && axis < static_cast<int64_t>(shape.size());
  for (size_t d = 0; take && d < shape.size(); ++d) {
    int64_t expected = static_cast<int64_t>(d) == axis ? 1 : shape[d];
    take = slice_sizes.value()[d] == expected;
  }
  if (!take) {
    return InstructionError(instruction,
                            "only a gather of whole slices along one axis "
                            "(x[idx], jnp.take) is supported");
  }
  Result<int32_t> indices = TakeIndices(b, instruction, operands[1].id, index_vector_dim.value());
  if (!indices.ok()) return indices.status();
  int32_t y = b.Gather(x, indices.value(), axis);
  Result<Dims> permutation = TakeLayout(instruction, "offset_dims", offset_dims.value(), axis,
                                        b.rank(indices.value()), b.rank(y));
  if (!permutation.ok()) return permutation.status();
  if (!IsIdentity(permutation.value())) y = b.Transpose(y, permutation.value());
  return Array(y);
}

Result<HloValue> LowerScatter(HloLowering& lowering, const HloInstruction& instruction,
                              const std::vector<HloValue>& operands) {
  if (operands.size() != 3) {
    return InstructionError(instruction, "a scatter of several arrays at once is not supported");
  }
  ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 3));
  if (ReducerOpcode(lowering, instruction, "to_apply") != "add") {
    return InstructionError(instruction, "only a scatter that adds (x.at[idx].add) is supported");
  }
  GraphBuilder& b = lowering.builder;
  int32_t x = operands[0].id;
  Result<Dims> window_dims = IntListAttribute(instruction, "update_window_dims");
  Result<Dims> inserted = IntListAttribute(instruction, "inserted_window_dims");
  Result<Dims> to_operand = IntListAttribute(instruction, "scatter_dims_to_operand_dims");
  Result<Dims> batching = IntListAttribute(instruction, "input_batching_dims", true);
  Result<int64_t> index_vector_dim = SingleIndexInteger(instruction, "index_vector_dim");
  for (const Status& s : {window_dims.status(), inserted.status(), to_operand.status(),
                          batching.status(), index_vector_dim.status()}) {
    if (!s.ok()) return s;
  }
  int32_t updates = operands[2].id;
  bool take = to_operand.value().size() == 1 && inserted.value() == to_operand.value() &&
              batching.value().empty() &&
              window_dims.value().size() + 1 == static_cast<size_t>(b.rank(x));
  int64_t axis = take ? to_operand.value()[0] : 0;
  take = take && axis >= 0 && axis < b.rank(x);
  if (take) {
    // The update windows must be whole slices of x's other dims.
    size_t k = 0;
    for (int64_t d = 0; d < b.rank(x) && take; ++d) {
      if (d == axis) continue;
      int64_t position = window_dims.value()[k++];
      take = position >= 0 && position < b.rank(updates) &&
             b.shape(updates)[static_cast<size_t>(position)] == b.shape(x)[static_cast<size_t>(d)];
    }
  }
  if (!take) {
    return InstructionError(instruction,
                            "only a scatter of whole slices along one axis "
                            "(x.at[idx].add(u)) is supported");
  }
  Result<int32_t> indices = TakeIndices(b, instruction, operands[1].id, index_vector_dim.value());
  if (!indices.ok()) return indices.status();
  Result<Dims> layout = TakeLayout(instruction, "update_window_dims", window_dims.value(), axis,
                                   b.rank(indices.value()), b.rank(updates));
  if (!layout.ok()) return layout.status();
  const Dims& permutation = layout.value();
  if (!IsIdentity(permutation)) {
    // HLO dim p holds IR dim permutation[p]: the IR layout is its inverse.
    Dims inverse(permutation.size());
    for (size_t p = 0; p < permutation.size(); ++p) {
      inverse[static_cast<size_t>(permutation[p])] = static_cast<int64_t>(p);
    }
    updates = b.Transpose(updates, inverse);
  }
  return Array(b.ScatterAdd(x, indices.value(), updates, axis));
}

Result<HloValue> LowerDynamicSlice(HloLowering& lowering, const HloInstruction& instruction,
                                   const std::vector<HloValue>& operands) {
  GraphBuilder& b = lowering.builder;
  if (operands.empty()) return InstructionError(instruction, "has no operands", StatusCode::kParse);
  int32_t x = operands[0].id;
  Result<Dims> sizes = IntListAttribute(instruction, "dynamic_slice_sizes");
  if (!sizes.ok()) return sizes.status();
  const Dims& shape = b.shape(x);
  if (operands.size() != shape.size() + 1 || sizes.value().size() != shape.size()) {
    return InstructionError(instruction, "expected one start index and one size per dim",
                            StatusCode::kParse);
  }
  Dims starts, limits;
  for (size_t d = 0; d < shape.size(); ++d) {
    Result<double> start =
        RequireKnown(lowering, instruction, operands[d + 1].id, "start index " + std::to_string(d));
    if (!start.ok()) return start.status();
    int64_t size = sizes.value()[d];
    if (size < 0 || size > shape[d]) {
      return InstructionError(instruction, "slice size out of range", StatusCode::kParse);
    }
    // HLO clamps the start so that the slice stays inside the operand.
    double clamped = std::clamp(start.value(), 0.0, static_cast<double>(shape[d] - size));
    starts.push_back(static_cast<int64_t>(clamped));
    limits.push_back(starts.back() + size);
  }
  return Array(b.Slice(x, starts, limits));
}

}  // namespace alpa
