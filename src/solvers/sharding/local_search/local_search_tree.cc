// Large-neighbourhood moves: a random tree-shaped region (no edge closes a cycle inside it) gets
// its exact best joint strategies by dynamic programming over the tree, everything else fixed.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/problem/sharding_problem.h"
#include "solvers/sharding/local_search/local_search_searcher.h"

namespace alpa {

// Breadth-first growth from `seed` (neighbours in a random rotation) that only admits a node
// with exactly one edge into the region, so the region's induced subgraph stays a tree.
// Fills region_ (root first, parents before children), parent_ and parent_arc_ (the arc from
// the child to its parent).
void Searcher::GrowTree(int32_t seed, int32_t max_nodes, int64_t max_work) {
  if (tree_stamp_.empty()) {
    tree_stamp_.assign(static_cast<size_t>(n_), 0);
    touch_count_.assign(static_cast<size_t>(n_), 0);
  }
  ++tree_now_;
  // tree_stamp_ == tree_now_: in the region; == -tree_now_: touched (touch_count_ valid).
  auto touch = [&](int32_t w) {
    int32_t& stamp = tree_stamp_[static_cast<size_t>(w)];
    if (stamp == tree_now_) return;
    if (stamp != -tree_now_) {
      stamp = -tree_now_;
      touch_count_[static_cast<size_t>(w)] = 0;
    }
    ++touch_count_[static_cast<size_t>(w)];
  };
  auto admit = [&](int32_t w, int32_t parent, const SearchArc* arc) {
    tree_stamp_[static_cast<size_t>(w)] = tree_now_;
    region_.push_back(w);
    parent_.push_back(parent);
    parent_arc_.push_back(arc);
    for (const SearchArc* b = graph_.arcs_begin(w); b != graph_.arcs_end(w); ++b) touch(b->other);
  };
  region_.clear();
  parent_.clear();
  parent_arc_.clear();
  admit(seed, -1, nullptr);
  int64_t work = static_cast<int64_t>(graph_.domain(seed).size());
  for (size_t i = 0; i < region_.size() && static_cast<int32_t>(region_.size()) < max_nodes; ++i) {
    const int32_t u = region_[i];
    const int64_t du = static_cast<int64_t>(graph_.domain(u).size());
    const int32_t degree = graph_.degree(u);
    const int32_t offset = degree > 0 ? rng_.Below(degree) : 0;
    for (int32_t j = 0; j < degree && static_cast<int32_t>(region_.size()) < max_nodes; ++j) {
      const SearchArc* a = graph_.arcs_begin(u) + (j + offset) % degree;
      const int32_t w = a->other;
      if (tree_stamp_[static_cast<size_t>(w)] == tree_now_ ||
          touch_count_[static_cast<size_t>(w)] != 1 || graph_.domain(w).size() < 2) {
        continue;
      }
      const int64_t cost = du * static_cast<int64_t>(graph_.domain(w).size());
      if (work + cost > max_work) continue;
      work += cost;
      admit(w, static_cast<int32_t>(i), &graph_.arc(a->reverse));
    }
  }
}

// One tree move. Region nodes consider strategies whose node cost plus edges leaving the region
// is finite; without prices only those that fit memory on their own (the joint result is checked
// anyway). With price_scale > 0 every strategy competes at cost + price_scale * Lagrangian
// price of its memory, which lets the region trade memory between its nodes; the move is kept
// only if the true cost does not rise and every row still fits.
bool Searcher::TreeMove(int32_t max_nodes, int64_t max_work, double price_scale) {
  const int32_t seed =
      movable_[static_cast<size_t>(rng_.Below(static_cast<int32_t>(movable_.size())))];
  GrowTree(seed, max_nodes, max_work);
  const size_t m = region_.size();
  Count(static_cast<int64_t>(m));
  // Candidates and their costs (node cost + edges leaving the region [+ memory price]).
  cand_offset_.assign(m + 1, 0);
  cands_.clear();
  table_.clear();
  for (size_t i = 0; i < m; ++i) {
    const int32_t v = region_[i];
    const int32_t cur = x_[static_cast<size_t>(v)];
    const size_t k = static_cast<size_t>(graph_.strategy_count(v));
    const double* c = graph_.node_cost(v);
    std::copy(c, c + k, local_.begin());
    for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
      if (tree_stamp_[static_cast<size_t>(a->other)] == tree_now_) continue;
      const double* row = a->cost + static_cast<size_t>(x_[static_cast<size_t>(a->other)]) * k;
      for (size_t s = 0; s < k; ++s) local_[s] += row[s];
    }
    const bool check = memory_.has_runs(v) && price_scale <= 0;
    if (check) memory_.LoadSlacks(v, &slacks_);
    for (int32_t s : graph_.domain(v)) {
      if (IsForbidden(local_[static_cast<size_t>(s)])) continue;
      if (check && s != cur && !memory_.FitsWithSlacks(v, cur, s, slacks_)) continue;
      double value = local_[static_cast<size_t>(s)];
      if (price_scale > 0) {
        for (const MemoryTracker::Run* r = memory_.runs_begin(v); r != memory_.runs_end(v); ++r) {
          value += price_scale * run_price_[memory_.run_index(r)] *
                   static_cast<double>(memory_.RunUsage(*r, s));
        }
      }
      cands_.push_back(s);
      table_.push_back(value);
    }
    cand_offset_[i + 1] = static_cast<int32_t>(cands_.size());
  }
  // Bottom-up (children come after parents in region_): each child adds, for every candidate
  // of its parent, its best subtree value including the edge to the parent.
  message_offset_.assign(m, 0);
  size_t message_size = 0;
  for (size_t i = 1; i < m; ++i) {
    message_offset_[i] = message_size;
    const size_t p = static_cast<size_t>(parent_[i]);
    message_size += static_cast<size_t>(cand_offset_[p + 1] - cand_offset_[p]);
  }
  best_child_.assign(message_size, -1);
  for (size_t i = m; i-- > 1;) {
    const size_t k = static_cast<size_t>(graph_.strategy_count(region_[i]));
    const size_t p = static_cast<size_t>(parent_[i]);
    for (int32_t pj = cand_offset_[p]; pj < cand_offset_[p + 1]; ++pj) {
      const double* row =
          parent_arc_[i]->cost + static_cast<size_t>(cands_[static_cast<size_t>(pj)]) * k;
      double best = std::numeric_limits<double>::infinity();
      int32_t arg = -1;
      for (int32_t j = cand_offset_[i]; j < cand_offset_[i + 1]; ++j) {
        const double value = table_[static_cast<size_t>(j)] +
                             row[static_cast<size_t>(cands_[static_cast<size_t>(j)])];
        if (value < best) {
          best = value;
          arg = j;
        }
      }
      best_child_[message_offset_[i] + static_cast<size_t>(pj - cand_offset_[p])] = arg;
      table_[static_cast<size_t>(pj)] += best;
    }
  }
  int32_t root_choice = -1;
  for (int32_t j = cand_offset_[0]; j < cand_offset_[1]; ++j) {
    if (root_choice < 0 ||
        table_[static_cast<size_t>(j)] < table_[static_cast<size_t>(root_choice)]) {
      root_choice = j;
    }
  }
  if (root_choice < 0 || IsForbidden(table_[static_cast<size_t>(root_choice)])) return false;
  choice_.assign(m, -1);
  choice_[0] = root_choice;
  for (size_t i = 1; i < m; ++i) {
    const size_t p = static_cast<size_t>(parent_[i]);
    choice_[i] =
        best_child_[message_offset_[i] + static_cast<size_t>(choice_[p] - cand_offset_[p])];
    if (choice_[i] < 0) return false;
  }
  journal_.clear();
  const long double before = cost_;
  for (size_t i = 0; i < m; ++i) Move(region_[i], cands_[static_cast<size_t>(choice_[i])]);
  if (Feasible() && cost_ <= before + 1e-12L * std::fabs(static_cast<double>(before))) {
    journal_.clear();
    const bool improved = cost_ < before;
    if (improved) Record();
    return improved;
  }
  Undo(0);
  return false;
}

}  // namespace alpa
