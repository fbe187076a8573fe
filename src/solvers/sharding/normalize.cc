#include "solvers/sharding/normalize.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <limits>
#include <string>
#include <utility>

#include "solvers/sharding/memory_rows.h"

namespace alpa {
namespace {

// Rounds of memory-driven strategy removal (each rebuilds the rows); usually 1 or 2 suffice.
constexpr int kMaxMemoryRounds = 8;

double ToWorkCost(double cost) { return IsForbidden(cost) ? kInfCost : cost; }

// Edges, items or queue steps between two reads of the control: each step is at most a few
// thousand entries, so a cancel waits well under a millisecond per check.
constexpr int64_t kStepsBetweenChecks = 64;

// Why a normalization stopped early, once `control` has expired; Ok before.
Status StoppedBy(const SolveControl& control) { return StopStatus(control, kPreparingTheProblem); }

Status Infeasible(std::string message) {
  return Status(StatusCode::kInfeasible, std::move(message));
}

// FollowRoot for every node at once (memoized: long follower chains stay linear).
std::vector<int32_t> AllRoots(const ShardingProblem& problem) {
  const size_t n = problem.nodes.size();
  std::vector<int32_t> root(n, -1);
  std::vector<int32_t> path;
  for (size_t v = 0; v < n; ++v) {
    int32_t cur = static_cast<int32_t>(v);
    path.clear();
    while (root[static_cast<size_t>(cur)] < 0 &&
           problem.nodes[static_cast<size_t>(cur)].follows != -1) {
      path.push_back(cur);
      cur = problem.nodes[static_cast<size_t>(cur)].follows;
    }
    const int32_t r = root[static_cast<size_t>(cur)] >= 0 ? root[static_cast<size_t>(cur)] : cur;
    root[static_cast<size_t>(cur)] = r;
    for (int32_t p : path) root[static_cast<size_t>(p)] = r;
  }
  return root;
}

// One original edge or alias, placed on a work pair a < b.
struct Piece {
  int32_t a = 0;
  int32_t b = 0;
  bool alias = false;
  int32_t source = 0;      // index into problem.edges or problem.aliases
  bool transpose = false;  // the source's u is the work node b
};

// The work edges between distinct groups, parallel pieces added in source order.
// Stops early (the edges then unusable) once `control` has expired; the caller checks it.
std::vector<WorkEdge> MergeEdges(const ShardingProblem& problem,
                                 const std::vector<int32_t>& work_node_of,
                                 const SolveControl& control,
                                 std::vector<std::vector<double>>* cost) {
  PeriodicCheck check(control, kStepsBetweenChecks);
  std::vector<Piece> pieces;
  constexpr bool kFromEdge = false, kFromAlias = true;
  auto place = [&](int32_t u, int32_t v, bool alias, size_t source) {
    const int32_t gu = work_node_of[static_cast<size_t>(u)];
    const int32_t gv = work_node_of[static_cast<size_t>(v)];
    pieces.push_back(
        Piece{std::min(gu, gv), std::max(gu, gv), alias, static_cast<int32_t>(source), gu > gv});
  };
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    if (check.stop()) return {};
    const ShardingEdge& edge = problem.edges[e];
    const int32_t g = work_node_of[static_cast<size_t>(edge.u)];
    if (g != work_node_of[static_cast<size_t>(edge.v)]) {
      place(edge.u, edge.v, kFromEdge, e);
      continue;
    }
    // Both ends share one choice: only the diagonal can apply.
    std::vector<double>& c = (*cost)[static_cast<size_t>(g)];
    for (size_t s = 0; s < c.size(); ++s) c[s] += ToWorkCost(edge.costs[s * c.size() + s]);
  }
  for (size_t a = 0; a < problem.aliases.size(); ++a) {
    if (check.stop()) return {};
    const ShardingAlias& alias = problem.aliases[a];
    const int32_t g = work_node_of[static_cast<size_t>(alias.u)];
    if (g != work_node_of[static_cast<size_t>(alias.v)]) {
      place(alias.u, alias.v, kFromAlias, a);
      continue;
    }
    std::vector<double>& c = (*cost)[static_cast<size_t>(g)];
    for (size_t s = 0; s < c.size(); ++s) {
      if (alias.forbidden[s * c.size() + s] != 0) c[s] = kInfCost;
    }
  }
  std::stable_sort(pieces.begin(), pieces.end(), [](const Piece& x, const Piece& y) {
    return x.a != y.a ? x.a < y.a : x.b < y.b;
  });
  std::vector<WorkEdge> edges;
  for (const Piece& piece : pieces) {
    if (check.stop()) return {};
    const size_t ka = (*cost)[static_cast<size_t>(piece.a)].size();
    const size_t kb = (*cost)[static_cast<size_t>(piece.b)].size();
    if (edges.empty() || edges.back().a != piece.a || edges.back().b != piece.b) {
      edges.push_back(WorkEdge{piece.a, piece.b, std::vector<double>(ka * kb, 0.0)});
    }
    std::vector<double>& m = edges.back().cost;
    // The source matrix has rows = its u's strategies; u is a unless transposed.
    const size_t rows = piece.transpose ? kb : ka;
    const size_t cols = piece.transpose ? ka : kb;
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < cols; ++c) {
        const size_t at = piece.transpose ? c * kb + r : r * kb + c;
        if (piece.alias) {
          if (problem.aliases[static_cast<size_t>(piece.source)].forbidden[r * cols + c] != 0) {
            m[at] = kInfCost;
          }
        } else {
          m[at] += ToWorkCost(problem.edges[static_cast<size_t>(piece.source)].costs[r * cols + c]);
        }
      }
    }
  }
  return edges;
}

