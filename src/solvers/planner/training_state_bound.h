// A lower bound on the device memory any plan of a training graph needs: the weights, their
// gradients and the optimizer state are held all iteration, each byte on at least one device,
// so no plan over D devices holds less than their total / D on its fullest device. When even
// that exceeds the device memory, no plan fits and the planner says so before any solve.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace alpa {

struct TrainingStateBound {
  int64_t state_bytes = 0;     // weights, gradients and optimizer state, unsharded
  int64_t tensors = 0;         // how many tensors hold them
  int64_t per_device = 0;      // what the fullest of `devices` devices holds at least
  int64_t devices_needed = 0;  // the fewest devices of the given memory that could hold it
};

// The bound of `graph` over `devices` devices of `device_memory` bytes (both > 0). It counts
// what the planner's memory model holds all iteration (UnitMemory::persistent) of the ops in a
// layer group (`op_group`: LayerClustering::op_layer, -1 for ops in no stage): parameter ops
// of role parameter or optimizer state, and the ops of role gradient that alias nothing. A
// sharded tensor rounds down by less than a byte per device, which per_device allows for.
// `graph` is validated (TensorBytes).
TrainingStateBound BoundTrainingState(const Graph& graph, const std::vector<int32_t>& op_group,
                                      int64_t devices, int64_t device_memory);

// "the weights, gradients and optimizer state alone (X) need at least Y per device even spread
// over all D devices (no fewer than N devices of M could hold them)", for the planner's message.
std::string TrainingStateBoundText(const TrainingStateBound& bound, int64_t devices,
                                   int64_t device_memory);

// Whether `devices` devices with `total_memory` bytes in all (a mixed cluster's pools, each
// device its pool's memory) cannot hold the state: the state less the rounding exceeds the
// total. A coarser bound than per_device, for devices of unequal memory.
bool ExceedsTotalMemory(const TrainingStateBound& bound, int64_t devices, int64_t total_memory);

// "the weights, gradients and optimizer state alone (X) exceed the memory of all D devices
// together (Y)", for the planner's message on a mixed cluster.
std::string TotalMemoryBoundText(const TrainingStateBound& bound, int64_t devices,
                                 int64_t total_memory);

}  // namespace alpa
