// Materialised results under elementwise fusion (see fusion.h).
#include "core/ir/fusion.h"

#include <cstdint>
#include <numeric>
#include <unordered_set>
#include <utility>

#include "core/ir/attention_core.h"
#include "core/ir/transposed_product.h"

namespace alpa {
namespace {

// Ops a fusion can compute inline for its consumers.
bool FusibleProducer(OpKind kind) {
  return IsElementwise(kind) || kind == OpKind::kBroadcastInDim || kind == OpKind::kReshape ||
         kind == OpKind::kConstant || kind == OpKind::kIota;
}

// Ops that can take a fused producer's value without reading it from memory: the producers'
// kinds, and reductions (the root of an input fusion).
bool FusibleConsumer(OpKind kind) {
  return FusibleProducer(kind) || kind == OpKind::kReduceSum || kind == OpKind::kReduceMax;
}

// Ops whose value a fusion in another phase can compute again from (much) less than the value:
// constants and iotas from nothing, a broadcast from its operand.
bool Regenerable(OpKind kind) {
  return kind == OpKind::kConstant || kind == OpKind::kIota || kind == OpKind::kBroadcastInDim;
}

// Marks what a fusion in another phase reads to regenerate `id` (a Regenerable op): nothing for
// a constant or an iota; a broadcast's operand, or what that operand is regenerated from.
void MarkRegenerationSource(const Graph& graph, int32_t id, std::vector<bool>& materialized) {
  while (graph.op(id).kind == OpKind::kBroadcastInDim) {
    const int32_t operand = graph.op(id).operands[0];
    if (operand < 0 || operand >= graph.size()) return;
    if (!Regenerable(graph.op(operand).kind)) {
      materialized[static_cast<size_t>(operand)] = true;
      return;
    }
    id = operand;
  }
}

// The fusion of every op (a union-find root): ops joined through values that stay in registers.
std::vector<int32_t> FusionOf(const Graph& graph, const std::vector<bool>& materialized) {
  std::vector<int32_t> parent(static_cast<size_t>(graph.size()));
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&parent](int32_t v) {
    while (parent[static_cast<size_t>(v)] != v) {
      parent[static_cast<size_t>(v)] = parent[static_cast<size_t>(parent[static_cast<size_t>(v)])];
      v = parent[static_cast<size_t>(v)];
    }
    return v;
  };
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& user = graph.op(id);
    for (int32_t x : user.operands) {
      if (x < 0 || x >= graph.size() || materialized[static_cast<size_t>(x)]) continue;
      // Constants, iotas and broadcasts are made again inside each reading fusion (and across
      // phases); joining through them would make one fusion of everything a splat feeds.
      if (Regenerable(graph.op(x).kind) || graph.op(x).phase != user.phase) continue;
      parent[static_cast<size_t>(root(x))] = root(id);
    }
  }
  for (int32_t id = 0; id < graph.size(); ++id) parent[static_cast<size_t>(id)] = root(id);
  return parent;
}

}  // namespace

std::vector<bool> MaterializedResults(const Graph& graph) {
  std::vector<bool> materialized(static_cast<size_t>(graph.size()), false);
  for (int32_t id = 0; id < graph.size(); ++id) {
    materialized[static_cast<size_t>(id)] = !FusibleProducer(graph.op(id).kind);
  }
  for (int32_t out : graph.outputs) {
    if (out >= 0 && out < graph.size()) materialized[static_cast<size_t>(out)] = true;
  }
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& user = graph.op(id);
    for (int32_t x : user.operands) {
      if (x < 0 || x >= graph.size()) continue;
      const Op& producer = graph.op(x);
      if (!FusibleConsumer(user.kind)) {
        materialized[static_cast<size_t>(x)] = true;
      } else if (user.phase != producer.phase) {
        // A value kept for another phase is written, unless that phase's fusion regenerates it.
        if (Regenerable(producer.kind)) {
          MarkRegenerationSource(graph, x, materialized);
        } else {
          materialized[static_cast<size_t>(x)] = true;
        }
      }
    }
  }
  return materialized;
}

namespace {

// `own_free`: a read of a value made in the reading fusion costs nothing.
std::vector<std::vector<bool>> ChargedReadsIn(const Graph& graph,
                                              const std::vector<bool>& materialized,
                                              const std::vector<int32_t>& fusion, bool own_free) {
  std::unordered_set<uint64_t> read;  // (fusion, value) pairs already paid for
  std::vector<std::vector<bool>> charged(static_cast<size_t>(graph.size()));
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    const int32_t f = fusion[static_cast<size_t>(id)];
    charged[static_cast<size_t>(id)].assign(op.operands.size(), false);
    for (size_t k = 0; k < op.operands.size(); ++k) {
      const int32_t x = op.operands[k];
      if (x < 0 || x >= graph.size() || !materialized[static_cast<size_t>(x)]) continue;
      if (own_free && fusion[static_cast<size_t>(x)] == f) continue;
      const uint64_t key = (static_cast<uint64_t>(f) << 32) | static_cast<uint32_t>(x);
      charged[static_cast<size_t>(id)][k] = read.insert(key).second;
    }
  }
  return charged;
}

}  // namespace

std::vector<std::vector<bool>> ChargedReads(const Graph& graph,
                                            const std::vector<bool>& materialized) {
  return ChargedReadsIn(graph, materialized, FusionOf(graph, materialized), false);
}

std::vector<std::vector<bool>> ChargedReads(const Graph& graph,
                                            const std::vector<bool>& materialized,
                                            const std::vector<int32_t>& kernel_of) {
  return ChargedReadsIn(graph, materialized, kernel_of, true);
}

std::vector<bool> PricedResults(const Graph& graph, ElementwiseFusion fusion, bool fuse_attention,
                                std::vector<int32_t>* kernel_of) {
  std::vector<bool> materialized;
  if (fusion == ElementwiseFusion::kXla) {
    materialized = MaterializedResults(graph);
  } else if (fusion == ElementwiseFusion::kSingleReader) {
    SingleReaderFusion plan = PlanSingleReaderFusion(graph);
    materialized = std::move(plan.materialized);
    if (kernel_of != nullptr) *kernel_of = std::move(plan.kernel_of);
    // The runner computes a product that one transpose reads as the transposed product.
    const std::vector<bool> transposed = ProductsReadTransposed(graph);
    for (size_t v = 0; v < transposed.size(); ++v) {
      if (transposed[v]) materialized[v] = false;
    }
  } else if (fuse_attention) {
    materialized.assign(static_cast<size_t>(graph.size()), true);
  }
  if (fuse_attention) {
    const std::vector<bool> core = AttentionCoreValues(graph);
    for (size_t v = 0; v < core.size(); ++v) {
      if (core[v]) materialized[v] = false;
    }
    // The runner's model: its attention kernels also read Q, K, V in the fused QKV product and
    // write their gradients into its gradient.
    if (fusion == ElementwiseFusion::kSingleReader) {
      const std::vector<bool> views = AttentionKernelViews(graph, core);
      for (size_t v = 0; v < views.size(); ++v) {
        if (views[v]) materialized[v] = false;
      }
    }
  }
  return materialized;
}

}  // namespace alpa
