// The operator graph IR: an HLO-like op set with exact semantics, so that a plan can be executed
// and checked numerically. Every op produces one tensor; ops refer to their operands by index
// and are stored in topological order (an operand's index is smaller than its user's).
//
// Semantics (shapes are int64 dims, row-major; `x`, `y` name operands in order):
//   parameter        a graph input: weights, data batches, labels, optimizer state. Shape and
//                    dtype are given. Its `role` says which.
//   constant         every element equals attrs.value (a splat), of the given shape and dtype.
//   iota             element = its index along attrs.axis, of the given shape and dtype.
//   unary ops        elementwise on x. gelu uses the tanh approximation
//                    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). convert changes the dtype
//                    (floats to integers truncate toward zero; to pred: x != 0).
//   binary ops       elementwise on x, y of identical shape and dtype. compare gives pred and
//                    uses attrs.comparison. select(p, x, y): p pred, x and y of p's shape.
//   dot_general      XLA's: batch dims (lhs_batch[i] pairs with rhs_batch[i]) and contracting
//                    dims; the result holds the batch dims, then lhs's free dims, then rhs's
//                    free dims, each in order.
//   convolution      x [N, C, S1..Sk], kernel [O, C / groups, K1..Kk] -> [N, O, T1..Tk] with
//                    per-spatial-dim strides, padding_lo/hi, lhs_dilation (input dilation: the
//                    transposed-convolution trick), rhs_dilation (atrous); groups =
//                    attrs.feature_group_count splits C and O into equal groups.
//                    T = floor((dilated S + lo + hi - dilated K) / stride) + 1, where a dilated
//                    size is (size - 1) * dilation + 1.
//   broadcast_in_dim x's dim i becomes output dim attrs.dims[i] (strictly increasing), whose
//                    size equals x's or x's is 1; other output dims are new.
//   reshape          same element count, row-major order kept.
//   transpose        output dim i = x dim attrs.dims[i].
//   slice            [starts, limits) with strides, per dim.
//   concatenate      along attrs.axis; all other dims equal.
//   pad              padding_lo / padding_hi (may be negative: cropping) and padding_interior
//                    (>= 0, between elements) per dim, filled with attrs.value.
//   reverse          reverses the dims in attrs.dims.
//   reduce_sum/max   over attrs.dims (removed from the shape). max of nothing is -inf.
//   reduce_window    attrs.reduce (sum or max) over windows attrs.window with strides and
//                    padding_lo/hi (padding holds the identity: 0 or -inf) on every dim of x.
//   select_and_scatter  the gradient of a max reduce_window: x is the window op's input, y has
//                    the window op's output shape; each y element is added at the position of
//                    its window's maximum in x (first one on ties). Result has x's shape.
//   gather           numpy `take`: x indexed along attrs.axis by integer tensor y (s32/s64);
//                    result shape x[:axis] ++ y ++ x[axis+1:]. Indices are clamped into range.
//   scatter_add      x (the base), y (indices), z (updates of gather's result shape): x plus
//                    every update added at its index along attrs.axis (clamped). Its VJP pair
//                    with gather.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/op_kind.h"
#include "core/util/dtype.h"
#include "core/util/status.h"

namespace alpa {

using Dims = std::vector<int64_t>;

// "parameter", "dot_general", ... (the names used in the JSON graph format).
const char* OpKindName(OpKind kind);
Result<OpKind> ParseOpKind(const std::string& name);
bool IsValidOpKind(int32_t value);
// All kinds in increasing value order.
const std::vector<OpKind>& AllOpKinds();
bool IsElementwiseUnary(OpKind kind);
bool IsElementwiseBinary(OpKind kind);  // add .. compare (not select)
// Unary, binary or select: each result element from the same element of every operand.
bool IsElementwise(OpKind kind);

const char* ComparisonName(Comparison c);  // "eq", "ne", ...
Result<Comparison> ParseComparison(const std::string& name);

enum class ReduceKind : int32_t { kSum = 0, kMax = 1 };

// What a tensor is, for memory accounting and planning.
enum class TensorRole : int32_t {
  kActivation = 0,      // computed inside the step
  kParameter = 1,       // trainable weight
  kGradient = 2,        // gradient of a weight
  kOptimizerState = 3,  // momentum, Adam moments, fp32 master weights, step counter
  kInput = 4,           // data fed each step (tokens, images, labels)
};
const char* TensorRoleName(TensorRole role);
Result<TensorRole> ParseTensorRole(const std::string& name);

enum class Phase : int32_t { kForward = 0, kBackward = 1, kUpdate = 2 };
const char* PhaseName(Phase phase);
Result<Phase> ParsePhase(const std::string& name);

struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
  bool operator==(const DotDims& o) const {
    return lhs_batch == o.lhs_batch && rhs_batch == o.rhs_batch &&
           lhs_contracting == o.lhs_contracting && rhs_contracting == o.rhs_contracting;
  }
};

