// Which instructions of a device program the CUDA runner fuses into one elementwise kernel.
//
// A fused group is an elementwise op (the lowering's kScale of the summed gradients counts as
// one), or a reduction over trailing dims (its root), and the
// producers of its operands that exist only to feed it: elementwise ops whose every reading
// instruction is in the group (as in XLA's loop fusion; a value read twice there is computed
// once), and broadcasts and constants whose every reader is an elementwise op (each reader's
// group recomputes them). The groups are found from the consumers back: an elementwise op whose
// readers are all in one group joins it, else it is a root, so a value read by two groups is
// stored (nothing is computed twice, across kernels); a reduction takes in an operand that it
// alone reads. Every op of a group runs on the float path (kernel_math.h's
// UsesFloatPath: f32 / bf16 / pred values, the same bits as the op alone), and each fused value is
// rounded to the storage its buffer would have had, so a group computes what its ops computed one
// by one, bit for bit (a reduction sums its row in double, as the reduce kernels do, in its own
// order). The producers' buffers are never allocated; a buffer the group reads that the program
// frees between the first producer and the root is freed after the root instead (a group is formed
// only where those deferred bytes do not exceed the bytes of the buffers it leaves out). An
// elementwise op without such producers is a group of one (its generated kernel is faster than
// the generic one); a reduction needs at least one. The limits (a group's inputs and nodes, the
// row reductions it takes: kMaxFusedGroupInputs, kMaxFusedGroupNodes, FusesRowReduction) are
// core/ir/fusion.h's, which the cost model's replay of this plan shares. Then a group whose
// results one later group alone reads is merged into that group (group_merge.h: one kernel with
// several results, FusedGroup::stores).
// Host code: the plan is made and tested without a GPU; fused_source.h writes the kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/fusion.h"
#include "core/ir/graph.h"
#include "exec/cuda/attention_plan.h"
#include "exec/cuda/float_math.h"
#include "exec/cuda/transposed_product.h"
#include "exec/program/program.h"

namespace alpa {
namespace cuda {

enum class FusedNodeKind : int32_t {
  kLoad = 0,           // element i of input `input`
  kBroadcastLoad = 1,  // input `input` at the broadcast's source index of i
  kConstant = 2,       // `value` (the stored constant)
  kOp = 3,             // an elementwise op of earlier nodes
  kReduce = 4,         // the root of a reduction group: reduce_sum / max of node operands[0]
                       // over each output's row (FusedGroup::row consecutive elements)
  kScale = 5,          // the lowering's kScale of node operands[0] by `scale`, in double and
                       // rounded (`rounding`, then the storage) as the scale kernel stores it
};

// One value of a fused kernel, per element; nodes are in evaluation order.
struct FusedNode {
  FusedNodeKind kind = FusedNodeKind::kLoad;
  int32_t input = -1;  // kLoad, kBroadcastLoad: index into FusedGroup::inputs
  // kBroadcastLoad: the result's dims, merged where they walk the source alike (row-major), and
  // the source's stride per dim (0 where the source is broadcast).
  std::vector<int64_t> sizes, strides;
  float value = 0.0f;  // kConstant
  double scale = 1.0;  // kScale
  // kOp, kReduce: the op, its operands (node indices) and its rounding (ForStorage'd, as
  // LaunchOp); kScale: its operand and rounding.
  OpKind op = OpKind::kAdd;
  Comparison comparison = Comparison::kEq;
  int32_t operand_count = 0;
  int32_t operands[3] = {-1, -1, -1};
  OutputRounding rounding;
  // Every node: the storage of the buffer this value would have been stored in (the value is
  // rounded to it, as a store and a load would).
  DType storage = DType::kF32;
};

// A value a merged group (group_merge.h) stores besides its root's: its node and the buffer.
struct FusedStore {
  int32_t node = -1;
  int32_t buffer = -1;
};

struct FusedGroup {
  int32_t root = -1;  // instruction index of the root
  // The fused producers' instruction indices, ascending; in a merged group also the roots of
  // the groups merged into it and the copies its stores replace.
  std::vector<int32_t> members;
  std::vector<int32_t> inputs;       // buffers the kernel reads
  std::vector<DType> input_storage;  // their storage dtypes
  // Inputs the program frees between their first reader in the group and the root: the runner
  // frees them after the root instead.
  std::vector<int32_t> deferred_frees;
  std::vector<FusedNode> nodes;    // the last is the root's value
  int32_t out = -1;                // the root's buffer
  std::vector<FusedStore> stores;  // a merged group's other results, written with the root's
  int64_t elements = 0;            // of the root's buffer
  // A reduction group: the elements each output reduces (a row of the operand: the reduced
  // dims are its trailing ones), else 0.
  int64_t row = 0;
};

struct FusionPlan {
  std::vector<FusedGroup> groups;
  std::vector<int32_t> group_at;  // per instruction: the group it is the root of, or -1
  // The attention regions (attention_plan.h) and, per instruction, the region whose forward
  // (at its forward_at) or backward (at its backward_at) kernels run in its place, or -1.
  std::vector<AttentionRegion> attention;
  std::vector<int32_t> attention_at;
  // The products computed transposed (transposed_product.h) and, per instruction, the one that
  // runs in its place (at its dot_at), or -1.
  std::vector<TransposedProduct> products;
  std::vector<int32_t> product_at;
  // Per instruction: a fused producer, an op of an attention region that its kernels replace,
  // the kFree of a buffer such an op would have written, a deferred kFree, or the transpose of a
  // product computed transposed and the kFree of that product's own result.
  std::vector<char> skip;
  std::vector<std::vector<int32_t>> free_after;  // per instruction: buffers freed after it

  bool empty() const { return groups.empty() && attention.empty() && products.empty(); }
};

// Whether the runner fuses: unless ALPA_CUDA_FUSION=0 is in the environment.
bool FusionEnabled();

// The fusion plan of `program` whose buffers are kept in `storage` (storage_policy.h), with the
// attention regions `attention` (PlanAttention's) run by their kernels: their ops take no part in
// the elementwise groups, and a buffer their kernels read that the program frees before them is
// freed after them instead; and, unless TransposedProductsEnabled() says no, the products
// computed transposed (PlanTransposedProducts).
FusionPlan PlanFusion(const DeviceProgram& program, const std::vector<DType>& storage,
                      std::vector<AttentionRegion> attention = {});

// Host evaluation of group `g` at element i of its result, reading `inputs` (one pointer per
// g.inputs, in their storage `input_storage`): the value the fused kernel computes
// (fused_source.h; a reduction's sum in row order), for tests against the ops run one by one.
// `node`: that node's value instead of the root's (a store's; not in a reduction group).
float FusedValueAt(const FusedGroup& g, const std::vector<const void*>& inputs,
                   const std::vector<DType>& input_storage, int64_t i, int32_t node = -1);

// The buffers group g writes: its root's, then its stores'.
std::vector<int32_t> FusedGroupWrites(const FusedGroup& g);

// The index of buffer b among g's inputs, appended (kept in `storage`) where it is not one yet.
int32_t FusedInputIndex(FusedGroup& g, int32_t b, DType storage);

// The source index of element i of a kBroadcastLoad node.
int64_t BroadcastSourceIndex(const FusedNode& node, int64_t i);

}  // namespace cuda
}  // namespace alpa
