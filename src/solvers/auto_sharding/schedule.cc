// Greedy memory-aware list scheduling (see schedule.h).
#include "solvers/auto_sharding/schedule.h"

#include <cstdint>
#include <limits>
#include <queue>
#include <utility>

#include "core/util/wide_int.h"

namespace alpa {

std::vector<int32_t> MemoryAwareSchedule(const Graph& graph, const std::vector<int64_t>& bytes) {
  const int32_t n = graph.size();
  std::vector<int32_t> last_reader(static_cast<size_t>(n), -1);
  std::vector<int32_t> pending(static_cast<size_t>(n), 0);
  std::vector<std::vector<int32_t>> users(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) {
    for (int32_t x : graph.op(v).operands) {
      last_reader[static_cast<size_t>(x)] = v;
      users[static_cast<size_t>(x)].push_back(v);
      ++pending[static_cast<size_t>(v)];
    }
  }
  // An update written into its parameter's buffer (alias_of) runs after every other reader of
  // that parameter.
  for (int32_t v = 0; v < n; ++v) {
    const int32_t p = graph.op(v).alias_of;
    if (p < 0) continue;
    // Readers through broadcasts too (a broadcast is fused into the ops that read it).
    std::vector<int32_t> stack = users[static_cast<size_t>(p)];
    std::vector<int32_t> readers;
    while (!stack.empty()) {
      const int32_t r = stack.back();
      stack.pop_back();
      if (r == v) continue;
      readers.push_back(r);
      if (graph.op(r).kind == OpKind::kBroadcastInDim) {
        for (int32_t u : users[static_cast<size_t>(r)]) stack.push_back(u);
      }
    }
    for (int32_t r : readers) {
      users[static_cast<size_t>(r)].push_back(v);
      ++pending[static_cast<size_t>(v)];
    }
  }
  std::vector<bool> persistent(static_cast<size_t>(n), false);
  for (int32_t out : graph.outputs) persistent[static_cast<size_t>(out)] = true;
  // Static priority: result bytes minus the bytes of operands this op reads last.
  std::vector<int64_t> delta(static_cast<size_t>(n), 0);
  for (int32_t v = 0; v < n; ++v) {
    const Op& op = graph.op(v);
    if (op.kind == OpKind::kParameter) {  // live all step anyway: ready at once
      delta[static_cast<size_t>(v)] = INT64_MIN;
      continue;
    }
    // Exact: the operands' bytes may sum past int64 for an unvalidated byte vector.
    Int128 d = bytes[static_cast<size_t>(v)];
    for (size_t k = 0; k < op.operands.size(); ++k) {
      const int32_t x = op.operands[k];
      bool first = true;  // count an operand read twice once
      for (size_t j = 0; j < k; ++j) first = first && op.operands[j] != x;
      if (first && last_reader[static_cast<size_t>(x)] == v &&
          graph.op(x).kind != OpKind::kParameter && !persistent[static_cast<size_t>(x)]) {
        d -= bytes[static_cast<size_t>(x)];
      }
    }
    delta[static_cast<size_t>(v)] = d < std::numeric_limits<int64_t>::min()
                                        ? std::numeric_limits<int64_t>::min()
                                        : static_cast<int64_t>(d);
  }
  using Entry = std::pair<int64_t, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (int32_t v = 0; v < n; ++v) {
    if (pending[static_cast<size_t>(v)] == 0) ready.push({delta[static_cast<size_t>(v)], v});
  }
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(n));
  while (!ready.empty()) {
    const int32_t v = ready.top().second;
    ready.pop();
    order.push_back(v);
    for (int32_t u : users[static_cast<size_t>(v)]) {
      if (--pending[static_cast<size_t>(u)] == 0) ready.push({delta[static_cast<size_t>(u)], u});
    }
  }
  if (order.size() != static_cast<size_t>(n)) {
    // The in-place constraints closed a cycle (an update read by its own inputs): fall back to
    // graph order, which is topological.
    order.clear();
    for (int32_t v = 0; v < n; ++v) order.push_back(v);
  }
  return order;
}

}  // namespace alpa
