// GraphBuilder: appends ops to a Graph with their types inferred on the spot. The first error
// is kept (later calls return -1 and do nothing, like XLA's XlaBuilder), so model code can chain
// calls and check once in Finish(). The accessors (op, shape, dtype) accept any id: an id that
// names no op (the -1 of a failed call) reads as an empty f32 scalar and fails the build, so
// code between a failed call and the next ok() check never reads out of bounds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace alpa {

class GraphBuilder {
 public:
  GraphBuilder() = default;
  // Continues an existing graph (e.g. autodiff appending a backward pass to a forward graph).
  explicit GraphBuilder(Graph graph);

  // Context stamped on every op added from now on.
  void set_phase(Phase phase) { phase_ = phase; }
  void set_layer(int32_t layer) { layer_ = layer; }
  Phase phase() const { return phase_; }
  int32_t layer() const { return layer_; }

  const Graph& graph() const { return graph_; }
  const Op& op(int32_t id) const;
  const Dims& shape(int32_t id) const { return op(id).shape; }
  DType dtype(int32_t id) const { return op(id).dtype; }
  int64_t rank(int32_t id) const { return static_cast<int64_t>(shape(id).size()); }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // Appends a fully described op (kind, operands, attrs; shape/dtype for sources and convert).
  // Phase and layer come from the context unless `keep_context` is false. Returns its id.
  int32_t Add(Op op, bool keep_context = false);
  // Sets the role / alias / name / source of an existing op (e.g. marking an update op).
  void SetRole(int32_t id, TensorRole role);
  void SetAlias(int32_t id, int32_t parameter);
  // Op::stop_gradient: autodiff treats op `id`'s result as a constant.
  void SetStopGradient(int32_t id);
  void SetName(int32_t id, std::string name);
  void SetSource(int32_t id, std::string source);
  void AddOutput(int32_t id);

  // x * y for sizes derived from others (3 * hidden, batch * seq): the product, or 0 and a
  // failed build naming `what` when it overflows int64.
  int64_t CheckedProduct(int64_t x, int64_t y, const std::string& what);

  // Validates the whole graph and returns it (or the first error).
  Result<Graph> Finish() &&;

  // ---- Sources ----
  int32_t Parameter(Dims shape, DType dtype, TensorRole role, std::string name);
  int32_t Constant(double value, Dims shape, DType dtype);
  int32_t ScalarLike(double value, int32_t like);  // constant of like's shape and dtype
  int32_t Iota(Dims shape, DType dtype, int64_t axis);

  // ---- Elementwise ----
  int32_t Unary(OpKind kind, int32_t x);
  int32_t Binary(OpKind kind, int32_t x, int32_t y);
  int32_t Convert(int32_t x, DType dtype);
  int32_t Compare(Comparison c, int32_t x, int32_t y);
  int32_t Select(int32_t pred, int32_t x, int32_t y);
  int32_t Add(int32_t x, int32_t y) { return Binary(OpKind::kAdd, x, y); }
  int32_t Sub(int32_t x, int32_t y) { return Binary(OpKind::kSub, x, y); }
  int32_t Mul(int32_t x, int32_t y) { return Binary(OpKind::kMul, x, y); }
  int32_t Div(int32_t x, int32_t y) { return Binary(OpKind::kDiv, x, y); }
  // x * c for a scalar c (a splat constant of x's shape).
  int32_t Scale(int32_t x, double c);

  // ---- Contractions ----
  int32_t DotGeneral(int32_t x, int32_t y, DotDims dims);
  // x [..., k] . w [k, n] -> [..., n]: contracts x's last dim with w's first.
  int32_t MatMul(int32_t x, int32_t w);
  int32_t Convolution(int32_t x, int32_t kernel, Dims strides, Dims padding_lo, Dims padding_hi,
                      Dims lhs_dilation, Dims rhs_dilation, int64_t feature_group_count = 1);

  // ---- Data movement ----
  int32_t BroadcastInDim(int32_t x, Dims shape, Dims dims);
  // Broadcasts x to `shape`, aligning x's dims with the trailing dims of shape (numpy rules).
  int32_t BroadcastTo(int32_t x, Dims shape);
  int32_t Reshape(int32_t x, Dims shape);
  int32_t Transpose(int32_t x, Dims permutation);
  int32_t Slice(int32_t x, Dims starts, Dims limits, Dims strides = {});
  int32_t Concatenate(std::vector<int32_t> xs, int64_t axis);
  int32_t Pad(int32_t x, double value, Dims lo, Dims hi, Dims interior = {});
  int32_t Reverse(int32_t x, Dims dims);

  // ---- Reductions ----
  int32_t ReduceSum(int32_t x, Dims dims);
  int32_t ReduceMax(int32_t x, Dims dims);
  int32_t ReduceWindow(ReduceKind kind, int32_t x, Dims window, Dims strides, Dims padding_lo,
                       Dims padding_hi);
  int32_t SelectAndScatter(int32_t x, int32_t source, Dims window, Dims strides, Dims padding_lo,
                           Dims padding_hi);

  // ---- Indexing ----
  int32_t Gather(int32_t x, int32_t indices, int64_t axis);
  int32_t ScatterAdd(int32_t base, int32_t indices, int32_t updates, int64_t axis);

 private:
  bool Usable(std::initializer_list<int32_t> ids);
  int32_t Fail(Status status);

  Graph graph_;
  // Bytes of all results so far; kept within int64 (AddOpBytes), so that every memory sum over
  // the graph's tensors fits int64 too.
  int64_t total_bytes_ = 0;
  // Mutable: a const accessor given an id that names no op fails the build.
  mutable Status status_;
  Phase phase_ = Phase::kForward;
  int32_t layer_ = 0;
};

}  // namespace alpa
