// Attention cores (attention_core.h).
#include "core/ir/attention_core.h"

#include <cstdint>
#include <vector>

namespace alpa {
namespace {

int64_t Elements(const Op& op) {
  Result<int64_t> count = ElementCount(op.shape);
  return count.ok() ? count.value() : -1;
}

// Kinds a core is made of: what a fused attention kernel computes between its products.
bool CoreKind(OpKind kind) {
  return IsElementwise(kind) || kind == OpKind::kConvert || kind == OpKind::kBroadcastInDim ||
         kind == OpKind::kReshape || kind == OpKind::kTranspose || kind == OpKind::kConstant ||
         kind == OpKind::kDotGeneral;
}

// A forward Q K^T: batch dims, computed operands, a result larger than either operand.
bool ScoreProduct(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  if (op.kind != OpKind::kDotGeneral || op.phase != Phase::kForward) return false;
  if (op.attrs.dot.lhs_batch.empty() || op.operands.size() != 2) return false;
  const int64_t elements = Elements(op);
  for (int32_t x : op.operands) {
    if (x < 0 || x >= graph.size()) return false;
    const Op& operand = graph.op(x);
    if (operand.kind == OpKind::kParameter || Elements(operand) >= elements) return false;
  }
  return true;
}

// The ops connected to `start` through values of its element count (CoreKind ops only).
std::vector<int32_t> Region(const Graph& graph, const std::vector<std::vector<int32_t>>& users,
                            int32_t start, std::vector<char>& seen) {
  const int64_t elements = Elements(graph.op(start));
  std::vector<int32_t> region, stack = {start};
  seen[static_cast<size_t>(start)] = 1;
  auto visit = [&](int32_t v) {
    if (seen[static_cast<size_t>(v)] || !CoreKind(graph.op(v).kind)) return;
    if (Elements(graph.op(v)) != elements) return;
    seen[static_cast<size_t>(v)] = 1;
    stack.push_back(v);
  };
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    region.push_back(v);
    for (int32_t x : graph.op(v).operands) {
      if (x >= 0 && x < graph.size()) visit(x);
    }
    for (int32_t u : users[static_cast<size_t>(v)]) visit(u);
  }
  return region;
}

// Whether a softmax (a reduce_max / reduce_sum) and a smaller dot_general read the region.
bool ReadLikeAttention(const Graph& graph, const std::vector<std::vector<int32_t>>& users,
                       const std::vector<int32_t>& region, int64_t elements) {
  bool softmax = false, product = false;
  for (int32_t v : region) {
    for (int32_t u : users[static_cast<size_t>(v)]) {
      const Op& user = graph.op(u);
      if (user.kind == OpKind::kReduceMax || user.kind == OpKind::kReduceSum) softmax = true;
      if (user.kind == OpKind::kDotGeneral && Elements(user) < elements) product = true;
    }
  }
  return softmax && product;
}

// Per op: the index of the core holding it, or -1.
std::vector<int32_t> CoreIndices(const Graph& graph) {
  std::vector<int32_t> index(static_cast<size_t>(graph.size()), -1);
  const std::vector<std::vector<int32_t>> users = OpUsers(graph);
  std::vector<char> seen(static_cast<size_t>(graph.size()), 0);
  int32_t cores = 0;
  for (int32_t id = 0; id < graph.size(); ++id) {
    if (seen[static_cast<size_t>(id)] || !ScoreProduct(graph, id)) continue;
    const std::vector<int32_t> region = Region(graph, users, id, seen);
    if (!ReadLikeAttention(graph, users, region, Elements(graph.op(id)))) continue;
    for (int32_t v : region) index[static_cast<size_t>(v)] = cores;
    ++cores;
  }
  return index;
}

}  // namespace

std::vector<bool> AttentionCoreValues(const Graph& graph) {
  std::vector<bool> core(static_cast<size_t>(graph.size()), false);
  const std::vector<int32_t> index = CoreIndices(graph);
  for (size_t v = 0; v < index.size(); ++v) core[v] = index[v] >= 0;
  return core;
}

std::vector<double> AttentionProductWork(const Graph& graph) {
  const std::vector<int32_t> index = CoreIndices(graph);
  std::vector<char> masked(index.size(), 0);  // per core (fewer cores than ops)
  for (int32_t id = 0; id < graph.size(); ++id) {
    const int32_t c = index[static_cast<size_t>(id)];
    if (c >= 0 && graph.op(id).kind == OpKind::kSelect) masked[static_cast<size_t>(c)] = 1;
  }
  std::vector<double> work(static_cast<size_t>(graph.size()), 0.0);
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    if (op.kind != OpKind::kDotGeneral) continue;
    int32_t c = index[static_cast<size_t>(id)];
    for (int32_t x : op.operands) {
      if (c < 0 && x >= 0 && x < graph.size()) c = index[static_cast<size_t>(x)];
    }
    if (c >= 0) work[static_cast<size_t>(id)] = masked[static_cast<size_t>(c)] ? 0.5 : 1.0;
  }
  return work;
}

