// The CPU reference interpreter: runs any graph numerically on one device, for small shapes.
// It defines what the IR means in numbers; the sharded executors are checked against it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace alpa {

// A dense row-major tensor. Every dtype is held as double (floats are rounded to their dtype's
// precision after each op: f16 / bf16 / f32 rounding is emulated, so mixed precision behaves
// like hardware); integers and pred hold exact integral values.
struct HostTensor {
  Dims shape;
  DType dtype = DType::kF32;
  std::vector<double> data;

  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

// Values for parameter ops, keyed by op id.
using HostFeeds = std::map<int32_t, HostTensor>;

struct InterpretOptions {
  // Refuse graphs whose live tensors would exceed this many elements in total (a guard against
  // running a gpt-39b graph by mistake); 0 = no limit.
  int64_t max_total_elements = int64_t{1} << 28;
};

// Evaluates the graph and returns the value of every op in `fetch` (in order). Every parameter
// op the fetched values depend on must be fed with a tensor of its shape and dtype.
// Errors name the op (missing feed, wrong feed shape, too large).
Result<std::vector<HostTensor>> Interpret(const Graph& graph, const HostFeeds& feeds,
                                          const std::vector<int32_t>& fetch,
                                          const InterpretOptions& options = {});

// Evaluates one op given its operand values (used by Interpret and by tests).
Result<HostTensor> EvaluateOp(const Graph& graph, int32_t id,
                              const std::vector<const HostTensor*>& operands);

// Rounds a value to the precision of dtype (f16, bf16, f32: round to nearest even; integers:
// truncate toward zero and wrap like two's complement; pred: 0 or 1).
double RoundToDType(double value, DType dtype);

}  // namespace alpa
