#include "core/ir/graph.h"

#include <array>
#include <limits>
#include <utility>

namespace alpa {
namespace {

struct KindName {
  OpKind kind;
  const char* name;
};

constexpr KindName kKindNames[] = {
    {OpKind::kParameter, "parameter"},
    {OpKind::kConstant, "constant"},
    {OpKind::kIota, "iota"},
    {OpKind::kNeg, "neg"},
    {OpKind::kAbs, "abs"},
    {OpKind::kExp, "exp"},
    {OpKind::kLog, "log"},
    {OpKind::kTanh, "tanh"},
    {OpKind::kSqrt, "sqrt"},
    {OpKind::kRsqrt, "rsqrt"},
    {OpKind::kGelu, "gelu"},
    {OpKind::kRelu, "relu"},
    {OpKind::kConvert, "convert"},
    {OpKind::kAdd, "add"},
    {OpKind::kSub, "sub"},
    {OpKind::kMul, "mul"},
    {OpKind::kDiv, "div"},
    {OpKind::kMax, "max"},
    {OpKind::kMin, "min"},
    {OpKind::kPow, "pow"},
    {OpKind::kCompare, "compare"},
    {OpKind::kSelect, "select"},
    {OpKind::kDotGeneral, "dot_general"},
    {OpKind::kConvolution, "convolution"},
    {OpKind::kBroadcastInDim, "broadcast_in_dim"},
    {OpKind::kReshape, "reshape"},
    {OpKind::kTranspose, "transpose"},
    {OpKind::kSlice, "slice"},
    {OpKind::kConcatenate, "concatenate"},
    {OpKind::kPad, "pad"},
    {OpKind::kReverse, "reverse"},
    {OpKind::kReduceSum, "reduce_sum"},
    {OpKind::kReduceMax, "reduce_max"},
    {OpKind::kReduceWindow, "reduce_window"},
    {OpKind::kSelectAndScatter, "select_and_scatter"},
    {OpKind::kGather, "gather"},
    {OpKind::kScatterAdd, "scatter_add"},
};

template <typename Enum, size_t N>
Result<Enum> ParseName(const std::string& name, const std::array<const char*, N>& names,
                       const char* what) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<Enum>(i);
  }
  std::string expected;
  for (size_t i = 0; i < N; ++i) expected += (i ? ", " : "") + std::string(names[i]);
  return InvalidArgument(std::string("unknown ") + what + " \"" + name + "\" (expected " +
                         expected + ")");
}

constexpr std::array<const char*, 6> kComparisonNames = {"eq", "ne", "lt", "le", "gt", "ge"};
constexpr std::array<const char*, 5> kRoleNames = {"activation", "parameter", "gradient",
                                                   "optimizer_state", "input"};
constexpr std::array<const char*, 3> kPhaseNames = {"forward", "backward", "update"};

}  // namespace

