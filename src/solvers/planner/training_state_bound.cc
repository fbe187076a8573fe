#include "solvers/planner/training_state_bound.h"

#include <algorithm>

#include "core/util/number_text.h"
#include "core/util/wide_int.h"

namespace alpa {
namespace {

// Whether the planner's memory model holds `op` all iteration (MemoryWithRerun in
// unit_profile.cc; an op aliasing a parameter holds no bytes of its own).
bool HeldAllIteration(const Op& op) {
  if (op.kind == OpKind::kParameter) {
    return op.role == TensorRole::kParameter || op.role == TensorRole::kOptimizerState;
  }
  return op.role == TensorRole::kGradient && op.alias_of < 0;
}

}  // namespace

TrainingStateBound BoundTrainingState(const Graph& graph, const std::vector<int32_t>& op_group,
                                      int64_t devices, int64_t device_memory) {
  Int128 bytes = 0;
  int64_t tensors = 0;
  for (size_t v = 0; v < graph.ops.size(); ++v) {
    const Op& op = graph.ops[v];
    if (op_group[v] < 0 || !HeldAllIteration(op)) continue;
    bytes += TensorBytes(op);
    ++tensors;
  }
  TrainingStateBound bound;
  bound.state_bytes = ClampToInt64(bytes);
  bound.tensors = tensors;
  const Int128 spread = bytes / devices - tensors;
  bound.per_device = ClampToInt64(std::max<Int128>(0, spread));
  // The fewest devices d with floor(bytes / d) - tensors <= device_memory, i.e. with
  // bytes / d < device_memory + tensors + 1.
  const Int128 needed = bytes / (Int128{device_memory} + tensors + 1) + 1;
  bound.devices_needed = ClampToInt64(needed);
  return bound;
}

std::string TrainingStateBoundText(const TrainingStateBound& bound, int64_t devices,
                                   int64_t device_memory) {
  return "the weights, gradients and optimizer state alone (" + ByteSizeText(bound.state_bytes) +
         ") need at least " + ExactByteSizeText(bound.per_device) +
         " per device even spread over all " + std::to_string(devices) +
         " devices (no fewer than " + std::to_string(bound.devices_needed) + " devices of " +
         ByteSizeText(device_memory) + " could hold them)";
}

bool ExceedsTotalMemory(const TrainingStateBound& bound, int64_t devices, int64_t total_memory) {
  return Int128{bound.state_bytes} - Int128{bound.tensors} * devices > total_memory;
}

std::string TotalMemoryBoundText(const TrainingStateBound& bound, int64_t devices,
                                 int64_t total_memory) {
  return "the weights, gradients and optimizer state alone (" + ByteSizeText(bound.state_bytes) +
         ") exceed the memory of all " + std::to_string(devices) + " devices together (" +
         ByteSizeText(total_memory) + ")";
}

}  // namespace alpa
