#include "solvers/sharding/local_search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstddef>
#include <deque>
#include <limits>
#include <utility>

#include "core/sharding_problem.h"
#include "core/wide_int.h"
#include "solvers/sharding/local_search_contract.h"
#include "solvers/sharding/local_search_graph.h"
#include "solvers/sharding/local_search_memory.h"
#include "solvers/sharding/local_search_trws.h"

namespace alpa {
namespace {

// xoshiro256** seeded through splitmix64: fast, and identical on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& s : state_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  uint64_t Next() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }
  // Uniform in [0, n), n > 0.
  int32_t Below(int32_t n) {
    return static_cast<int32_t>((Next() >> 32) * static_cast<uint64_t>(n) >> 32);
  }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4] = {};
};

// Strict improvement with a relative tolerance, so that rounding cannot make moves cycle.
bool Better(double candidate, double current) {
  return candidate < current - 1e-9 * std::max(1.0, std::fabs(current));
}

class Searcher {
 public:
  Searcher(const WorkProblem& problem, const std::vector<MemoryRow>& rows,
           const SearchGraph& graph, MemoryTracker& memory, const SolveControl& control,
           const LocalSearchOptions& options)
      : problem_(problem),
        rows_(rows),
        graph_(graph),
        memory_(memory),
        control_(control),
        options_(options),
        rng_(options.seed),
        n_(graph.node_count()),
        local_(static_cast<size_t>(std::max(1, graph.max_strategy_count()))),
        in_queue_(static_cast<size_t>(n_), 0) {}

  // Returns the best feasible assignment found (empty if none). `start` may be empty.
  std::vector<int32_t> Run(const std::vector<int32_t>& start);
  // The last objective passed to on_improve (+inf if none), and whether it asked to stop.
  long double reported() const { return cancelled_by_callback_ ? -std::numeric_limits<long double>::infinity() : reported_; }

 private:
  // --- budget -------------------------------------------------------------------------------
  bool Stopped() {
    if (stopped_) return true;
    if (options_.max_moves > 0 && moves_ >= options_.max_moves) stopped_ = true;
    if ((moves_ & 1023) == 0 && moves_ != last_clock_check_) {
      last_clock_check_ = moves_;
      if (control_.expired()) stopped_ = true;
    }
    return stopped_;
  }
  void Count(int64_t work) {
    const int64_t before = moves_;
    moves_ += work;
    if ((before >> 10) != (moves_ >> 10) && control_.expired()) stopped_ = true;
  }

  // --- state --------------------------------------------------------------------------------
  void Assign(const std::vector<int32_t>& x);
  void Move(int32_t v, int32_t s);
  void Undo(size_t mark);
  bool Feasible() const { return forbidden_ == 0 && memory_.Feasible(); }

  // --- construction and repair ----------------------------------------------------------------
  std::vector<int32_t> MinMemoryStart() const;
  bool RepairForbidden();
  bool RepairMemory();
  bool RepairToward(const std::vector<int32_t>& low_memory);

  // --- improvement ----------------------------------------------------------------------------
  bool ImproveNode(int32_t v);
  void Push(int32_t v) {
    if (in_queue_[static_cast<size_t>(v)] == 0) {
      in_queue_[static_cast<size_t>(v)] = 1;
      queue_.push_back(v);
    }
  }
  void PushNeighbours(int32_t v) {
    for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) Push(a->other);
  }
  void DrainQueue();
  void Descend();
  bool Perturb();
  bool TreeMove(int32_t max_nodes, int64_t max_work, double price_scale);
  void Lagrangian();
  void DecodeWithinMemory(const MessagePassing& mp, const std::vector<double>& unary,
                          const std::vector<int32_t>& low_memory);
  void Record();

  const WorkProblem& problem_;
  const std::vector<MemoryRow>& rows_;
  const SearchGraph& graph_;
  MemoryTracker& memory_;
  const SolveControl& control_;
  const LocalSearchOptions& options_;
  Rng rng_;
  const int32_t n_;

  std::vector<int32_t> x_;
  long double cost_ = 0;  // finite terms of the objective (without problem.constant)
  int64_t forbidden_ = 0;  // number of +inf terms
  std::vector<std::pair<int32_t, int32_t>> journal_;  // (node, previous strategy)

  int64_t moves_ = 0;
  int64_t last_clock_check_ = -1;
  bool stopped_ = false;

  bool found_ = false;
  std::vector<int32_t> best_x_;
  long double best_cost_ = std::numeric_limits<long double>::infinity();
  long double reported_ = std::numeric_limits<long double>::infinity();
  SolveControl::Clock::time_point last_report_{};
  bool cancelled_by_callback_ = false;

  std::vector<double> local_;
  std::vector<Int128> slacks_;
  std::vector<double> run_price_;  // per memory run: sum of the row prices (Lagrangian)
  bool priced_filter_ = std::getenv("PFILTER") != nullptr;
  // Tree neighbourhood scratch.
  std::vector<int32_t> stamp_;
  int32_t stamp_now_ = 0;
  std::vector<int32_t> touch_count_;
  std::vector<int32_t> region_, parent_, cand_offset_, cands_, best_child_;
  std::vector<const SearchArc*> parent_arc_;
  std::vector<double> table_, message_;
  std::vector<size_t> table_offset_, message_offset_;
  std::deque<int32_t> queue_;
  std::vector<uint8_t> in_queue_;
};

