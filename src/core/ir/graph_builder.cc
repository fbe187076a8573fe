#include "core/ir/graph_builder.h"

#include <limits>
#include <utility>

namespace alpa {

GraphBuilder::GraphBuilder(Graph graph) : graph_(std::move(graph)) {
  for (int32_t id = 0; id < graph_.size() && status_.ok(); ++id) {
    Status s = AddOpBytes(graph_.op(id), id, &total_bytes_);
    if (!s.ok()) status_ = std::move(s);
  }
}

const Op& GraphBuilder::op(int32_t id) const {
  if (id >= 0 && id < graph_.size()) return graph_.op(id);
  if (status_.ok()) {
    status_ = InvalidGraph("builder: op " + std::to_string(id) + " does not exist (the graph has " +
                           std::to_string(graph_.size()) + " ops)");
  }
  static const Op kNoOp;
  return kNoOp;
}

int64_t GraphBuilder::CheckedProduct(int64_t x, int64_t y, const std::string& what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(x, y, &product)) {
    Fail(InvalidGraph("builder: " + what + " = " + std::to_string(x) + " * " + std::to_string(y) +
                      " overflows int64"));
    return 0;
  }
  return product;
}

int32_t GraphBuilder::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
  return -1;
}

bool GraphBuilder::Usable(std::initializer_list<int32_t> ids) {
  if (!status_.ok()) return false;
  for (int32_t id : ids) {
    if (id < 0 || id >= graph_.size()) {
      Fail(InvalidGraph("builder: operand " + std::to_string(id) + " does not exist (op " +
                        std::to_string(graph_.size()) + " was being added)"));
      return false;
    }
  }
  return true;
}

int32_t GraphBuilder::Add(Op op, bool keep_context) {
  if (!status_.ok()) return -1;
  for (int32_t o : op.operands) {
    if (!Usable({o})) return -1;
  }
  if (graph_.ops.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Fail(InvalidGraph("builder: more than 2^31 - 1 ops"));
  }
  if (!keep_context) {
    op.phase = phase_;
    op.layer = layer_;
  }
  int32_t id = graph_.size();
  Status s = InferOpType(graph_, id, op);
  if (s.ok()) s = AddOpBytes(op, id, &total_bytes_);
  if (!s.ok()) return Fail(std::move(s));
  graph_.ops.push_back(std::move(op));
  return id;
}

void GraphBuilder::SetRole(int32_t id, TensorRole role) {
  if (Usable({id})) graph_.ops[static_cast<size_t>(id)].role = role;
}

void GraphBuilder::SetStopGradient(int32_t id) {
  if (Usable({id})) graph_.ops[static_cast<size_t>(id)].stop_gradient = true;
}

void GraphBuilder::SetAlias(int32_t id, int32_t parameter) {
  if (Usable({id, parameter})) graph_.ops[static_cast<size_t>(id)].alias_of = parameter;
}

void GraphBuilder::SetName(int32_t id, std::string name) {
  if (Usable({id})) graph_.ops[static_cast<size_t>(id)].name = std::move(name);
}

void GraphBuilder::SetSource(int32_t id, std::string source) {
  if (Usable({id})) graph_.ops[static_cast<size_t>(id)].source = std::move(source);
}

void GraphBuilder::AddOutput(int32_t id) {
  if (Usable({id})) graph_.outputs.push_back(id);
}

Result<Graph> GraphBuilder::Finish() && {
  if (!status_.ok()) return status_;
  ALPA_RETURN_IF_ERROR(ValidateGraph(graph_));
  return std::move(graph_);
}

namespace {
Op MakeOp(OpKind kind, std::vector<int32_t> operands) {
  Op op;
  op.kind = kind;
  op.operands = std::move(operands);
  return op;
}
}  // namespace

int32_t GraphBuilder::Parameter(Dims shape, DType dtype, TensorRole role, std::string name) {
  Op op = MakeOp(OpKind::kParameter, {});
  op.shape = std::move(shape);
  op.dtype = dtype;
  op.role = role;
  op.name = std::move(name);
  return Add(std::move(op));
}