// Removes strategies that every allowed choice of some neighbour forbids, to a fixed point
// (arc consistency). Only edges with a +inf entry can remove anything.
Status MakeArcConsistent(const std::vector<WorkEdge>& edges,
                         const std::vector<int32_t>& root_of_work, const SolveControl& control,
                         std::vector<std::vector<bool>>* allowed) {
  PeriodicCheck check(control, kStepsBetweenChecks);
  const size_t n = allowed->size();
  std::vector<std::vector<int32_t>> adjacency(n);
  for (size_t e = 0; e < edges.size(); ++e) {
    if (check.stop()) return StoppedBy(control);
    if (std::none_of(edges[e].cost.begin(), edges[e].cost.end(),
                     [](double x) { return std::isinf(x); })) {
      continue;
    }
    adjacency[static_cast<size_t>(edges[e].a)].push_back(static_cast<int32_t>(e));
    adjacency[static_cast<size_t>(edges[e].b)].push_back(static_cast<int32_t>(e));
  }
  std::deque<int32_t> queue;
  std::vector<bool> queued(n, false);
  for (size_t v = 0; v < n; ++v) {
    if (adjacency[v].empty()) continue;
    queue.push_back(static_cast<int32_t>(v));
    queued[v] = true;
  }
  while (!queue.empty()) {
    if (check.stop()) return StoppedBy(control);
    const size_t x = static_cast<size_t>(queue.front());
    queue.pop_front();
    queued[x] = false;
    for (int32_t e : adjacency[x]) {
      const WorkEdge& edge = edges[static_cast<size_t>(e)];
      const bool x_is_a = static_cast<size_t>(edge.a) == x;
      const size_t y = static_cast<size_t>(x_is_a ? edge.b : edge.a);
      const std::vector<bool>& from = (*allowed)[x];
      std::vector<bool>& to = (*allowed)[y];
      const size_t kb = (*allowed)[static_cast<size_t>(edge.b)].size();
      bool changed = false;
      for (size_t j = 0; j < to.size(); ++j) {
        if (!to[j]) continue;
        bool supported = false;
        for (size_t i = 0; i < from.size() && !supported; ++i) {
          supported =
              from[i] && !std::isinf(x_is_a ? edge.cost[i * kb + j] : edge.cost[j * kb + i]);
        }
        if (!supported) {
          to[j] = false;
          changed = true;
        }
      }
      if (!changed) continue;
      if (std::none_of(to.begin(), to.end(), [](bool b) { return b; })) {
        return Infeasible("node " + std::to_string(root_of_work[y]) +
                          " has no strategy left that is allowed by its edges/aliases");
      }
      if (!queued[y]) {
        queued[y] = true;
        queue.push_back(static_cast<int32_t>(y));
      }
    }
  }
  return Status::Ok();
}

std::vector<std::vector<int32_t>> AllowedStrategies(const std::vector<std::vector<bool>>& allowed) {
  std::vector<std::vector<int32_t>> lists(allowed.size());
  for (size_t w = 0; w < allowed.size(); ++w) {
    for (size_t s = 0; s < allowed[w].size(); ++s) {
      if (allowed[w][s]) lists[w].push_back(static_cast<int32_t>(s));
    }
  }
  return lists;
}

