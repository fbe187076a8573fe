#include "exec/cuda/transposed_product.h"

#include "core/ir/transposed_product.h"
#include "exec/cuda/env_switch.h"

namespace alpa {
namespace cuda {
namespace {

// A rounded kRun of `kind` that no attention region replaces, or null.
const Op* RunOf(const DeviceProgram& program, const std::vector<char>& replaced, size_t i,
                OpKind kind) {
  const Instruction& in = program.code[i];
  if (in.kind != InstructionKind::kRun || !in.round || in.out < 0 || replaced[i]) return nullptr;
  const Op& op = LocalOpOf(program, in);
  return op.kind == kind ? &op : nullptr;
}

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
  const size_t buffers = program.buffers.size();
  std::vector<int32_t> writes(buffers, 0), readers(buffers, 0), reader(buffers, -1);
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Instruction& in = program.code[i];
    if (in.kind == InstructionKind::kFree) continue;
    if (in.out >= 0) ++writes[static_cast<size_t>(in.out)];
    for (int32_t b : in.in) {
      if (b < 0) continue;
      ++readers[static_cast<size_t>(b)];
      reader[static_cast<size_t>(b)] = static_cast<int32_t>(i);
    }
  }
  std::vector<TransposedProduct> products;
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Op* dot = RunOf(program, replaced, i, OpKind::kDotGeneral);
    if (dot == nullptr) continue;
    const Instruction& in = program.code[i];
    const size_t b = static_cast<size_t>(in.out);
    if (writes[b] != 1 || readers[b] != 1 || program.buffers[b].persistent) continue;
    const size_t t = static_cast<size_t>(reader[b]);
    const Op* transpose = RunOf(program, replaced, t, OpKind::kTranspose);
    if (transpose == nullptr) continue;
    const size_t out = static_cast<size_t>(program.code[t].out);
    if (writes[out] != 1 || storage[out] != storage[b]) continue;
    const Graph& local = program.local_ops[static_cast<size_t>(in.local_op)];
    if (!TransposeSwapsProduct(*dot, local, *transpose)) continue;
    products.push_back(TransposedProduct{static_cast<int32_t>(i), static_cast<int32_t>(t),
                                         SwappedGraph(program, in, *transpose)});
  }
  return products;
}

}  // namespace cuda
}  // namespace alpa
