#include "core/ir/transposed_product.h"

#include <algorithm>

namespace alpa {

bool TransposeSwapsProduct(const Op& dot, const Graph& graph, const Op& transpose) {
  if (dot.kind != OpKind::kDotGeneral || transpose.kind != OpKind::kTranspose) return false;
  const DotDims& d = dot.attrs.dot;
  if (!d.lhs_batch.empty() || !d.rhs_batch.empty() || dot.operands.size() != 2) return false;
  for (int32_t x : dot.operands) {
    if (x < 0 || x >= graph.size()) return false;
  }
  const int64_t lhs_rank = static_cast<int64_t>(graph.op(dot.operands[0]).shape.size());
  const int64_t lhs_free = lhs_rank - static_cast<int64_t>(d.lhs_contracting.size());
  const int64_t rank = static_cast<int64_t>(dot.shape.size());
  const int64_t rhs_free = rank - lhs_free;
  if (lhs_free <= 0 || rhs_free <= 0) return false;
  const Dims& perm = transpose.attrs.dims;
  if (static_cast<int64_t>(perm.size()) != rank) return false;
  for (int64_t j = 0; j < rank; ++j) {
    const int64_t want = j < rhs_free ? lhs_free + j : j - rhs_free;
    if (perm[static_cast<size_t>(j)] != want) return false;
  }
  return true;
}

DotDims SwappedDotDims(const DotDims& dims) {
  DotDims s;
  s.lhs_contracting = dims.rhs_contracting;
  s.rhs_contracting = dims.lhs_contracting;
  return s;
}

std::vector<bool> ProductsReadTransposed(const Graph& graph) {
  const std::vector<std::vector<int32_t>> users = OpUsers(graph);
  std::vector<bool> transposed(users.size(), false);
  for (int32_t id = 0; id < graph.size(); ++id) {
    const std::vector<int32_t>& u = users[static_cast<size_t>(id)];
    if (u.size() != 1 ||
        std::find(graph.outputs.begin(), graph.outputs.end(), id) != graph.outputs.end()) {
      continue;
    }
    transposed[static_cast<size_t>(id)] =
        TransposeSwapsProduct(graph.op(id), graph, graph.op(u[0]));
  }
  return transposed;
}

}  // namespace alpa
