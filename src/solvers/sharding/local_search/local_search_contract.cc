#include "solvers/sharding/local_search/local_search_contract.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <utility>

#include "core/problem/sharding_problem.h"

namespace alpa {
namespace {

// For a bijective edge: partner[s] for every allowed strategy of the `from` end (-1 elsewhere).
struct Tie {
  int32_t other = 0;
  std::vector<int32_t> partner;
};

// Whether edge e is a bijection between the allowed domains; fills both partner maps if so.
bool IsBijection(const WorkEdge& e, const SearchGraph& graph, std::vector<int32_t>* a_to_b,
                 std::vector<int32_t>* b_to_a) {
  const size_t ka = static_cast<size_t>(graph.strategy_count(e.a));
  const size_t kb = static_cast<size_t>(graph.strategy_count(e.b));
  if (graph.domain(e.a).size() != graph.domain(e.b).size()) return false;
  a_to_b->assign(ka, -1);
  b_to_a->assign(kb, -1);
  for (int32_t s : graph.domain(e.a)) {
    for (int32_t t : graph.domain(e.b)) {
      if (IsForbidden(e.cost[static_cast<size_t>(s) * kb + static_cast<size_t>(t)])) continue;
      if ((*a_to_b)[static_cast<size_t>(s)] >= 0 || (*b_to_a)[static_cast<size_t>(t)] >= 0) {
        return false;
      }
      (*a_to_b)[static_cast<size_t>(s)] = t;
      (*b_to_a)[static_cast<size_t>(t)] = s;
    }
    if ((*a_to_b)[static_cast<size_t>(s)] < 0) return false;
  }
  return true;
}

}  // namespace

ContractedProblem Contract(const WorkProblem& problem, const SearchGraph& graph,
                           const SolveControl& control) {
  // Edges or items between two reads of the control.
  constexpr int64_t kStepsBetweenChecks = 64;
  PeriodicCheck check(control, kStepsBetweenChecks);
  const size_t n = problem.cost.size();
  ContractedProblem out;
  std::vector<std::vector<Tie>> ties(n);
  std::vector<int32_t> a_to_b;
  std::vector<int32_t> b_to_a;
  for (const WorkEdge& e : problem.edges) {
    if (check.stop()) return out;
    if (graph.domain(e.a).size() < 2 || !IsBijection(e, graph, &a_to_b, &b_to_a)) continue;
    ties[static_cast<size_t>(e.a)].push_back(Tie{e.b, a_to_b});
    ties[static_cast<size_t>(e.b)].push_back(Tie{e.a, b_to_a});
  }
  // Groups by breadth-first search over ties; members' strategies through the bijections.
  out.group_of.assign(n, -1);
  out.offset.assign(n + 1, 0);
  std::vector<std::vector<int32_t>> perm(n);
  std::vector<std::vector<int32_t>> members;
  for (size_t root = 0; root < n; ++root) {
    if (out.group_of[root] >= 0) continue;
    const int32_t g = static_cast<int32_t>(members.size());
    members.emplace_back(1, static_cast<int32_t>(root));
    out.group_of[root] = g;
    perm[root] = graph.domain(static_cast<int32_t>(root));
    std::vector<int32_t>& list = members.back();
    for (size_t i = 0; i < list.size(); ++i) {
      const int32_t u = list[i];
      for (const Tie& tie : ties[static_cast<size_t>(u)]) {
        const size_t w = static_cast<size_t>(tie.other);
        if (out.group_of[w] >= 0) continue;
        out.group_of[w] = g;
        perm[w].resize(perm[static_cast<size_t>(u)].size());
        for (size_t s = 0; s < perm[w].size(); ++s) {
          perm[w][s] = tie.partner[static_cast<size_t>(perm[static_cast<size_t>(u)][s])];
        }
        list.push_back(tie.other);
      }
    }
  }
  for (size_t v = 0; v < n; ++v) out.offset[v + 1] = out.offset[v] + perm[v].size();
  out.strategy_of.reserve(out.offset[n]);
  for (size_t v = 0; v < n; ++v) {
    out.strategy_of.insert(out.strategy_of.end(), perm[v].begin(), perm[v].end());
  }

  WorkProblem& cp = out.problem;
  cp.constant = problem.constant;
  cp.cost.resize(members.size());
  for (size_t g = 0; g < members.size(); ++g) {
    const size_t k = perm[static_cast<size_t>(members[g][0])].size();
    cp.cost[g].assign(k, 0.0);
    for (int32_t v : members[g]) {
      const std::vector<int32_t>& pv = perm[static_cast<size_t>(v)];
      for (size_t s = 0; s < k; ++s) {
        cp.cost[g][s] += problem.cost[static_cast<size_t>(v)][static_cast<size_t>(pv[s])];
      }
    }
  }
  // Edges: inside a group they fold into its costs; between groups they merge per pair.
  std::map<std::pair<int32_t, int32_t>, size_t> edge_index;
  for (const WorkEdge& e : problem.edges) {
    if (check.stop()) return out;
    const int32_t ga = out.group_of[static_cast<size_t>(e.a)];
    const int32_t gb = out.group_of[static_cast<size_t>(e.b)];
    const std::vector<int32_t>& pa = perm[static_cast<size_t>(e.a)];
    const std::vector<int32_t>& pb = perm[static_cast<size_t>(e.b)];
    const size_t kb = problem.cost[static_cast<size_t>(e.b)].size();
    auto entry = [&](size_t s, size_t t) {
      return e.cost[static_cast<size_t>(pa[s]) * kb + static_cast<size_t>(pb[t])];
    };
    if (ga == gb) {
      std::vector<double>& c = cp.cost[static_cast<size_t>(ga)];
      for (size_t s = 0; s < c.size(); ++s) c[s] += entry(s, s);
      continue;
    }
    // A group with one strategy never moves: its edges fold into the other end's costs, so
    // the search (and message passing) never visits them.
    if (pa.size() == 1 || pb.size() == 1) {
      if (pa.size() == 1 && pb.size() == 1) {
        cp.constant += entry(0, 0);
      } else if (pa.size() == 1) {
        std::vector<double>& c = cp.cost[static_cast<size_t>(gb)];
        for (size_t t = 0; t < c.size(); ++t) c[t] += entry(0, t);
      } else {
        std::vector<double>& c = cp.cost[static_cast<size_t>(ga)];
        for (size_t s = 0; s < c.size(); ++s) c[s] += entry(s, 0);
      }
      continue;
    }
    const bool swap = ga > gb;
    const std::pair<int32_t, int32_t> key = swap ? std::make_pair(gb, ga) : std::make_pair(ga, gb);
    auto [it, inserted] = edge_index.emplace(key, cp.edges.size());
    const size_t rows = cp.cost[static_cast<size_t>(key.first)].size();
    const size_t cols = cp.cost[static_cast<size_t>(key.second)].size();
    if (inserted)
      cp.edges.push_back(WorkEdge{key.first, key.second, std::vector<double>(rows * cols, 0.0)});
    std::vector<double>& m = cp.edges[it->second].cost;
    for (size_t s = 0; s < pa.size(); ++s) {
      for (size_t t = 0; t < pb.size(); ++t) {
        m[swap ? t * cols + s : s * cols + t] += entry(s, t);
      }
    }
  }
  // Deterministic edge order: by (a, b), as the map iterates.
  std::vector<WorkEdge> ordered;
  ordered.reserve(cp.edges.size());
  for (const auto& [key, index] : edge_index) ordered.push_back(std::move(cp.edges[index]));
  cp.edges = std::move(ordered);

  cp.memory_items.resize(problem.memory_items.size());
  for (size_t i = 0; i < problem.memory_items.size(); ++i) {
    if (check.stop()) return out;
    const MemoryItem& item = problem.memory_items[i];
    const std::vector<int32_t>& pv = perm[static_cast<size_t>(item.node)];
    MemoryItem& to = cp.memory_items[i];
    to.node = out.group_of[static_cast<size_t>(item.node)];
    to.usage.resize(pv.size());
    for (size_t s = 0; s < pv.size(); ++s) to.usage[s] = item.usage[static_cast<size_t>(pv[s])];
  }
  return out;
}

std::vector<int32_t> ContractedProblem::Expand(const std::vector<int32_t>& group_assignment) const {
  std::vector<int32_t> x(group_of.size());
  for (size_t v = 0; v < x.size(); ++v) {
    x[v] = strategy_of[offset[v] +
                       static_cast<size_t>(group_assignment[static_cast<size_t>(group_of[v])])];
  }
  return x;
}

std::vector<int32_t> ContractedProblem::Restrict(const std::vector<int32_t>& assignment) const {
  const size_t groups = problem.cost.size();
  std::vector<std::vector<int32_t>> votes(groups);
  for (size_t g = 0; g < groups; ++g) votes[g].assign(problem.cost[g].size(), 0);
  for (size_t v = 0; v < group_of.size(); ++v) {
    std::vector<int32_t>& vote = votes[static_cast<size_t>(group_of[v])];
    for (size_t s = 0; s < vote.size(); ++s) {
      if (strategy_of[offset[v] + s] == assignment[v]) ++vote[s];
    }
  }
  std::vector<int32_t> x(groups, 0);
  for (size_t g = 0; g < groups; ++g) {
    x[g] =
        static_cast<int32_t>(std::max_element(votes[g].begin(), votes[g].end()) - votes[g].begin());
  }
  return x;
}

}  // namespace alpa
