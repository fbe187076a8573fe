// Rebatching: a training graph built for a batch of N examples, rewritten as the graph of one
// microbatch of N / B examples, so that a graph file gets the microbatch search a zoo model gets.
//
// The batch is found, not declared: every input parameter (role input) holds it in the same dim
// (`batch_dim`, 0 by default) and N is that dim's size. Each op's batch dim (or none) follows from
// its operands: elementwise ops keep it, transpose permutes it, dot_general maps it through its
// batch and free dims (a contraction over it, the weight gradient, sums it away), reshape keeps it
// where the batch stays the outermost factor of a dim ([N * S, H] <-> [N, S, H]), reductions over
// it sum it away, gather / scatter_add / convolution map it by their index rules. A constant, iota
// or broadcast_in_dim whose new dims are sized by the batch takes its batch dim from the op that
// combines it with a batched tensor. Rewriting divides every batch dim by B and re-infers every
// shape; slice limits follow.
//
// The loss: the zoo writes each microbatch's loss as the mean over that microbatch (the planner
// and executor sum the microbatches' gradients). A mean is a reduce_sum over the batch dim times
// the constant 1 / count (or divided by the constant count), and that constant becomes
// 1 / (count / B): the rebatched graph is the one the zoo builds at N / B. The constant is the
// operand of that mul / div, recognised by its value; the backward pass reuses the same op, so
// the gradient follows. A copy of it elsewhere, or a mean written another way, keeps its value.
//
// Refused, with a message naming the op: an op that moves the batch into another dim or across
// it (a slice, pad, reverse, window, gather or concatenation along the batch; a reshape that
// splits it), two batch dims meeting in one op, a batch-independent tensor (a weight, optimizer
// state) used where the batch is, an update of a parameter that depends on the batch, and inputs
// that disagree on N.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {

// A constant that turns a sum over the batch into a mean: `count` summed elements, the constant
// 1 / count (reciprocal, a mul's) or count (a div's).
struct MeanDivisor {
  int32_t constant = -1;
  int64_t count = 0;
  bool reciprocal = true;
};

struct BatchAnalysis {
  int64_t batch = 0;               // N: the inputs' batch dim size
  std::vector<int32_t> batch_dim;  // per op: its batch dim, -1 when none
  std::vector<MeanDivisor> mean_divisors;
};

// Follows the batch through a validated graph. kInvalidGraph naming the op when it cannot be
// followed; kInvalidArgument when no input has a dim `batch_dim`.
Result<BatchAnalysis> AnalyzeBatch(const Graph& graph, int32_t batch_dim = 0);

// The graph of one microbatch of N / microbatches examples (the graph itself for 1).
// kInvalidArgument when microbatches < 1 or does not divide N.
Result<Graph> Rebatch(const Graph& graph, const BatchAnalysis& analysis, int64_t microbatches);

}  // namespace alpa
