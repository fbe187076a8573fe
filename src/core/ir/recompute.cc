// Recomputation choices (recompute.h).
#include "core/ir/recompute.h"

#include "core/ir/attention_core.h"

namespace alpa {

std::string_view RecomputeName(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "off";
    case Recompute::kFull:
      return "on";
    case Recompute::kSelective:
      return "selective";
  }
  return "off";
}

std::optional<Recompute> ParseRecompute(std::string_view name) {
  for (Recompute r : {Recompute::kNone, Recompute::kFull, Recompute::kSelective}) {
    if (name == RecomputeName(r)) return r;
  }
  return std::nullopt;
}

std::vector<bool> SelectivelyRecomputedOps(const Graph& graph) {
  const std::vector<bool> core = AttentionCoreValues(graph);
  const size_t n = static_cast<size_t>(graph.size());
  auto rerunnable = [&](int32_t v) {
    const Op& op = graph.op(v);
    return core[static_cast<size_t>(v)] && op.phase == Phase::kForward &&
           op.kind != OpKind::kParameter;
  };
  std::vector<bool> rerun(n, false);
  for (const Op& op : graph.ops) {
    if (op.phase != Phase::kBackward) continue;
    for (int32_t u : op.operands) {
      if (rerunnable(u)) rerun[static_cast<size_t>(u)] = true;
    }
  }
  // Operands precede their readers, so one sweep from the back closes the set.
  for (size_t v = n; v-- > 0;) {
    if (!rerun[v]) continue;
    for (int32_t u : graph.op(static_cast<int32_t>(v)).operands) {
      if (rerunnable(u)) rerun[static_cast<size_t>(u)] = true;
    }
  }
  return rerun;
}

}  // namespace alpa
