// Internal to the reductions (reductions.cc, reduction_rules.cc, reduction_dominance.cc): the
// dynamic graph the PBQP reductions work on. Not part of any interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "solvers/sharding/reductions/reductions.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {
namespace reduction_internal {

// R2 costs k_u * k_v * k_w; above this the node stays in the core.
inline constexpr double kMaxR2Work = 5e7;
// Dominance compares strategy pairs (k^2 per node, each pair filtered in O(1), survivors cost the
// sum of the neighbours' k): nodes with more pairs are skipped, and all of it stops after a
// total amount of entry comparisons.
inline constexpr double kMaxDominancePairs = 1e6;
inline constexpr double kMaxDominanceWork = 3e8;

struct DynEdge {
  int32_t a = 0;
  int32_t b = 0;
  std::vector<double> m;  // rows = a's current strategies
  bool alive = true;
  bool dirty = true;  // not yet checked for unsupported strategies / separability
};

struct DynNode {
  std::vector<double> cost;
  std::vector<int32_t> strategies;   // current strategy -> input strategy
  std::vector<int32_t> adjacency;    // edge ids; may hold dead edges until compacted
  std::vector<int32_t> dirty_edges;  // edges to check (may hold stale or repeated ids)
  int32_t degree = 0;
  int32_t dead_in_adjacency = 0;
  int32_t fixed = -1;  // input strategy once eliminated with a fixed choice
  bool eliminated = false;
  bool pinned = false;  // used by a memory row: never eliminated by R0/R1/R2
  bool queued = false;
  bool dominance_dirty = true;
};

}  // namespace reduction_internal

// The reduction state: dynamic adjacency (edge slots with tombstones), a FIFO worklist of nodes
// whose degree, strategies or edges changed, and the elimination records.
class ReductionEngine {
  using DynEdge = reduction_internal::DynEdge;
  using DynNode = reduction_internal::DynNode;

 public:
  ReductionEngine(const WorkProblem& input, const SolveControl& control, ReducedProblem* out)
      : input_(input), control_(control), out_(*out) {}
  void Run();

 private:
  DynNode& node(int32_t v) { return nodes_[static_cast<size_t>(v)]; }
  DynEdge& edge(int32_t e) { return edges_[static_cast<size_t>(e)]; }
  size_t k(int32_t v) const { return nodes_[static_cast<size_t>(v)].cost.size(); }
  int32_t Other(const DynEdge& e, int32_t v) const { return e.a == v ? e.b : e.a; }
  // Cost of e when v takes i and the other end takes j.
  double At(const DynEdge& e, int32_t v, size_t i, size_t j) const {
    return e.a == v ? e.m[i * k(e.b) + j] : e.m[j * k(e.b) + i];
  }

  void Init();
  void Touch(int32_t v);
  const std::vector<int32_t>& LiveEdges(int32_t v);
  int32_t FindEdge(int32_t v, int32_t w);
  int32_t AddEdge(int32_t a, int32_t b, std::vector<double> m);
  void MarkDirty(int32_t e);
  void RemoveEdge(int32_t e);
  void AddToEdge(int32_t v, int32_t w, std::vector<double> m);
  void RemoveStrategies(int32_t v, const std::vector<int32_t>& replacement);
  bool RemoveForbidden(int32_t v);
  void CheckEdge(int32_t e);
  void Process(int32_t v);
  void EliminateFixed(int32_t v, size_t strategy);
  void ReduceDegreeOne(int32_t u);
  void ReduceDegreeTwo(int32_t u);
  bool DominancePass();
  size_t DominateNode(int32_t u);
  void BuildCore();
  // Counts one unit of work (a processed node); every kWorkBetweenChecks units reads the
  // control, and once it has expired marks the output stopped. True while reducing may go on.
  bool KeepGoing();
  // The same, reading the control now.
  bool CheckNow();

  const WorkProblem& input_;
  const SolveControl& control_;
  int64_t work_ = 0;
  ReducedProblem& out_;
  std::vector<DynNode> nodes_;
  std::vector<DynEdge> edges_;
  std::deque<int32_t> queue_;
  std::vector<std::vector<int32_t>> items_of_node_;  // memory items per node (pinned nodes)
  std::vector<uint8_t> item_used_;                   // per input item: some row uses it
  long double folded_ = 0;
  double dominance_work_ = 0;
};

}  // namespace alpa