const char* OpKindName(OpKind kind) {
  for (const KindName& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

Result<OpKind> ParseOpKind(const std::string& name) {
  for (const KindName& k : kKindNames) {
    if (name == k.name) return k.kind;
  }
  return InvalidArgument("unknown op kind \"" + name + "\"");
}

bool IsValidOpKind(int32_t value) {
  for (const KindName& k : kKindNames) {
    if (static_cast<int32_t>(k.kind) == value) return true;
  }
  return false;
}

const std::vector<OpKind>& AllOpKinds() {
  static const std::vector<OpKind> kinds = [] {
    std::vector<OpKind> v;
    for (const KindName& k : kKindNames) v.push_back(k.kind);
    return v;
  }();
  return kinds;
}

bool IsElementwiseUnary(OpKind kind) {
  int32_t v = static_cast<int32_t>(kind);
  return v >= static_cast<int32_t>(OpKind::kNeg) && v <= static_cast<int32_t>(OpKind::kConvert);
}

bool IsElementwiseBinary(OpKind kind) {
  int32_t v = static_cast<int32_t>(kind);
  return v >= static_cast<int32_t>(OpKind::kAdd) && v <= static_cast<int32_t>(OpKind::kCompare);
}

bool IsElementwise(OpKind kind) {
  return IsElementwiseUnary(kind) || IsElementwiseBinary(kind) || kind == OpKind::kSelect;
}

const char* ComparisonName(Comparison c) {
  size_t i = static_cast<size_t>(c);
  return i < kComparisonNames.size() ? kComparisonNames[i] : "unknown";
}
Result<Comparison> ParseComparison(const std::string& name) {
  return ParseName<Comparison>(name, kComparisonNames, "comparison");
}
const char* TensorRoleName(TensorRole role) {
  size_t i = static_cast<size_t>(role);
  return i < kRoleNames.size() ? kRoleNames[i] : "unknown";
}
Result<TensorRole> ParseTensorRole(const std::string& name) {
  return ParseName<TensorRole>(name, kRoleNames, "tensor role");
}
const char* PhaseName(Phase phase) {
  size_t i = static_cast<size_t>(phase);
  return i < kPhaseNames.size() ? kPhaseNames[i] : "unknown";
}
Result<Phase> ParsePhase(const std::string& name) {
  return ParseName<Phase>(name, kPhaseNames, "phase");
}

bool OpAttrs::operator==(const OpAttrs& o) const {
  // Bitwise equality of `value` keeps NaN splats comparable for round-trip checks.
  bool same_value = value == o.value || (value != value && o.value != o.value);
  return dims == o.dims && axis == o.axis && same_value && comparison == o.comparison &&
         reduce == o.reduce && dot == o.dot && starts == o.starts && limits == o.limits &&
         strides == o.strides && padding_lo == o.padding_lo && padding_hi == o.padding_hi &&
         padding_interior == o.padding_interior && lhs_dilation == o.lhs_dilation &&
         rhs_dilation == o.rhs_dilation && feature_group_count == o.feature_group_count &&
         window == o.window;
}

bool Op::operator==(const Op& o) const {
  return kind == o.kind && operands == o.operands && attrs == o.attrs && shape == o.shape &&
         dtype == o.dtype && role == o.role && phase == o.phase && layer == o.layer &&
         alias_of == o.alias_of && stop_gradient == o.stop_gradient && name == o.name &&
         source == o.source;
}

Result<int64_t> ElementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d < 0) {
      return InvalidGraph("dim " + std::to_string(i) + " of shape " + ShapeString(shape) +
                          " is negative");
    }
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d) {
      return InvalidGraph("shape " + ShapeString(shape) + " has more than 2^63 elements");
    }
    count *= d;
  }
  return count;
}

int64_t TensorBytes(const Op& op) {
  Result<int64_t> n = ElementCount(op.shape);
  return n.ok() ? n.value() * DTypeBytes(op.dtype) : 0;
}

Status AddOpBytes(const Op& op, int32_t id, int64_t* total) {
  const int64_t bytes = TensorBytes(op);
  if (__builtin_add_overflow(*total, bytes, total)) {
    std::string name = "op " + std::to_string(id);
    if (!op.name.empty()) name += " '" + op.name + "'";
    return InvalidGraph(name + " (" + OpKindName(op.kind) + ") " + DTypeName(op.dtype) +
                        ShapeString(op.shape) +
                        ": the graph's tensors would total more than 2^63 - 1 bytes (8 EiB)");
  }
  return Status::Ok();
}

std::vector<std::vector<int32_t>> OpUsers(const Graph& graph) {
  std::vector<std::vector<int32_t>> users(static_cast<size_t>(graph.size()));
  for (int32_t id = 0; id < graph.size(); ++id) {
    for (int32_t x : graph.op(id).operands) {
      if (x >= 0 && x < graph.size()) users[static_cast<size_t>(x)].push_back(id);
    }
  }
  return users;
}

std::string DescribeOp(const Graph& graph, int32_t id) {
  std::string s = "op " + std::to_string(id);
  if (id >= 0 && id < graph.size()) {
    const Op& op = graph.op(id);
    if (!op.name.empty()) s += " '" + op.name + "'";
    s += std::string(" (") + OpKindName(op.kind) + ")";
  }
  return s;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace alpa
