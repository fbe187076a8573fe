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

// Per op: true when its result is written to memory by a runner that launches one kernel per
// root and keeps a value in registers only where every reader of it runs in that one kernel,
// never computing it in two: libalpa's CUDA runner (exec/cuda/fusion_plan.h; the name is from
// when a value had to have one reader). A value stays unwritten when it is made by an
// elementwise op on the runner's float path (f32, bf16 and pred values; exp, log, tanh, rsqrt and
// gelu only ending in bf16) whose every reader joins the same kernel: such ops, each kept in
// registers itself or that kernel's root, or a row reduction (a reduce_sum or reduce_max over
// trailing dims with at least kMinFusedRowReductions outputs of at most kMaxFusedRowLength
// elements) as its one reader; the kernels are found from the readers back (an op whose readers
// are in two kernels is a root of its own). A constant or a broadcast of such dtypes whose every
// reader is such an elementwise op, and a value made from constants alone (the lowering makes it
// again at each use), are made in each reader's kernel. Everything else is written, whatever the
// phase. exec/cuda's fusion_plan_test checks that this matches the runner's fusion plan on a
// GPT's device programs.
// The runner also merges adjacent kernels into one (exec/cuda/group_merge.h: the optimizer's
// updates of a weight): a value such a kernel makes and reads itself is written only where
// something outside it (or the next step) reads it.
std::vector<bool> SingleReaderMaterializedResults(const Graph& graph);
// The same, with the kernel each op runs in (an op's id, shared by the ops one kernel computes;
// an op outside the runner's elementwise kernels is its own), for ChargedReads.
struct SingleReaderFusion {
  std::vector<bool> materialized;
  std::vector<int32_t> kernel_of;
};
SingleReaderFusion PlanSingleReaderFusion(const Graph& graph);
constexpr int64_t kMinFusedRowReductions = 2048;
constexpr int64_t kMaxFusedRowLength = int64_t{1} << 16;
// Whether reducing `dims` of an operand of `operand_shape` is such a row reduction: over the
// trailing dims, at least kMinFusedRowReductions outputs (a warp each) of at most
// kMaxFusedRowLength elements (what one warp sums).
bool FusesRowReduction(const std::vector<int64_t>& operand_shape, const std::vector<int64_t>& dims);
// The most inputs and nodes (values) of one such kernel; larger groups run their ops alone.
constexpr int32_t kMaxFusedGroupInputs = 12;
constexpr int32_t kMaxFusedGroupNodes = 48;
// The most values a merged kernel (one kernel of several adjacent ones: the optimizer's updates
// of one weight) stores besides its root's.
constexpr int32_t kMaxFusedGroupStores = 6;

// How a calibration says elementwise chains run (Calibration's fusion keys).
enum class ElementwiseFusion {
  kNone,          // every op its own kernel
  kXla,           // MaterializedResults
  kSingleReader,  // SingleReaderMaterializedResults
};

// Per op: whether its result costs the cost model memory traffic under a calibration's fusion
// keys: the materialised results of `fusion`, and with `fuse_attention` never the values of
// attention cores (AttentionCoreValues: a fused attention kernel keeps them on chip), nor, with
// kSingleReader (the CUDA runner's model), the views its attention kernels read and write through
// (AttentionKernelViews). With kSingleReader also never a product that the runner computes
// transposed (ProductsReadTransposed, core/ir/transposed_product.h). Empty when neither fuses
// anything: every result does. With kSingleReader, `kernel_of` (where given) receives
// SingleReaderFusion::kernel_of.
std::vector<bool> PricedResults(const Graph& graph, ElementwiseFusion fusion, bool fuse_attention,
                                std::vector<int32_t>* kernel_of = nullptr);

// Per op and operand slot: whether that read costs memory traffic. A fusion (ops of one phase
// joined through values that stay in registers) reads each materialised value once however
// many of its ops use it: the lowest-numbered reader pays, the others read it for free. Reads
// of values that are not materialised never pay. `materialized` is MaterializedResults(graph).
std::vector<std::vector<bool>> ChargedReads(const Graph& graph,
                                            const std::vector<bool>& materialized);
// The same over given kernels (SingleReaderFusion::kernel_of): a kernel reads each materialised
// value once, and a value it makes itself never.
std::vector<std::vector<bool>> ChargedReads(const Graph& graph,
                                            const std::vector<bool>& materialized,
                                            const std::vector<int32_t>& kernel_of);

}  // namespace alpa
