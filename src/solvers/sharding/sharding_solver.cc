#include "solvers/sharding/sharding_solver.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

#include "core/util/parallel.h"
#include "solvers/sharding/elimination/block_elimination.h"
#include "solvers/sharding/ilp/ilp_glpk.h"
#include "solvers/sharding/local_search/local_search.h"
#include "solvers/sharding/normalize.h"
#include "solvers/sharding/reductions/reductions.h"
#include "solvers/sharding/solve_control.h"

namespace alpa {

const char* SolveStatusName(SolveStatus status) {
  switch (status) {
    case SolveStatus::kOptimal:
      return "optimal";
    case SolveStatus::kFeasible:
      return "feasible";
    case SolveStatus::kInfeasible:
      return "infeasible";
    case SolveStatus::kInvalidInput:
      return "invalid_input";
    case SolveStatus::kCancelled:
      return "cancelled";
    case SolveStatus::kNoSolution:
      return "no_solution";
  }
  return "unknown";
}

namespace {

// Above this many ILP nonzeros (edge entries plus memory-row terms) GLPK's branch and bound
// cannot be expected to finish in practical time; the heuristic then gets the whole budget and
// GLPK only runs when time is left over.
constexpr int64_t kLargeIlpEntries = 3'000'000;

// Work (move evaluations) the local search may spend per core node when it is not the last
// word (small cores, where GLPK follows) or must not depend on timing (deterministic mode).
constexpr int64_t kDeterministicMovesPerNode = 2'000;
// Deterministic mode under a time limit: work the local searches together may spend per second
// of the limit. One search does about 1e6 units a second on the IOPDDL benchmarks on one core; a
// quarter of that leaves room for reading, the other phases and a busy machine, so that the
// counted work, not the clock, ends the search.
constexpr double kDeterministicMovesPerSecond = 2.5e5;
// Deterministic mode: the time limit is a work budget, and the clock stops the solve only at
// this multiple of it, a safety stop for a machine many times slower or busier than the rates
// above assume (the answer then depends on where the clock stopped it).
constexpr double kDeterministicSafetyFactor = 10.0;
// Deterministic mode under a time limit: GLPK branch-and-bound nodes per second of the limit
// (GLPK's root LP is counted work of its own, bounded only by the safety stop).
constexpr double kDeterministicIlpNodesPerSecond = 50.0;
// Time caps of the heuristic (not in deterministic mode, where counted work bounds it): before
// GLPK on small cores, and on large cores without a limit.
constexpr double kSmallHeuristicSeconds = 2.0;
constexpr double kLargeHeuristicSecondsWithoutLimit = 60.0;
// The share of the time left that the exact block elimination may take.
constexpr double kEliminationShareOfTimeLimit = 0.5;

int64_t IlpSizeEstimate(const WorkProblem& core) {
  int64_t entries = 0;
  for (const WorkEdge& e : core.edges) entries += static_cast<int64_t>(e.cost.size());
  for (const MemoryRow& row : core.memory_rows) entries += static_cast<int64_t>(row.items.size());
  return entries;
}

// Keeps the best feasible core assignment and talks to the caller's progress callback.
class Incumbent {
 public:
  Incumbent(const WorkProblem& core, const SolveControl& control, const SolveOptions& options)
      : core_(core), control_(control), options_(options) {}

  // Offers a core assignment; keeps it if feasible and better. Returns false if the caller asked
  // to stop.
  bool Offer(const std::vector<int32_t>& assignment, const char* phase) {
    if (assignment.size() != static_cast<size_t>(core_.node_count())) return !stop_;
    const long double objective = WorkObjective(core_, assignment);
    if (!std::isfinite(static_cast<double>(objective))) return !stop_;
    // The memory check walks every row: only for an assignment that would be kept.
    if (found_ && !(objective < objective_)) return !stop_;
    if (!WorkMemoryFeasible(core_, assignment)) return !stop_;
    Keep(assignment, objective, phase);
    return !stop_;
  }

