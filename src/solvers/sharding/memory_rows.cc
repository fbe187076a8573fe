#include "solvers/sharding/memory_rows.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/util/wide_int.h"

namespace alpa {
namespace {

// Rows between two reads of the clock and the cancel flags (a row can hold thousands of items).
constexpr int64_t kRowsBetweenChecks = 64;
// Row entries (item references) between two reads of the control, for loops over whole rows,
// which can hold thousands of entries each: well under a millisecond of work.
constexpr int64_t kEntriesBetweenChecks = 1 << 16;

// Subset checks on live-set rows stop after about this many item comparisons.
constexpr int64_t kLiveSetSubsetBudget = 200'000'000;

std::string Int128ToString(Int128 value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  std::string digits;
  while (value != 0) {
    int digit = static_cast<int>(value % 10);
    if (digit < 0) digit = -digit;
    digits.push_back(static_cast<char>('0' + digit));
    value /= 10;
  }
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

Status MemoryInfeasible(int64_t time, Int128 need, int64_t limit) {
  return Status(StatusCode::kInfeasible,
                "memory at time " + std::to_string(time) + ": even the smallest usages need " +
                    Int128ToString(need) + " > limit " + std::to_string(limit));
}

// An original node's usage over the work strategies of its work node.
struct NodeUsage {
  int64_t min = 0;
  int64_t spread = 0;  // max - min
  int32_t item = -1;   // its item when spread > 0
};

std::vector<NodeUsage> CollectItems(const ShardingProblem& problem,
                                    const std::vector<int32_t>& work_node_of,
                                    const std::vector<std::vector<int32_t>>& original_strategy,
                                    std::vector<MemoryItem>* items) {
  std::vector<NodeUsage> usage(problem.nodes.size());
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    const ShardingNode& node = problem.nodes[v];
    if (node.usages.empty()) continue;
    const int32_t w = work_node_of[v];
    const std::vector<int32_t>& strategies = original_strategy[static_cast<size_t>(w)];
    MemoryItem item;
    item.node = w;
    item.usage.reserve(strategies.size());
    for (int32_t s : strategies) item.usage.push_back(node.usage(s));
    const auto [lo, hi] = std::minmax_element(item.usage.begin(), item.usage.end());
    usage[v].min = *lo;
    usage[v].spread = *hi - *lo;
    if (usage[v].spread == 0) continue;
    const int64_t shift = usage[v].min;
    for (int64_t& u : item.usage) u -= shift;
    usage[v].item = static_cast<int32_t>(items->size());
    items->push_back(std::move(item));
  }
  return usage;
}

// Minimum of a fixed array over ranges, O(1) per query.
class RangeMin {
 public:
  explicit RangeMin(const std::vector<int64_t>& values) {
    levels_.push_back(values);
    for (size_t width = 1; 2 * width <= values.size(); width *= 2) {
      const std::vector<int64_t>& prev = levels_.back();
      std::vector<int64_t> next(prev.size() - width);
      for (size_t i = 0; i < next.size(); ++i) next[i] = std::min(prev[i], prev[i + width]);
      levels_.push_back(std::move(next));
    }
  }
  // min over [lo, hi], lo <= hi.
  int64_t Query(size_t lo, size_t hi) const {
    size_t level = 0;
    while ((size_t{2} << level) <= hi - lo + 1) ++level;
    return std::min(levels_[level][lo], levels_[level][hi + 1 - (size_t{1} << level)]);
  }

