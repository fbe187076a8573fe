// Sources (constant, iota) and elementwise ops. Values are computed in double; the caller rounds
// them to the op's dtype (which is how convert truncates and wraps).
#include <cmath>
#include <limits>

#include "exec/cpu/eval.h"

namespace alpa {
namespace cpu {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Gelu(double x) {
  // The tanh approximation, as documented in core/ir/graph.h.
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double ApplyUnary(OpKind kind, double x) {
  switch (kind) {
    case OpKind::kNeg:
      return -x;
    case OpKind::kAbs:
      return std::fabs(x);
    case OpKind::kExp:
      return std::exp(x);
    case OpKind::kLog:
      return std::log(x);
    case OpKind::kTanh:
      return std::tanh(x);
    case OpKind::kSqrt:
      return std::sqrt(x);
    case OpKind::kRsqrt:
      return 1.0 / std::sqrt(x);
    case OpKind::kGelu:
      return Gelu(x);
    case OpKind::kRelu:
      return std::isnan(x) ? x : (x > 0.0 ? x : 0.0);  // max(x, 0) propagates NaN
    case OpKind::kConvert:
      return x;  // the rounding to the target dtype does the conversion
    default:
      return kNaN;
  }
}

bool ApplyCompare(Comparison c, double x, double y) {
  switch (c) {
    case Comparison::kEq:
      return x == y;
    case Comparison::kNe:
      return x != y;
    case Comparison::kLt:
      return x < y;
    case Comparison::kLe:
      return x <= y;
    case Comparison::kGt:
      return x > y;
    case Comparison::kGe:
      return x >= y;
  }
  return false;
}

// Integer division truncates toward zero (C semantics); the quotient is formed in double and
// truncated by the rounding to the integer dtype. Division by zero gives +-inf / NaN, which that
// rounding saturates / maps to 0.
double ApplyBinary(const Op& op, double x, double y) {
  switch (op.kind) {
    case OpKind::kAdd:
      return x + y;
    case OpKind::kSub:
      return x - y;
    case OpKind::kMul:
      return x * y;
    case OpKind::kDiv:
      return x / y;
    case OpKind::kMax:
      return std::isnan(x) || std::isnan(y) ? kNaN : (x > y ? x : y);
    case OpKind::kMin:
      return std::isnan(x) || std::isnan(y) ? kNaN : (x < y ? x : y);
    case OpKind::kPow:
      return std::pow(x, y);
    case OpKind::kCompare:
      return ApplyCompare(op.attrs.comparison, x, y) ? 1.0 : 0.0;
    default:
      return kNaN;
  }
}

}  // namespace

void EvalConstant(const Op& op, HostTensor& out) {
  for (double& v : out.data) v = op.attrs.value;
}

void EvalIota(const Op& op, HostTensor& out) {
  const Dims strides = RowMajorStrides(out.shape);
  const size_t axis = static_cast<size_t>(op.attrs.axis);
  const int64_t stride = strides[axis], size = out.shape[axis];
  for (int64_t i = 0; i < out.size(); ++i) {
    out.data[static_cast<size_t>(i)] = static_cast<double>((i / stride) % size);
  }
}

void EvalUnary(const Op& op, const Operands& in, HostTensor& out) {
  const std::vector<double>& x = in[0]->data;
  for (size_t i = 0; i < x.size(); ++i) out.data[i] = ApplyUnary(op.kind, x[i]);
}

void EvalBinary(const Op& op, const Operands& in, HostTensor& out) {
  const std::vector<double>& x = in[0]->data;
  const std::vector<double>& y = in[1]->data;
  switch (op.kind) {  // the common kinds get their own loops
    case OpKind::kAdd:
      for (size_t i = 0; i < x.size(); ++i) out.data[i] = x[i] + y[i];
      return;
    case OpKind::kSub:
      for (size_t i = 0; i < x.size(); ++i) out.data[i] = x[i] - y[i];
      return;
    case OpKind::kMul:
      for (size_t i = 0; i < x.size(); ++i) out.data[i] = x[i] * y[i];
      return;
    default:
      for (size_t i = 0; i < x.size(); ++i) out.data[i] = ApplyBinary(op, x[i], y[i]);
  }
}

void EvalSelect(const Operands& in, HostTensor& out) {
  const std::vector<double>& p = in[0]->data;
  const std::vector<double>& x = in[1]->data;
  const std::vector<double>& y = in[2]->data;
  for (size_t i = 0; i < p.size(); ++i) out.data[i] = p[i] != 0.0 ? x[i] : y[i];
}

}  // namespace cpu
}  // namespace alpa
