// Checks of a fused group (exec/cuda/fusion_plan.h) against its ops, for the tests of the
// fusion plans, without a GPU: the group's host value (FusedValueAt, the kernels' math) at
// every element of its root's result and of each store's, against its ops (and the copies a
// merged group replaces) evaluated one by one by the interpreter on random inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "exec/cpu/interpreter.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/cuda/kernel_math.h"
#include "exec/program/program.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa::cuda {

inline bool Approximate(const FusedGroup& g) {
  for (const FusedNode& n : g.nodes) {
    if (n.kind == FusedNodeKind::kOp && ApproximateFloatKind(n.op)) return true;
  }
  return false;
}

// Group g's ops evaluated one by one by the interpreter, on random inputs, against FusedValueAt.
inline void ExpectGroupEqualsItsOps(const DeviceProgram& p, const FusedGroup& g,
                                    std::mt19937_64& rng) {
  std::uniform_real_distribution<double> value(-3.0, 3.0);
  std::vector<HostTensor> values(p.buffers.size());
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<const void*> inputs;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const Buffer& b = p.buffers[static_cast<size_t>(g.inputs[k])];
    HostTensor& t = values[static_cast<size_t>(g.inputs[k])];
    t.shape = b.shape;
    t.dtype = b.dtype;
    const int64_t n = ElementCountOf(b.shape);
    bytes.emplace_back(static_cast<size_t>(n * DTypeBytes(g.input_storage[k])));
    for (int64_t i = 0; i < n; ++i) {
      double v = value(rng);
      if (b.dtype == DType::kPred) v = v > 0 ? 1.0 : 0.0;
      v = RoundToDType(v, g.input_storage[k]);
      t.data.push_back(v);
      StoreElement(bytes.back().data(), g.input_storage[k], i, v);
    }
    inputs.push_back(bytes.back().data());
  }
  std::vector<int32_t> order = g.members;
  order.push_back(g.root);
  for (int32_t i : order) {
    const Instruction& in = p.code[static_cast<size_t>(i)];
    if (in.kind == InstructionKind::kCopy) {  // a merged group's store in place of the copy
      values[static_cast<size_t>(in.out)] = values[static_cast<size_t>(in.in[0])];
      continue;
    }
    if (in.kind == InstructionKind::kScale) {  // the mean of the microbatches' gradients
      HostTensor scaled = values[static_cast<size_t>(in.in[0])];
      scaled.dtype = p.buffers[static_cast<size_t>(in.out)].dtype;
      for (double& v : scaled.data) {
        v *= in.value;
        if (in.round) v = RoundToDType(v, scaled.dtype);
      }
      values[static_cast<size_t>(in.out)] = std::move(scaled);
      continue;
    }
    const Graph& local = p.local_ops[static_cast<size_t>(in.local_op)];
    std::vector<const HostTensor*> operands;
    for (int32_t b : in.in) operands.push_back(&values[static_cast<size_t>(b)]);
    values[static_cast<size_t>(in.out)] =
        EvaluateValidatedOp(local, local.size() - 1, operands,
                            in.round ? ResultRounding::kRound : ResultRounding::kKeepExact);
  }
  // The root's value, then each store's.
  std::vector<FusedStore> results = {{static_cast<int32_t>(g.nodes.size()) - 1, g.out}};
  results.insert(results.end(), g.stores.begin(), g.stores.end());
  const bool approximate = Approximate(g);
  for (const FusedStore& r : results) {
    const HostTensor& want = values[static_cast<size_t>(r.buffer)];
    const DType storage = g.nodes[static_cast<size_t>(r.node)].storage;
    ASSERT_EQ(ElementCountOf(want.shape), g.elements) << "buffer " << r.buffer;
    for (int64_t i = 0; i < g.elements; ++i) {
      const double expected = RoundToDType(want.data[static_cast<size_t>(i)], storage);
      const double got = FusedValueAt(g, inputs, g.input_storage, i, r.node);
      if (std::isnan(got) && std::isnan(expected)) continue;
      if (approximate) {
        ASSERT_NEAR(got, expected, 2e-2 * std::fabs(expected) + 1e-6)
            << "group at instruction " << g.root << " buffer " << r.buffer << " element " << i;
      } else {
        ASSERT_EQ(got, expected) << "group at instruction " << g.root << " buffer " << r.buffer
                                 << " element " << i << "\n"
                                 << ProgramText(p);
      }
    }
  }
}

}  // namespace alpa::cuda