 private:
  std::vector<std::vector<int64_t>> levels_;
};

// Items live over [lo, hi) in segment indices.
struct Span {
  int32_t lo = 0;
  int32_t hi = 0;
  int32_t item = 0;
};

// Intervals: the live set is constant between consecutive interval end points ("segments").
// Segment k's items are contained in segment k''s items for every k' in [S_k, E_k - 1] (the
// latest start / earliest end of k's items), so k's row is implied when one of those has a
// capacity no larger (ties: the later segment survives).
Status BuildFromIntervals(const ShardingProblem& problem, const std::vector<NodeUsage>& usage,
                          const SolveControl& control, std::vector<MemoryRow>* rows) {
  const int64_t limit = *problem.usage_limit;
  std::vector<int64_t> points;
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    const UsageInterval& iv = problem.nodes[v].interval;
    if (iv.lo >= iv.hi || (usage[v].min == 0 && usage[v].spread == 0)) continue;
    points.push_back(iv.lo);
    points.push_back(iv.hi);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  if (points.size() < 2) return Status::Ok();
  const size_t segments = points.size() - 1;
  auto index_of = [&points](int64_t t) {
    return static_cast<int32_t>(std::lower_bound(points.begin(), points.end(), t) - points.begin());
  };

  std::vector<Int128> delta_min(segments + 1, 0), delta_spread(segments + 1, 0);
  std::vector<int32_t> delta_count(segments + 1, 0);
  std::vector<Span> spans;
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    const UsageInterval& iv = problem.nodes[v].interval;
    if (iv.lo >= iv.hi || (usage[v].min == 0 && usage[v].spread == 0)) continue;
    const int32_t lo = index_of(iv.lo), hi = index_of(iv.hi);
    delta_min[static_cast<size_t>(lo)] += usage[v].min;
    delta_min[static_cast<size_t>(hi)] -= usage[v].min;
    if (usage[v].item < 0) continue;
    delta_spread[static_cast<size_t>(lo)] += usage[v].spread;
    delta_spread[static_cast<size_t>(hi)] -= usage[v].spread;
    ++delta_count[static_cast<size_t>(lo)];
    --delta_count[static_cast<size_t>(hi)];
    spans.push_back(Span{lo, hi, usage[v].item});
  }

  std::vector<int64_t> capacity(segments);
  std::vector<bool> may_bind(segments);
  {
    Int128 sum_min = 0, sum_spread = 0;
    int32_t count = 0;
    for (size_t k = 0; k < segments; ++k) {
      sum_min += delta_min[k];
      sum_spread += delta_spread[k];
      count += delta_count[k];
      const Int128 cap = Int128{limit} - sum_min;
      if (cap < 0) return MemoryInfeasible(points[k], sum_min, limit);
      capacity[k] = static_cast<int64_t>(cap);
      may_bind[k] = count > 0 && sum_spread > cap;
    }
  }

  std::vector<std::vector<int32_t>> starting(segments + 1), ending(segments + 1);
  for (size_t i = 0; i < spans.size(); ++i) {
    starting[static_cast<size_t>(spans[i].lo)].push_back(static_cast<int32_t>(i));
    ending[static_cast<size_t>(spans[i].hi)].push_back(static_cast<int32_t>(i));
  }
  // earliest_end[k] = E_k, latest_start[k] = S_k (over the spans live in segment k).
  std::vector<int32_t> earliest_end(segments, -1), latest_start(segments, -1);
  {
    std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>> ends;
    for (size_t k = 0; k < segments; ++k) {
      for (int32_t s : starting[k]) ends.push(spans[static_cast<size_t>(s)].hi);
      while (!ends.empty() && static_cast<size_t>(ends.top()) <= k) ends.pop();
      if (!ends.empty()) earliest_end[k] = ends.top();
    }
    std::priority_queue<int32_t> starts;
    for (size_t k = segments; k-- > 0;) {
      for (int32_t s : ending[k + 1]) starts.push(spans[static_cast<size_t>(s)].lo);
      while (!starts.empty() && static_cast<size_t>(starts.top()) > k) starts.pop();
      if (!starts.empty()) latest_start[k] = starts.top();
    }
  }
  const RangeMin range_min(capacity);
  std::vector<bool> keep(segments, false);
  for (size_t k = 0; k < segments; ++k) {
    if (!may_bind[k]) continue;
    const size_t right_end = static_cast<size_t>(earliest_end[k]);  // exclusive
    if (right_end > k + 1 && range_min.Query(k + 1, right_end - 1) <= capacity[k]) continue;
    const size_t left_start = static_cast<size_t>(latest_start[k]);
    if (left_start < k && range_min.Query(left_start, k - 1) < capacity[k]) continue;
    keep[k] = true;
  }

