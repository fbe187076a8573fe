// Layer clustering (REFERENCE §4, Alpa's): split a training graph into L layers that the stage
// DP cuts between. Works on units: the graph's layer markers (Op::layer >= 0, as frameworks and
// the model zoo set them) when the forward ops carry at least two distinct markers, otherwise
// single forward ops in graph (topological) order (those that compute: parameters, constants
// and iotas follow their first reader). A DP splits the unit sequence into L consecutive
// groups whose forward FLOPs are each at most (1 + slack) * total / L (slack = delta, doubled,
// from 1/16 if 0, while no split meets it), minimising the largest number of bytes that cross into
// a group from earlier groups (ties: fewer total crossing bytes, then the better FLOPs balance,
// i.e. the smaller sum of squared group FLOPs, as Alpa breaks ties by imbalance; then earlier
// cuts).
//
// Without markers, more than 256 forward ops are first coarsened into at most 256 chunks of
// consecutive ops (by FLOPs and op count, each boundary moved to where the fewest bytes are
// live nearby), the units of the DP; and each group needs at least total / ((1 + slack) L)
// forward FLOPs too (until the relaxed upper bound reaches the total), so that trivial ops
// such as the loss reduction do not form a layer alone. Crossing bytes count each
// forward tensor once per group it enters; graph inputs (parameters, constants, iotas) are no
// group's output and do not count.
//
// Backward and update ops follow their forward unit: with markers they keep their marker's
// group; without, an update op that replaces a parameter joins the parameter's group, and
// another backward / update op joins the latest group among the forward tensors it reads
// directly, a tensor counting in the group of its earliest forward reader (so the weight
// gradient of a group's first matmul, which reads the previous group's output, stays with its
// matmul), else the latest group among its operands; sources and ops fed by sources alone
// join their first reader's group, else group 0. Ops with marker -1 (global state such as
// Adam's step counter) stay in no group (-1).
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {

struct LayerClusteringOptions {
  int32_t num_layers = 0;  // L; 0: as many as there are units, up to 16
  double delta = 0.5;      // FLOPs balance slack
};

struct LayerClustering {
  int32_t num_layers = 0;
  bool from_markers = false;             // units were the graph's layer markers
  std::vector<int32_t> op_layer;         // per op: its group 0..num_layers-1, or -1
  std::vector<int32_t> first_unit;       // per group: its first unit (marker value or op id)
  std::vector<long double> flops;        // per group: forward FLOPs
  std::vector<long double> input_bytes;  // per group: bytes of forward tensors from earlier groups
  double slack = 0;  // the FLOPs slack the split meets: delta, or more where it was relaxed
};

// Errors (kInvalidArgument): num_layers < 0, delta < 0 or non-finite, a graph with no forward
// op (outside marker -1); kInvalidGraph: an operand that is not an earlier op. num_layers
// larger than the unit count is clamped to it.
Result<LayerClustering> ClusterLayers(const Graph& graph, const LayerClusteringOptions& options);

}  // namespace alpa
