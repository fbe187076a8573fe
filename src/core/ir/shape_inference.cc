// Result types of ops: the rules of the file comment in core/ir/graph.h, with errors that name the
// op and the offending dim.
#include <algorithm>
#include <limits>
#include <string>

#include "core/ir/graph.h"

namespace alpa {
namespace {

// Checks one op against its operands; every error message starts with the op's description.
class OpChecker {
 public:
  OpChecker(const Graph& graph, int32_t id, Op& op) : graph_(graph), id_(id), op_(op) {}

  Status Fail(const std::string& what) const {
    std::string s = "op " + std::to_string(id_);
    if (!op_.name.empty()) s += " '" + op_.name + "'";
    s += std::string(" (") + OpKindName(op_.kind) + "): " + what;
    return InvalidGraph(s);
  }

  Status Arity(size_t n) const {
    if (op_.operands.size() != n) {
      return Fail("expects " + std::to_string(n) + " operand(s), has " +
                  std::to_string(op_.operands.size()));
    }
    for (size_t i = 0; i < n; ++i) {
      int32_t o = op_.operands[i];
      if (o < 0 || o >= graph_.size()) {
        return Fail("operand " + std::to_string(i) + " refers to op " + std::to_string(o) +
                    ", which does not exist (the graph has " + std::to_string(graph_.size()) +
                    " ops)");
      }
      if (o >= id_) {
        return Fail("operand " + std::to_string(i) + " refers to op " + std::to_string(o) +
                    ", which is not defined before it");
      }
    }
    return Status::Ok();
  }

  const Op& In(size_t i) const { return graph_.op(op_.operands[i]); }
  const Dims& InShape(size_t i) const { return In(i).shape; }
  int64_t Rank(size_t i) const { return static_cast<int64_t>(InShape(i).size()); }

  // Every entry of `dims` is a dim of a rank-`rank` tensor; `unique` forbids repeats.
  Status DimList(const Dims& dims, int64_t rank, const char* what, bool unique = true) const {
    std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
    for (int64_t d : dims) {
      if (d < 0 || d >= rank) {
        return Fail(std::string(what) + " names dim " + std::to_string(d) + ", outside rank " +
                    std::to_string(rank));
      }
      if (unique && seen[static_cast<size_t>(d)]) {
        return Fail(std::string(what) + " names dim " + std::to_string(d) + " twice");
      }
      seen[static_cast<size_t>(d)] = true;
    }
    return Status::Ok();
  }

  Status Length(const Dims& v, int64_t n, const char* what) const {
    if (static_cast<int64_t>(v.size()) != n) {
      return Fail(std::string(what) + " has " + std::to_string(v.size()) + " entries, expected " +
                  std::to_string(n));
    }
    return Status::Ok();
  }

  Status SameShapeAndType(size_t a, size_t b) const {
    if (InShape(a) != InShape(b)) {
      return Fail("operand shapes differ: " + ShapeString(InShape(a)) + " vs " +
                  ShapeString(InShape(b)));
    }
    if (In(a).dtype != In(b).dtype) {
      return Fail(std::string("operand dtypes differ: ") + DTypeName(In(a).dtype) + " vs " +
                  DTypeName(In(b).dtype));
    }
    return Status::Ok();
  }

  Status Infer();

 private:
  Status Source();
  Status DotGeneral();
  Status Convolution();
  Status BroadcastInDim();
  Status Reshape();
  Status Transpose();
  Status Slice();
  Status Concatenate();
  Status Pad();
  Status Reduce();
  Status Window(const Dims& in, Dims& out) const;
  Status Gather();
  Status ScatterAdd();