  // Sweep the segments with the live items as a bitset: rows come out sorted.
  size_t item_count = 0;
  for (const Span& s : spans) item_count = std::max(item_count, static_cast<size_t>(s.item) + 1);
  std::vector<uint64_t> live((item_count + 63) / 64, 0);
  std::vector<int32_t> live_count(segments);
  PeriodicCheck check(control, kEntriesBetweenChecks);
  for (size_t k = 0, count = 0; k < segments; ++k) {
    for (int32_t s : ending[k]) {
      const size_t item = static_cast<size_t>(spans[static_cast<size_t>(s)].item);
      live[item / 64] &= ~(uint64_t{1} << (item % 64));
      --count;
    }
    for (int32_t s : starting[k]) {
      const size_t item = static_cast<size_t>(spans[static_cast<size_t>(s)].item);
      live[item / 64] |= uint64_t{1} << (item % 64);
      ++count;
    }
    if (!keep[k]) continue;
    if (check.stop(static_cast<int64_t>(count) + 1)) {
      return StopStatus(control, kPreparingTheProblem);
    }
    MemoryRow row;
    row.capacity = capacity[k];
    row.items.reserve(count);
    for (size_t word = 0; word < live.size(); ++word) {
      for (uint64_t bits = live[word]; bits != 0; bits &= bits - 1) {
        row.items.push_back(
            static_cast<int32_t>(word * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
      }
    }
    rows->push_back(std::move(row));
  }
  return Status::Ok();
}

Status BuildFromLiveSets(const ShardingProblem& problem, const std::vector<NodeUsage>& usage,
                         const SolveControl& control, std::vector<MemoryRow>* rows) {
  const int64_t limit = *problem.usage_limit;
  // A node listed twice in one live set counts once (it is a set; the evaluator agrees).
  std::vector<size_t> seen_at(problem.nodes.size(), problem.live_sets.size());
  PeriodicCheck check(control, kEntriesBetweenChecks);
  for (size_t t = 0; t < problem.live_sets.size(); ++t) {
    if (check.stop(static_cast<int64_t>(problem.live_sets[t].size()) + 1)) {
      return StopStatus(control, kPreparingTheProblem);
    }
    Int128 sum_min = 0, sum_spread = 0;
    MemoryRow row;
    for (int32_t v : problem.live_sets[t]) {
      if (seen_at[static_cast<size_t>(v)] == t) continue;
      seen_at[static_cast<size_t>(v)] = t;
      const NodeUsage& u = usage[static_cast<size_t>(v)];
      sum_min += u.min;
      sum_spread += u.spread;
      if (u.item >= 0) row.items.push_back(u.item);
    }
    const Int128 cap = Int128{limit} - sum_min;
    if (cap < 0) return MemoryInfeasible(static_cast<int64_t>(t), sum_min, limit);
    if (sum_spread <= cap) continue;  // never binding
    row.capacity = static_cast<int64_t>(cap);
    std::sort(row.items.begin(), row.items.end());
    rows->push_back(std::move(row));
  }
  return Status::Ok();
}

constexpr uint64_t kHashSeed = 0x9e3779b97f4a7c15ULL;
uint64_t HashStep(uint64_t h, int32_t x) {
  return h ^ (static_cast<uint64_t>(static_cast<uint32_t>(x)) + kHashSeed + (h << 6) + (h >> 2));
}
uint64_t HashItems(const std::vector<int32_t>& items) {
  uint64_t h = kHashSeed;
  for (int32_t x : items) h = HashStep(h, x);
  return h;
}

// Multiset inclusion of sorted lists; `steps` counts comparisons.
bool Contains(const std::vector<int32_t>& big, const std::vector<int32_t>& small, int64_t* steps) {
  auto pos = big.begin();
  for (int32_t x : small) {
    ++*steps;
    pos = std::lower_bound(pos, big.end(), x);
    if (pos == big.end() || *pos != x) return false;
    ++pos;
  }
  return true;
}

// Marks rows implied by a row with a superset of items and no larger capacity; stops early
// (marking fewer) once `control` has expired.
void MarkDominatedRows(const std::vector<MemoryRow>& rows, size_t item_count, int64_t budget,
                       const SolveControl& control, std::vector<bool>* removed) {
  PeriodicCheck check(control, kRowsBetweenChecks);
  std::vector<int32_t> order;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!(*removed)[r]) order.push_back(static_cast<int32_t>(r));
  }
  std::sort(order.begin(), order.end(), [&rows](int32_t x, int32_t y) {
    const MemoryRow& a = rows[static_cast<size_t>(x)];
    const MemoryRow& b = rows[static_cast<size_t>(y)];
    if (a.items.size() != b.items.size()) return a.items.size() > b.items.size();
    if (a.capacity != b.capacity) return a.capacity < b.capacity;
    return x < y;
  });
  // rows_with[item]: kept rows (processed so far) holding the item.
  std::vector<std::vector<int32_t>> rows_with(item_count);
  int64_t steps = 0;
  for (int32_t r : order) {
    if (steps > budget || check.stop()) break;
    const MemoryRow& row = rows[static_cast<size_t>(r)];
    if (row.items.empty()) continue;  // an unsatisfiable row (negative capacity) stays
    int32_t rarest = row.items.front();
    for (int32_t x : row.items) {
      if (rows_with[static_cast<size_t>(x)].size() < rows_with[static_cast<size_t>(rarest)].size())
        rarest = x;
    }
    bool dominated = false;
    for (int32_t other : rows_with[static_cast<size_t>(rarest)]) {
      const MemoryRow& big = rows[static_cast<size_t>(other)];
      ++steps;
      if (big.capacity > row.capacity) continue;
      if (Contains(big.items, row.items, &steps)) {
        dominated = true;
        break;
      }
      if (steps > budget) break;
    }
    if (dominated) {
      (*removed)[static_cast<size_t>(r)] = true;
      continue;
    }
    for (size_t i = 0; i < row.items.size(); ++i) {
      if (i > 0 && row.items[i] == row.items[i - 1]) continue;
      rows_with[static_cast<size_t>(row.items[i])].push_back(r);
    }
    steps += static_cast<int64_t>(row.items.size());
  }
}

// Drops items no row uses and renumbers the rest in order (rows stay sorted).
Status CompactItems(const SolveControl& control, std::vector<MemoryItem>* items,
                    std::vector<MemoryRow>* rows) {
  std::vector<int32_t> new_index(items->size(), -1);
  PeriodicCheck check(control, kEntriesBetweenChecks);
  for (const MemoryRow& row : *rows) {
    if (check.stop(static_cast<int64_t>(row.items.size()) + 1)) {
      return StopStatus(control, kPreparingTheProblem);
    }
    for (int32_t x : row.items) new_index[static_cast<size_t>(x)] = 0;
  }
  std::vector<MemoryItem> kept;
  for (size_t i = 0; i < items->size(); ++i) {
    if (new_index[i] < 0) continue;
    new_index[i] = static_cast<int32_t>(kept.size());
    kept.push_back(std::move((*items)[i]));
  }
  for (MemoryRow& row : *rows) {
    if (check.stop(static_cast<int64_t>(row.items.size()) + 1)) {
      return StopStatus(control, kPreparingTheProblem);
    }
    for (int32_t& x : row.items) x = new_index[static_cast<size_t>(x)];
  }
  *items = std::move(kept);
  return Status::Ok();
}

}  // namespace