void Searcher::Assign(const std::vector<int32_t>& x) {
  x_ = x;
  memory_.Reset(x_);
  cost_ = 0;
  forbidden_ = 0;
  for (int32_t v = 0; v < n_; ++v) {
    const double c = graph_.node_cost(v)[x_[static_cast<size_t>(v)]];
    if (IsForbidden(c)) {
      ++forbidden_;
    } else {
      cost_ += c;
    }
  }
  for (const WorkEdge& e : problem_.edges) {
    const size_t kb = problem_.cost[static_cast<size_t>(e.b)].size();
    const double c = e.cost[static_cast<size_t>(x_[static_cast<size_t>(e.a)]) * kb +
                            static_cast<size_t>(x_[static_cast<size_t>(e.b)])];
    if (IsForbidden(c)) {
      ++forbidden_;
    } else {
      cost_ += c;
    }
  }
  journal_.clear();
}

void Searcher::Move(int32_t v, int32_t s) {
  const int32_t old = x_[static_cast<size_t>(v)];
  if (old == s) return;
  const size_t k = static_cast<size_t>(graph_.strategy_count(v));
  auto account = [this](double before, double after) {
    if (IsForbidden(before)) {
      --forbidden_;
    } else {
      cost_ -= before;
    }
    if (IsForbidden(after)) {
      ++forbidden_;
    } else {
      cost_ += after;
    }
  };
  account(graph_.node_cost(v)[old], graph_.node_cost(v)[s]);
  for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
    const double* row = a->cost + static_cast<size_t>(x_[static_cast<size_t>(a->other)]) * k;
    account(row[old], row[s]);
  }
  memory_.Apply(v, old, s);
  x_[static_cast<size_t>(v)] = s;
  journal_.emplace_back(v, old);
}

void Searcher::Undo(size_t mark) {
  while (journal_.size() > mark) {
    const std::pair<int32_t, int32_t> entry = journal_.back();
    Move(entry.first, entry.second);
    journal_.pop_back();  // the entry Move just added
    journal_.pop_back();  // the entry being undone
  }
}