  // Offers an answer of the local search, which RunLocalSearch has already checked against
  // this same core (WorkObjective, WorkMemoryFeasible): no second walk over the rows.
  bool OfferChecked(const LocalSearchResult& search, const char* phase) {
    if (!search.found || !search.checked ||
        search.assignment.size() != static_cast<size_t>(core_.node_count())) {
      return !stop_;
    }
    if (!found_ || search.objective < objective_) Keep(search.assignment, search.objective, phase);
    return !stop_;
  }

  bool OfferBound(long double bound, const char* phase) {
    if (bound > lower_bound_) {
      lower_bound_ = bound;
      Report(phase);
    }
    return !stop_;
  }

  // Notes an objective found by a phase that hands over its assignment only at its end, so
  // that progress lines show it as it improves.
  bool Note(long double objective, const char* phase) {
    if (objective < noted_) {
      noted_ = objective;
      Report(phase);
    }
    return !stop_;
  }

  bool Report(const char* phase) {
    if (options_.on_progress) {
      SolveProgress p;
      p.seconds = control_.elapsed_seconds();
      p.objective = std::min(objective_, noted_);
      p.lower_bound = lower_bound_;
      p.phase = phase;
      if (!options_.on_progress(p)) stop_ = true;
    }
    return !stop_;
  }

  bool found() const { return found_; }
  bool stopped() const { return stop_; }

  long double objective() const { return objective_; }
  long double lower_bound() const { return lower_bound_; }
  const std::vector<int32_t>& assignment() const { return assignment_; }

 private:
  void Keep(const std::vector<int32_t>& assignment, long double objective, const char* phase) {
    found_ = true;
    objective_ = objective;
    assignment_ = assignment;
    Report(phase);
  }

  const WorkProblem& core_;
  const SolveControl& control_;
  const SolveOptions& options_;
  bool found_ = false;
  bool stop_ = false;
  long double objective_ = std::numeric_limits<long double>::infinity();
  long double noted_ = std::numeric_limits<long double>::infinity();
  long double lower_bound_ = -std::numeric_limits<long double>::infinity();
  std::vector<int32_t> assignment_;
};

// The solver's own stop request: set when a progress callback returns false. The caller's
// cancel token is polled by SolveControl itself, next to this flag.
class ProgressStop {
 public:
  const std::atomic<bool>* flag() const { return &flag_; }
  // Sets the flag when the progress callback said stop.
  void Sync(bool progress_stop) {
    if (progress_stop) flag_.store(true, std::memory_order_relaxed);
  }
  void StopNow() { flag_.store(true, std::memory_order_relaxed); }

