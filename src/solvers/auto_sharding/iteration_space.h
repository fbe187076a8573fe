// The iteration space of an op: the loop dims its work runs over, and which dim of each tensor
// (operands and result) walks along which loop dim. Every sharding strategy of an op is an
// assignment of mesh dims to loop dims (op_strategies.h): splitting a loop dim over a mesh dim
// splits every tensor dim that walks along it and leaves tensors without that loop dim
// replicated there. This one description covers dot_general (batch, free and contracting dims),
// convolution, elementwise and layout ops, reductions, gather / scatter and parameters.
//
// Loop dims are
//   parallel     present in the result: a split cuts the result too;
//   sum-reduced  summed away (dot contracting dims, reduce_sum's dims, the table axis of gather,
//                the update dims of scatter_add): a split leaves each device a partial sum;
//   max-reduced  reduce_max's dims: a split needs an all-reduce (max) inside the op.
// A tensor dim mapped to -1 cannot be split (sliced, padded, reversed, windowed and
// concatenated dims, broadcast size-1 dims, reshape dims that are not the major dim of their
// group, convolution spatial dims).
//
// Reshape groups: the input and output dims are cut into the shortest runs with equal element
// counts ([B, s] <-> [B * s]); the run's major input dim and major output dim share one loop dim
// (a split of the flattened run is a split of both, valid when it divides both), the other dims
// of the run are -1. Size-1 dims are groups of their own with no loop dim.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {

enum class LoopKind : int32_t { kParallel = 0, kSumReduced = 1, kMaxReduced = 2 };

struct IterationSpace {
  // Per loop dim: its kind and every tensor-dim size it must divide when split (a loop dim can
  // stand for dims of different sizes, e.g. a reshape's major dims B and B * s).
  std::vector<LoopKind> kinds;
  std::vector<std::vector<int64_t>> sizes;
  // Per result dim: its loop dim or -1.
  std::vector<int32_t> result_dims;
  // Per operand, per dim: its loop dim or -1.
  std::vector<std::vector<int32_t>> operand_dims;
  // Per operand: whether the op is linear in it (a partial sum in gives a partial sum out when
  // every other operand is not partial, or for add/sub when all are partial on the same dims).
  std::vector<bool> linear_operand;
  // Whether partial sums pass through every linear operand at once (add, sub, concatenate)
  // rather than through exactly one of them (mul, div, dot-like ops).
  bool partial_all_operands = false;
  // Per operand: whether it must be partial over the mesh dims of split sum-reduced loops
  // (scatter_add's base: each device adds its share of the updates into its own addend).
  std::vector<bool> partial_with_reduced;

  int32_t num_loops() const { return static_cast<int32_t>(kinds.size()); }
  int32_t AddLoop(LoopKind kind, int64_t size);
  // Whether splitting loop `loop` into `pieces` divides every tensor dim on it.
  bool Divides(int32_t loop, int64_t pieces) const;
};

// The iteration space of op `id` of a validated graph. Every kind is covered; kinds whose dims
// cannot be split at all get loop-free spaces (all -1), never an error for a valid graph.
Result<IterationSpace> OpIterationSpace(const Graph& graph, int32_t id);

}  // namespace alpa