// Each node's smallest-memory strategy (cheapest on ties): it minimizes every row at once, so it
// is memory-feasible whenever anything is (for nodes with one item each).
std::vector<int32_t> Searcher::MinMemoryStart() const {
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
// preferring ones that keep memory rows within capacity, then the cheapest.
bool Searcher::RepairForbidden() {
  if (forbidden_ == 0) return true;
  for (int32_t v = 0; v < n_; ++v) {
    if (graph_.ForbiddenCount(v, x_[static_cast<size_t>(v)], x_) > 0) Push(v);
  }
  int64_t budget = 50 * static_cast<int64_t>(n_) + 1000;
  while (!queue_.empty() && forbidden_ > 0 && budget-- > 0) {
    const int32_t v = queue_.front();
    queue_.pop_front();
    in_queue_[static_cast<size_t>(v)] = 0;
    const int32_t cur = x_[static_cast<size_t>(v)];
    const int32_t cur_count = graph_.ForbiddenCount(v, cur, x_);
    if (cur_count == 0) continue;
    Count(graph_.degree(v) + 1);
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
      // Stuck: a random allowed strategy lets a neighbour move instead.
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
  return forbidden_ == 0;
}

// Frees memory in the tightest row until every row fits: among the nodes of that row, the move
// with the smallest cost increase per byte freed that creates no new violation and no +inf term.
bool Searcher::RepairMemory() {
  std::vector<int32_t> seen(static_cast<size_t>(n_), -1);
  for (int32_t step = 0; !memory_.Feasible(); ++step) {
    if (Stopped()) return false;
    const int32_t row = memory_.TightestRow();
    const Int128 deficit = -memory_.RowSlack(row);
    int32_t best_node = -1;
    int32_t best_s = -1;
    double best_score = std::numeric_limits<double>::infinity();
    for (int32_t item : rows_[static_cast<size_t>(row)].items) {
      const int32_t v = problem_.memory_items[static_cast<size_t>(item)].node;
      if (seen[static_cast<size_t>(v)] == step) continue;
      seen[static_cast<size_t>(v)] = step;
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
          // Rows that fit must keep fitting; violated rows may get worse, but not as bad as
          // the row being repaired.
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
    if (std::getenv("LS_DEBUG")) std::fprintf(stderr, "repair row %d deficit %lld best %d score %g\n", row, static_cast<long long>(deficit), best_node, best_score);
    if (best_node < 0) return false;
    Move(best_node, best_s);
  }
  return true;
}

// Frees memory by sending nodes of the tightest row back to their smallest-memory strategy,
// cheapest cost increase per byte freed there first. Each node goes back at most once and the
// all-smallest assignment fits, so this ends feasible whenever that one is.
bool Searcher::RepairToward(const std::vector<int32_t>& low_memory) {
  std::vector<int32_t> seen(static_cast<size_t>(n_), -1);
  for (int32_t step = 0; !memory_.Feasible(); ++step) {
    if (Stopped()) return false;
    const int32_t row = memory_.TightestRow();
    int32_t best_node = -1;
    double best_score = std::numeric_limits<double>::infinity();
    for (int32_t item : rows_[static_cast<size_t>(row)].items) {
      const int32_t v = problem_.memory_items[static_cast<size_t>(item)].node;
      if (seen[static_cast<size_t>(v)] == step) continue;
      seen[static_cast<size_t>(v)] = step;
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
      if (score < best_score || best_node < 0) {
        best_score = score;
        best_node = v;
      }
    }
    if (best_node < 0) {
      if (std::getenv("LS_DEBUG")) {
        int at_low = 0, total = 0;
        for (int32_t item : rows_[static_cast<size_t>(row)].items) {
          const int32_t v = problem_.memory_items[static_cast<size_t>(item)].node;
          ++total;
          if (x_[static_cast<size_t>(v)] == low_memory[static_cast<size_t>(v)]) ++at_low;
        }
        std::fprintf(stderr, "toward fail row %d slack %lld: %d/%d items at low\n", row, static_cast<long long>(memory_.RowSlack(row)), at_low, total);
      }
      return false;
    }
    Move(best_node, low_memory[static_cast<size_t>(best_node)]);
  }
  return true;
}

// Moves v to its best strategy that keeps memory feasible, if that improves the cost.
bool Searcher::ImproveNode(int32_t v) {
  Count(1);
  const std::vector<int32_t>& domain = graph_.domain(v);
  if (domain.size() < 2) return false;
  graph_.LocalCosts(v, x_, local_.data());
  const int32_t cur = x_[static_cast<size_t>(v)];
  double best_cost = local_[static_cast<size_t>(cur)];
  int32_t best = cur;
  bool slacks_loaded = false;
  for (int32_t s : domain) {
    const double c = local_[static_cast<size_t>(s)];
    if (!Better(c, best_cost)) continue;
    if (memory_.has_runs(v)) {
      if (!slacks_loaded) {
        memory_.LoadSlacks(v, &slacks_);
        slacks_loaded = true;
      }
      if (!memory_.FitsWithSlacks(v, cur, s, slacks_)) continue;
    }
    best = s;
    best_cost = c;
  }
  if (best == cur) return false;
  Move(v, best);
  return true;
}

void Searcher::DrainQueue() {
  while (!queue_.empty()) {
    const int32_t v = queue_.front();
    queue_.pop_front();
    in_queue_[static_cast<size_t>(v)] = 0;
    if (Stopped()) continue;
    if (ImproveNode(v)) PushNeighbours(v);
  }
}

// Single-node moves to a local optimum: a work list, then full sweeps, since a move that frees
// memory can enable moves of nodes that are not its neighbours.
void Searcher::Descend() {
  for (int pass = 0; pass < 100 && !Stopped(); ++pass) {
    const long double before = cost_;
    for (int32_t v = 0; v < n_; ++v) Push(v);
    DrainQueue();
    if (!(cost_ < before)) break;
  }
}

void Searcher::Record() {
  if (!Feasible()) return;
  if (found_ && !(cost_ < best_cost_)) return;
  found_ = true;
  best_cost_ = cost_;
  best_x_ = x_;
  if (!options_.on_improve || cancelled_by_callback_) return;
  const long double objective = best_cost_ + problem_.constant;
  bool report = !std::isfinite(static_cast<double>(reported_)) ||
                reported_ - objective >= 0.01L * std::fabs(static_cast<double>(reported_));
  if (!report && options_.max_moves <= 0) {
    report = SolveControl::Clock::now() - last_report_ >= std::chrono::milliseconds(200);
  }
  if (!report) return;
  reported_ = objective;
  if (options_.max_moves <= 0) last_report_ = SolveControl::Clock::now();
  if (!options_.on_improve(objective)) {
    cancelled_by_callback_ = true;
    stopped_ = true;
  }
}

// Iterated local search: kick a small connected region to random strategies, descend around it,
// keep the result unless it is worse.
bool Searcher::Perturb() {
  const int32_t seed = rng_.Below(n_);
  if (graph_.domain(seed).size() < 2) return false;
  const size_t mark = journal_.size();
  const long double before = cost_;
  const int32_t size = 1 + rng_.Below(12);
  std::vector<int32_t> region{seed};
  for (size_t i = 0; i < region.size() && static_cast<int32_t>(region.size()) < size; ++i) {
    const int32_t v = region[i];
    for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
      if (static_cast<int32_t>(region.size()) >= size) break;
      if (std::find(region.begin(), region.end(), a->other) == region.end() &&
          rng_.Below(2) == 0) {
        region.push_back(a->other);
      }
    }
  }
  for (int32_t v : region) {
    const std::vector<int32_t>& domain = graph_.domain(v);
    for (int attempt = 0; attempt < 4; ++attempt) {
      const int32_t s = domain[static_cast<size_t>(rng_.Below(static_cast<int32_t>(domain.size())))];
      if (s == x_[static_cast<size_t>(v)]) continue;
      if (graph_.ForbiddenCount(v, s, x_) != 0) continue;
      if (!memory_.Fits(v, x_[static_cast<size_t>(v)], s)) continue;
      Move(v, s);
      break;
    }
  }
  for (int32_t v : region) {
    Push(v);
    PushNeighbours(v);
  }
  DrainQueue();
  if (cost_ <= before + 1e-9L * std::fabs(static_cast<double>(before))) {
    journal_.clear();
    Record();
    return true;
  }
  Undo(mark);
  journal_.clear();
  return false;
}

// Large neighbourhood move: grow a random tree-shaped region (no edge closes a cycle inside it),
// fix everything else, and give the region its exact best joint strategies by dynamic
// programming over the tree. Each region node only considers strategies that fit memory on
// their own; the joint result is checked and rolled back if it breaks a row.
bool Searcher::TreeMove(int32_t max_nodes, int64_t max_work, double price_scale) {
  if (stamp_.empty()) {
    stamp_.assign(static_cast<size_t>(n_), 0);
    touch_count_.assign(static_cast<size_t>(n_), 0);
  }
  ++stamp_now_;
  const int32_t seed = rng_.Below(n_);
  region_.assign(1, seed);
  parent_.assign(1, -1);
  parent_arc_.assign(1, nullptr);
  auto in_region = [&](int32_t v) { return stamp_[static_cast<size_t>(v)] == stamp_now_; };
  // touch_count_ is valid for nodes stamped -stamp_now_ (touched) or stamp_now_ (in region).
  auto touch = [&](int32_t w) {
    int32_t& st = stamp_[static_cast<size_t>(w)];
    if (st == stamp_now_) return;
    if (st != -stamp_now_) {
      st = -stamp_now_;
      touch_count_[static_cast<size_t>(w)] = 0;
    }
    ++touch_count_[static_cast<size_t>(w)];
  };
  stamp_[static_cast<size_t>(seed)] = stamp_now_;
  for (const SearchArc* a = graph_.arcs_begin(seed); a != graph_.arcs_end(seed); ++a) touch(a->other);
  int64_t work = static_cast<int64_t>(graph_.domain(seed).size());
  for (size_t i = 0; i < region_.size() && static_cast<int32_t>(region_.size()) < max_nodes; ++i) {
    const int32_t u = region_[i];
    const int64_t du = static_cast<int64_t>(graph_.domain(u).size());
    const SearchArc* begin = graph_.arcs_begin(u);
    const int32_t deg = graph_.degree(u);
    const int32_t offset = deg > 0 ? rng_.Below(deg) : 0;
    for (int32_t j = 0; j < deg; ++j) {
      const SearchArc* a = begin + (j + offset) % deg;
      const int32_t w = a->other;
      if (in_region(w) || touch_count_[static_cast<size_t>(w)] != 1) continue;
      const int64_t cost = du * static_cast<int64_t>(graph_.domain(w).size());
      if (work + cost > max_work) continue;
      work += cost;
      // Seen from w: the arc towards its parent u.
      const SearchArc* back = nullptr;
      for (const SearchArc* b = graph_.arcs_begin(w); b != graph_.arcs_end(w); ++b) {
        if (b->other == u) back = b;
      }
      stamp_[static_cast<size_t>(w)] = stamp_now_;
      region_.push_back(w);
      parent_.push_back(static_cast<int32_t>(i));
      parent_arc_.push_back(back);
      for (const SearchArc* b = graph_.arcs_begin(w); b != graph_.arcs_end(w); ++b) touch(b->other);
      if (static_cast<int32_t>(region_.size()) >= max_nodes) break;
    }
  }
  Count(static_cast<int64_t>(region_.size()));
  const size_t m = region_.size();
  // Candidates and unary costs (node cost + edges leaving the region).
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
      if (in_region(a->other)) continue;
      const double* row = a->cost + static_cast<size_t>(x_[static_cast<size_t>(a->other)]) * k;
      for (size_t s = 0; s < k; ++s) local_[s] += row[s];
    }
    const bool check = memory_.has_runs(v) && (price_scale <= 0 || priced_filter_);
    if (check) memory_.LoadSlacks(v, &slacks_);
    for (int32_t s : graph_.domain(v)) {
      if (IsForbidden(local_[static_cast<size_t>(s)])) continue;
      if (check && s != cur && !memory_.FitsWithSlacks(v, cur, s, slacks_)) continue;
      double priced = local_[static_cast<size_t>(s)];
      if (price_scale > 0) {
        for (const MemoryTracker::Run* r = memory_.runs_begin(v); r != memory_.runs_end(v); ++r) {
          priced += price_scale * run_price_[memory_.run_index(r)] *
                    static_cast<double>(memory_.RunUsage(*r, s));
        }
      }
      cands_.push_back(s);
      table_.push_back(priced);
    }
    cand_offset_[i + 1] = static_cast<int32_t>(cands_.size());
  }
  // Bottom-up: each node's table becomes min over its strategies per parent candidate.
  message_offset_.assign(m, 0);
  size_t message_size = 0;
  for (size_t i = 1; i < m; ++i) {
    message_offset_[i] = message_size;
    const size_t p = static_cast<size_t>(parent_[i]);
    message_size += static_cast<size_t>(cand_offset_[p + 1] - cand_offset_[p]);
  }
  best_child_.assign(message_size, -1);
  for (size_t i = m; i-- > 1;) {
    const int32_t v = region_[i];
    const size_t k = static_cast<size_t>(graph_.strategy_count(v));
    const size_t p = static_cast<size_t>(parent_[i]);
    const SearchArc* arc = parent_arc_[i];
    for (int32_t pj = cand_offset_[p]; pj < cand_offset_[p + 1]; ++pj) {
      const double* row = arc->cost + static_cast<size_t>(cands_[static_cast<size_t>(pj)]) * k;
      double best = std::numeric_limits<double>::infinity();
      int32_t arg = -1;
      for (int32_t j = cand_offset_[i]; j < cand_offset_[i + 1]; ++j) {
        const double value =
            table_[static_cast<size_t>(j)] + row[static_cast<size_t>(cands_[static_cast<size_t>(j)])];
        if (value < best) {
          best = value;
          arg = j;
        }
      }
      best_child_[message_offset_[i] + static_cast<size_t>(pj - cand_offset_[p])] = arg;
      table_[static_cast<size_t>(pj)] += best;
    }
  }
  // Root choice, then top-down.
  int32_t root_choice = -1;
  double root_best = std::numeric_limits<double>::infinity();
  for (int32_t j = cand_offset_[0]; j < cand_offset_[1]; ++j) {
    if (table_[static_cast<size_t>(j)] < root_best) {
      root_best = table_[static_cast<size_t>(j)];
      root_choice = j;
    }
  }
  if (root_choice < 0 || IsForbidden(root_best)) return false;
  std::vector<int32_t> choice(m, -1);
  choice[0] = root_choice;
  for (size_t i = 1; i < m; ++i) {
    const size_t p = static_cast<size_t>(parent_[i]);
    choice[i] = best_child_[message_offset_[i] + static_cast<size_t>(choice[p] - cand_offset_[p])];
    if (choice[i] < 0) return false;
  }
  const size_t mark = journal_.size();
  const long double before = cost_;
  for (size_t i = 0; i < m; ++i) Move(region_[i], cands_[static_cast<size_t>(choice[i])]);
  if (forbidden_ == 0 && memory_.Feasible() &&
      cost_ <= before + 1e-12L * std::fabs(static_cast<double>(before))) {
    const bool improved = cost_ < before;
    journal_.clear();
    if (improved) Record();
    return improved;
  }
  Undo(mark);
  journal_.clear();
  return false;
}

