// Starting points and repairs: the smallest-memory assignment, removal of forbidden (+inf)
// terms, and two ways back into the memory rows.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/problem/sharding_problem.h"
#include "solvers/sharding/local_search/local_search_searcher.h"

namespace alpa {

// Each node's smallest-memory strategy (cheapest on ties). With one item per node it minimizes
// every row at once, so it fits whenever anything does.
std::vector<int32_t> Searcher::MinMemoryAssignment() const {
  std::vector<int32_t> x(static_cast<size_t>(n_), 0);
  for (int32_t v = 0; v < n_; ++v) {
    const std::vector<int32_t>& domain = graph_.domain(v);
    int32_t best = domain.front();
    Int128 best_usage = memory_.WeightedUsage(v, best);
    for (int32_t s : domain) {
      const Int128 usage = memory_.WeightedUsage(v, s);
      if (usage < best_usage ||
          (usage == best_usage && graph_.node_cost(v)[s] < graph_.node_cost(v)[best])) {
        best = s;
        best_usage = usage;
      }
    }
    x[static_cast<size_t>(v)] = best;
  }
  return x;
}

// Removes +inf terms: each conflicting node takes the strategy with the fewest forbidden terms,
// preferring ones that keep memory rows within capacity, then the cheapest. A node that cannot
// improve sometimes takes a random allowed strategy so that a neighbour can move instead.
bool Searcher::RepairForbidden() {
  if (forbidden_ == 0) return true;
  for (int32_t v = 0; v < n_; ++v) {
    if (graph_.ForbiddenCount(v, x_[static_cast<size_t>(v)], x_) > 0) Push(v);
  }
  int64_t budget = 50 * static_cast<int64_t>(n_) + 1000;
  while (!queue_.empty() && forbidden_ > 0 && budget-- > 0 && !Stopped()) {
    const int32_t v = queue_.front();
    queue_.pop_front();
    in_queue_[static_cast<size_t>(v)] = 0;
    const int32_t cur = x_[static_cast<size_t>(v)];
    const int32_t cur_count = graph_.ForbiddenCount(v, cur, x_);
    if (cur_count == 0) continue;
    Count(1 + graph_.degree(v));
    graph_.LocalCosts(v, x_, local_.data());
    memory_.LoadSlacks(v, &slacks_);
    int32_t best = cur;
    int32_t best_count = cur_count;
    bool best_fits = true;
    double best_cost = std::numeric_limits<double>::infinity();
    for (int32_t s : graph_.domain(v)) {
      const int32_t count = graph_.ForbiddenCount(v, s, x_);
      const bool fits = memory_.FitsWithSlacks(v, cur, s, slacks_);
      const double c = count == 0 ? local_[static_cast<size_t>(s)] : 0.0;
      if (count < best_count || (count == best_count && fits && !best_fits) ||
          (count == best_count && fits == best_fits && c < best_cost)) {
        best = s;
        best_count = count;
        best_fits = fits;
        best_cost = c;
      }
    }
    if (best_count < cur_count) {
      Move(v, best);
      PushNeighbours(v);
    } else if (rng_.Below(4) == 0) {
      const std::vector<int32_t>& domain = graph_.domain(v);
      Move(v, domain[static_cast<size_t>(rng_.Below(static_cast<int32_t>(domain.size())))]);
      Push(v);
      PushNeighbours(v);
    }
  }
  while (!queue_.empty()) {
    in_queue_[static_cast<size_t>(queue_.front())] = 0;
    queue_.pop_front();
  }
  journal_.clear();
  return forbidden_ == 0;
}

const std::vector<int32_t>& Searcher::NodesOfRow(int32_t row) {
  ++seen_stamp_;
  row_nodes_.clear();
  for (int32_t item : rows_[static_cast<size_t>(row)].items) {
    const int32_t v = problem_.memory_items[static_cast<size_t>(item)].node;
    if (seen_[static_cast<size_t>(v)] == seen_stamp_) continue;
    seen_[static_cast<size_t>(v)] = seen_stamp_;
    row_nodes_.push_back(v);
  }
  return row_nodes_;
}

// Frees memory in the tightest row until every row fits: among that row's nodes, the move with
// the smallest cost increase per byte freed there that keeps fitting rows fitting, creates no
// +inf term and leaves no violated row worse than the one being repaired. The general fallback.
bool Searcher::RepairMemory() {
  while (!memory_.Feasible()) {
    if (Stopped()) return false;
    const int32_t row = memory_.TightestRow();
    const Int128 deficit = -memory_.RowSlack(row);
    int32_t best_node = -1;
    int32_t best_s = -1;
    double best_score = std::numeric_limits<double>::infinity();
    for (int32_t v : NodesOfRow(row)) {
      const int32_t cur = x_[static_cast<size_t>(v)];
      Count(1);
      graph_.LocalCosts(v, x_, local_.data());
      memory_.LoadSlacks(v, &slacks_);
      for (int32_t s : graph_.domain(v)) {
        if (s == cur || IsForbidden(local_[static_cast<size_t>(s)])) continue;
        Int128 freed = 0;
        bool ok = true;
        size_t j = 0;
        for (const MemoryTracker::Run* r = memory_.runs_begin(v); r != memory_.runs_end(v);
             ++r, ++j) {
          const Int128 delta = memory_.RunUsage(*r, s) - memory_.RunUsage(*r, cur);
          if (r->row_begin <= row && row < r->row_end) freed = -delta;
          if (delta > 0 && slacks_[j] - delta < std::min<Int128>(0, 1 - deficit)) ok = false;
        }
        if (!ok || freed <= 0) continue;
        const double gain = static_cast<double>(std::min(freed, deficit));
        const double score =
            (local_[static_cast<size_t>(s)] - local_[static_cast<size_t>(cur)]) / gain;
        if (score < best_score) {
          best_score = score;
          best_node = v;
          best_s = s;
        }
      }
    }
    if (best_node < 0) return false;
    Move(best_node, best_s);
  }
  journal_.clear();
  return true;
}

// Frees memory by sending nodes of the tightest row back to their smallest-memory strategy,
// cheapest cost increase per byte freed there first. Each node goes back at most once and the
// all-smallest assignment fits, so this ends feasible whenever that one does.
bool Searcher::RepairToward(const std::vector<int32_t>& low_memory) {
  while (!memory_.Feasible()) {
    if (Stopped()) return false;
    const int32_t row = memory_.TightestRow();
    int32_t best_node = -1;
    double best_score = std::numeric_limits<double>::infinity();
    for (int32_t v : NodesOfRow(row)) {
      const int32_t cur = x_[static_cast<size_t>(v)];
      const int32_t low = low_memory[static_cast<size_t>(v)];
      if (cur == low) continue;
      Int128 freed = 0;
      for (const MemoryTracker::Run* r = memory_.runs_begin(v); r != memory_.runs_end(v); ++r) {
        if (r->row_begin <= row && row < r->row_end) {
          freed = memory_.RunUsage(*r, cur) - memory_.RunUsage(*r, low);
        }
      }
      if (freed <= 0) continue;
      Count(1);
      const double increase = graph_.LocalCost(v, low, x_) - graph_.LocalCost(v, cur, x_);
      const double score = increase / static_cast<double>(freed);
      if (best_node < 0 || score < best_score) {
        best_score = score;
        best_node = v;
      }
    }
    if (best_node < 0) return false;
    Move(best_node, low_memory[static_cast<size_t>(best_node)]);
  }
  journal_.clear();
  return true;
}

void Searcher::RepairAndPolish(const std::vector<int32_t>& low_memory) {
  if (forbidden_ > 0) RepairForbidden();
  if (!memory_.Feasible() && !RepairToward(low_memory)) RepairMemory();
  // Going back to smallest-memory strategies can clash with neighbours.
  if (forbidden_ > 0) RepairForbidden();
  journal_.clear();
  if (!Feasible()) return;
  Record();
  if (Stopped()) return;
  Descend();
  Record();
}

}  // namespace alpa
