#include "solvers/sharding/local_search/local_search_memory.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace alpa {
namespace {

struct ItemRun {
  int32_t row_begin;
  int32_t row_end;
};

// Row entries (or nodes' run events) between two reads of the control: well under a
// millisecond of work.
constexpr int64_t kEntriesBetweenChecks = 1 << 16;

// Runs of consecutive rows per item, found in one pass over the rows; stops early (the runs
// then unusable) once `control` has expired.
std::vector<std::vector<ItemRun>> ItemRuns(const std::vector<MemoryRow>& rows, size_t item_count,
                                           const SolveControl& control) {
  PeriodicCheck check(control, kEntriesBetweenChecks);
  std::vector<std::vector<ItemRun>> runs(item_count);
  std::vector<int32_t> last(item_count, -2);
  std::vector<int32_t> begin(item_count, 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (check.stop(static_cast<int64_t>(rows[r].items.size()) + 1)) return runs;
    const int32_t row = static_cast<int32_t>(r);
    for (int32_t i : rows[r].items) {
      const size_t item = static_cast<size_t>(i);
      if (last[item] == row) continue;  // listed twice in one row
      if (last[item] != row - 1) {
        if (last[item] >= 0) runs[item].push_back(ItemRun{begin[item], last[item] + 1});
        begin[item] = row;
      }
      last[item] = row;
    }
  }
  for (size_t item = 0; item < item_count; ++item) {
    if (last[item] >= 0) runs[item].push_back(ItemRun{begin[item], last[item] + 1});
  }
  return runs;
}

}  // namespace

MemoryTracker::MemoryTracker(const std::vector<MemoryItem>& items,
                             const std::vector<MemoryRow>& rows, int32_t node_count,
                             const SolveControl& control)
    : items_(items), rows_(rows), row_count_(static_cast<int32_t>(rows.size())) {
  const size_t n = static_cast<size_t>(node_count);
  run_begin_.assign(n + 1, 0);
  if (row_count_ == 0) return;
  const std::vector<std::vector<ItemRun>> item_runs = ItemRuns(rows, items.size(), control);
  PeriodicCheck check(control, kEntriesBetweenChecks);
  if (control.expired()) return;
  std::vector<std::vector<int32_t>> items_of(n);
  for (size_t i = 0; i < items.size(); ++i) {
    if (!item_runs[i].empty()) {
      items_of[static_cast<size_t>(items[i].node)].push_back(static_cast<int32_t>(i));
    }
  }
  // Per run, the summed usage of the node's items there, for every strategy. A node with
  // several items (merged followers or a contracted group) is swept over its items' run
  // boundaries with a running sum; neighbouring pieces with equal sums merge.
  struct Event {
    int32_t row;
    int32_t item;
    int32_t sign;
  };
  std::vector<Event> events;
  std::vector<Int128> active;
  int32_t active_count = 0;
  for (size_t v = 0; v < n; ++v) {
    if (check.stop(static_cast<int64_t>(items_of[v].size()) * 16)) return;
    run_begin_[v] = runs_.size();
    const std::vector<int32_t>& node_items = items_of[v];
    if (node_items.empty()) continue;
    const size_t k = items_[static_cast<size_t>(node_items[0])].usage.size();
    events.clear();
    for (int32_t i : node_items) {
      for (const ItemRun& r : item_runs[static_cast<size_t>(i)]) {
        events.push_back(Event{r.row_begin, i, 1});
        events.push_back(Event{r.row_end, i, -1});
      }
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return a.row != b.row ? a.row < b.row : a.item < b.item;
    });
    active.assign(k, 0);
    active_count = 0;
    for (size_t j = 0; j < events.size();) {
      const int32_t row = events[j].row;
      for (; j < events.size() && events[j].row == row; ++j) {
        const std::vector<int64_t>& usage = items_[static_cast<size_t>(events[j].item)].usage;
        for (size_t s = 0; s < k; ++s) active[s] += events[j].sign * Int128(usage[s]);
        active_count += events[j].sign;
      }
      if (active_count == 0 || j == events.size()) continue;
      const int32_t next = events[j].row;
      if (runs_.size() > run_begin_[v]) {
        Run& prev = runs_.back();
        if (prev.row_end == row &&
            std::equal(active.begin(), active.end(),
                       run_usage_.begin() + static_cast<std::ptrdiff_t>(prev.usage_offset))) {
          prev.row_end = next;
          continue;
        }
      }
      runs_.push_back(Run{row, next, run_usage_.size()});
      run_usage_.insert(run_usage_.end(), active.begin(), active.end());
    }
  }
  run_begin_[n] = runs_.size();
  tree_min_.assign(static_cast<size_t>(4 * row_count_), 0);
  tree_add_.assign(static_cast<size_t>(4 * row_count_), 0);
}

void MemoryTracker::Reset(const std::vector<int32_t>& x, const SolveControl& control) {
  if (row_count_ == 0) return;
  PeriodicCheck check(control, kEntriesBetweenChecks);
  // Each item's usage looked up once: the rows of large problems hold tens of millions of
  // entries, and summing a flat array is several times faster than chasing each item's table.
  std::vector<int64_t> item_usage(items_.size());
  for (size_t i = 0; i < item_usage.size(); ++i) {
    const MemoryItem& item = items_[i];
    item_usage[i] = item.usage[static_cast<size_t>(x[static_cast<size_t>(item.node)])];
  }
  std::vector<Int128> slack(static_cast<size_t>(row_count_));
  for (size_t r = 0; r < slack.size(); ++r) {
    if (check.stop(static_cast<int64_t>(rows_[r].items.size()) + 1)) return;
    Int128 used = 0;
    for (int32_t i : rows_[r].items) used += item_usage[static_cast<size_t>(i)];
    slack[r] = Int128(rows_[r].capacity) - used;
  }
  std::fill(tree_add_.begin(), tree_add_.end(), Int128(0));
  Build(1, 0, row_count_, slack);
}

