// The local search's view of a WorkProblem's costs: every edge seen from both ends with its
// matrix laid out so that one neighbour strategy gives a contiguous row over this node's
// strategies, and each node's domain (strategies that can appear in a finite-cost assignment:
// finite node cost and, after arc consistency, a finite partner on every edge).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

struct SearchArc {
  int32_t other = 0;  // the neighbour
  // cost[t * k_self + s]: the edge's cost when this node takes s and the neighbour takes t.
  const double* cost = nullptr;
  size_t reverse = 0;  // index (arc_index) of the same edge seen from the neighbour
};

class SearchGraph {
 public:
  // Once `control` has expired it stops building, and the graph must not be used.
  explicit SearchGraph(const WorkProblem& problem, const SolveControl& control = SolveControl());

  int32_t node_count() const { return static_cast<int32_t>(node_cost_.size()); }
  int32_t strategy_count(int32_t v) const {
    return static_cast<int32_t>(node_cost_[static_cast<size_t>(v)]->size());
  }
  const double* node_cost(int32_t v) const { return node_cost_[static_cast<size_t>(v)]->data(); }
  const SearchArc* arcs_begin(int32_t v) const {
    return arcs_.data() + arc_begin_[static_cast<size_t>(v)];
  }
  const SearchArc* arcs_end(int32_t v) const {
    return arcs_.data() + arc_begin_[static_cast<size_t>(v) + 1];
  }
  size_t arc_count() const { return arcs_.size(); }
  size_t arc_index(const SearchArc* arc) const { return static_cast<size_t>(arc - arcs_.data()); }
  const SearchArc& arc(size_t index) const { return arcs_[index]; }
  int32_t degree(int32_t v) const {
    return static_cast<int32_t>(arc_begin_[static_cast<size_t>(v) + 1] -
                                arc_begin_[static_cast<size_t>(v)]);
  }
  // Allowed strategies in increasing order; empty for some node means no finite assignment.
  const std::vector<int32_t>& domain(int32_t v) const { return domain_[static_cast<size_t>(v)]; }
  bool allowed(int32_t v, int32_t s) const {
    return allowed_[static_cast<size_t>(v)][static_cast<size_t>(s)] != 0;
  }
  bool has_empty_domain() const { return has_empty_domain_; }
  int32_t max_strategy_count() const { return max_strategies_; }

  // local[s] = node cost of s + every incident edge at the neighbours' current strategies, for
  // all s (strategies outside the domain included: callers filter with allowed()).
  void LocalCosts(int32_t v, const std::vector<int32_t>& x, double* local) const;
  // The same for one strategy.
  double LocalCost(int32_t v, int32_t s, const std::vector<int32_t>& x) const;
  // Number of forbidden (+inf) terms among node v's cost and incident edges if v takes s.
  int32_t ForbiddenCount(int32_t v, int32_t s, const std::vector<int32_t>& x) const;

 private:
  void PruneDomains(PeriodicCheck& check);  // returns early once check.stop()

  std::vector<const std::vector<double>*> node_cost_;
  std::vector<size_t> arc_begin_;
  std::vector<SearchArc> arcs_;
  std::vector<std::vector<double>> transposed_;  // for the arcs seen from an edge's `a` end
  std::vector<std::vector<int32_t>> domain_;
  std::vector<std::vector<uint8_t>> allowed_;
  bool has_empty_domain_ = false;
  int32_t max_strategies_ = 0;
};

}  // namespace alpa
