#include "solvers/sharding/reductions/reductions.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>

#include "core/util/wide_int.h"
#include "solvers/sharding/memory_rows.h"
#include "solvers/sharding/reductions/reduction_engine.h"

namespace alpa {

void ReductionEngine::Init() {
  const size_t n = input_.cost.size();
  nodes_.resize(n);
  out_.redirect_.resize(n);
  items_of_node_.resize(n);
  for (size_t v = 0; v < n; ++v) {
    nodes_[v].cost = input_.cost[v];
    nodes_[v].strategies.resize(input_.cost[v].size());
    for (size_t s = 0; s < input_.cost[v].size(); ++s) {
      nodes_[v].strategies[s] = static_cast<int32_t>(s);
    }
  }
  item_used_.assign(input_.memory_items.size(), 0);
  for (const MemoryRow& row : input_.memory_rows) {
    if (!KeepGoing()) return;  // Run reads the stop before using what Init built
    for (int32_t x : row.items) item_used_[static_cast<size_t>(x)] = 1;
  }
  for (size_t x = 0; x < item_used_.size(); ++x) {
    if (item_used_[x] == 0) continue;
    const int32_t v = input_.memory_items[x].node;
    node(v).pinned = true;
    items_of_node_[static_cast<size_t>(v)].push_back(static_cast<int32_t>(x));
  }
  // The contract is one edge per pair, a < b; merge anyway so that the invariant holds here.
  std::vector<int32_t> order(input_.edges.size());
  for (size_t e = 0; e < order.size(); ++e) order[e] = static_cast<int32_t>(e);
  auto ends = [this](int32_t e) {
    const WorkEdge& we = input_.edges[static_cast<size_t>(e)];
    return std::make_pair(std::min(we.a, we.b), std::max(we.a, we.b));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&ends](int32_t x, int32_t y) { return ends(x) < ends(y); });
  for (int32_t index : order) {
    if (!KeepGoing()) return;  // Run reads the stop before using what Init built
    const WorkEdge& we = input_.edges[static_cast<size_t>(index)];
    const auto [a, b] = ends(index);
    std::vector<double> costs = we.cost;
    if (we.a > we.b) {  // transpose to rows = a
      for (size_t i = 0; i < k(a); ++i) {
        for (size_t j = 0; j < k(b); ++j) costs[i * k(b) + j] = we.cost[j * k(a) + i];
      }
    }
    if (a == b) {  // only the diagonal can apply
      for (size_t s = 0; s < k(a); ++s) node(a).cost[s] += costs[s * k(a) + s];
      continue;
    }
    if (!edges_.empty() && edges_.back().a == a && edges_.back().b == b) {
      std::vector<double>& into = edges_.back().m;
      for (size_t i = 0; i < costs.size(); ++i) into[i] += costs[i];
      continue;
    }
    AddEdge(a, b, std::move(costs));
  }
}

bool ReductionEngine::KeepGoing() {
  // A node's reduction takes microseconds (a dominance check up to a millisecond on wide
  // nodes): reading the clock every 8 keeps a cancel or deadline a few milliseconds late.
  constexpr int64_t kWorkBetweenChecks = 8;
  if (out_.stopped_) return false;
  if (++work_ % kWorkBetweenChecks == 0 && control_.expired()) out_.stopped_ = true;
  return !out_.stopped_;
}

bool ReductionEngine::CheckNow() {
  if (!out_.stopped_ && control_.expired()) out_.stopped_ = true;
  return !out_.stopped_;
}

void ReductionEngine::Run() {
  Init();
  if (!CheckNow()) return;
  out_.input_node_count_ = static_cast<int32_t>(nodes_.size());
  out_.stats_.nodes_before = static_cast<int32_t>(input_.cost.size());
  out_.stats_.edges_before = static_cast<int32_t>(input_.edges.size());
  for (size_t v = 0; v < nodes_.size(); ++v) Touch(static_cast<int32_t>(v));
  while (!out_.infeasible_ && KeepGoing()) {
    while (!queue_.empty() && !out_.infeasible_ && KeepGoing()) {
      const int32_t v = queue_.front();
      queue_.pop_front();
      node(v).queued = false;
      Process(v);
    }
    if (out_.infeasible_ || out_.stopped_ || !DominancePass()) break;
  }
  // A core built after a stop would not be used: the solve has no time left for it.
  if (out_.stopped_) return;
  BuildCore();
  out_.stats_.nodes_after = out_.core_.node_count();
  out_.stats_.edges_after = static_cast<int32_t>(out_.core_.edges.size());
}

