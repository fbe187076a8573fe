// The local search's working state and phases, shared by local_search*.cc (not a public
// interface). One Searcher runs on a contracted problem (local_search_contract.h):
//   local_search.cc             state, single-node descent, perturbation, the phase driver;
//   local_search_repair.cc      starting points and repairs (+inf terms, memory rows);
//   local_search_tree.cc        exact tree-neighbourhood moves;
//   local_search_lagrangian.cc  row prices + message passing for global restarts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

#include "core/util/wide_int.h"
#include "solvers/sharding/local_search/local_search.h"
#include "solvers/sharding/local_search/local_search_graph.h"
#include "solvers/sharding/local_search/local_search_memory.h"
#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

// xoshiro256** seeded through splitmix64: fast, and identical on every platform.
class SearchRng {
 public:
  explicit SearchRng(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, n), n > 0.
  int32_t Below(int32_t n) {
    return static_cast<int32_t>((Next() >> 32) * static_cast<uint64_t>(n) >> 32);
  }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_[4] = {};
};

class Searcher {
 public:
  Searcher(const WorkProblem& problem, const std::vector<MemoryRow>& rows, const SearchGraph& graph,
           MemoryTracker& memory, const SolveControl& control, const LocalSearchOptions& options);

  // The best feasible assignment found (empty if none). `start` may be empty.
  std::vector<int32_t> Run(const std::vector<int32_t>& start);
  // The last objective passed to on_improve (+inf if none).
  long double reported() const { return reported_; }
  // The best feasible objective found (including the problem's constant); +inf when none.
  long double best_objective() const { return best_cost_ + problem_.constant; }
  bool cancelled_by_callback() const { return cancelled_by_callback_; }

 private:
  // --- budget (local_search.cc) -----------------------------------------------------------
  bool Stopped();
  // Stopped(), reading the clock and the cancel flags first: for the steps that do much work
  // without counting it (rebuilding the memory rows of a whole assignment, decoding).
  bool StoppedNow();
  void Count(int64_t work);
  // Whether `fraction` of the budget (max_moves, else the time limit) is spent; false when
  // there is neither (phases then end on stagnation).
  bool BudgetSpent(double fraction) const;

  // --- state (local_search.cc) ------------------------------------------------------------
  void Assign(const std::vector<int32_t>& x);
  void Move(int32_t v, int32_t s);
  void Undo(size_t mark);
  bool Feasible() const { return forbidden_ == 0 && memory_.Feasible(); }
  void Record();

  // --- starting points and repairs (local_search_repair.cc) -------------------------------
  // The distinct nodes with an item in `row` (a node may hold several items of one row).
  const std::vector<int32_t>& NodesOfRow(int32_t row);
  std::vector<int32_t> MinMemoryAssignment() const;
  bool RepairForbidden();
  bool RepairMemory();
  bool RepairToward(const std::vector<int32_t>& low_memory);
  // Repairs the current assignment (toward `low_memory` first), then descends; records it.
  void RepairAndPolish(const std::vector<int32_t>& low_memory);

  // --- descent and perturbation (local_search.cc) -----------------------------------------
  bool ImproveNode(int32_t v);
  void Push(int32_t v);
  void PushNeighbours(int32_t v);
  void DrainQueue();
  void Descend();
  bool Perturb();
  void IteratedSearch();

  // --- tree neighbourhoods (local_search_tree.cc) -----------------------------------------
  void GrowTree(int32_t seed, int32_t max_nodes, int64_t max_work);
  bool TreeMove(int32_t max_nodes, int64_t max_work, double price_scale);

  // --- Lagrangian phase (local_search_lagrangian.cc) --------------------------------------
  void Lagrangian(const std::vector<int32_t>& low_memory);

  const WorkProblem& problem_;
  const std::vector<MemoryRow>& rows_;
  const SearchGraph& graph_;
  MemoryTracker& memory_;
  const SolveControl& control_;
  const LocalSearchOptions& options_;
  SearchRng rng_;
  const int32_t n_;
  std::vector<int32_t> movable_;  // nodes with at least two allowed strategies

  std::vector<int32_t> x_;
  long double cost_ = 0;   // finite terms of the objective, without problem.constant
  int64_t forbidden_ = 0;  // number of +inf terms
  std::vector<std::pair<int32_t, int32_t>> journal_;  // (node, previous strategy)

  int64_t moves_ = 0;
  bool stopped_ = false;

  bool found_ = false;
  std::vector<int32_t> best_x_;
  long double best_cost_ = std::numeric_limits<long double>::infinity();
  long double reported_ = std::numeric_limits<long double>::infinity();
  SolveControl::Clock::time_point last_report_{};
  bool cancelled_by_callback_ = false;

  // Scratch.
  std::vector<double> local_;
  std::vector<Int128> slacks_;
  std::deque<int32_t> queue_;
  std::vector<uint8_t> in_queue_;
  std::vector<int32_t> seen_;
  int32_t seen_stamp_ = 0;
  std::vector<int32_t> row_nodes_;

  // Per memory run: the sum of the Lagrangian row prices over its rows (empty before the
  // Lagrangian phase). Priced tree moves trade memory at these prices.
  std::vector<double> run_price_;

  // Tree neighbourhood scratch.
  std::vector<int32_t> tree_stamp_;
  int32_t tree_now_ = 0;
  std::vector<int32_t> touch_count_;
  std::vector<int32_t> region_, parent_, cand_offset_, cands_, best_child_, choice_;
  std::vector<const SearchArc*> parent_arc_;
  std::vector<double> table_;
  std::vector<size_t> message_offset_;
};

}  // namespace alpa