// A labelling from the messages that never leaves the memory rows: every node starts at its
// smallest-memory strategy (feasible whenever anything is), then nodes in sweep order take
// their best-scoring strategy among those that still fit.
void Searcher::DecodeWithinMemory(const MessagePassing& mp, const std::vector<double>& unary,
                                  const std::vector<int32_t>& low_memory) {
  Assign(low_memory);
  for (int32_t v : mp.order()) {
    mp.Score(v, unary, x_, local_.data());
    const int32_t cur = x_[static_cast<size_t>(v)];
    const bool check = memory_.has_runs(v);
    if (check) memory_.LoadSlacks(v, &slacks_);
    int32_t best = -1;
    for (int32_t s : graph_.domain(v)) {
      if (best >= 0 && !(local_[static_cast<size_t>(s)] < local_[static_cast<size_t>(best)])) {
        continue;
      }
      if (check && s != cur && !memory_.FitsWithSlacks(v, cur, s, slacks_)) continue;
      best = s;
    }
    if (best >= 0) Move(v, best);
  }
  journal_.clear();
}

// Lagrangian relaxation of the memory rows, solved by message passing: row prices lambda turn
// memory into node costs (cost + sum over the node's rows of lambda_r * usage), TRW-S finds a
// low-energy labelling of the priced problem, and projected subgradient steps (Polyak step
// towards the best feasible cost) move the prices. Each labelling is repaired and polished
// into a feasible candidate.
void Searcher::Lagrangian() {
  MessagePassing mp(graph_);
  const size_t rows = static_cast<size_t>(memory_.row_count());
  std::vector<double> unary(mp.unary_size());
  std::vector<double> lambda(rows, 0.0);
  std::vector<double> prefix(rows + 1, 0.0);
  std::vector<Int128> slack;
  std::vector<double> grad(rows, 0.0);
  std::vector<int32_t> decoded;
  const std::vector<int32_t> low_memory = MinMemoryStart();
  if (std::getenv("LS_DEBUG")) {
    Assign(low_memory);
    std::fprintf(stderr, "low memory start: forbidden %ld min slack %lld\n", static_cast<long>(forbidden_), static_cast<long long>(memory_.MinSlack()));
  }
  double theta = 1.0;
  long double best_dual = -std::numeric_limits<long double>::infinity();
  int32_t stall = 0;
  const int32_t sweeps = std::getenv("SWEEPS") ? std::atoi(std::getenv("SWEEPS")) : 5;
  MessagePassing primal_mp(graph_);
  std::vector<double> primal_unary(mp.unary_size());
  double inflate = std::getenv("INFL") ? std::atof(std::getenv("INFL")) : 1.0;
  auto build_unary = [&](double factor, std::vector<double>* out) {
    for (int32_t v = 0; v < n_; ++v) {
      const size_t k = static_cast<size_t>(graph_.strategy_count(v));
      double* u = out->data() + mp.unary_offset(v);
      std::copy(graph_.node_cost(v), graph_.node_cost(v) + k, u);
      for (const MemoryTracker::Run* run = memory_.runs_begin(v); run != memory_.runs_end(v);
           ++run) {
        const double price = factor * (prefix[static_cast<size_t>(run->row_end)] -
                                       prefix[static_cast<size_t>(run->row_begin)]);
        if (price == 0.0) continue;
        for (size_t s = 0; s < k; ++s) {
          u[s] += price * static_cast<double>(memory_.RunUsage(*run, static_cast<int32_t>(s)));
        }
      }
    }
  };
  const double frac = std::getenv("LFRAC") ? std::atof(std::getenv("LFRAC")) : 0.5;
  for (int32_t iteration = 0; !Stopped(); ++iteration) {
    if (control_.has_deadline() && control_.elapsed_seconds() > frac * (control_.elapsed_seconds() + control_.remaining_seconds())) break;
    for (size_t r = 0; r < rows; ++r) prefix[r + 1] = prefix[r] + lambda[r];
    build_unary(1.0, &unary);
    const int32_t warm = std::getenv("WARM") ? std::atoi(std::getenv("WARM")) : 0;
    const int32_t now_sweeps = iteration == 0 ? std::max(sweeps, warm) : sweeps;
    mp.Iterate(unary, now_sweeps);
    Count(2 * static_cast<int64_t>(n_) * now_sweeps);
    mp.Decode(unary, &decoded);
    Assign(decoded);
    memory_.RowSlacks(&slack);
    long double dual = cost_ + problem_.constant;
    double norm = 0;
    for (size_t r = 0; r < rows; ++r) {
      const double g = -static_cast<double>(slack[r]);
      dual += static_cast<long double>(lambda[r]) * g;
      grad[r] = (lambda[r] <= 0 && g < 0) ? 0.0 : g;
      norm += grad[r] * grad[r];
    }
    bool feasible = Feasible();
    if (inflate != 1.0) {
      build_unary(inflate, &primal_unary);
      primal_mp.Iterate(primal_unary, sweeps);
      primal_mp.Decode(primal_unary, &decoded);
      Assign(decoded);
      feasible = Feasible();
      if (std::getenv("LS_DEBUG")) std::fprintf(stderr, "  inflate %.3f: %s min slack %.3g\n", inflate, feasible ? "feasible" : "infeasible", static_cast<double>(memory_.MinSlack()));
      if (std::getenv("ADAPT")) inflate = feasible ? std::max(1.0, inflate * 0.97) : inflate * 1.05;
    }
    if (feasible) {
      Descend();
      Record();
    } else {
      if (std::getenv("TOWARD")) {
        if (RepairToward(low_memory)) {
          if (forbidden_ > 0) RepairForbidden();
          if (Feasible()) {
            Descend();
            Record();
          }
        }
      } else {
      DecodeWithinMemory(inflate != 1.0 ? primal_mp : mp, inflate != 1.0 ? primal_unary : unary, low_memory);
      if (forbidden_ > 0) RepairForbidden();
      if (Feasible()) {
        Descend();
        Record();
      }
      }
    }
    if (std::getenv("LS_DEBUG")) {
      std::fprintf(stderr, "lagr %d: decoded %s dual %.4Le cur %.4Le best %.4Le theta %g t=%.1f\n", iteration,
                   feasible ? "feasible" : "infeasible", dual, cost_, best_cost_, theta,
                   control_.elapsed_seconds());
    }
    if (std::getenv("USELB")) {
      long double capacity_price = 0;
      for (size_t r = 0; r < rows; ++r) capacity_price += static_cast<long double>(lambda[r]) * static_cast<long double>(rows_[r].capacity);
      dual = mp.LowerBound(unary) + problem_.constant - capacity_price;
      if (std::getenv("LS_DEBUG")) std::fprintf(stderr, "   lb %.5Le\n", dual);
    }
    if (dual > best_dual) {
      best_dual = dual;
      stall = 0;
    } else if (++stall >= 10) {
      theta = std::max(0.01, theta * 0.5);
      stall = 0;
    }
    if (norm <= 0) continue;
    // Polyak step towards a target between the best dual value and the best feasible cost;
    // a target near the dual keeps early steps small when the incumbent is poor.
    long double target = best_dual + 0.2L * std::fabs(static_cast<double>(best_dual)) + 1;
    if (found_) target = std::min(target, best_cost_ + problem_.constant);
    long double gap = target - dual;
    if (gap <= 0) gap = 1e-3L * std::fabs(static_cast<double>(target)) + 1;
    const double step = theta * static_cast<double>(gap) / norm;
    for (size_t r = 0; r < rows; ++r) lambda[r] = std::max(0.0, lambda[r] + step * grad[r]);
  }
  for (size_t r = 0; r < rows; ++r) prefix[r + 1] = prefix[r] + lambda[r];
  run_price_.assign(memory_.run_count(), 0.0);
  for (int32_t v = 0; v < n_; ++v) {
    for (const MemoryTracker::Run* run = memory_.runs_begin(v); run != memory_.runs_end(v); ++run) {
      run_price_[memory_.run_index(run)] = prefix[static_cast<size_t>(run->row_end)] -
                                           prefix[static_cast<size_t>(run->row_begin)];
    }
  }
}