void ReductionEngine::BuildCore() {
  WorkProblem& core = out_.core_;
  std::vector<int32_t> core_of(nodes_.size(), -1);
  for (size_t v = 0; v < nodes_.size(); ++v) {
    if (nodes_[v].eliminated) continue;
    core_of[v] = static_cast<int32_t>(core.cost.size());
    out_.input_node_of_core_.push_back(static_cast<int32_t>(v));
    core.cost.push_back(std::move(nodes_[v].cost));
    out_.core_strategies_.push_back(std::move(nodes_[v].strategies));
  }
  for (DynEdge& ed : edges_) {
    if (!KeepGoing()) return;
    if (!ed.alive) continue;
    const int32_t ca = core_of[static_cast<size_t>(ed.a)], cb = core_of[static_cast<size_t>(ed.b)];
    if (ca < cb) {
      core.edges.push_back(WorkEdge{ca, cb, std::move(ed.m)});
      continue;
    }
    const size_t ka = core.cost[static_cast<size_t>(ca)].size();
    const size_t kb = core.cost[static_cast<size_t>(cb)].size();
    std::vector<double> t(ka * kb);
    for (size_t i = 0; i < ka; ++i) {
      for (size_t j = 0; j < kb; ++j) t[j * ka + i] = ed.m[i * kb + j];
    }
    core.edges.push_back(WorkEdge{cb, ca, std::move(t)});
  }
  std::sort(core.edges.begin(), core.edges.end(), [](const WorkEdge& x, const WorkEdge& y) {
    return x.a != y.a ? x.a < y.a : x.b < y.b;
  });
  // Memory: items of fixed nodes become constants of their rows. When no memory node lost a
  // strategy, the rows stay as they were (a plain copy: they can hold tens of millions of
  // entries); otherwise they are simplified again.
  std::vector<int32_t> core_item(input_.memory_items.size(), -1);
  bool memory_changed = false;
  for (size_t x = 0; x < input_.memory_items.size(); ++x) {
    if (!item_used_[x]) continue;
    const MemoryItem& item = input_.memory_items[x];
    const int32_t c = core_of[static_cast<size_t>(item.node)];
    memory_changed =
        memory_changed || c < 0 || !out_.redirect_[static_cast<size_t>(item.node)].empty();
    if (c < 0) continue;
    MemoryItem mapped;
    mapped.node = c;
    for (int32_t s : out_.core_strategies_[static_cast<size_t>(c)]) {
      mapped.usage.push_back(item.usage[static_cast<size_t>(s)]);
    }
    core_item[x] = static_cast<int32_t>(core.memory_items.size());
    core.memory_items.push_back(std::move(mapped));
  }
  core.memory_rows.reserve(input_.memory_rows.size());
  for (const MemoryRow& row : input_.memory_rows) {
    // The rows are the bulk of the core (tens of millions of entries on IOPDDL A); a core cut
    // short is never used (stopped() tells the solver so).
    if (!KeepGoing()) return;
    MemoryRow mapped;
    mapped.items.reserve(row.items.size());
    Int128 capacity = row.capacity;
    for (int32_t x : row.items) {
      const int32_t c = core_item[static_cast<size_t>(x)];
      if (c >= 0) {
        mapped.items.push_back(c);
        continue;
      }
      const MemoryItem& item = input_.memory_items[static_cast<size_t>(x)];
      capacity -= item.usage[static_cast<size_t>(node(item.node).fixed)];
    }
    const Int128 lowest = std::numeric_limits<int64_t>::min();
    mapped.capacity = static_cast<int64_t>(capacity < lowest ? lowest : capacity);
    core.memory_rows.push_back(std::move(mapped));
  }
  if (!KeepGoing() || !CheckNow()) return;
  if (memory_changed &&
      !SimplifyMemoryRows(&core.memory_items, &core.memory_rows, 0, control_).ok()) {
    out_.stopped_ = true;  // it fails only on a stop
    return;
  }
  IndexMemoryIntervals(&core, control_);
  core.constant = input_.constant + folded_;
}