 private:
  std::atomic<bool> flag_{false};
};

// Threads for the searches of a large core and the elimination: the caller's choice, else one
// per hardware thread, at most kMaxSearchThreads (each keeps its own copy of the search state).
int32_t SearchThreads(int32_t requested) {
  constexpr int32_t kMaxSearchThreads = 8;
  return std::clamp(ResolveThreadCount(requested), 1, kMaxSearchThreads);
}

// Local searches to run on a large core: one per thread, or in deterministic mode a fixed
// number that the threads share.
int32_t SearchCount(const SolveOptions& options) {
  return options.deterministic ? std::max(1, options.deterministic_searches)
                               : SearchThreads(options.threads);
}

// The wall-clock limit of the solve: the time limit, or in deterministic mode (where the limit
// is a work budget) the safety stop at kDeterministicSafetyFactor times it.
double WallClockLimitSeconds(const SolveOptions& options) {
  const double limit = options.time_limit_seconds;
  if (!options.deterministic || !(limit > 0) || !std::isfinite(limit)) return limit;
  return kDeterministicSafetyFactor * limit;
}

// The caller's groups on the core's nodes (a work node takes the group of its first original
// node; followers share their leader's layer).
std::vector<int32_t> CoreGroups(const std::vector<int32_t>& node_groups,
                                const NormalizedProblem& normalized,
                                const ReducedProblem& reduced) {
  if (node_groups.size() != normalized.work_node_of.size()) return {};
  std::vector<int32_t> work_group(static_cast<size_t>(normalized.work.node_count()), -1);
  std::vector<bool> set(work_group.size(), false);
  for (size_t v = 0; v < node_groups.size(); ++v) {
    const int32_t w = normalized.work_node_of[v];
    if (w < 0 || set[static_cast<size_t>(w)]) continue;
    set[static_cast<size_t>(w)] = true;
    work_group[static_cast<size_t>(w)] = node_groups[v];
  }
  std::vector<int32_t> groups;
  for (int32_t w : reduced.input_node_of_core())
    groups.push_back(work_group[static_cast<size_t>(w)]);
  return groups;
}

// The solve's status when Normalize fails with `code`.
SolveStatus StatusOfFailedNormalization(StatusCode code) {
  switch (code) {
    case StatusCode::kInfeasible:
      return SolveStatus::kInfeasible;
    case StatusCode::kCancelled:
      return SolveStatus::kCancelled;
    case StatusCode::kTimeout:
      return SolveStatus::kNoSolution;
    default:
      return SolveStatus::kInvalidInput;
  }
}

SolveResult Finish(SolveResult result, const SolveControl& control) {
  result.seconds = control.elapsed_seconds();
  return result;
}

// What the phases proved about the core.
struct Proof {
  bool optimal = false;
  bool infeasible = false;
  bool any() const { return optimal || infeasible; }
};

// The exact block elimination: exact when the core's elimination width is small (layers
// joined through a few nodes): the optimum of the costs, which is the answer unless it breaks
// a memory row (then it is a lower bound).
// Whether the exact block elimination runs before the heuristic: always before GLPK, and with
// heuristic_only where the options give it some work (heuristic_elimination_work).
bool EliminationFirst(const SolveOptions& options) {
  return !options.heuristic_only || options.heuristic_elimination_work > 0;  // NaN: false
}

Proof RunBlockElimination(const NormalizedProblem& normalized, const ReducedProblem& reduced,
                          const SolveOptions& options, const SolveControl& control,
                          Incumbent& incumbent, ProgressStop& stop, SolveStats& stats) {
  const WorkProblem& core = reduced.core();
  // Under a time limit it gets half of what is left, so that a stopped elimination leaves the
  // heuristic time for an answer; in deterministic mode its planned work (EliminationLimits)
  // bounds it instead, and only the solve's deadline stops it.
  const double share = options.deterministic ? std::numeric_limits<double>::infinity()
                                             : kEliminationShareOfTimeLimit;
  const SolveControl elimination_control =
      control.WithinSeconds(share * control.remaining_seconds());
  EliminationLimits limits;
  if (options.heuristic_only) {
    limits.max_work = std::min(limits.max_work, options.heuristic_elimination_work);
  }
  const BlockEliminationResult exact =
      SolveByBlockElimination(core, CoreGroups(options.node_groups, normalized, reduced),
                              elimination_control, SearchThreads(options.threads), limits);
  stats.elimination_blocks = exact.stats.blocks;
  stats.elimination_distinct_blocks = exact.stats.distinct_blocks;
  Proof proof;
  if (exact.status == BlockEliminationStatus::kSolved) {
    stats.elimination_solved = true;
    const long double optimum = WorkObjective(core, exact.assignment);
    if (!std::isfinite(static_cast<double>(optimum))) {
      proof.infeasible = true;  // every assignment takes a forbidden choice
    } else if (WorkMemoryFeasible(core, exact.assignment)) {
      stop.Sync(!incumbent.Offer(exact.assignment, "elimination"));
      proof.optimal = incumbent.found();
    }
    if (!proof.any()) stop.Sync(!incumbent.OfferBound(optimum, "elimination"));
  }
  return proof;
}

// The local search's own time cap within the solve's deadline: a bounded burst before GLPK on
// small cores, else none (a fixed cap without a limit). Deterministic mode has none: counted
// work (max_moves) ends the search, and the solve's deadline stays the safety stop.
double HeuristicSecondsCap(const SolveControl& control, bool exact_follows, bool deterministic) {
  const double remaining = control.remaining_seconds();
  if (deterministic) return std::numeric_limits<double>::infinity();
  if (exact_follows) return std::min(kSmallHeuristicSeconds, 0.1 * remaining);
  return std::isfinite(remaining) ? remaining : kLargeHeuristicSecondsWithoutLimit;
}

// Each local search's counted work: none (0) when it runs against the clock; else per core
// node, and in deterministic mode under a time limit no more than the limit allows at a
// conservative rate, shared by the `searches` that run side by side (they may share a core).
int64_t HeuristicMoveBudget(const WorkProblem& core, const SolveOptions& options,
                            bool exact_follows, int32_t searches) {
  if (!options.deterministic && !exact_follows) return 0;
  int64_t moves = kDeterministicMovesPerNode * std::max<int64_t>(1, core.node_count());
  if (options.deterministic && std::isfinite(options.time_limit_seconds)) {
    const double by_limit = kDeterministicMovesPerSecond *
                            std::max(0.0, options.time_limit_seconds) / std::max(1, searches);
    moves = std::min(moves, std::max<int64_t>(1, static_cast<int64_t>(by_limit)));
  }
  return moves;
}

// Runs `count` local searches, search i with seed + i, on up to `threads` threads (thread t
// runs searches t, t + threads, ...); the calling thread runs the first and alone reports
// progress (through options.on_improve).
std::vector<LocalSearchResult> RunSearches(const WorkProblem& core,
                                           const SolveControl& heuristic_control,
                                           const LocalSearchOptions& search_options, int32_t count,
                                           int32_t threads, ProgressStop& stop) {
  std::vector<LocalSearchResult> searches(static_cast<size_t>(count));
  threads = std::clamp(threads, 1, count);
  auto run_worker_search = [&](int32_t i) {
    LocalSearchOptions worker_options = search_options;
    worker_options.seed = search_options.seed + static_cast<uint64_t>(i);
    worker_options.on_improve = [&](long double) { return !heuristic_control.cancelled(); };
    // An exception must not escape a thread (std::terminate); a failed search simply
    // contributes no answer.
    try {
      searches[static_cast<size_t>(i)] = RunLocalSearch(core, heuristic_control, worker_options);
    } catch (...) {
      searches[static_cast<size_t>(i)] = LocalSearchResult();
    }
  };
  std::vector<std::thread> workers;
  for (int32_t t = 1; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int32_t i = t; i < count; i += threads) run_worker_search(i);
    });
  }
  try {
    searches[0] = RunLocalSearch(core, heuristic_control, search_options);
    for (int32_t i = threads; i < count; i += threads) run_worker_search(i);
  } catch (...) {
    stop.StopNow();  // stop the workers before the exception unwinds their threads
    for (std::thread& worker : workers) worker.join();
    throw;
  }
  for (std::thread& worker : workers) worker.join();
  return searches;
}

