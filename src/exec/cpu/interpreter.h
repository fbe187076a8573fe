// The CPU reference interpreter: runs any graph numerically on one device, for small shapes.
// It defines what the IR means in numbers; the sharded executors are checked against it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {

// A dense row-major tensor. Every dtype is held as double (floats are rounded to their dtype's
// precision after each op: f16 / bf16 / f32 rounding is emulated, so mixed precision behaves
// like hardware); integers and pred hold exact integral values (s64 exactly only up to 2^53).
// Each op computes in double (sums and dot products accumulate in double) and rounds its
// result once. Integer division truncates toward zero; a NaN converted to an integer is 0 and
// +-inf saturates (integer division by zero gives 0 for 0/0, else the saturated value).
struct HostTensor {
  Dims shape;
  DType dtype = DType::kF32;
  std::vector<double> data;

  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

// Values for parameter ops, keyed by op id.
using HostFeeds = std::map<int32_t, HostTensor>;

// What an Interpret call did (for tests and tools).
struct InterpretStats {
  int64_t ops_evaluated = 0;       // ops computed or fed: the ones the fetches depend on
  int64_t peak_live_elements = 0;  // most elements held at once (values are freed after last use)
};

struct InterpretOptions {
  // Refuse requests whose needed results (every op the fetches depend on, counted once each,
  // before any is freed) exceed this many elements in total: a guard against running a
  // gpt-39b graph by mistake (kUnsupported, saying how many it would take); 0 = no limit.
  int64_t max_total_elements = int64_t{1} << 28;
  // When set, receives the stats of a successful call.
  InterpretStats* stats = nullptr;
};

// Evaluates the graph and returns the value of every op in `fetch` (in order). Only the ops the
// fetches depend on are evaluated, in op order; each value is freed after its last use. Every
// parameter op the fetched values depend on must be fed with a tensor of its shape and dtype
// (fed values are rounded to that dtype); feeds of unneeded parameters are checked too.
// Errors: the graph's validation error (kInvalidGraph); kInvalidArgument naming the op for a
// missing feed, a feed of the wrong shape / dtype / value count, a feed of a non-parameter op,
// a fetch out of range; kUnsupported beyond options.max_total_elements.
Result<std::vector<HostTensor>> Interpret(const Graph& graph, const HostFeeds& feeds,
                                          const std::vector<int32_t>& fetch,
                                          const InterpretOptions& options = {});

// The kinds whose results are operand values moved or picked unchanged (broadcast, reshape,
// transpose, slice, concatenate, reverse, select, gather): the interpreter does not round them,
// as their operands hold values of the dtype (the CUDA backend rounds as it does).
bool KeepsOperandValues(OpKind kind);

// Evaluates one non-parameter op given its operand values (one per operand, of the operand
// ops' shapes and dtypes), after checking the op's stored type against its inferred one.
// Ops that only move values (KeepsOperandValues) do not round them: operands are assumed to
// hold values of their dtype.
Result<HostTensor> EvaluateOp(const Graph& graph, int32_t id,
                              const std::vector<const HostTensor*>& operands);

// EvaluateOp without the checks, for callers that built the graph and operands themselves (the
// executor's runtime): the op's operands must have the inferred types. Rounds the result to the
// op's dtype unless told to keep it exact (a partial sum that a later reduction completes, which
// then rounds once, as the whole op would); parameter ops are not evaluated here.
enum class ResultRounding : int32_t { kRound = 0, kKeepExact = 1 };
HostTensor EvaluateValidatedOp(const Graph& graph, int32_t id,
                               const std::vector<const HostTensor*>& operands,
                               ResultRounding rounding = ResultRounding::kRound);

// Rounds a value to the precision of dtype (f16, bf16, f32: round to nearest even; integers:
// truncate toward zero and wrap like two's complement; pred: 0 or 1).
double RoundToDType(double value, DType dtype);

}  // namespace alpa
