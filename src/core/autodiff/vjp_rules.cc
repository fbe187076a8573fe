// VJP rules of the elementwise, data-movement, reduction and indexing ops, and the dispatcher.
// Each rule appends ops computing d(loss)/d(operand) from the cotangent g of the result.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/autodiff/autodiff.h"
#include "core/autodiff/vjp_rules.h"

namespace alpa {
namespace vjp {

Dims Iota(int64_t n, int64_t start) {
  Dims d;
  for (int64_t i = 0; i < n; ++i) d.push_back(start + i);
  return d;
}

int64_t DilatedSize(int64_t size, int64_t dilation) {
  return size == 0 ? 0 : (size - 1) * dilation + 1;
}

bool HasZeroElements(const Dims& shape) {
  return std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d == 0; });
}

namespace {

using Cotangents = std::vector<int32_t>;

int32_t Zeros(GraphBuilder& b, int32_t like) { return b.ScalarLike(0.0, like); }

// Elementwise unary kinds: d/dx written with the operand x and the result y.
void Unary(const VjpArgs& a, Cotangents& out) {
  GraphBuilder& b = *a.b;
  int32_t x = a.op.operands[0], y = a.id, g = a.g;
  switch (a.op.kind) {
    case OpKind::kNeg:
      out[0] = b.Unary(OpKind::kNeg, g);
      break;
    case OpKind::kAbs:
      // sign(x) with sign(0) = +1: any value in [-1, 1] is a subgradient at the kink.
      out[0] = b.Select(b.Compare(Comparison::kGe, x, Zeros(b, x)), g, b.Unary(OpKind::kNeg, g));
      break;
    case OpKind::kExp:
      out[0] = b.Mul(g, y);
      break;
    case OpKind::kLog:
      out[0] = b.Div(g, x);
      break;
    case OpKind::kTanh:  // 1 - tanh^2
      out[0] = b.Mul(g, b.Sub(b.ScalarLike(1.0, y), b.Mul(y, y)));
      break;
    case OpKind::kSqrt:  // 1 / (2 sqrt(x))
      out[0] = b.Div(g, b.Scale(y, 2.0));
      break;
    case OpKind::kRsqrt:  // -x^(-3/2) / 2 = -y^3 / 2
      out[0] = b.Mul(g, b.Scale(b.Mul(y, b.Mul(y, y)), -0.5));
      break;
    case OpKind::kGelu: {
      // f = x/2 (1 + t), t = tanh(u), u = c (x + k x^3):
      // f' = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3 k x^2).
      const double kPi = 3.14159265358979323846;
      const double c = std::sqrt(2.0 / kPi), k = 0.044715;
      int32_t x2 = b.Mul(x, x);
      int32_t u = b.Scale(b.Add(x, b.Scale(b.Mul(x, x2), k)), c);
      int32_t t = b.Unary(OpKind::kTanh, u);
      int32_t one = b.ScalarLike(1.0, x);
      int32_t left = b.Scale(b.Add(one, t), 0.5);
      int32_t dt = b.Sub(one, b.Mul(t, t));
      int32_t du = b.Scale(b.Add(one, b.Scale(x2, 3.0 * k)), c);
      int32_t right = b.Mul(b.Scale(x, 0.5), b.Mul(dt, du));
      out[0] = b.Mul(g, b.Add(left, right));
      break;
    }
    case OpKind::kRelu:
      out[0] = b.Select(b.Compare(Comparison::kGt, x, Zeros(b, x)), g, Zeros(b, g));
      break;
    case OpKind::kConvert:
      // Only float <-> float conversions carry a gradient.
      if (IsFloating(b.dtype(x)) && IsFloating(a.op.dtype)) out[0] = b.Convert(g, b.dtype(x));
      break;
    default:
      break;
  }
}

void Binary(const VjpArgs& a, Cotangents& out) {
  GraphBuilder& b = *a.b;
  int32_t x = a.op.operands[0], y = a.op.operands[1], z = a.id, g = a.g;
  bool nx = a.needed[0], ny = a.needed[1];
  switch (a.op.kind) {
    case OpKind::kAdd:
      if (nx) out[0] = g;
      if (ny) out[1] = g;
      break;
    case OpKind::kSub:
      if (nx) out[0] = g;
      if (ny) out[1] = b.Unary(OpKind::kNeg, g);
      break;
    case OpKind::kMul:
      if (nx) out[0] = b.Mul(g, y);
      if (ny) out[1] = b.Mul(g, x);
      break;
    case OpKind::kDiv: {
      int32_t gx = b.Div(g, y);  // also the first factor of d/dy = -g x / y^2 = -(g / y) z
      if (nx) out[0] = gx;
      if (ny) out[1] = b.Unary(OpKind::kNeg, b.Mul(gx, z));
      break;
    }
    case OpKind::kMax:
    case OpKind::kMin: {
      // Ties go to x (JAX splits them; one side is an equally valid subgradient).
      Comparison c = a.op.kind == OpKind::kMax ? Comparison::kGe : Comparison::kLe;
      int32_t to_x = b.Compare(c, x, y);
      int32_t zero = Zeros(b, g);
      if (nx) out[0] = b.Select(to_x, g, zero);
      if (ny) out[1] = b.Select(to_x, zero, g);
      break;
    }
    case OpKind::kPow: {
      if (nx) {
        int32_t ym1 = b.Sub(y, b.ScalarLike(1.0, y));
        out[0] = b.Mul(g, b.Mul(y, b.Binary(OpKind::kPow, x, ym1)));
      }
      if (ny) {
        // log(x) x^y, taken as 0 where x <= 0 (as JAX does at x = 0; x < 0 has no real log).
        int32_t zero = Zeros(b, x);
        int32_t positive = b.Compare(Comparison::kGt, x, zero);
        int32_t safe_x = b.Select(positive, x, b.ScalarLike(1.0, x));
        int32_t logx = b.Select(positive, b.Unary(OpKind::kLog, safe_x), zero);
        out[1] = b.Mul(g, b.Mul(logx, z));
      }
      break;
    }
    default:  // compare: no gradient
      break;
  }
}

// Sum over the dims that broadcast_in_dim created or expanded, then restore x's shape.
int32_t UnBroadcast(GraphBuilder& b, int32_t g, const Dims& x_shape, const Dims& map) {
  const Dims& out_shape = b.shape(g);
  Dims reduce;
  for (int64_t d = 0; d < static_cast<int64_t>(out_shape.size()); ++d) {
    auto it = std::find(map.begin(), map.end(), d);
    if (it == map.end()) {
      reduce.push_back(d);
    } else if (x_shape[static_cast<size_t>(it - map.begin())] !=
               out_shape[static_cast<size_t>(d)]) {
      reduce.push_back(d);  // x's size-1 dim was expanded
    }
  }
  int32_t r = reduce.empty() ? g : b.ReduceSum(g, reduce);
  return b.shape(r) == x_shape ? r : b.Reshape(r, x_shape);
}

int32_t SliceVjp(GraphBuilder& b, int32_t g, const Op& op, const Dims& x_shape) {
  if (HasZeroElements(b.shape(g))) return b.Constant(0.0, x_shape, b.dtype(g));
  Dims lo, hi, interior;
  const OpAttrs& at = op.attrs;
  for (size_t i = 0; i < x_shape.size(); ++i) {
    int64_t n = b.shape(g)[i];
    int64_t last = at.starts[i] + (n - 1) * at.strides[i];  // the last element taken
    lo.push_back(at.starts[i]);
    hi.push_back(x_shape[i] - last - 1);
    interior.push_back(at.strides[i] - 1);
  }
  return b.Pad(g, 0.0, lo, hi, interior);
}

// pad's inverse: first undo the cropping of negative padding, then take every (interior+1)-th
// element from the first real one.
int32_t PadVjp(GraphBuilder& b, int32_t g, const Op& op, const Dims& x_shape) {
  const OpAttrs& at = op.attrs;
  size_t r = x_shape.size();
  Dims lo(r), hi(r), starts(r), limits(r), strides(r);
  bool crop = false, slice = false;
  for (size_t i = 0; i < r; ++i) {
    lo[i] = std::max<int64_t>(-at.padding_lo[i], 0);
    hi[i] = std::max<int64_t>(-at.padding_hi[i], 0);
    crop = crop || lo[i] > 0 || hi[i] > 0;
    starts[i] = std::max<int64_t>(at.padding_lo[i], 0);
    limits[i] = starts[i] + DilatedSize(x_shape[i], at.padding_interior[i] + 1);
    strides[i] = at.padding_interior[i] + 1;
  }
  int32_t full = crop ? b.Pad(g, 0.0, lo, hi) : g;
  for (size_t i = 0; i < r; ++i) {
    slice = slice || starts[i] != 0 || limits[i] != b.shape(full)[i] || strides[i] != 1;
  }
  return slice ? b.Slice(full, starts, limits, strides) : full;
}

// Equal shares among the positions that attain the max (the count is at least 1 wherever the
// reduced slice is non-empty): a valid subgradient that sums to g, as JAX does.
int32_t ReduceMaxVjp(GraphBuilder& b, int32_t g, int32_t x, int32_t y, const Dims& dims) {
  const Dims x_shape = b.shape(x);  // a copy: adding ops reallocates the op vector
  Dims kept;
  for (int64_t d = 0; d < static_cast<int64_t>(x_shape.size()); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(d);
  }
  int32_t yb = b.BroadcastInDim(y, x_shape, kept);
  int32_t is_max =
      b.Select(b.Compare(Comparison::kEq, x, yb), b.ScalarLike(1.0, x), b.ScalarLike(0.0, x));
  int32_t count = b.BroadcastInDim(b.ReduceSum(is_max, dims), x_shape, kept);
  int32_t gb = b.BroadcastInDim(g, x_shape, kept);
  return b.Div(b.Mul(gb, is_max), count);
}

Status Dispatch(const VjpArgs& a, Cotangents& out) {
  GraphBuilder& b = *a.b;
  const Op& op = a.op;
  int32_t g = a.g;
  auto x_shape = [&](size_t i) { return b.shape(op.operands[i]); };
  OpKind k = op.kind;
  if (IsElementwiseUnary(k)) {
    Unary(a, out);
    return Status::Ok();
  }
  if (IsElementwiseBinary(k)) {
    Binary(a, out);
    return Status::Ok();
  }
  switch (k) {
    case OpKind::kParameter:
    case OpKind::kConstant:
    case OpKind::kIota:
      return Status::Ok();
    case OpKind::kSelect: {
      int32_t zero = Zeros(b, g);
      if (a.needed[1]) out[1] = b.Select(op.operands[0], g, zero);
      if (a.needed[2]) out[2] = b.Select(op.operands[0], zero, g);
      return Status::Ok();
    }
    case OpKind::kDotGeneral:
      return VjpDotGeneral(a, out);
    case OpKind::kConvolution:
      return VjpConvolution(a, out);
    case OpKind::kBroadcastInDim:
      out[0] = UnBroadcast(b, g, x_shape(0), op.attrs.dims);
      return Status::Ok();
    case OpKind::kReshape:
      out[0] = b.Reshape(g, x_shape(0));
      return Status::Ok();
    case OpKind::kTranspose: {
      Dims inverse(op.attrs.dims.size());
      for (size_t i = 0; i < inverse.size(); ++i) {
        inverse[static_cast<size_t>(op.attrs.dims[i])] = static_cast<int64_t>(i);
      }
      out[0] = b.Transpose(g, inverse);
      return Status::Ok();
    }
    case OpKind::kSlice:
      out[0] = SliceVjp(b, g, op, x_shape(0));
      return Status::Ok();
    case OpKind::kConcatenate: {
      size_t axis = static_cast<size_t>(op.attrs.axis);
      int64_t offset = 0;
      for (size_t i = 0; i < op.operands.size(); ++i) {
        Dims shape = x_shape(i);
        Dims starts(shape.size(), 0), limits = b.shape(g);
        starts[axis] = offset;
        limits[axis] = offset + shape[axis];
        offset += shape[axis];
        if (a.needed[i]) out[i] = b.Slice(g, starts, limits);
      }
      return Status::Ok();
    }
    case OpKind::kPad:
      out[0] = PadVjp(b, g, op, x_shape(0));
      return Status::Ok();
    case OpKind::kReverse:
      out[0] = op.attrs.dims.empty() ? g : b.Reverse(g, op.attrs.dims);
      return Status::Ok();
    case OpKind::kReduceSum: {
      Dims kept;
      for (int64_t d = 0; d < static_cast<int64_t>(x_shape(0).size()); ++d) {
        const Dims& r = op.attrs.dims;
        if (std::find(r.begin(), r.end(), d) == r.end()) kept.push_back(d);
      }
      out[0] = b.BroadcastInDim(g, x_shape(0), kept);
      return Status::Ok();
    }
    case OpKind::kReduceMax:
      out[0] = ReduceMaxVjp(b, g, op.operands[0], a.id, op.attrs.dims);
      return Status::Ok();
    case OpKind::kReduceWindow:
      return VjpReduceWindow(a, out);
    case OpKind::kSelectAndScatter:
      return VjpSelectAndScatter(a, out);
    case OpKind::kGather:
      // Repeated indices accumulate, which scatter_add does.
      out[0] =
          b.ScatterAdd(b.Constant(0.0, x_shape(0), op.dtype), op.operands[1], g, op.attrs.axis);
      return Status::Ok();
    case OpKind::kScatterAdd:
      if (a.needed[0]) out[0] = g;
      if (a.needed[2]) out[2] = b.Gather(g, op.operands[1], op.attrs.axis);
      return Status::Ok();
    default:
      break;
  }
  return Status(StatusCode::kUnsupported,
                "autodiff: no VJP rule for " + DescribeOp(b.graph(), a.id));
}

}  // namespace
}  // namespace vjp

