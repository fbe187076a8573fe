#include "solvers/sharding/local_search/local_search_graph.h"

#include <algorithm>
#include <deque>

#include "core/problem/sharding_problem.h"

namespace alpa {

SearchGraph::SearchGraph(const WorkProblem& problem, const SolveControl& control) {
  // Edges between two reads of the control (an edge is up to a few thousand entries).
  constexpr int64_t kEdgesBetweenChecks = 64;
  PeriodicCheck check(control, kEdgesBetweenChecks);
  const size_t n = problem.cost.size();
  node_cost_.resize(n);
  for (size_t v = 0; v < n; ++v) {
    node_cost_[v] = &problem.cost[v];
    max_strategies_ = std::max(max_strategies_, static_cast<int32_t>(problem.cost[v].size()));
  }
  arc_begin_.assign(n + 1, 0);
  for (const WorkEdge& e : problem.edges) {
    ++arc_begin_[static_cast<size_t>(e.a) + 1];
    ++arc_begin_[static_cast<size_t>(e.b) + 1];
  }
  for (size_t v = 0; v < n; ++v) arc_begin_[v + 1] += arc_begin_[v];
  arcs_.resize(arc_begin_[n]);
  transposed_.resize(problem.edges.size());
  std::vector<size_t> fill(arc_begin_.begin(), arc_begin_.end() - 1);
  for (size_t i = 0; i < problem.edges.size(); ++i) {
    if (check.stop()) return;
    const WorkEdge& e = problem.edges[i];
    const size_t ka = problem.cost[static_cast<size_t>(e.a)].size();
    const size_t kb = problem.cost[static_cast<size_t>(e.b)].size();
    // Seen from b, the stored row-major matrix already has rows = a's strategy (the neighbour).
    const size_t at_b = fill[static_cast<size_t>(e.b)]++;
    const size_t at_a = fill[static_cast<size_t>(e.a)]++;
    arcs_[at_b] = SearchArc{e.a, e.cost.data(), at_a};
    std::vector<double>& t = transposed_[i];
    t.resize(ka * kb);
    for (size_t s = 0; s < ka; ++s) {
      for (size_t u = 0; u < kb; ++u) t[u * ka + s] = e.cost[s * kb + u];
    }
    arcs_[at_a] = SearchArc{e.b, t.data(), at_b};
  }
  PruneDomains(check);
}

// Arc consistency (AC-3): a strategy with no finite partner on some edge can never be part of a
// finite-cost assignment, so the search never considers it.
void SearchGraph::PruneDomains(PeriodicCheck& check) {
  const int32_t n = node_count();
  allowed_.resize(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) {
    const int32_t k = strategy_count(v);
    const double* c = node_cost(v);
    std::vector<uint8_t>& a = allowed_[static_cast<size_t>(v)];
    a.assign(static_cast<size_t>(k), 0);
    for (int32_t s = 0; s < k; ++s) a[static_cast<size_t>(s)] = IsForbidden(c[s]) ? 0 : 1;
  }
  std::deque<int32_t> queue;
  std::vector<uint8_t> queued(static_cast<size_t>(n), 1);
  for (int32_t v = 0; v < n; ++v) queue.push_back(v);
  while (!queue.empty()) {
    if (check.stop()) return;
    const int32_t v = queue.front();
    queue.pop_front();
    queued[static_cast<size_t>(v)] = 0;
    const size_t kv = static_cast<size_t>(strategy_count(v));
    std::vector<uint8_t>& av = allowed_[static_cast<size_t>(v)];
    bool changed = false;
    for (const SearchArc* arc = arcs_begin(v); arc != arcs_end(v); ++arc) {
      const std::vector<uint8_t>& au = allowed_[static_cast<size_t>(arc->other)];
      for (size_t s = 0; s < kv; ++s) {
        if (av[s] == 0) continue;
        bool supported = false;
        for (size_t t = 0; t < au.size() && !supported; ++t) {
          supported = au[t] != 0 && !IsForbidden(arc->cost[t * kv + s]);
        }
        if (!supported) {
          av[s] = 0;
          changed = true;
        }
      }
    }
    if (!changed) continue;
    for (const SearchArc* arc = arcs_begin(v); arc != arcs_end(v); ++arc) {
      if (queued[static_cast<size_t>(arc->other)] == 0) {
        queued[static_cast<size_t>(arc->other)] = 1;
        queue.push_back(arc->other);
      }
    }
  }
  domain_.resize(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) {
    const std::vector<uint8_t>& a = allowed_[static_cast<size_t>(v)];
    for (size_t s = 0; s < a.size(); ++s) {
      if (a[s] != 0) domain_[static_cast<size_t>(v)].push_back(static_cast<int32_t>(s));
    }
    if (domain_[static_cast<size_t>(v)].empty()) has_empty_domain_ = true;
  }
}

void SearchGraph::LocalCosts(int32_t v, const std::vector<int32_t>& x, double* local) const {
  const size_t k = static_cast<size_t>(strategy_count(v));
  const double* c = node_cost(v);
  std::copy(c, c + k, local);
  for (const SearchArc* arc = arcs_begin(v); arc != arcs_end(v); ++arc) {
    const double* row = arc->cost + static_cast<size_t>(x[static_cast<size_t>(arc->other)]) * k;
    for (size_t s = 0; s < k; ++s) local[s] += row[s];
  }
}

double SearchGraph::LocalCost(int32_t v, int32_t s, const std::vector<int32_t>& x) const {
  const size_t k = static_cast<size_t>(strategy_count(v));
  double total = node_cost(v)[s];
  for (const SearchArc* arc = arcs_begin(v); arc != arcs_end(v); ++arc) {
    total += arc->cost[static_cast<size_t>(x[static_cast<size_t>(arc->other)]) * k +
                       static_cast<size_t>(s)];
  }
  return total;
}

int32_t SearchGraph::ForbiddenCount(int32_t v, int32_t s, const std::vector<int32_t>& x) const {
  const size_t k = static_cast<size_t>(strategy_count(v));
  int32_t count = IsForbidden(node_cost(v)[s]) ? 1 : 0;
  for (const SearchArc* arc = arcs_begin(v); arc != arcs_end(v); ++arc) {
    const double c = arc->cost[static_cast<size_t>(x[static_cast<size_t>(arc->other)]) * k +
                               static_cast<size_t>(s)];
    if (IsForbidden(c)) ++count;
  }
  return count;
}

}  // namespace alpa