// The heuristic: an incumbent for GLPK and an anytime answer. On small cores it gets a bounded
// burst (GLPK then proves optimality); on large ones, where GLPK's model alone would take
// minutes and gigabytes, all of the time.
void RunHeuristic(const WorkProblem& core, const SolveOptions& options, bool large, double effort,
                  const SolveControl& control, Incumbent& incumbent, ProgressStop& stop) {
  const bool exact_follows = !large && !options.heuristic_only;
  LocalSearchOptions search_options;
  search_options.seed = 1;
  if (incumbent.found()) search_options.start = incumbent.assignment();
  // Large cores get several searches (one per thread; in deterministic mode a fixed number),
  // each with its own seed. The best answer wins, ties to the lowest seed, so deterministic
  // mode stays deterministic.
  const int32_t searches = large ? SearchCount(options) : 1;
  const int32_t threads = large ? SearchThreads(options.threads) : 1;
  search_options.max_moves = HeuristicMoveBudget(core, options, exact_follows, searches);
  if (search_options.max_moves > 0) {
    search_options.max_moves = std::max<int64_t>(
        1, static_cast<int64_t>(effort * static_cast<double>(search_options.max_moves)));
  }
  search_options.patience_scale = effort;
  search_options.on_improve = [&](long double objective) {
    stop.Sync(!incumbent.Note(objective, "heuristic"));
    return !control.cancelled();
  };
  const SolveControl heuristic_control =
      control.WithinSeconds(HeuristicSecondsCap(control, exact_follows, options.deterministic));
  std::vector<LocalSearchResult> results =
      RunSearches(core, heuristic_control, search_options, searches, threads, stop);
  // Unchecked answers (the searches of a cancelled solve) best first: Offer checks the first
  // and, once one is kept, skips the memory check of those that are not better.
  std::stable_sort(results.begin(), results.end(),
                   [](const LocalSearchResult& a, const LocalSearchResult& b) {
                     if (a.checked != b.checked) return a.checked;
                     return !a.checked && a.objective < b.objective;
                   });
  for (const LocalSearchResult& search : results) {
    if (!search.found) continue;
    if (search.checked) {
      stop.Sync(!incumbent.OfferChecked(search, "heuristic"));
    } else {
      stop.Sync(!incumbent.Offer(search.assignment, "heuristic"));
    }
  }
}