void MemoryTracker::Build(int32_t node, int32_t lo, int32_t hi, const std::vector<Int128>& slack) {
  const size_t at = static_cast<size_t>(node);
  if (hi - lo == 1) {
    tree_min_[at] = slack[static_cast<size_t>(lo)];
    return;
  }
  const int32_t mid = lo + (hi - lo) / 2;
  Build(2 * node, lo, mid, slack);
  Build(2 * node + 1, mid, hi, slack);
  tree_min_[at] = std::min(tree_min_[2 * at], tree_min_[2 * at + 1]);
}

void MemoryTracker::AddRec(int32_t node, int32_t nlo, int32_t nhi, int32_t lo, int32_t hi,
                           Int128 delta) {
  const size_t at = static_cast<size_t>(node);
  if (lo <= nlo && nhi <= hi) {
    tree_add_[at] += delta;
    tree_min_[at] += delta;
    return;
  }
  const int32_t mid = nlo + (nhi - nlo) / 2;
  if (lo < mid) AddRec(2 * node, nlo, mid, lo, hi, delta);
  if (hi > mid) AddRec(2 * node + 1, mid, nhi, lo, hi, delta);
  tree_min_[at] = tree_add_[at] + std::min(tree_min_[2 * at], tree_min_[2 * at + 1]);
}

Int128 MemoryTracker::QueryMin(int32_t lo, int32_t hi) const {
  return QueryRec(1, 0, row_count_, lo, hi);
}

Int128 MemoryTracker::QueryRec(int32_t node, int32_t nlo, int32_t nhi, int32_t lo,
                               int32_t hi) const {
  const size_t at = static_cast<size_t>(node);
  if (lo <= nlo && nhi <= hi) return tree_min_[at];
  const int32_t mid = nlo + (nhi - nlo) / 2;
  if (hi <= mid) return tree_add_[at] + QueryRec(2 * node, nlo, mid, lo, hi);
  if (lo >= mid) return tree_add_[at] + QueryRec(2 * node + 1, mid, nhi, lo, hi);
  return tree_add_[at] +
         std::min(QueryRec(2 * node, nlo, mid, lo, hi), QueryRec(2 * node + 1, mid, nhi, lo, hi));
}

void MemoryTracker::RowSlacks(std::vector<Int128>* slacks) const {
  slacks->assign(static_cast<size_t>(row_count_), 0);
  if (row_count_ > 0) CollectRec(1, 0, row_count_, 0, slacks);
}

void MemoryTracker::CollectRec(int32_t node, int32_t nlo, int32_t nhi, Int128 above,
                               std::vector<Int128>* slacks) const {
  const size_t at = static_cast<size_t>(node);
  if (nhi - nlo == 1) {
    (*slacks)[static_cast<size_t>(nlo)] = above + tree_min_[at];
    return;
  }
  const int32_t mid = nlo + (nhi - nlo) / 2;
  CollectRec(2 * node, nlo, mid, above + tree_add_[at], slacks);
  CollectRec(2 * node + 1, mid, nhi, above + tree_add_[at], slacks);
}

bool MemoryTracker::Fits(int32_t v, int32_t from, int32_t to) const {
  for (const Run* run = runs_begin(v); run != runs_end(v); ++run) {
    const Int128 delta = RunUsage(*run, to) - RunUsage(*run, from);
    if (delta > 0 && RunSlack(*run) < delta) return false;
  }
  return true;
}

void MemoryTracker::LoadSlacks(int32_t v, std::vector<Int128>* slacks) const {
  slacks->clear();
  for (const Run* run = runs_begin(v); run != runs_end(v); ++run) {
    slacks->push_back(RunSlack(*run));
  }
}

bool MemoryTracker::FitsWithSlacks(int32_t v, int32_t from, int32_t to,
                                   const std::vector<Int128>& slacks) const {
  size_t j = 0;
  for (const Run* run = runs_begin(v); run != runs_end(v); ++run, ++j) {
    const Int128 delta = RunUsage(*run, to) - RunUsage(*run, from);
    if (delta > 0 && slacks[j] < delta) return false;
  }
  return true;
}

void MemoryTracker::Apply(int32_t v, int32_t from, int32_t to) {
  if (from == to) return;
  for (const Run* run = runs_begin(v); run != runs_end(v); ++run) {
    const Int128 delta = RunUsage(*run, to) - RunUsage(*run, from);
    if (delta != 0) Add(run->row_begin, run->row_end, -delta);
  }
}

int32_t MemoryTracker::TightestRow() const {
  if (row_count_ == 0) return -1;
  int32_t node = 1;
  int32_t lo = 0;
  int32_t hi = row_count_;
  while (hi - lo > 1) {
    const size_t at = static_cast<size_t>(node);
    const int32_t mid = lo + (hi - lo) / 2;
    if (tree_min_[2 * at] <= tree_min_[2 * at + 1]) {
      node = 2 * node;
      hi = mid;
    } else {
      node = 2 * node + 1;
      lo = mid;
    }
  }
  return lo;
}

Int128 MemoryTracker::WeightedUsage(int32_t v, int32_t s) const {
  Int128 total = 0;
  for (const Run* run = runs_begin(v); run != runs_end(v); ++run) {
    total += RunUsage(*run, s) * (run->row_end - run->row_begin);
  }
  return total;
}

}  // namespace alpa