Result<std::vector<int32_t>> AppendVjp(GraphBuilder& builder, int32_t id, int32_t grad,
                                       const std::vector<bool>& needed) {
  if (!builder.ok()) return builder.status();
  const Graph& graph = builder.graph();
  if (id < 0 || id >= graph.size()) {
    return InvalidArgument("AppendVjp: op " + std::to_string(id) + " does not exist");
  }
  if (grad < 0 || grad >= graph.size()) {
    return InvalidArgument("AppendVjp: cotangent op " + std::to_string(grad) +
                           " does not exist (differentiating " + DescribeOp(graph, id) + ")");
  }
  const Op& op = graph.op(id);
  if (graph.op(grad).shape != op.shape || graph.op(grad).dtype != op.dtype) {
    return InvalidArgument("AppendVjp: cotangent " + DescribeOp(graph, grad) + " has type " +
                           DTypeName(graph.op(grad).dtype) + ShapeString(graph.op(grad).shape) +
                           ", " + DescribeOp(graph, id) + " has " + DTypeName(op.dtype) +
                           ShapeString(op.shape));
  }
  if (needed.size() != op.operands.size()) {
    return InvalidArgument("AppendVjp: " + std::to_string(needed.size()) +
                           " needed flags for the " + std::to_string(op.operands.size()) +
                           " operands of " + DescribeOp(graph, id));
  }
  vjp::VjpArgs args;
  args.b = &builder;
  args.id = id;
  args.op = op;
  args.g = grad;
  args.needed = needed;
  // Operands that carry no real-valued gradient (indices, predicates, integers) are skipped.
  for (size_t i = 0; i < op.operands.size(); ++i) {
    if (!IsFloating(graph.op(op.operands[i]).dtype)) args.needed[i] = false;
  }
  std::vector<int32_t> out(op.operands.size(), -1);
  if (!IsFloating(op.dtype)) return out;
  ALPA_RETURN_IF_ERROR(vjp::Dispatch(args, out));
  if (!builder.ok()) return builder.status();
  for (size_t i = 0; i < out.size(); ++i) {
    if (!args.needed[i]) out[i] = -1;
  }
  return out;
}

Result<std::vector<int32_t>> AppendVjp(GraphBuilder& builder, int32_t id, int32_t grad) {
  if (!builder.ok()) return builder.status();
  if (id < 0 || id >= builder.graph().size()) {
    return InvalidArgument("AppendVjp: op " + std::to_string(id) + " does not exist");
  }
  std::vector<bool> all(builder.op(id).operands.size(), true);
  return AppendVjp(builder, id, grad, all);
}

}  // namespace alpa
