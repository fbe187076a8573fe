// Statistics of a graph: op counts, parameters, FLOPs and bytes (for `alpa graph` and the
// planner's cost model).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/ir/graph.h"

namespace alpa {

// Floating-point operations of one op (a multiply-add counts 2). dot_general:
// 2 * batch * lhs free * rhs free * contracted; convolution: 2 * N * O * output spatial *
// C / groups * kernel spatial; elementwise and reductions: one per input element (gelu and
// other transcendental ops count as one too); data movement: 0.
long double OpFlops(const Graph& graph, int32_t id);
// Bytes read (operands) plus written (result).
long double OpBytesAccessed(const Graph& graph, int32_t id);

struct GraphStats {
  int64_t num_ops = 0;
  std::map<std::string, int64_t> ops_by_kind;  // by OpKindName, sorted
  std::map<std::string, int64_t> ops_by_phase;
  int64_t num_layers = 0;       // max layer index + 1
  int64_t parameter_count = 0;  // elements of parameter ops with role kParameter
  int64_t parameter_bytes = 0;
  int64_t optimizer_state_bytes = 0;  // parameter ops with role kOptimizerState
  int64_t input_bytes = 0;            // parameter ops with role kInput
  int64_t gradient_bytes = 0;         // ops with role kGradient
  // Results of forward-phase activation ops: an upper bound on what the forward pass keeps
  // for the backward pass without rematerialization.
  long double activation_bytes = 0;
  long double flops = 0;      // all ops
  long double dot_flops = 0;  // dot_general only
  long double conv_flops = 0;
  std::map<std::string, long double> flops_by_phase;
};

GraphStats ComputeGraphStats(const Graph& graph);

}  // namespace alpa
