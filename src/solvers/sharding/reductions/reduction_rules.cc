// The PBQP rules and the graph updates they need (see reduction_engine.h).
#include "solvers/sharding/reductions/reduction_engine.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

namespace alpa {

void ReductionEngine::Touch(int32_t v) {
  DynNode& nd = node(v);
  nd.dominance_dirty = true;
  if (nd.eliminated || nd.queued) return;
  nd.queued = true;
  queue_.push_back(v);
}

const std::vector<int32_t>& ReductionEngine::LiveEdges(int32_t v) {
  DynNode& nd = node(v);
  if (nd.dead_in_adjacency > 0) {
    std::vector<int32_t>& adj = nd.adjacency;
    adj.erase(std::remove_if(adj.begin(), adj.end(), [this](int32_t e) { return !edge(e).alive; }),
              adj.end());
    nd.dead_in_adjacency = 0;
  }
  return nd.adjacency;
}

int32_t ReductionEngine::FindEdge(int32_t v, int32_t w) {
  if (node(w).adjacency.size() < node(v).adjacency.size()) std::swap(v, w);
  for (int32_t e : node(v).adjacency) {
    if (edge(e).alive && Other(edge(e), v) == w) return e;
  }
  return -1;
}

int32_t ReductionEngine::AddEdge(int32_t a, int32_t b, std::vector<double> m) {
  const int32_t id = static_cast<int32_t>(edges_.size());
  edges_.push_back(DynEdge{a, b, std::move(m), true, true});
  for (int32_t x : {a, b}) {
    node(x).adjacency.push_back(id);
    node(x).dirty_edges.push_back(id);
    ++node(x).degree;
  }
  return id;
}

// Each end keeps a list of its edges to check, so that a node of high degree does not rescan
// all of its edges whenever it is processed.
void ReductionEngine::MarkDirty(int32_t e) {
  DynEdge& ed = edge(e);
  if (ed.dirty) return;  // already listed
  ed.dirty = true;
  node(ed.a).dirty_edges.push_back(e);
  node(ed.b).dirty_edges.push_back(e);
}

void ReductionEngine::RemoveEdge(int32_t e) {
  DynEdge& ed = edge(e);
  ed.alive = false;
  ed.m.clear();
  ed.m.shrink_to_fit();
  for (int32_t v : {ed.a, ed.b}) {
    --node(v).degree;
    ++node(v).dead_in_adjacency;
    Touch(v);
  }
}

// Adds m (rows = v's strategies) to the v-w edge, creating it when absent.
void ReductionEngine::AddToEdge(int32_t v, int32_t w, std::vector<double> m) {
  const int32_t e = FindEdge(v, w);
  if (e < 0) {
    AddEdge(v, w, std::move(m));
  } else {
    DynEdge& ed = edge(e);
    const size_t kw = k(w);
    for (size_t i = 0; i < k(v); ++i) {
      for (size_t j = 0; j < kw; ++j) {
        const double x = m[i * kw + j];
        if (ed.a == v) {
          ed.m[i * kw + j] += x;
        } else {
          ed.m[j * k(v) + i] += x;
        }
      }
    }
    MarkDirty(e);
  }
  Touch(v);
  Touch(w);
}

// replacement[s] < -1: strategy s stays; else it goes, with replacement[s] as its substitute
// (a current strategy that stays, or -1 when s is forbidden).
void ReductionEngine::RemoveStrategies(int32_t v, const std::vector<int32_t>& replacement) {
  DynNode& nd = node(v);
  const size_t old_k = nd.cost.size();
  std::vector<int32_t>& redirect = out_.redirect_[static_cast<size_t>(v)];
  if (redirect.empty()) {
    redirect.resize(input_.cost[static_cast<size_t>(v)].size());
    for (size_t s = 0; s < redirect.size(); ++s) redirect[s] = static_cast<int32_t>(s);
  }
  std::vector<size_t> keep;
  for (size_t s = 0; s < old_k; ++s) {
    if (replacement[s] < -1) {
      keep.push_back(s);
      continue;
    }
    const int32_t target =
        replacement[s] >= 0 ? nd.strategies[static_cast<size_t>(replacement[s])] : -1;
    redirect[static_cast<size_t>(nd.strategies[s])] = target;
  }
  for (size_t i = 0; i < keep.size(); ++i) {
    nd.cost[i] = nd.cost[keep[i]];
    nd.strategies[i] = nd.strategies[keep[i]];
  }
  nd.cost.resize(keep.size());
  nd.strategies.resize(keep.size());
  for (int32_t e : LiveEdges(v)) {
    DynEdge& ed = edge(e);
    const int32_t w = Other(ed, v);
    const size_t kw = k(w);
    std::vector<double> m;
    m.reserve(keep.size() * kw);
    if (ed.a == v) {
      for (size_t i : keep) {
        m.insert(m.end(), ed.m.begin() + static_cast<std::ptrdiff_t>(i * kw),
                 ed.m.begin() + static_cast<std::ptrdiff_t>((i + 1) * kw));
      }
    } else {
      for (size_t j = 0; j < kw; ++j) {
        for (size_t i : keep) m.push_back(ed.m[j * old_k + i]);
      }
    }
    ed.m = std::move(m);
    MarkDirty(e);
    Touch(w);
  }
  Touch(v);
}

// Removes +inf strategies; false when none would be left (the problem is infeasible).
bool ReductionEngine::RemoveForbidden(int32_t v) {
  const std::vector<double>& c = node(v).cost;
  std::vector<int32_t> replacement(c.size(), -2);
  bool any_left = false, any_removed = false;
  for (size_t s = 0; s < c.size(); ++s) {
    if (std::isinf(c[s])) {
      replacement[s] = -1;
      any_removed = true;
    } else {
      any_left = true;
    }
  }
  if (!any_left) return false;
  if (any_removed) RemoveStrategies(v, replacement);
  return true;
}

// Strategies that an edge forbids whatever the other end takes become +inf; an edge of the form
// r[i] + c[j] folds into the two node costs.
void ReductionEngine::CheckEdge(int32_t e) {
  DynEdge& ed = edge(e);
  const size_t ka = k(ed.a), kb = k(ed.b);
  std::vector<bool> row_ok(ka, false), col_ok(kb, false);
  bool any_inf = false;
  for (size_t i = 0; i < ka; ++i) {
    for (size_t j = 0; j < kb; ++j) {
      if (std::isinf(ed.m[i * kb + j])) {
        any_inf = true;
      } else {
        row_ok[i] = true;
        col_ok[j] = true;
      }
    }
  }
  ed.dirty = false;
  if (any_inf) {
    for (size_t i = 0; i < ka; ++i) {
      if (!row_ok[i] && !std::isinf(node(ed.a).cost[i])) {
        node(ed.a).cost[i] = kInfCost;
        Touch(ed.a);
      }
    }
    for (size_t j = 0; j < kb; ++j) {
      if (!col_ok[j] && !std::isinf(node(ed.b).cost[j])) {
        node(ed.b).cost[j] = kInfCost;
        Touch(ed.b);
      }
    }
    return;
  }
  const std::vector<double>& m = ed.m;
  for (size_t i = 0; i < ka; ++i) {
    for (size_t j = 0; j < kb; ++j) {
      if (m[i * kb] + (m[j] - m[0]) != m[i * kb + j]) return;
    }
  }
  for (size_t i = 0; i < ka; ++i) node(ed.a).cost[i] += m[i * kb];
  for (size_t j = 0; j < kb; ++j) node(ed.b).cost[j] += m[j] - m[0];
  ++out_.stats_.separable_edges;
  RemoveEdge(e);
}

void ReductionEngine::EliminateFixed(int32_t v, size_t strategy) {
  DynNode& nd = node(v);
  folded_ += nd.cost[strategy];
  nd.eliminated = true;
  nd.fixed = nd.strategies[strategy];
  ReducedProblem::Elimination record;
  record.node = v;
  record.fixed = nd.fixed;
  out_.eliminations_.push_back(std::move(record));
}

void ReductionEngine::ReduceDegreeOne(int32_t u) {
  const int32_t e = LiveEdges(u).front();
  DynEdge& ed = edge(e);
  const int32_t v = Other(ed, u);
  const size_t ku = k(u), kv = k(v);
  const std::vector<double>& cu = node(u).cost;
  std::vector<double> best(kv, kInfCost);
  for (size_t i = 0; i < ku; ++i) {
    for (size_t j = 0; j < kv; ++j) {
      const double x = cu[i] + At(ed, u, i, j);
      if (x < best[j]) best[j] = x;
    }
  }
  for (size_t j = 0; j < kv; ++j) node(v).cost[j] += best[j];
  ReducedProblem::Elimination record;
  record.node = u;
  record.strategies = std::move(node(u).strategies);  // u is gone: its lists move
  record.cost = std::move(node(u).cost);
  record.neighbour_count = 1;
  record.neighbour[0] = v;
  record.neighbour_strategies[0] = node(v).strategies;
  record.node_is_row[0] = ed.a == u;
  record.edge[0] = std::move(ed.m);
  out_.eliminations_.push_back(std::move(record));
  node(u).eliminated = true;
  RemoveEdge(e);
  ++out_.stats_.r1;
}

void ReductionEngine::ReduceDegreeTwo(int32_t u) {
  const std::vector<int32_t>& adj = LiveEdges(u);
  const int32_t e1 = adj[0], e2 = adj[1];
  const int32_t v = Other(edge(e1), u), w = Other(edge(e2), u);
  const size_t ku = k(u), kv = k(v), kw = k(w);
  if (static_cast<double>(ku) * static_cast<double>(kv) * static_cast<double>(kw) >
      reduction_internal::kMaxR2Work) {
    return;
  }
  const std::vector<double>& cu = node(u).cost;
  // a[j][i] = c_u[i] + E1(i, j), b[k][i] = E2(i, k): the min-plus product runs over contiguous i.
  std::vector<double> a(kv * ku), b(kw * ku);
  for (size_t i = 0; i < ku; ++i) {
    for (size_t j = 0; j < kv; ++j) a[j * ku + i] = cu[i] + At(edge(e1), u, i, j);
    for (size_t j = 0; j < kw; ++j) b[j * ku + i] = At(edge(e2), u, i, j);
  }
  std::vector<double> costs(kv * kw);
  for (size_t j = 0; j < kv; ++j) {
    const double* aj = &a[j * ku];
    for (size_t l = 0; l < kw; ++l) {
      const double* bl = &b[l * ku];
      double best = kInfCost;
      for (size_t i = 0; i < ku; ++i) {
        const double x = aj[i] + bl[i];
        best = x < best ? x : best;
      }
      costs[j * kw + l] = best;
    }
  }
  ReducedProblem::Elimination record;
  record.node = u;
  record.strategies = std::move(node(u).strategies);  // u is gone: its lists move
  record.cost = std::move(node(u).cost);
  record.neighbour_count = 2;
  const int32_t ends[2] = {e1, e2};
  for (size_t t = 0; t < 2; ++t) {
    DynEdge& ed = edge(ends[t]);
    record.neighbour[t] = Other(ed, u);
    record.neighbour_strategies[t] = node(record.neighbour[t]).strategies;
    record.node_is_row[t] = ed.a == u;
    record.edge[t] = std::move(ed.m);
  }
  out_.eliminations_.push_back(std::move(record));
  node(u).eliminated = true;
  RemoveEdge(e1);
  RemoveEdge(e2);
  AddToEdge(v, w, std::move(costs));
  ++out_.stats_.r2;
}

void ReductionEngine::Process(int32_t u) {
  if (node(u).eliminated) return;
  if (!RemoveForbidden(u)) {
    out_.infeasible_ = true;
    return;
  }
  // Edge checks may forbid strategies of u (handled when u is processed again: CheckEdge
  // touches it) or fold edges away.
  std::vector<int32_t> pending;
  pending.swap(node(u).dirty_edges);
  for (int32_t e : pending) {
    if (edge(e).alive && edge(e).dirty) CheckEdge(e);
  }
  if (node(u).queued) return;  // its costs changed: come back after the others
  DynNode& nd = node(u);
  if (nd.cost.size() == 1) {
    // A single choice: its edges are plain costs of the neighbours (memory nodes too: the
    // core moves their constant usage into the rows' capacities).
    for (int32_t e : std::vector<int32_t>(LiveEdges(u))) {
      const int32_t v = Other(edge(e), u);
      for (size_t j = 0; j < k(v); ++j) node(v).cost[j] += At(edge(e), u, 0, j);
      RemoveEdge(e);
    }
    EliminateFixed(u, 0);
    ++out_.stats_.single_strategy;
    return;
  }
  if (nd.pinned) return;
  if (nd.degree == 0) {
    const size_t best =
        static_cast<size_t>(std::min_element(nd.cost.begin(), nd.cost.end()) - nd.cost.begin());
    EliminateFixed(u, best);
    ++out_.stats_.r0;
  } else if (nd.degree == 1) {
    ReduceDegreeOne(u);
  } else if (nd.degree == 2) {
    ReduceDegreeTwo(u);
  }
}

}  // namespace alpa