Status BuildMemoryRows(const ShardingProblem& problem, const std::vector<int32_t>& work_node_of,
                       const std::vector<std::vector<int32_t>>& original_strategy,
                       const SolveControl& control, std::vector<MemoryItem>* items,
                       std::vector<MemoryRow>* rows) {
  items->clear();
  rows->clear();
  const std::vector<NodeUsage> usage =
      CollectItems(problem, work_node_of, original_strategy, items);
  if (problem.uses_live_sets()) {
    ALPA_RETURN_IF_ERROR(BuildFromLiveSets(problem, usage, control, rows));
    return SimplifyMemoryRows(items, rows, kLiveSetSubsetBudget, control);
  }
  ALPA_RETURN_IF_ERROR(BuildFromIntervals(problem, usage, control, rows));
  return CompactItems(control, items, rows);
}

Status SimplifyMemoryRows(std::vector<MemoryItem>* items, std::vector<MemoryRow>* rows,
                          int64_t subset_budget, const SolveControl& control) {
  PeriodicCheck check(control, kEntriesBetweenChecks);
  std::vector<int64_t> shift(items->size(), 0), spread(items->size(), 0);
  for (size_t i = 0; i < items->size(); ++i) {
    std::vector<int64_t>& usage = (*items)[i].usage;
    if (usage.empty()) continue;
    const auto [lo, hi] = std::minmax_element(usage.begin(), usage.end());
    shift[i] = *lo;
    spread[i] = *hi - *lo;
    const int64_t s = shift[i];
    if (s != 0) {
      for (int64_t& u : usage) u -= s;
    }
  }
  // One pass over the entries (there can be tens of millions): shift, filter, check the order,
  // hash, and count references.
  std::vector<int64_t> references(items->size(), 0);
  auto release = [&references](const MemoryRow& row) {
    for (int32_t x : row.items) --references[static_cast<size_t>(x)];
  };
  std::vector<MemoryRow> kept;
  std::vector<uint64_t> hashes;
  kept.reserve(rows->size());
  for (MemoryRow& row : *rows) {
    if (check.stop(static_cast<int64_t>(row.items.size()) + 1)) {
      return StopStatus(control, kPreparingTheProblem);
    }
    Int128 cap = row.capacity, total_spread = 0;
    size_t out = 0;
    bool sorted = true;
    uint64_t hash = kHashSeed;
    for (int32_t x : row.items) {
      const size_t i = static_cast<size_t>(x);
      cap -= shift[i];
      if (spread[i] == 0) continue;
      total_spread += spread[i];
      sorted = sorted && (out == 0 || row.items[out - 1] <= x);
      hash = HashStep(hash, x);
      ++references[i];
      row.items[out++] = x;
    }
    row.items.resize(out);
    if (total_spread <= cap) {  // holds for every assignment
      release(row);
      continue;
    }
    row.capacity = ClampToInt64(cap);
    if (!sorted) {
      std::sort(row.items.begin(), row.items.end());
      hash = HashItems(row.items);
    }
    kept.push_back(std::move(row));
    hashes.push_back(hash);
  }
  // Identical rows: keep the first, with the smallest capacity. The map only answers lookups,
  // so its iteration order never matters.
  std::vector<bool> removed(kept.size(), false);
  std::unordered_map<uint64_t, std::vector<int32_t>> by_hash;
  for (size_t r = 0; r < kept.size(); ++r) {
    if (check.stop(static_cast<int64_t>(kept[r].items.size()) + 1)) {
      return StopStatus(control, kPreparingTheProblem);
    }
    std::vector<int32_t>& same_hash = by_hash[hashes[r]];
    for (int32_t other : same_hash) {
      MemoryRow& first = kept[static_cast<size_t>(other)];
      if (first.items == kept[r].items) {
        first.capacity = std::min(first.capacity, kept[r].capacity);
        removed[r] = true;
        break;
      }
    }
    if (!removed[r]) same_hash.push_back(static_cast<int32_t>(r));
  }
  if (subset_budget > 0) MarkDominatedRows(kept, items->size(), subset_budget, control, &removed);
  ALPA_RETURN_IF_ERROR(StopStatus(control, kPreparingTheProblem));
  rows->clear();
  for (size_t r = 0; r < kept.size(); ++r) {
    if (removed[r]) {
      release(kept[r]);
    } else {
      rows->push_back(std::move(kept[r]));
    }
  }
  if (std::any_of(references.begin(), references.end(), [](int64_t n) { return n == 0; })) {
    return CompactItems(control, items, rows);
  }
  return Status::Ok();
}