// GLPK's branch and bound from the incumbent; sets `message` on a GLPK error.
Proof RunIlp(const WorkProblem& core, const SolveOptions& options, const SolveControl& control,
             Incumbent& incumbent, ProgressStop& stop, std::string& message) {
  IlpOptions ilp_options;
  ilp_options.relative_gap = options.relative_gap;
  ilp_options.deterministic = options.deterministic;
  if (options.deterministic && std::isfinite(options.time_limit_seconds)) {
    ilp_options.node_limit =
        std::max<int64_t>(1, static_cast<int64_t>(kDeterministicIlpNodesPerSecond *
                                                  std::max(0.0, options.time_limit_seconds)));
  }
  if (incumbent.found()) ilp_options.incumbent = incumbent.assignment();
  ilp_options.on_progress = [&](long double objective, long double bound) {
    incumbent.Note(objective, "ilp");
    stop.Sync(!incumbent.OfferBound(bound, "ilp"));
    return !control.cancelled();
  };
  IlpResult ilp = SolveIlpGlpk(core, control, ilp_options);
  if (!ilp.assignment.empty()) incumbent.Offer(ilp.assignment, "ilp");
  if (std::isfinite(static_cast<double>(ilp.lower_bound))) {
    incumbent.OfferBound(ilp.lower_bound, "ilp");
  }
  if (ilp.status == IlpStatus::kError) message = ilp.message;
  Proof proof;
  proof.optimal = ilp.status == IlpStatus::kOptimal;
  proof.infeasible = ilp.status == IlpStatus::kInfeasible;
  return proof;
}

// The status, objective, bound and message of the answer the phases leave.
void SetOutcome(const Proof& proof, const Incumbent& incumbent, bool cancelled,
                const SolveOptions& options, SolveResult& result) {
  result.lower_bound = incumbent.lower_bound();
  if (proof.optimal && incumbent.found()) {
    result.status = SolveStatus::kOptimal;
    if (options.relative_gap <= 0) result.lower_bound = result.objective;
  } else if (proof.infeasible && !incumbent.found()) {
    result.status = SolveStatus::kInfeasible;
    result.lower_bound = std::numeric_limits<long double>::infinity();
    result.message = "no assignment satisfies the memory limit and the forbidden choices";
  } else if (cancelled) {
    result.status = SolveStatus::kCancelled;
  } else if (incumbent.found()) {
    result.status = SolveStatus::kFeasible;
  } else {
    result.status = SolveStatus::kNoSolution;
    if (result.message.empty()) {
      result.message = "the time limit was reached before a feasible assignment was found";
    }
  }
}

}  // namespace