namespace {

// The one user of op `id`, or -1.
int32_t OnlyUser(const std::vector<std::vector<int32_t>>& users, int32_t id) {
  const std::vector<int32_t>& u = users[static_cast<size_t>(id)];
  return u.size() == 1 ? u[0] : -1;
}

// Whether op `id` is a product of a core: in it, or a dot_general reading it.
bool CoreProduct(const Graph& graph, const std::vector<bool>& core, int32_t id) {
  const Op& op = graph.op(id);
  if (op.kind != OpKind::kDotGeneral) return false;
  if (core[static_cast<size_t>(id)]) return true;
  for (int32_t x : op.operands) {
    if (x >= 0 && x < graph.size() && core[static_cast<size_t>(x)]) return true;
  }
  return false;
}

// Marks reshape(slice(X)) that only the cores' products read.
void MarkInputViews(const Graph& graph, const std::vector<std::vector<int32_t>>& users,
                    const std::vector<bool>& core, int32_t reshape, std::vector<bool>& views) {
  const Op& r = graph.op(reshape);
  if (r.kind != OpKind::kReshape || r.operands.size() != 1) return;
  for (int32_t u : users[static_cast<size_t>(reshape)]) {
    if (!CoreProduct(graph, core, u)) return;
  }
  const int32_t slice = r.operands[0];
  if (slice < 0 || slice >= graph.size() || graph.op(slice).kind != OpKind::kSlice ||
      OnlyUser(users, slice) != reshape) {
    return;
  }
  views[static_cast<size_t>(reshape)] = true;
  views[static_cast<size_t>(slice)] = true;
}

// Marks a backward product's transpose / reshape / pad chain and the adds above its pad that
// another add reads (the sum's last add is the kernels' output).
void MarkOutputViews(const Graph& graph, const std::vector<std::vector<int32_t>>& users,
                     int32_t product, std::vector<bool>& views) {
  std::vector<int32_t> chain = {product};
  int32_t at = OnlyUser(users, product);
  for (OpKind kind : {OpKind::kTranspose, OpKind::kReshape}) {
    if (at >= 0 && graph.op(at).kind == kind) {
      chain.push_back(at);
      at = OnlyUser(users, at);
    }
  }
  if (at < 0 || graph.op(at).kind != OpKind::kPad) return;
  chain.push_back(at);
  for (int32_t add = OnlyUser(users, at); add >= 0 && graph.op(add).kind == OpKind::kAdd;
       add = OnlyUser(users, add)) {
    const int32_t next = OnlyUser(users, add);
    if (next < 0 || graph.op(next).kind != OpKind::kAdd) break;
    chain.push_back(add);
  }
  for (int32_t v : chain) views[static_cast<size_t>(v)] = true;
}

// Marks the forward's output O (the product P V) and its transpose when the transpose is O's
// one user and a reshape the transpose's (the kernel writes O in the reshape's layout); without
// the reshape, O alone (the kernel writes it transposed).
void MarkForwardOutputViews(const Graph& graph, const std::vector<std::vector<int32_t>>& users,
                            int32_t product, std::vector<bool>& views) {
  const int32_t transpose = OnlyUser(users, product);
  if (transpose < 0 || graph.op(transpose).kind != OpKind::kTranspose) return;
  views[static_cast<size_t>(product)] = true;
  const int32_t reshape = OnlyUser(users, transpose);
  if (reshape >= 0 && graph.op(reshape).kind == OpKind::kReshape)
    views[static_cast<size_t>(transpose)] = true;
}

// Marks an operand of the cores' products that is a transpose only they read (dO, which the
// kernel reads in the transpose's operand), and the reshape before it that only it reads.
void MarkTransposedInputViews(const Graph& graph, const std::vector<std::vector<int32_t>>& users,
                              const std::vector<bool>& core, int32_t transpose,
                              std::vector<bool>& views) {
  const Op& t = graph.op(transpose);
  if (t.kind != OpKind::kTranspose || t.operands.size() != 1) return;
  for (int32_t u : users[static_cast<size_t>(transpose)]) {
    if (!CoreProduct(graph, core, u)) return;
  }
  views[static_cast<size_t>(transpose)] = true;
  const int32_t reshape = t.operands[0];
  if (reshape >= 0 && reshape < graph.size() && graph.op(reshape).kind == OpKind::kReshape &&
      OnlyUser(users, reshape) == transpose) {
    views[static_cast<size_t>(reshape)] = true;
  }
}

}  // namespace

std::vector<bool> AttentionKernelViews(const Graph& graph, const std::vector<bool>& core) {
  std::vector<bool> views(static_cast<size_t>(graph.size()), false);
  const std::vector<std::vector<int32_t>> users = OpUsers(graph);
  for (int32_t id = 0; id < graph.size(); ++id) {
    if (!CoreProduct(graph, core, id)) continue;
    const Op& op = graph.op(id);
    for (int32_t x : op.operands) {
      if (x < 0 || x >= graph.size()) continue;
      MarkInputViews(graph, users, core, x, views);
      if (op.phase == Phase::kBackward) MarkTransposedInputViews(graph, users, core, x, views);
    }
    if (core[static_cast<size_t>(id)]) continue;
    // dQ, dK, dV: a backward product out of a core; O: the forward's.
    if (op.phase == Phase::kBackward) {
      MarkOutputViews(graph, users, id, views);
    } else {
      MarkForwardOutputViews(graph, users, id, views);
    }
  }
  return views;
}

}  // namespace alpa