void IndexMemoryIntervals(WorkProblem* problem, const SolveControl& control) {
  if (control.expired()) return;
  MemoryIntervals m;
  m.first.assign(problem->memory_items.size(), -1);
  m.last.assign(problem->memory_items.size(), -1);
  m.rows = static_cast<int64_t>(problem->memory_rows.size());
  PeriodicCheck check(control, kEntriesBetweenChecks);
  bool consecutive = true;
  for (size_t r = 0; r < problem->memory_rows.size() && consecutive; ++r) {
    const std::vector<int32_t>& items = problem->memory_rows[r].items;
    if (check.stop(static_cast<int64_t>(items.size()))) return;
    m.entries += static_cast<int64_t>(items.size());
    const int32_t row = static_cast<int32_t>(r);
    for (int32_t x : items) {
      const size_t i = static_cast<size_t>(x);
      if (i >= m.first.size()) return;  // not a valid item: leave the rows to be walked
      // An item either starts here or continues from the row before (once per row: rows hold
      // no item twice).
      if (m.first[i] < 0) {
        m.first[i] = row;
      } else if (m.last[i] != row - 1) {
        consecutive = false;
        break;
      }
      m.last[i] = row;
    }
  }
  if (!consecutive) return;
  m.valid = true;
  problem->memory_intervals = std::move(m);
}

}  // namespace alpa