SolveResult SolveSharding(const ShardingProblem& problem, const SolveOptions& options) {
  // The one deadline of the whole solve, fixed now; every phase works within it. The control
  // also polls the caller's cancel token and `stop`, which the progress callback sets.
  ProgressStop stop;
  const SolveControl control =
      SolveControl::WithTimeLimit(WallClockLimitSeconds(options), options.cancel, stop.flag());
  SolveResult result;
  result.stats.nodes = static_cast<int32_t>(problem.nodes.size());
  result.stats.edges = static_cast<int32_t>(problem.edges.size());

  if (Status valid = ValidateProblem(problem); !valid.ok()) {
    result.status = SolveStatus::kInvalidInput;
    result.message = valid.message();
    return Finish(std::move(result), control);
  }
  Result<NormalizedProblem> normalized_or = Normalize(problem, control);
  if (!normalized_or.ok()) {
    result.status = StatusOfFailedNormalization(normalized_or.status().code());
    result.message = normalized_or.status().message();
    if (result.status == SolveStatus::kInfeasible) {
      result.lower_bound = std::numeric_limits<long double>::infinity();
    }
    return Finish(std::move(result), control);
  }
  const NormalizedProblem& normalized = normalized_or.value();
  result.stats.work_nodes = normalized.work.node_count();
  result.stats.work_edges = static_cast<int32_t>(normalized.work.edges.size());
  result.stats.memory_rows = static_cast<int32_t>(normalized.work.memory_rows.size());

  const ReducedProblem reduced(normalized.work, control);
  if (reduced.stopped()) {
    result.status = control.cancelled() ? SolveStatus::kCancelled : SolveStatus::kNoSolution;
    result.message = StopStatus(control, kPreparingTheProblem).message();
    return Finish(std::move(result), control);
  }
  const WorkProblem& core = reduced.core();
  result.stats.core_nodes = core.node_count();
  result.stats.core_edges = static_cast<int32_t>(core.edges.size());

  Incumbent incumbent(core, control, options);
  // The local search's share of its work: less from a feasible warm start.
  double effort = 1.0;
  if (!options.warm_start.empty()) {
    std::optional<std::vector<int32_t>> work_start =
        ToWorkAssignment(normalized, options.warm_start);
    if (work_start) incumbent.Offer(reduced.Restrict(*work_start), "warm_start");
    stop.Sync(incumbent.stopped());
    const double e = options.warm_start_effort;
    if (incumbent.found() && e > 0) effort = std::min(e, 1.0);  // NaN, <= 0: as cold
  }

  Proof proof;
  if (core.node_count() == 0) {
    incumbent.Offer({}, "reduce");
    proof.optimal = true;
  } else if (options.exact_elimination && EliminationFirst(options) && !control.expired()) {
    proof =
        RunBlockElimination(normalized, reduced, options, control, incumbent, stop, result.stats);
  }
  if (!proof.any() && !control.expired()) {
    const bool large = IlpSizeEstimate(core) > kLargeIlpEntries;
    RunHeuristic(core, options, large, effort, control, incumbent, stop);
    if (!large && !options.heuristic_only && !control.expired()) {
      proof = RunIlp(core, options, control, incumbent, stop, result.message);
    }
  }

  if (incumbent.found()) {
    result.assignment = ToOriginalAssignment(normalized, reduced.Expand(incumbent.assignment()));
    result.objective = incumbent.objective();
  }
  SetOutcome(proof, incumbent, control.cancelled(), options, result);
  return Finish(std::move(result), control);
}

}  // namespace alpa