int32_t GraphBuilder::Constant(double value, Dims shape, DType dtype) {
  Op op = MakeOp(OpKind::kConstant, {});
  op.attrs.value = value;
  op.shape = std::move(shape);
  op.dtype = dtype;
  return Add(std::move(op));
}

int32_t GraphBuilder::ScalarLike(double value, int32_t like) {
  if (!Usable({like})) return -1;
  return Constant(value, shape(like), dtype(like));
}

int32_t GraphBuilder::Iota(Dims shape, DType dtype, int64_t axis) {
  Op op = MakeOp(OpKind::kIota, {});
  op.attrs.axis = axis;
  op.shape = std::move(shape);
  op.dtype = dtype;
  return Add(std::move(op));
}

int32_t GraphBuilder::Unary(OpKind kind, int32_t x) { return Add(MakeOp(kind, {x})); }

int32_t GraphBuilder::Binary(OpKind kind, int32_t x, int32_t y) {
  return Add(MakeOp(kind, {x, y}));
}

int32_t GraphBuilder::Convert(int32_t x, DType dtype) {
  Op op = MakeOp(OpKind::kConvert, {x});
  op.dtype = dtype;
  return Add(std::move(op));
}

int32_t GraphBuilder::Compare(Comparison c, int32_t x, int32_t y) {
  Op op = MakeOp(OpKind::kCompare, {x, y});
  op.attrs.comparison = c;
  return Add(std::move(op));
}

int32_t GraphBuilder::Select(int32_t pred, int32_t x, int32_t y) {
  return Add(MakeOp(OpKind::kSelect, {pred, x, y}));
}

int32_t GraphBuilder::Scale(int32_t x, double c) { return Mul(x, ScalarLike(c, x)); }

int32_t GraphBuilder::DotGeneral(int32_t x, int32_t y, DotDims dims) {
  Op op = MakeOp(OpKind::kDotGeneral, {x, y});
  op.attrs.dot = std::move(dims);
  return Add(std::move(op));
}

int32_t GraphBuilder::MatMul(int32_t x, int32_t w) {
  if (!Usable({x, w})) return -1;
  DotDims d;
  d.lhs_contracting = {rank(x) - 1};
  d.rhs_contracting = {0};
  return DotGeneral(x, w, std::move(d));
}

int32_t GraphBuilder::Convolution(int32_t x, int32_t kernel, Dims strides, Dims padding_lo,
                                  Dims padding_hi, Dims lhs_dilation, Dims rhs_dilation,
                                  int64_t feature_group_count) {
  Op op = MakeOp(OpKind::kConvolution, {x, kernel});
  op.attrs.strides = std::move(strides);
  op.attrs.padding_lo = std::move(padding_lo);
  op.attrs.padding_hi = std::move(padding_hi);
  op.attrs.lhs_dilation = std::move(lhs_dilation);
  op.attrs.rhs_dilation = std::move(rhs_dilation);
  op.attrs.feature_group_count = feature_group_count;
  return Add(std::move(op));
}

int32_t GraphBuilder::BroadcastInDim(int32_t x, Dims shape, Dims dims) {
  Op op = MakeOp(OpKind::kBroadcastInDim, {x});
  op.shape = std::move(shape);
  op.attrs.dims = std::move(dims);
  return Add(std::move(op));
}

int32_t GraphBuilder::BroadcastTo(int32_t x, Dims shape) {
  if (!Usable({x})) return -1;
  if (this->shape(x) == shape) return x;
  int64_t r = rank(x), out_rank = static_cast<int64_t>(shape.size());
  if (r > out_rank) {
    return Fail(InvalidGraph("builder: cannot broadcast " + ShapeString(this->shape(x)) + " to " +
                             ShapeString(shape)));
  }
  Dims dims;
  for (int64_t i = 0; i < r; ++i) dims.push_back(out_rank - r + i);
  return BroadcastInDim(x, std::move(shape), std::move(dims));
}