// Forbids (in `allowed`) every strategy whose usage in some item exceeds the smallest capacity
// of the rows holding that item.
Status RemoveOversizedStrategies(const WorkProblem& work,
                                 const std::vector<std::vector<int32_t>>& original_strategy,
                                 const std::vector<int32_t>& root_of_work,
                                 const SolveControl& control,
                                 std::vector<std::vector<bool>>* allowed, bool* removed) {
  PeriodicCheck check(control, kStepsBetweenChecks);
  std::vector<int64_t> capacity(work.memory_items.size(), std::numeric_limits<int64_t>::max());
  for (const MemoryRow& row : work.memory_rows) {
    if (check.stop()) return StoppedBy(control);
    for (int32_t x : row.items) {
      capacity[static_cast<size_t>(x)] = std::min(capacity[static_cast<size_t>(x)], row.capacity);
    }
  }
  for (size_t x = 0; x < work.memory_items.size(); ++x) {
    if (check.stop()) return StoppedBy(control);
    const MemoryItem& item = work.memory_items[x];
    const size_t w = static_cast<size_t>(item.node);
    for (size_t s = 0; s < item.usage.size(); ++s) {
      if (item.usage[s] <= capacity[x]) continue;
      (*allowed)[w][static_cast<size_t>(original_strategy[w][s])] = false;
      *removed = true;
    }
  }
  // Each item keeps its smallest usage (capacities are never negative), but a follower group
  // has one item per member, and together they can rule out every strategy.
  for (size_t w = 0; w < allowed->size(); ++w) {
    if (std::none_of((*allowed)[w].begin(), (*allowed)[w].end(), [](bool b) { return b; })) {
      return Infeasible("node " + std::to_string(root_of_work[w]) +
                        " has no strategy left whose memory usage fits the limit");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<NormalizedProblem> Normalize(const ShardingProblem& problem) {
  return Normalize(problem, SolveControl());
}

Result<NormalizedProblem> Normalize(const ShardingProblem& problem, const SolveControl& control) {
  const size_t n = problem.nodes.size();
  NormalizedProblem out;
  WorkProblem& work = out.work;
  const std::vector<int32_t> root = AllRoots(problem);
  std::vector<int32_t> root_of_work;
  out.work_node_of.assign(n, -1);
  for (size_t v = 0; v < n; ++v) {
    if (root[v] != static_cast<int32_t>(v)) continue;
    out.work_node_of[v] = static_cast<int32_t>(root_of_work.size());
    root_of_work.push_back(static_cast<int32_t>(v));
  }
  const size_t work_nodes = root_of_work.size();
  work.cost.resize(work_nodes);
  for (size_t w = 0; w < work_nodes; ++w) {
    work.cost[w].assign(problem.nodes[static_cast<size_t>(root_of_work[w])].costs.size(), 0.0);
  }
  // Members' costs add: they all take the root's strategy.
  for (size_t v = 0; v < n; ++v) {
    out.work_node_of[v] = out.work_node_of[static_cast<size_t>(root[v])];
    std::vector<double>& c = work.cost[static_cast<size_t>(out.work_node_of[v])];
    const std::vector<double>& own = problem.nodes[v].costs;
    for (size_t s = 0; s < c.size(); ++s) {
      if (std::isinf(own[s]) && own[s] < 0) {
        return InvalidProblem("node " + std::to_string(v) + " strategy " + std::to_string(s) +
                              ": cost is -infinity");
      }
      c[s] += ToWorkCost(own[s]);
    }
  }
  ALPA_RETURN_IF_ERROR(StoppedBy(control));
  std::vector<WorkEdge> edges = MergeEdges(problem, out.work_node_of, control, &work.cost);
  ALPA_RETURN_IF_ERROR(StoppedBy(control));
  PeriodicCheck check(control, kStepsBetweenChecks);
  for (const WorkEdge& e : edges) {
    if (check.stop()) return StoppedBy(control);
    for (double x : e.cost) {
      if (std::isinf(x) && x < 0) {
        return InvalidProblem(
            "an edge between node " + std::to_string(root_of_work[static_cast<size_t>(e.a)]) +
            " and node " + std::to_string(root_of_work[static_cast<size_t>(e.b)]) +
            " has a cost of -infinity");
      }
    }
  }

  std::vector<std::vector<bool>> allowed(work_nodes);
  for (size_t w = 0; w < work_nodes; ++w) {
    const std::vector<double>& c = work.cost[w];
    allowed[w].resize(c.size());
    bool any = false;
    for (size_t s = 0; s < c.size(); ++s) {
      allowed[w][s] = !std::isinf(c[s]);
      any = any || allowed[w][s];
    }
    if (!any) {
      return Infeasible("node " + std::to_string(root_of_work[w]) +
                        " has no allowed strategy: each is forbidden by its cost, a follower's "
                        "cost, or an edge/alias within its follower group");
    }
  }
  // A strategy whose own (shifted) usage exceeds the capacity of a row holding it can never be
  // chosen. Removing it can raise a smallest usage and so lower capacities, and it can make
  // neighbours' strategies unsupported: repeat with arc consistency until nothing changes.
  for (int round = 0;; ++round) {
    ALPA_RETURN_IF_ERROR(MakeArcConsistent(edges, root_of_work, control, &allowed));
    out.original_strategy = AllowedStrategies(allowed);
    if (!problem.usage_limit) break;
    ALPA_RETURN_IF_ERROR(StoppedBy(control));
    ALPA_RETURN_IF_ERROR(BuildMemoryRows(problem, out.work_node_of, out.original_strategy, control,
                                         &work.memory_items, &work.memory_rows));
    ALPA_RETURN_IF_ERROR(StoppedBy(control));
    if (round == kMaxMemoryRounds) break;
    bool removed = false;
    ALPA_RETURN_IF_ERROR(RemoveOversizedStrategies(work, out.original_strategy, root_of_work,
                                                   control, &allowed, &removed));
    if (!removed) break;
  }

  // Renumber the allowed strategies; shrink costs and edges; drop edges that are all zero.
  for (size_t w = 0; w < work_nodes; ++w) {
    std::vector<double>& c = work.cost[w];
    const std::vector<int32_t>& kept = out.original_strategy[w];
    for (size_t s = 0; s < kept.size(); ++s) c[s] = c[static_cast<size_t>(kept[s])];
    c.resize(kept.size());
  }
  for (WorkEdge& e : edges) {
    if (check.stop()) return StoppedBy(control);
    const std::vector<int32_t>& ra = out.original_strategy[static_cast<size_t>(e.a)];
    const std::vector<int32_t>& rb = out.original_strategy[static_cast<size_t>(e.b)];
    const size_t old_kb = allowed[static_cast<size_t>(e.b)].size();
    std::vector<double> m;
    m.reserve(ra.size() * rb.size());
    bool all_zero = true;
    for (int32_t i : ra) {
      for (int32_t j : rb) {
        const double x = e.cost[static_cast<size_t>(i) * old_kb + static_cast<size_t>(j)];
        all_zero = all_zero && x == 0.0;
        m.push_back(x);
      }
    }
    if (all_zero) continue;
    work.edges.push_back(WorkEdge{e.a, e.b, std::move(m)});
  }
  IndexMemoryIntervals(&work, control);
  return out;
}

std::vector<int32_t> ToOriginalAssignment(const NormalizedProblem& normalized,
                                          const std::vector<int32_t>& work_assignment) {
  std::vector<int32_t> assignment(normalized.work_node_of.size());
  for (size_t v = 0; v < assignment.size(); ++v) {
    const size_t w = static_cast<size_t>(normalized.work_node_of[v]);
    assignment[v] = normalized.original_strategy[w][static_cast<size_t>(work_assignment[w])];
  }
  return assignment;
}

std::optional<std::vector<int32_t>> ToWorkAssignment(const NormalizedProblem& normalized,
                                                     const std::vector<int32_t>& assignment) {
  if (assignment.size() != normalized.work_node_of.size()) return std::nullopt;
  std::vector<int32_t> work(normalized.original_strategy.size(), -1);
  for (size_t v = 0; v < assignment.size(); ++v) {
    const size_t w = static_cast<size_t>(normalized.work_node_of[v]);
    const std::vector<int32_t>& strategies = normalized.original_strategy[w];
    const auto it = std::lower_bound(strategies.begin(), strategies.end(), assignment[v]);
    if (it == strategies.end() || *it != assignment[v]) return std::nullopt;
    const int32_t s = static_cast<int32_t>(it - strategies.begin());
    if (work[w] >= 0 && work[w] != s) return std::nullopt;  // followers disagree
    work[w] = s;
  }
  return work;
}

}  // namespace alpa
