// Which op results a fusing compiler (XLA's loop and input fusion, or hand-fused kernels)
// writes to device memory. Elementwise chains run as one kernel: a value made by an
// elementwise op, a broadcast, a reshape, a constant or an iota and read only by such ops (or
// by a reduction, which becomes the fusion's root) in the same phase stays in registers. The
// cost model charges an op's memory traffic only for the results it reads or writes that are
// materialised, so a fused chain costs its inputs and outputs, not each op's.
#pragma once

#include <vector>

#include "core/ir/graph.h"

namespace alpa {

// Per op: true when its result is written to memory. Sources other than constants and iotas
// (parameters), non-fusible ops (dot_general, convolution, gather, transpose, ...), the graph's
// outputs and values read in another phase (kept for the backward pass) are materialised, but
// for constants, iotas and broadcasts: the reading phase's fusion makes those again (a
// broadcast from its operand, which is materialised instead).
std::vector<bool> MaterializedResults(const Graph& graph);

// Per op: whether its result costs the cost model memory traffic under a calibration's fusion
// keys: with `fuse_elementwise` MaterializedResults, with `fuse_attention` never the values of
// attention cores (AttentionCoreValues: a fused attention kernel keeps them on chip). Empty
// when neither is set: every result does.
std::vector<bool> PricedResults(const Graph& graph, bool fuse_elementwise, bool fuse_attention);

// Per op and operand slot: whether that read costs memory traffic. A fusion (ops of one phase
// joined through values that stay in registers) reads each materialised value once however
// many of its ops use it: the lowest-numbered reader pays, the others read it for free. Reads
// of values that are not materialised never pay. `materialized` is MaterializedResults(graph).
std::vector<std::vector<bool>> ChargedReads(const Graph& graph,
                                            const std::vector<bool>& materialized);

}  // namespace alpa