int32_t GraphBuilder::Reshape(int32_t x, Dims shape) {
  Op op = MakeOp(OpKind::kReshape, {x});
  op.shape = std::move(shape);
  return Add(std::move(op));
}

int32_t GraphBuilder::Transpose(int32_t x, Dims permutation) {
  Op op = MakeOp(OpKind::kTranspose, {x});
  op.attrs.dims = std::move(permutation);
  return Add(std::move(op));
}

int32_t GraphBuilder::Slice(int32_t x, Dims starts, Dims limits, Dims strides) {
  if (!Usable({x})) return -1;
  if (strides.empty()) strides.assign(starts.size(), 1);
  Op op = MakeOp(OpKind::kSlice, {x});
  op.attrs.starts = std::move(starts);
  op.attrs.limits = std::move(limits);
  op.attrs.strides = std::move(strides);
  return Add(std::move(op));
}

int32_t GraphBuilder::Concatenate(std::vector<int32_t> xs, int64_t axis) {
  Op op = MakeOp(OpKind::kConcatenate, std::move(xs));
  op.attrs.axis = axis;
  return Add(std::move(op));
}

int32_t GraphBuilder::Pad(int32_t x, double value, Dims lo, Dims hi, Dims interior) {
  if (interior.empty()) interior.assign(lo.size(), 0);
  Op op = MakeOp(OpKind::kPad, {x});
  op.attrs.value = value;
  op.attrs.padding_lo = std::move(lo);
  op.attrs.padding_hi = std::move(hi);
  op.attrs.padding_interior = std::move(interior);
  return Add(std::move(op));
}

int32_t GraphBuilder::Reverse(int32_t x, Dims dims) {
  Op op = MakeOp(OpKind::kReverse, {x});
  op.attrs.dims = std::move(dims);
  return Add(std::move(op));
}

int32_t GraphBuilder::ReduceSum(int32_t x, Dims dims) {
  Op op = MakeOp(OpKind::kReduceSum, {x});
  op.attrs.dims = std::move(dims);
  return Add(std::move(op));
}

int32_t GraphBuilder::ReduceMax(int32_t x, Dims dims) {
  Op op = MakeOp(OpKind::kReduceMax, {x});
  op.attrs.dims = std::move(dims);
  return Add(std::move(op));
}

int32_t GraphBuilder::ReduceWindow(ReduceKind kind, int32_t x, Dims window, Dims strides,
                                   Dims padding_lo, Dims padding_hi) {
  Op op = MakeOp(OpKind::kReduceWindow, {x});
  op.attrs.reduce = kind;
  op.attrs.window = std::move(window);
  op.attrs.strides = std::move(strides);
  op.attrs.padding_lo = std::move(padding_lo);
  op.attrs.padding_hi = std::move(padding_hi);
  return Add(std::move(op));
}

int32_t GraphBuilder::SelectAndScatter(int32_t x, int32_t source, Dims window, Dims strides,
                                       Dims padding_lo, Dims padding_hi) {
  Op op = MakeOp(OpKind::kSelectAndScatter, {x, source});
  op.attrs.reduce = ReduceKind::kMax;
  op.attrs.window = std::move(window);
  op.attrs.strides = std::move(strides);
  op.attrs.padding_lo = std::move(padding_lo);
  op.attrs.padding_hi = std::move(padding_hi);
  return Add(std::move(op));
}

int32_t GraphBuilder::Gather(int32_t x, int32_t indices, int64_t axis) {
  Op op = MakeOp(OpKind::kGather, {x, indices});
  op.attrs.axis = axis;
  return Add(std::move(op));
}

int32_t GraphBuilder::ScatterAdd(int32_t base, int32_t indices, int32_t updates, int64_t axis) {
  Op op = MakeOp(OpKind::kScatterAdd, {base, indices, updates});
  op.attrs.axis = axis;
  return Add(std::move(op));
}

}  // namespace alpa