  const Graph& graph_;
  int32_t id_;
  Op& op_;
};

Status OpChecker::Source() {
  ALPA_RETURN_IF_ERROR(Arity(0));
  for (size_t i = 0; i < op_.shape.size(); ++i) {
    if (op_.shape[i] < 0) {
      return Fail("dim " + std::to_string(i) + " of shape " + ShapeString(op_.shape) +
                  " is negative");
    }
  }
  if (op_.kind == OpKind::kIota) {
    ALPA_RETURN_IF_ERROR(
        DimList({op_.attrs.axis}, static_cast<int64_t>(op_.shape.size()), "iota axis"));
    if (op_.dtype == DType::kPred) return Fail("iota cannot have dtype pred");
  }
  return Status::Ok();
}

Status OpChecker::DotGeneral() {
  ALPA_RETURN_IF_ERROR(Arity(2));
  const DotDims& dims = op_.attrs.dot;
  if (In(0).dtype != In(1).dtype) {
    return Fail(std::string("operand dtypes differ: ") + DTypeName(In(0).dtype) + " vs " +
                DTypeName(In(1).dtype));
  }
  if (dims.lhs_batch.size() != dims.rhs_batch.size()) {
    return Fail("lhs and rhs batch dim lists differ in length");
  }
  if (dims.lhs_contracting.size() != dims.rhs_contracting.size()) {
    return Fail("lhs and rhs contracting dim lists differ in length");
  }
  Dims lhs_used = dims.lhs_batch, rhs_used = dims.rhs_batch;
  lhs_used.insert(lhs_used.end(), dims.lhs_contracting.begin(), dims.lhs_contracting.end());
  rhs_used.insert(rhs_used.end(), dims.rhs_contracting.begin(), dims.rhs_contracting.end());
  ALPA_RETURN_IF_ERROR(DimList(lhs_used, Rank(0), "lhs batch + contracting dims"));
  ALPA_RETURN_IF_ERROR(DimList(rhs_used, Rank(1), "rhs batch + contracting dims"));
  const Dims& lhs = InShape(0);
  const Dims& rhs = InShape(1);
  Dims out;
  for (size_t i = 0; i < dims.lhs_batch.size(); ++i) {
    int64_t x = lhs[static_cast<size_t>(dims.lhs_batch[i])],
            y = rhs[static_cast<size_t>(dims.rhs_batch[i])];
    if (x != y) {
      return Fail("batch dim sizes differ: lhs dim " + std::to_string(dims.lhs_batch[i]) + " is " +
                  std::to_string(x) + ", rhs dim " + std::to_string(dims.rhs_batch[i]) + " is " +
                  std::to_string(y));
    }
    out.push_back(x);
  }
  for (size_t i = 0; i < dims.lhs_contracting.size(); ++i) {
    int64_t x = lhs[static_cast<size_t>(dims.lhs_contracting[i])];
    int64_t y = rhs[static_cast<size_t>(dims.rhs_contracting[i])];
    if (x != y) {
      return Fail("contracting dim sizes differ: lhs dim " +
                  std::to_string(dims.lhs_contracting[i]) + " is " + std::to_string(x) +
                  ", rhs dim " + std::to_string(dims.rhs_contracting[i]) + " is " +
                  std::to_string(y));
    }
  }
  for (int64_t i = 0; i < Rank(0); ++i) {
    if (std::find(lhs_used.begin(), lhs_used.end(), i) == lhs_used.end()) {
      out.push_back(lhs[static_cast<size_t>(i)]);
    }
  }
  for (int64_t i = 0; i < Rank(1); ++i) {
    if (std::find(rhs_used.begin(), rhs_used.end(), i) == rhs_used.end()) {
      out.push_back(rhs[static_cast<size_t>(i)]);
    }
  }
  op_.shape = out;
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

// int64 arithmetic that remembers overflow (attribute values come from untrusted files).
struct CheckedInt {
  int64_t value;
  bool overflow = false;
  CheckedInt& Add(int64_t x) {
    overflow |= __builtin_add_overflow(value, x, &value);
    return *this;
  }
  CheckedInt& Mul(int64_t x) {
    overflow |= __builtin_mul_overflow(value, x, &value);
    return *this;
  }
};

// Size after dilation by `dil` (>= 1); 0 stays 0.
CheckedInt Dilated(int64_t size, int64_t dil) {
  if (size == 0) return CheckedInt{0};
  return CheckedInt{size - 1}.Mul(dil).Add(1);
}

Status OpChecker::Convolution() {
  ALPA_RETURN_IF_ERROR(Arity(2));
  const OpAttrs& at = op_.attrs;
  const Dims& x = InShape(0);
  const Dims& w = InShape(1);
  if (In(0).dtype != In(1).dtype) return Fail("input and kernel dtypes differ");
  if (x.size() < 2 || x.size() != w.size()) {
    return Fail("input " + ShapeString(x) + " and kernel " + ShapeString(w) +
                " must both be [batch/out, feature, spatial...] of equal rank");
  }
  int64_t k = Rank(0) - 2;
  ALPA_RETURN_IF_ERROR(Length(at.strides, k, "strides"));
  ALPA_RETURN_IF_ERROR(Length(at.padding_lo, k, "padding_lo"));
  ALPA_RETURN_IF_ERROR(Length(at.padding_hi, k, "padding_hi"));
  ALPA_RETURN_IF_ERROR(Length(at.lhs_dilation, k, "lhs_dilation"));
  ALPA_RETURN_IF_ERROR(Length(at.rhs_dilation, k, "rhs_dilation"));
  int64_t g = at.feature_group_count;
  if (g < 1) return Fail("feature_group_count must be >= 1");
  if (x[1] % g != 0 || w[0] % g != 0) {
    return Fail("feature_group_count " + std::to_string(g) + " does not divide input features " +
                std::to_string(x[1]) + " and output features " + std::to_string(w[0]));
  }
  if (w[1] * g != x[1]) {
    return Fail("kernel input features " + std::to_string(w[1]) + " x groups " + std::to_string(g) +
                " != input features " + std::to_string(x[1]));
  }
  Dims out = {x[0], w[0]};
  for (size_t i = 0; i < static_cast<size_t>(k); ++i) {
    if (at.strides[i] < 1 || at.lhs_dilation[i] < 1 || at.rhs_dilation[i] < 1) {
      return Fail("spatial dim " + std::to_string(i) + ": strides and dilations must be >= 1");
    }
    CheckedInt padded = Dilated(x[i + 2], at.lhs_dilation[i]);
    padded.Add(at.padding_lo[i]).Add(at.padding_hi[i]);
    CheckedInt dilated_kernel = Dilated(w[i + 2], at.rhs_dilation[i]);
    if (padded.overflow || dilated_kernel.overflow) {
      return Fail("spatial dim " + std::to_string(i) + ": dilated or padded size overflows int64");
    }
    int64_t in = padded.value, kd = dilated_kernel.value;
    if (in < kd) {
      return Fail("spatial dim " + std::to_string(i) + ": padded input " + std::to_string(in) +
                  " is smaller than the dilated kernel " + std::to_string(kd));
    }
    out.push_back((in - kd) / at.strides[i] + 1);
  }
  op_.shape = out;
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::BroadcastInDim() {
  ALPA_RETURN_IF_ERROR(Arity(1));
  const Dims& map = op_.attrs.dims;
  const Dims& in = InShape(0);
  int64_t out_rank = static_cast<int64_t>(op_.shape.size());
  ALPA_RETURN_IF_ERROR(Length(map, Rank(0), "dims"));
  ALPA_RETURN_IF_ERROR(DimList(map, out_rank, "dims"));
  for (size_t i = 0; i < map.size(); ++i) {
    if (i > 0 && map[i] <= map[i - 1]) return Fail("dims must be strictly increasing");
    int64_t o = op_.shape[static_cast<size_t>(map[i])];
    if (in[i] != o && in[i] != 1) {
      return Fail("operand dim " + std::to_string(i) + " (size " + std::to_string(in[i]) +
                  ") cannot broadcast to output dim " + std::to_string(map[i]) + " (size " +
                  std::to_string(o) + ")");
    }
  }
  for (int64_t d : op_.shape) {
    if (d < 0) return Fail("output shape " + ShapeString(op_.shape) + " has a negative dim");
  }
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::Reshape() {
  ALPA_RETURN_IF_ERROR(Arity(1));
  Result<int64_t> in = ElementCount(InShape(0));
  Result<int64_t> out = ElementCount(op_.shape);
  if (!out.ok()) return Fail(out.status().message());
  if (!in.ok() || in.value() != out.value()) {
    return Fail("cannot reshape " + ShapeString(InShape(0)) + " to " + ShapeString(op_.shape) +
                ": element counts differ");
  }
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::Transpose() {
  ALPA_RETURN_IF_ERROR(Arity(1));
  const Dims& perm = op_.attrs.dims;
  ALPA_RETURN_IF_ERROR(Length(perm, Rank(0), "permutation"));
  ALPA_RETURN_IF_ERROR(DimList(perm, Rank(0), "permutation"));
  Dims out;
  for (int64_t p : perm) out.push_back(InShape(0)[static_cast<size_t>(p)]);
  op_.shape = out;
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::Slice() {
  ALPA_RETURN_IF_ERROR(Arity(1));
  const OpAttrs& at = op_.attrs;
  ALPA_RETURN_IF_ERROR(Length(at.starts, Rank(0), "starts"));
  ALPA_RETURN_IF_ERROR(Length(at.limits, Rank(0), "limits"));
  ALPA_RETURN_IF_ERROR(Length(at.strides, Rank(0), "strides"));
  Dims out;
  for (size_t i = 0; i < at.starts.size(); ++i) {
    int64_t size = InShape(0)[i];
    if (at.starts[i] < 0 || at.starts[i] > at.limits[i] || at.limits[i] > size ||
        at.strides[i] < 1) {
      return Fail("dim " + std::to_string(i) + ": slice [" + std::to_string(at.starts[i]) + ", " +
                  std::to_string(at.limits[i]) + ") step " + std::to_string(at.strides[i]) +
                  " does not fit size " + std::to_string(size));
    }
    int64_t len = at.limits[i] - at.starts[i];
    out.push_back(len == 0 ? 0 : (len - 1) / at.strides[i] + 1);
  }
  op_.shape = out;
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::Concatenate() {
  if (op_.operands.empty()) return Fail("needs at least one operand");
  ALPA_RETURN_IF_ERROR(Arity(op_.operands.size()));
  ALPA_RETURN_IF_ERROR(DimList({op_.attrs.axis}, Rank(0), "axis"));
  size_t axis = static_cast<size_t>(op_.attrs.axis);
  Dims out = InShape(0);
  for (size_t i = 1; i < op_.operands.size(); ++i) {
    const Dims& s = InShape(i);
    if (s.size() != out.size() || In(i).dtype != In(0).dtype) {
      return Fail("operand " + std::to_string(i) + " differs in rank or dtype from operand 0");
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if (d != axis && s[d] != out[d]) {
        return Fail("operand " + std::to_string(i) + " has shape " + ShapeString(s) +
                    ", operand 0 has " + ShapeString(InShape(0)) + " (only dim " +
                    std::to_string(axis) + " may differ)");
      }
    }
    if (s[axis] > std::numeric_limits<int64_t>::max() - out[axis]) {
      return Fail("concatenated size overflows");
    }
    out[axis] += s[axis];
  }
  op_.shape = out;
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::Pad() {
  ALPA_RETURN_IF_ERROR(Arity(1));
  const OpAttrs& at = op_.attrs;
  ALPA_RETURN_IF_ERROR(Length(at.padding_lo, Rank(0), "padding_lo"));
  ALPA_RETURN_IF_ERROR(Length(at.padding_hi, Rank(0), "padding_hi"));
  ALPA_RETURN_IF_ERROR(Length(at.padding_interior, Rank(0), "padding_interior"));
  Dims out;
  for (size_t i = 0; i < at.padding_lo.size(); ++i) {
    int64_t s = InShape(0)[i];
    if (at.padding_interior[i] < 0) return Fail("padding_interior must be >= 0");
    if (at.padding_interior[i] == std::numeric_limits<int64_t>::max()) {
      return Fail("dim " + std::to_string(i) + ": padded size overflows int64");
    }
    CheckedInt checked = Dilated(s, at.padding_interior[i] + 1);
    checked.Add(at.padding_lo[i]).Add(at.padding_hi[i]);
    if (checked.overflow) {
      return Fail("dim " + std::to_string(i) + ": padded size overflows int64");
    }
    int64_t size = checked.value;
    if (size < 0) return Fail("dim " + std::to_string(i) + " would have negative size");
    out.push_back(size);
  }
  op_.shape = out;
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::Reduce() {
  ALPA_RETURN_IF_ERROR(Arity(1));
  ALPA_RETURN_IF_ERROR(DimList(op_.attrs.dims, Rank(0), "dims"));
  Dims out;
  for (int64_t i = 0; i < Rank(0); ++i) {
    if (std::find(op_.attrs.dims.begin(), op_.attrs.dims.end(), i) == op_.attrs.dims.end()) {
      out.push_back(InShape(0)[static_cast<size_t>(i)]);
    }
  }
  op_.shape = out;
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::Window(const Dims& in, Dims& out) const {
  const OpAttrs& at = op_.attrs;
  int64_t rank = static_cast<int64_t>(in.size());
  ALPA_RETURN_IF_ERROR(Length(at.window, rank, "window"));
  ALPA_RETURN_IF_ERROR(Length(at.strides, rank, "strides"));
  ALPA_RETURN_IF_ERROR(Length(at.padding_lo, rank, "padding_lo"));
  ALPA_RETURN_IF_ERROR(Length(at.padding_hi, rank, "padding_hi"));
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (at.window[i] < 1 || at.strides[i] < 1 || at.padding_lo[i] < 0 || at.padding_hi[i] < 0) {
      return Fail("dim " + std::to_string(i) + ": window and strides must be >= 1, padding >= 0");
    }
    CheckedInt checked{in[i]};
    checked.Add(at.padding_lo[i]).Add(at.padding_hi[i]);
    if (checked.overflow) return Fail("dim " + std::to_string(i) + ": padded size overflows int64");
    int64_t padded = checked.value;
    if (padded < at.window[i]) {
      return Fail("dim " + std::to_string(i) + ": window " + std::to_string(at.window[i]) +
                  " exceeds the padded size " + std::to_string(padded));
    }
    out.push_back((padded - at.window[i]) / at.strides[i] + 1);
  }
  return Status::Ok();
}

Status OpChecker::Gather() {
  ALPA_RETURN_IF_ERROR(Arity(2));
  if (!IsInteger(In(1).dtype)) return Fail("indices (operand 1) must have an integer dtype");
  ALPA_RETURN_IF_ERROR(DimList({op_.attrs.axis}, Rank(0), "axis"));
  const Dims& x = InShape(0);
  size_t axis = static_cast<size_t>(op_.attrs.axis);
  if (x[axis] == 0) return Fail("cannot index an empty dim");
  Dims out(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), InShape(1).begin(), InShape(1).end());
  out.insert(out.end(), x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end());
  op_.shape = out;
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::ScatterAdd() {
  ALPA_RETURN_IF_ERROR(Arity(3));
  if (!IsInteger(In(1).dtype)) return Fail("indices (operand 1) must have an integer dtype");
  ALPA_RETURN_IF_ERROR(DimList({op_.attrs.axis}, Rank(0), "axis"));
  const Dims& x = InShape(0);
  size_t axis = static_cast<size_t>(op_.attrs.axis);
  if (x[axis] == 0) return Fail("cannot index an empty dim");
  Dims expect(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis));
  expect.insert(expect.end(), InShape(1).begin(), InShape(1).end());
  expect.insert(expect.end(), x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end());
  if (InShape(2) != expect) {
    return Fail("updates have shape " + ShapeString(InShape(2)) + ", expected " +
                ShapeString(expect));
  }
  if (In(2).dtype != In(0).dtype) return Fail("updates and base dtypes differ");
  op_.shape = x;
  op_.dtype = In(0).dtype;
  return Status::Ok();
}

Status OpChecker::Infer() {
  OpKind k = op_.kind;
  if (!IsValidOpKind(static_cast<int32_t>(k))) return Fail("unknown op kind");
  if (!IsValidDType(static_cast<int32_t>(op_.dtype))) return Fail("unknown dtype");
  switch (k) {
    case OpKind::kParameter:
    case OpKind::kConstant:
    case OpKind::kIota:
      return Source();
    case OpKind::kConvert:
      ALPA_RETURN_IF_ERROR(Arity(1));
      op_.shape = InShape(0);
      return Status::Ok();  // dtype is the target, given
    case OpKind::kSelect:
      ALPA_RETURN_IF_ERROR(Arity(3));
      if (In(0).dtype != DType::kPred) return Fail("the predicate (operand 0) must be pred");
      if (InShape(0) != InShape(1)) {
        return Fail("predicate shape " + ShapeString(InShape(0)) + " differs from operand 1's " +
                    ShapeString(InShape(1)));
      }
      ALPA_RETURN_IF_ERROR(SameShapeAndType(1, 2));
      op_.shape = InShape(1);
      op_.dtype = In(1).dtype;
      return Status::Ok();
    case OpKind::kDotGeneral:
      return DotGeneral();
    case OpKind::kConvolution:
      return Convolution();
    case OpKind::kBroadcastInDim:
      return BroadcastInDim();
    case OpKind::kReshape:
      return Reshape();
    case OpKind::kTranspose:
      return Transpose();
    case OpKind::kSlice:
      return Slice();
    case OpKind::kConcatenate:
      return Concatenate();
    case OpKind::kPad:
      return Pad();
    case OpKind::kReverse:
      ALPA_RETURN_IF_ERROR(Arity(1));
      ALPA_RETURN_IF_ERROR(DimList(op_.attrs.dims, Rank(0), "dims"));
      op_.shape = InShape(0);
      op_.dtype = In(0).dtype;
      return Status::Ok();
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      return Reduce();
    case OpKind::kReduceWindow: {
      ALPA_RETURN_IF_ERROR(Arity(1));
      Dims out;
      ALPA_RETURN_IF_ERROR(Window(InShape(0), out));
      op_.shape = out;
      op_.dtype = In(0).dtype;
      return Status::Ok();
    }
    case OpKind::kSelectAndScatter: {
      ALPA_RETURN_IF_ERROR(Arity(2));
      Dims out;
      ALPA_RETURN_IF_ERROR(Window(InShape(0), out));
      if (out != InShape(1)) {
        return Fail("source has shape " + ShapeString(InShape(1)) +
                    ", the window output shape is " + ShapeString(out));
      }
      if (In(0).dtype != In(1).dtype) return Fail("operand dtypes differ");
      op_.shape = InShape(0);
      op_.dtype = In(0).dtype;
      return Status::Ok();
    }
    case OpKind::kGather:
      return Gather();
    case OpKind::kScatterAdd:
      return ScatterAdd();
    default:
      break;
  }
  if (IsElementwiseUnary(k)) {
    ALPA_RETURN_IF_ERROR(Arity(1));
    if (In(0).dtype == DType::kPred) return Fail("operand must not be pred");
    op_.shape = InShape(0);
    op_.dtype = In(0).dtype;
    return Status::Ok();
  }
  if (IsElementwiseBinary(k)) {
    ALPA_RETURN_IF_ERROR(Arity(2));
    ALPA_RETURN_IF_ERROR(SameShapeAndType(0, 1));
    op_.shape = InShape(0);
    op_.dtype = k == OpKind::kCompare ? DType::kPred : In(0).dtype;
    return Status::Ok();
  }
  return Fail("unknown op kind");
}

}  // namespace

Status InferOpType(const Graph& graph, int32_t id, Op& op) {
  OpChecker checker(graph, id, op);
  ALPA_RETURN_IF_ERROR(checker.Infer());
  Result<int64_t> count = ElementCount(op.shape);
  if (!count.ok()) return checker.Fail(count.status().message());
  if (count.value() > std::numeric_limits<int64_t>::max() / DTypeBytes(op.dtype)) {
    return checker.Fail("result " + ShapeString(op.shape) + " has more than 2^63 bytes");
  }
  return Status::Ok();
}

}  // namespace alpa
