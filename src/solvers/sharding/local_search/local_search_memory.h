// Incremental memory-row bookkeeping for the local search.
//
// Rows keep the WorkProblem's order. A node's items cover its rows in runs: maximal ranges of
// consecutive row indices in which the node has the same items (rows built from live intervals in
// time order give one run per node). A segment tree holds every row's slack (capacity - usage)
// under range additions with range-minimum queries, so checking or applying a move costs
// O(runs * log rows), independent of how many rows a long-lived node spans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/util/wide_int.h"
#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

class MemoryTracker {
 public:
  struct Run {
    int32_t row_begin = 0;  // rows [row_begin, row_end)
    int32_t row_end = 0;
    size_t usage_offset = 0;  // run_usage_[usage_offset + s]: the node's usage in these rows
  };

  // `items` index the strategies of nodes 0..node_count-1; `rows` index `items`, each item at
  // most once per row (as Normalize builds them). Both must outlive the tracker. Once `control`
  // has expired it stops building, and the tracker must not be used.
  MemoryTracker(const std::vector<MemoryItem>& items, const std::vector<MemoryRow>& rows,
                int32_t node_count, const SolveControl& control = SolveControl());

  int32_t row_count() const { return row_count_; }
  // Recomputes every row's usage for assignment x. Once `control` has expired it stops halfway,
  // and the tracker must not be used.
  void Reset(const std::vector<int32_t>& x, const SolveControl& control = SolveControl());

  const Run* runs_begin(int32_t v) const {
    return runs_.data() + run_begin_[static_cast<size_t>(v)];
  }
  const Run* runs_end(int32_t v) const {
    return runs_.data() + run_begin_[static_cast<size_t>(v) + 1];
  }
  size_t run_count() const { return runs_.size(); }
  size_t run_index(const Run* run) const { return static_cast<size_t>(run - runs_.data()); }
  bool has_runs(int32_t v) const {
    return run_begin_[static_cast<size_t>(v)] != run_begin_[static_cast<size_t>(v) + 1];
  }
  // Usage of node v's items in run `run` at strategy s.
  Int128 RunUsage(const Run& run, int32_t s) const {
    return run_usage_[run.usage_offset + static_cast<size_t>(s)];
  }
  // Smallest slack over the run's rows.
  Int128 RunSlack(const Run& run) const { return QueryMin(run.row_begin, run.row_end); }

  // Whether v moving from `from` to `to` keeps every row of v within capacity. `slacks` (one per
  // run of v, from LoadSlacks) avoids repeated tree queries when many targets are tried.
  bool Fits(int32_t v, int32_t from, int32_t to) const;
  void LoadSlacks(int32_t v, std::vector<Int128>* slacks) const;
  bool FitsWithSlacks(int32_t v, int32_t from, int32_t to, const std::vector<Int128>& slacks) const;

  void Apply(int32_t v, int32_t from, int32_t to);

  Int128 MinSlack() const { return row_count_ == 0 ? Int128(0) : tree_min_[1]; }
  bool Feasible() const { return MinSlack() >= 0; }
  // The row with the smallest slack (the first one on ties); -1 without rows.
  int32_t TightestRow() const;
  Int128 RowSlack(int32_t row) const { return QueryMin(row, row + 1); }
  // Every row's slack, in row order.
  void RowSlacks(std::vector<Int128>* slacks) const;
  // Total usage in run order, summed over a node's runs weighted by their length: a scalar
  // measure of how much memory a strategy takes.
  Int128 WeightedUsage(int32_t v, int32_t s) const;

 private:
  void Build(int32_t node, int32_t lo, int32_t hi, const std::vector<Int128>& slack);
  void Add(int32_t lo, int32_t hi, Int128 delta) { AddRec(1, 0, row_count_, lo, hi, delta); }
  void AddRec(int32_t node, int32_t nlo, int32_t nhi, int32_t lo, int32_t hi, Int128 delta);
  Int128 QueryMin(int32_t lo, int32_t hi) const;
  Int128 QueryRec(int32_t node, int32_t nlo, int32_t nhi, int32_t lo, int32_t hi) const;
  void CollectRec(int32_t node, int32_t nlo, int32_t nhi, Int128 above,
                  std::vector<Int128>* slacks) const;

  const std::vector<MemoryItem>& items_;
  const std::vector<MemoryRow>& rows_;
  int32_t row_count_ = 0;
  std::vector<size_t> run_begin_;  // per node, into runs_
  std::vector<Run> runs_;          // grouped by node
  std::vector<Int128> run_usage_;
  // Segment tree: tree_min_[i] = tree_add_[i] + min over children (no push-down needed).
  std::vector<Int128> tree_min_;
  std::vector<Int128> tree_add_;
};

}  // namespace alpa