// Attributes of all kinds in one plain struct; each kind reads only the fields listed in the
// file comment. Unused fields stay empty / default (the JSON writer omits them).
struct OpAttrs {
  std::vector<int64_t> dims;  // broadcast_in_dim, transpose, reverse, reduce_sum/max
  int64_t axis = 0;           // iota, concatenate, gather, scatter_add
  double value = 0.0;         // constant, pad
  Comparison comparison = Comparison::kEq;
  ReduceKind reduce = ReduceKind::kSum;             // reduce_window
  DotDims dot;                                      // dot_general
  std::vector<int64_t> starts, limits;              // slice
  std::vector<int64_t> strides;                     // slice, convolution, windows
  std::vector<int64_t> padding_lo, padding_hi;      // pad, convolution, windows
  std::vector<int64_t> padding_interior;            // pad
  std::vector<int64_t> lhs_dilation, rhs_dilation;  // convolution
  int64_t feature_group_count = 1;                  // convolution
  std::vector<int64_t> window;                      // reduce_window, select_and_scatter

  bool operator==(const OpAttrs& o) const;
};

struct Op {
  OpKind kind = OpKind::kParameter;
  std::vector<int32_t> operands;
  OpAttrs attrs;
  // The result type. Given for parameter, constant and iota (and convert's dtype); inferred for
  // every other kind.
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  TensorRole role = TensorRole::kActivation;
  Phase phase = Phase::kForward;
  int32_t layer = 0;  // pipeline layer (stage boundaries fall between layers); -1 if none
  // For update ops: the parameter (a parameter op) whose value this result replaces after the
  // step; -1 otherwise. Shape and dtype equal the parameter's.
  int32_t alias_of = -1;
  // Autodiff treats the result as a constant: no cotangent flows into it or through it to its
  // operands (JAX's lax.stop_gradient). The forward value is unchanged. Set on the row maximum a
  // softmax subtracts for stability, whose cotangent is zero in exact arithmetic (the softmax
  // does not change when every input of a row moves by the same amount): without it, the
  // backward pass spends several passes over the attention scores to compute rounding noise.
  bool stop_gradient = false;
  std::string name;
  // Where the op came from in the program it was imported from: for the HLO importer, the
  // metadata op_name of the instruction that made it ("jit(step)/jvp(layers_3)/dot_general");
  // "" if none. Carried for mapping a plan back to that program; no pass reads it.
  std::string source;

  bool operator==(const Op& o) const;
};

struct Graph {
  std::vector<Op> ops;
  // Results of the step, loss first by convention (training graphs also list the updates).
  std::vector<int32_t> outputs;

  int32_t size() const { return static_cast<int32_t>(ops.size()); }
  const Op& op(int32_t id) const { return ops[static_cast<size_t>(id)]; }
  bool operator==(const Graph& o) const { return ops == o.ops && outputs == o.outputs; }
};

// Element count of a shape; an error (naming `what`) when a dim is negative or the count or
// its bytes at `dtype` overflow int64.
Result<int64_t> ElementCount(const std::vector<int64_t>& shape);
int64_t TensorBytes(const Op& op);  // of a validated op: elements * DTypeBytes
// Adds the bytes of op `id` (its type inferred) to `*total`, the bytes of the ops before it.
// A graph's results together stay below 2^63 bytes, so that every memory sum over a subset of
// its tensors (a stage, a device's share) fits int64; past that, an error naming the op.
Status AddOpBytes(const Op& op, int32_t id, int64_t* total);
// Per op: the ops reading it, once per operand slot (an op reading it twice is listed twice), in
// id order.
std::vector<std::vector<int32_t>> OpUsers(const Graph& graph);
// "op 12 'attn.qkv' (dot_general)": how messages name an op.
std::string DescribeOp(const Graph& graph, int32_t id);
std::string ShapeString(const std::vector<int64_t>& shape);  // "[8, 128]"

// Infers the result type of `op` (the last op, or any op whose operands are graph.ops[< id]),
// writing op.shape and op.dtype for inferred kinds. `id` is used in error messages only.
// Errors are kInvalidGraph and name the op.
Status InferOpType(const Graph& graph, int32_t id, Op& op);

// Full validation: operands defined before use (a forward reference is reported as a cycle
// when it closes one), every stored type equal to the inferred one, sizes that fit int64,
// aliases pointing at parameters of the same type, outputs in range. kInvalidGraph on error.
Status ValidateGraph(const Graph& graph);

}  // namespace alpa
