#include "exec/cuda/transposed_product.h"

#include "core/ir/transposed_product.h"
#include "exec/cuda/attention_matcher.h"
#include "exec/cuda/env_switch.h"

namespace alpa {
namespace cuda {
namespace {

// The dot's local graph with the swapped product appended (its operands the dot's, swapped).
Graph SwappedGraph(const DeviceProgram& program, const Instruction& dot, const Op& transpose) {
  Graph g = program.local_ops[static_cast<size_t>(dot.local_op)];
  Op product = g.ops.back();
  product.operands = {product.operands[1], product.operands[0]};
  product.attrs.dot = SwappedDotDims(product.attrs.dot);
  product.shape = transpose.shape;
  product.name.clear();
  g.ops.push_back(std::move(product));
  g.outputs = {g.size() - 1};
  return g;
}

}  // namespace

bool TransposedProductsEnabled() { return SwitchedOnByDefault("ALPA_CUDA_TRANSPOSED_PRODUCTS"); }

std::vector<TransposedProduct> PlanTransposedProducts(const DeviceProgram& program,
                                                      const std::vector<DType>& storage,
                                                      const std::vector<char>& replaced) {
  const Matcher m(program, storage);  // rounded kRuns, and each buffer's writes and readers
  const std::vector<int32_t>& writes = m.index().write_count;
  std::vector<TransposedProduct> products;
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Op* dot = replaced[i] ? nullptr : m.RunOf(static_cast<int32_t>(i), OpKind::kDotGeneral);
    if (dot == nullptr) continue;
    const Instruction& in = program.code[i];
    const size_t b = static_cast<size_t>(in.out);
    if (writes[b] != 1 || program.buffers[b].persistent) continue;
    const int32_t t = m.OnlyReader(in.out, OpKind::kTranspose);
    if (t < 0 || replaced[static_cast<size_t>(t)]) continue;
    const Op* transpose = m.RunOf(t, OpKind::kTranspose);
    const size_t out = static_cast<size_t>(m.at(t).out);
    if (writes[out] != 1 || storage[out] != storage[b]) continue;
    const Graph& local = program.local_ops[static_cast<size_t>(in.local_op)];
    if (!TransposeSwapsProduct(*dot, local, *transpose)) continue;
    products.push_back(
        TransposedProduct{static_cast<int32_t>(i), t, SwappedGraph(program, in, *transpose)});
  }
  return products;
}

}  // namespace cuda
}  // namespace alpa