std::vector<int32_t> Searcher::Run(const std::vector<int32_t>& start) {
  bool valid = start.size() == static_cast<size_t>(n_);
  for (int32_t v = 0; v < n_ && valid; ++v) {
    const int32_t s = start[static_cast<size_t>(v)];
    valid = s >= 0 && s < graph_.strategy_count(v) && graph_.allowed(v, s);
  }
  Assign(valid ? start : MinMemoryStart());
  RepairForbidden();
  if (forbidden_ == 0) RepairMemory();
  journal_.clear();
  if (Feasible()) {
    Record();
    Descend();
    Record();
    journal_.clear();
    Lagrangian();
    if (found_) Assign(best_x_);
    while (!Stopped()) {
      if (rng_.Below(8) == 0) {
        Perturb();
      } else {
        const double pp = std::getenv("PPROB") ? std::atof(std::getenv("PPROB")) : 0.0;
        const bool priced = !run_price_.empty() && rng_.Unit() < pp;
        TreeMove(2 + rng_.Below(60), 2000000, priced ? 0.5 + 1.5 * rng_.Unit() : 0.0);
      }
    }
  }
  return best_x_;
}

}  // namespace

LocalSearchResult RunLocalSearch(const WorkProblem& problem, const SolveControl& control,
                                 const LocalSearchOptions& options) {
  LocalSearchResult result;
  const int32_t n = problem.node_count();
  if (n == 0) {
    std::vector<int32_t> empty;
    if (WorkMemoryFeasible(problem, empty)) {
      result.found = true;
      result.objective = problem.constant;
    }
    return result;
  }
  ContractedProblem contracted;
  {
    const SearchGraph input_graph(problem);
    if (input_graph.has_empty_domain()) return result;
    contracted = Contract(problem, input_graph);
  }
  const WorkProblem& groups = contracted.problem;
  if (!std::isfinite(static_cast<double>(groups.constant))) return result;
  const SearchGraph graph(groups);
  if (std::getenv("LS_DEBUG")) {
    size_t arcs = 0, doms = 0, maxdeg = 0;
    for (int32_t v = 0; v < groups.node_count(); ++v) {
      arcs += static_cast<size_t>(graph.degree(v));
      doms += graph.domain(v).size();
      maxdeg = std::max(maxdeg, static_cast<size_t>(graph.degree(v)));
    }
    std::fprintf(stderr, "contracted: %d groups, %zu edges, avg domain %.1f, max degree %zu\n",
                 groups.node_count(), groups.edges.size(),
                 static_cast<double>(doms) / groups.node_count(), maxdeg);
  }
  if (graph.has_empty_domain()) return result;
  MemoryTracker memory(groups.memory_items, problem.memory_rows, groups.node_count());
  std::vector<int32_t> start;
  if (options.start.size() == static_cast<size_t>(n)) {
    bool valid = true;
    for (int32_t v = 0; v < n && valid; ++v) {
      const int32_t s = options.start[static_cast<size_t>(v)];
      valid = s >= 0 && s < problem.strategy_count(v);
    }
    if (valid) start = contracted.Restrict(options.start);
  }
  Searcher searcher(groups, problem.memory_rows, graph, memory, control, options);
  const std::vector<int32_t> best = searcher.Run(start);
  if (best.empty()) return result;
  result.assignment = contracted.Expand(best);
  // Belt and braces: the answer is checked against the input problem itself.
  result.objective = WorkObjective(problem, result.assignment);
  if (!std::isfinite(static_cast<double>(result.objective)) ||
      !WorkMemoryFeasible(problem, result.assignment)) {
    result.assignment.clear();
    return result;
  }
  result.found = true;
  if (options.on_improve && searcher.reported() > result.objective) {
    options.on_improve(result.objective);
  }
  return result;
}

}  // namespace alpa
