// Sequential tree-reweighted message passing (TRW-S, Kolmogorov 2006) on the pairwise energy
//   E(x) = sum_v unary_v(x_v) + sum_edges cost_e(x_a, x_b)
// of a SearchGraph, with caller-supplied unary terms (node costs plus memory prices). Single
// node moves and small trees see only a neighbourhood; sharding problems need whole regions of
// the graph to switch layout together, and the LP relaxation of the unconstrained problem is
// usually tight, so message passing finds the right global basin where descent cannot.
// Messages persist between calls, so re-solving after a change of the unary terms is cheap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "solvers/sharding/local_search/local_search_graph.h"
#include "solvers/sharding/solve_control.h"

namespace alpa {

class MessagePassing {
 public:
  explicit MessagePassing(const SearchGraph& graph);

  // Offset of node v's entries in a flat unary vector (strategy_count(v) entries each).
  size_t unary_offset(int32_t v) const { return unary_offset_[static_cast<size_t>(v)]; }
  size_t unary_size() const { return unary_offset_.back(); }

  // One forward and one backward sweep over the nodes per iteration. Once `control` has expired
  // it returns early, the messages half updated.
  void Iterate(const std::vector<double>& unary, int32_t iterations,
               const SolveControl& control = SolveControl());
  // A labelling from the current messages: nodes in sweep order take their best allowed
  // strategy given the choices already made and the messages from the rest.
  void Decode(const std::vector<double>& unary, std::vector<int32_t>* x) const;

 private:
  // Sends node v's message along arc `arc_index`, given v's belief (unary + incoming messages).
  void Send(int32_t v, size_t arc_index, const double* belief);

  const SearchGraph& graph_;
  std::vector<double> gamma_;
  std::vector<size_t> unary_offset_;
  std::vector<size_t> message_offset_;  // per arc: the message into arc.other, over its strategies
  std::vector<double> messages_;
  std::vector<double> belief_;
  std::vector<double> scratch_;
};

}  // namespace alpa
