// The local search driver: state bookkeeping, single-node descent, perturbation and the phases
// (see local_search_searcher.h for how the work is split across files).
#include "solvers/sharding/local_search/local_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/problem/sharding_problem.h"
#include "solvers/sharding/local_search/local_search_contract.h"
#include "solvers/sharding/local_search/local_search_searcher.h"

namespace alpa {
namespace {

// Tree moves: at most this many DP entries (strategy pairs) per move.
constexpr int64_t kTreeWork = 2'000'000;
constexpr int32_t kTreeMaxNodes = 61;
// Share of tree moves that trade memory at the Lagrangian prices, and of perturbations.
constexpr double kPricedTreeShare = 0.6;
constexpr int32_t kPerturbOneIn = 8;

// Strict improvement with a relative tolerance, so that rounding cannot make moves cycle.
bool Better(double candidate, double current) {
  return candidate < current - 1e-9 * std::max(1.0, std::fabs(current));
}

uint64_t SplitMix(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

SearchRng::SearchRng(uint64_t seed) {
  for (uint64_t& s : state_) s = SplitMix(&seed);
}

uint64_t SearchRng::Next() {
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

Searcher::Searcher(const WorkProblem& problem, const std::vector<MemoryRow>& rows,
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
      in_queue_(static_cast<size_t>(n_), 0),
      seen_(static_cast<size_t>(n_), -1) {
  for (int32_t v = 0; v < n_; ++v) {
    if (graph.domain(v).size() >= 2) movable_.push_back(v);
  }
}

// --- budget ---------------------------------------------------------------------------------

bool Searcher::Stopped() {
  if (!stopped_ && options_.max_moves > 0 && moves_ >= options_.max_moves) stopped_ = true;
  return stopped_;
}

bool Searcher::StoppedNow() {
  if (!stopped_ && control_.expired()) stopped_ = true;
  return Stopped();
}

// The clock is read once per 1,024 units of work: cheap, and the only timing-dependent
// decision is the hard stop itself.
void Searcher::Count(int64_t work) {
  const int64_t before = moves_;
  moves_ += work;
  if ((before >> 10) != (moves_ >> 10) && control_.expired()) stopped_ = true;
  if (options_.max_moves > 0 && moves_ >= options_.max_moves) stopped_ = true;
}

bool Searcher::BudgetSpent(double fraction) const {
  if (options_.max_moves > 0) {
    return static_cast<double>(moves_) >= fraction * static_cast<double>(options_.max_moves);
  }
  if (!control_.has_deadline()) return false;
  const double elapsed = control_.elapsed_seconds();
  return elapsed >= fraction * (elapsed + control_.remaining_seconds());
}

// --- state ----------------------------------------------------------------------------------

void Searcher::Assign(const std::vector<int32_t>& x) {
  x_ = x;
  memory_.Reset(x_, control_);  // a Reset cut short by a stop is never read: callers stop next
  cost_ = 0;
  forbidden_ = 0;
  auto account = [this](double c) {
    if (IsForbidden(c)) {
      ++forbidden_;
    } else {
      cost_ += c;
    }
  };
  for (int32_t v = 0; v < n_; ++v) account(graph_.node_cost(v)[x_[static_cast<size_t>(v)]]);
  for (const WorkEdge& e : problem_.edges) {
    const size_t kb = problem_.cost[static_cast<size_t>(e.b)].size();
    account(e.cost[static_cast<size_t>(x_[static_cast<size_t>(e.a)]) * kb +
                   static_cast<size_t>(x_[static_cast<size_t>(e.b)])]);
  }
  journal_.clear();
}

// Changes one node, keeping the cost, the forbidden count, the memory rows and the journal
// (for Undo) up to date in O(degree + memory runs).
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
    journal_.pop_back();
    Move(entry.first, entry.second);
    journal_.pop_back();  // the entry Move just added
  }
}

void Searcher::Record() {
  if (!Feasible()) return;
  if (found_ && !(cost_ < best_cost_)) return;
  found_ = true;
  best_cost_ = cost_;
  best_x_ = x_;
  if (!options_.on_improve || cancelled_by_callback_) return;
  // Rate limit: a 1% improvement always reports; smaller ones at most every 0.2 s, and in
  // deterministic mode (no clock) only through the final report of RunLocalSearch.
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

// --- descent --------------------------------------------------------------------------------

// Moves v to its cheapest strategy that keeps every memory row within capacity, if that is an
// improvement.
bool Searcher::ImproveNode(int32_t v) {
  Count(1);
  if (graph_.domain(v).size() < 2) return false;
  graph_.LocalCosts(v, x_, local_.data());
  const int32_t cur = x_[static_cast<size_t>(v)];
  double best_cost = local_[static_cast<size_t>(cur)];
  int32_t best = cur;
  bool slacks_loaded = false;
  for (int32_t s : graph_.domain(v)) {
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

void Searcher::Push(int32_t v) {
  if (in_queue_[static_cast<size_t>(v)] == 0) {
    in_queue_[static_cast<size_t>(v)] = 1;
    queue_.push_back(v);
  }
}

void Searcher::PushNeighbours(int32_t v) {
  for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) Push(a->other);
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
  for (int32_t pass = 0; pass < 100 && !Stopped(); ++pass) {
    const long double before = cost_;
    for (int32_t v : movable_) Push(v);
    DrainQueue();
    journal_.clear();
    if (!(cost_ < before)) break;
  }
}

// Kicks a small connected region to random strategies that are finite and fit memory,
// descends around it, and keeps the result unless it is worse.
bool Searcher::Perturb() {
  const int32_t seed =
      movable_[static_cast<size_t>(rng_.Below(static_cast<int32_t>(movable_.size())))];
  const long double before = cost_;
  const int32_t size = 1 + rng_.Below(12);
  std::vector<int32_t> region{seed};
  for (size_t i = 0; i < region.size() && static_cast<int32_t>(region.size()) < size; ++i) {
    const int32_t v = region[i];
    for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
      if (static_cast<int32_t>(region.size()) >= size) break;
      if (std::find(region.begin(), region.end(), a->other) == region.end() && rng_.Below(2) == 0) {
        region.push_back(a->other);
      }
    }
  }
  journal_.clear();
  for (int32_t v : region) {
    const std::vector<int32_t>& domain = graph_.domain(v);
    for (int32_t attempt = 0; attempt < 4; ++attempt) {
      const int32_t s =
          domain[static_cast<size_t>(rng_.Below(static_cast<int32_t>(domain.size())))];
      if (s == x_[static_cast<size_t>(v)] || graph_.ForbiddenCount(v, s, x_) != 0) continue;
      if (!memory_.Fits(v, x_[static_cast<size_t>(v)], s)) continue;
      Move(v, s);
      break;
    }
  }
  Count(static_cast<int64_t>(region.size()));
  for (int32_t v : region) {
    Push(v);
    PushNeighbours(v);
  }
  DrainQueue();
  if (cost_ <= before + 1e-12L * std::fabs(static_cast<double>(before))) {
    journal_.clear();
    Record();
    return true;
  }
  Undo(0);
  return false;
}

// Iterated local search from the incumbent: mostly exact tree moves (some priced so that they
// can trade memory between region nodes), sometimes a random kick. Ends at the budget, or after
// a long run without a new best (which on small problems leaves time to the exact solver).
void Searcher::IteratedSearch() {
  if (movable_.empty()) return;
  const double scale = options_.patience_scale > 0 ? std::min(options_.patience_scale, 1.0) : 1.0;
  const int64_t patience = std::max<int64_t>(
      1, static_cast<int64_t>(scale * static_cast<double>(std::max<int64_t>(
                                          2000, 100 * static_cast<int64_t>(movable_.size())))));
  int64_t idle = 0;
  while (!StoppedNow() && idle < patience) {
    const long double before = best_cost_;
    if (rng_.Below(kPerturbOneIn) == 0) {
      Perturb();
    } else {
      const bool priced = !run_price_.empty() && rng_.Unit() < kPricedTreeShare;
      TreeMove(2 + rng_.Below(kTreeMaxNodes - 1), kTreeWork,
               priced ? 0.5 + 1.5 * rng_.Unit() : 0.0);
    }
    idle = best_cost_ < before ? 0 : idle + 1;
  }
}

std::vector<int32_t> Searcher::Run(const std::vector<int32_t>& start) {
  bool valid = start.size() == static_cast<size_t>(n_);
  for (int32_t v = 0; v < n_ && valid; ++v) {
    const int32_t s = start[static_cast<size_t>(v)];
    valid = s >= 0 && s < graph_.strategy_count(v) && graph_.allowed(v, s);
  }
  const std::vector<int32_t> low_memory = MinMemoryAssignment();
  if (StoppedNow()) return best_x_;
  Assign(valid ? start : low_memory);
  if (StoppedNow()) return best_x_;
  RepairAndPolish(low_memory);
  if (!StoppedNow()) Lagrangian(low_memory);
  if (found_ && !StoppedNow()) {
    Assign(best_x_);
    IteratedSearch();
  }
  return best_x_;
}

LocalSearchResult RunLocalSearch(const WorkProblem& problem, const SolveControl& control,
                                 const LocalSearchOptions& options) {
  LocalSearchResult result;
  const int32_t n = problem.node_count();
  if (n == 0) {
    if (WorkMemoryFeasible(problem, {}) && std::isfinite(static_cast<double>(problem.constant))) {
      result.found = true;
      result.objective = problem.constant;
      if (options.on_improve) options.on_improve(result.objective);
    }
    return result;
  }
  // The setup steps are not interruptible inside (each a pass over the problem); the control is
  // read between them, so that a search started just before a cancel ends without searching.
  ContractedProblem contracted;
  {
    const SearchGraph input_graph(problem, control);
    if (control.expired() || input_graph.has_empty_domain()) return result;
    contracted = Contract(problem, input_graph, control);
  }
  const WorkProblem& groups = contracted.problem;
  if (!std::isfinite(static_cast<double>(groups.constant)) || control.expired()) return result;
  const SearchGraph graph(groups, control);
  if (control.expired() || graph.has_empty_domain()) return result;
  MemoryTracker memory(groups.memory_items, problem.memory_rows, groups.node_count(), control);
  if (control.expired()) return result;
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
  if (control.cancelled()) {
    result.found = true;
    result.checked = false;
    result.objective = searcher.best_objective();
    return result;
  }
  // The answer is checked against the input problem itself, not the contracted one.
  result.objective = WorkObjective(problem, result.assignment);
  if (!std::isfinite(static_cast<double>(result.objective)) ||
      !WorkMemoryFeasible(problem, result.assignment)) {
    result.assignment.clear();
    return result;
  }
  result.found = true;
  if (options.on_improve && !searcher.cancelled_by_callback() &&
      searcher.reported() != result.objective) {
    options.on_improve(result.objective);
  }
  return result;
}

}  // namespace alpa