ReducedProblem::ReducedProblem(const WorkProblem& input) : ReducedProblem(input, SolveControl()) {}

ReducedProblem::ReducedProblem(const WorkProblem& input, const SolveControl& control) {
  ReductionEngine engine(input, control, this);
  engine.Run();
}

std::vector<int32_t> ReducedProblem::Expand(const std::vector<int32_t>& core_assignment) const {
  std::vector<int32_t> result(static_cast<size_t>(input_node_count_), 0);
  for (size_t c = 0; c < core_strategies_.size(); ++c) {
    result[static_cast<size_t>(input_node_of_core_[c])] =
        core_strategies_[c][static_cast<size_t>(core_assignment[c])];
  }
  // Back-substitution: each record's neighbours were decided after it was eliminated.
  for (auto rec = eliminations_.rbegin(); rec != eliminations_.rend(); ++rec) {
    if (rec->fixed >= 0) {
      result[static_cast<size_t>(rec->node)] = rec->fixed;
      continue;
    }
    const size_t ku = rec->strategies.size();
    size_t chosen[2] = {0, 0};
    size_t width[2] = {0, 0};
    for (size_t t = 0; t < static_cast<size_t>(rec->neighbour_count); ++t) {
      const std::vector<int32_t>& list = rec->neighbour_strategies[t];
      const int32_t s = result[static_cast<size_t>(rec->neighbour[t])];
      const auto it = std::lower_bound(list.begin(), list.end(), s);
      chosen[t] = it != list.end() && *it == s ? static_cast<size_t>(it - list.begin()) : 0;
      width[t] = list.size();
    }
    auto entry = [&](size_t t, size_t i) {
      return rec->node_is_row[t] ? rec->edge[t][i * width[t] + chosen[t]]
                                 : rec->edge[t][chosen[t] * ku + i];
    };
    double best = kInfCost;
    size_t best_i = 0;
    for (size_t i = 0; i < ku; ++i) {
      double x = rec->cost[i] + entry(0, i);  // the same sums, in the same order, as the fold
      if (rec->neighbour_count == 2) x = x + entry(1, i);
      if (x < best) {
        best = x;
        best_i = i;
      }
    }
    result[static_cast<size_t>(rec->node)] = rec->strategies[best_i];
  }
  return result;
}

std::vector<int32_t> ReducedProblem::Restrict(const std::vector<int32_t>& input_assignment) const {
  std::vector<int32_t> result(core_strategies_.size(), 0);
  for (size_t c = 0; c < core_strategies_.size(); ++c) {
    const size_t v = static_cast<size_t>(input_node_of_core_[c]);
    const std::vector<int32_t>& list = core_strategies_[c];
    const std::vector<int32_t>& redirect = redirect_[v];
    int32_t s = v < input_assignment.size() ? input_assignment[v] : -1;
    bool found = false;
    // Follow replacements; each points at a strategy that was still there, so this ends.
    for (size_t step = 0; step <= redirect.size() && s >= 0; ++step) {
      const auto it = std::lower_bound(list.begin(), list.end(), s);
      if (it != list.end() && *it == s) {
        result[c] = static_cast<int32_t>(it - list.begin());
        found = true;
        break;
      }
      if (static_cast<size_t>(s) >= redirect.size()) break;
      s = redirect[static_cast<size_t>(s)];
    }
    if (!found) {  // unknown or forbidden: the cheapest strategy
      const std::vector<double>& cost = core_.cost[c];
      result[c] = static_cast<int32_t>(std::min_element(cost.begin(), cost.end()) - cost.begin());
    }
  }
  return result;
}

}  // namespace alpa
