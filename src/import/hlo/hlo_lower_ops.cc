// One lowering per HLO opcode family (hlo_lowering.h). Opcodes the IR has no op for are
// composed from IR ops where the composition is exact in real arithmetic (logistic,
// exponential-minus-one, log-plus-one, clamp, and / or on pred, reduce with minimum); the rest
// are errors naming the instruction.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <utility>

#include "import/hlo/hlo_attributes.h"
#include "import/hlo/hlo_lexer.h"
#include "import/hlo/hlo_lowering.h"

namespace alpa {
namespace {

// The most elements of a non-splat array constant: each becomes a concatenated piece.
constexpr int64_t kMaxArrayConstantElements = 1024;

HloValue Array(int32_t id) {
  HloValue value;
  value.id = id;
  return value;
}

std::string ShapeText(DType dtype, const Dims& dims) {
  return DTypeName(dtype) + ShapeString(dims);
}

// The builder's first error, as an error of this instruction.
Status BuilderError(const HloLowering& lowering, const HloInstruction& instruction) {
  return InstructionError(instruction, lowering.builder.status().message(),
                          lowering.builder.status().code());
}

Result<const HloAttribute*> RequiredAttribute(const HloInstruction& instruction,
                                              const std::string& name) {
  const HloAttribute* attribute = instruction.FindAttribute(name);
  if (attribute == nullptr) {
    return InstructionError(instruction, "lacks the attribute " + name, StatusCode::kParse);
  }
  return attribute;
}

// An attribute's integer list ({} when absent and `optional`).
Result<Dims> IntListAttribute(const HloInstruction& instruction, const std::string& name,
                              bool optional = false) {
  const HloAttribute* attribute = instruction.FindAttribute(name);
  if (attribute == nullptr) {
    if (optional) return Dims{};
    return InstructionError(instruction, "lacks the attribute " + name, StatusCode::kParse);
  }
  Result<std::vector<int64_t>> values = ParseIntList(attribute->value);
  if (!values.ok()) {
    return InstructionError(instruction, name + ": " + values.status().message(),
                            StatusCode::kParse);
  }
  return values.value();
}

Status ExpectOperands(const HloInstruction& instruction, const std::vector<HloValue>& operands,
                      size_t count) {
  if (operands.size() != count) {
    return InstructionError(
        instruction,
        "expected " + std::to_string(count) + " operands, found " + std::to_string(operands.size()),
        StatusCode::kParse);
  }
  for (const HloValue& operand : operands) {
    if (operand.is_tuple) return InstructionError(instruction, "a tuple operand is not supported");
  }
  return Status::Ok();
}

// The known value of a splat op, if any.
std::optional<double> KnownSplat(const HloLowering& lowering, int32_t id) {
  auto it = lowering.known_splats.find(id);
  if (it == lowering.known_splats.end()) return std::nullopt;
  return it->second;
}

Result<double> RequireKnown(const HloLowering& lowering, const HloInstruction& instruction,
                            int32_t id, const std::string& what) {
  std::optional<double> value = KnownSplat(lowering, id);
  if (!value) {
    return InstructionError(instruction, what +
                                             " must be a constant (the IR has no op for a "
                                             "value known only at run time here)");
  }
  return *value;
}

// The value of a literal element ("1", "-inf", "nan", "true", "0.5").
Result<double> LiteralNumber(const HloInstruction& instruction, const std::string& token) {
  if (token == "true") return 1.0;
  if (token == "false") return 0.0;
  if (token == "inf") return std::numeric_limits<double>::infinity();
  if (token == "-inf") return -std::numeric_limits<double>::infinity();
  if (token == "nan" || token == "-nan") return std::numeric_limits<double>::quiet_NaN();
  const char* begin = token.c_str();
  char* end = nullptr;
  double value = std::strtod(begin, &end);
  if (token.empty() || end != begin + token.size()) {
    return InstructionError(instruction, "cannot read the literal element \"" + token + "\"",
                            StatusCode::kParse);
  }
  return value;
}

Result<HloValue> LowerConstant(HloLowering& lowering, const HloInstruction& instruction,
                               DType dtype) {
  std::vector<double> elements;
  std::string token;
  auto flush = [&]() -> Status {
    if (token.empty()) return Status::Ok();
    Result<double> value = LiteralNumber(instruction, token);
    if (!value.ok()) return value.status();
    elements.push_back(value.value());
    token.clear();
    return Status::Ok();
  };
  for (char c : instruction.literal) {
    if (c == '{' || c == '}' || c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      ALPA_RETURN_IF_ERROR(flush());
    } else {
      token += c;
    }
  }
  ALPA_RETURN_IF_ERROR(flush());
  const Dims& dims = instruction.shape.dims;
  Result<int64_t> count = ElementCount(dims);
  if (!count.ok()) return InstructionError(instruction, count.status().message());
  if (static_cast<int64_t>(elements.size()) != count.value()) {
    return InstructionError(instruction,
                            "the literal holds " + std::to_string(elements.size()) +
                                " elements, the shape " + std::to_string(count.value()),
                            StatusCode::kParse);
  }
  GraphBuilder& b = lowering.builder;
  bool splat = std::all_of(elements.begin(), elements.end(), [&](double v) {
    return v == elements[0] || (std::isnan(v) && std::isnan(elements[0]));
  });
  if (elements.empty() || splat) {
    int32_t id = b.Constant(elements.empty() ? 0.0 : elements[0], dims, dtype);
    if (!elements.empty() && b.ok()) lowering.known_splats[id] = elements[0];
    return Array(id);
  }
  // The IR's constants are splats: an array literal is its elements concatenated.
  if (count.value() > kMaxArrayConstantElements) {
    return InstructionError(instruction, "an array constant of " + std::to_string(count.value()) +
                                             " distinct elements; the importer takes at most " +
                                             std::to_string(kMaxArrayConstantElements) +
                                             " (the IR's constants are splats)");
  }
  std::vector<int32_t> pieces;
  for (double v : elements) pieces.push_back(b.Constant(v, {1}, dtype));
  int32_t flat = b.Concatenate(pieces, 0);
  return Array(b.Reshape(flat, dims));
}

// Broadcasts a scalar operand to `like`'s shape (clamp and select take scalars).
int32_t BroadcastScalarTo(GraphBuilder& b, int32_t x, int32_t like) {
  if (b.shape(x) == b.shape(like) || !b.shape(x).empty()) return x;
  return b.BroadcastInDim(x, b.shape(like), {});
}

std::optional<OpKind> UnaryKind(const std::string& opcode) {
  if (opcode == "negate") return OpKind::kNeg;
  if (opcode == "abs") return OpKind::kAbs;
  if (opcode == "exponential") return OpKind::kExp;
  if (opcode == "log") return OpKind::kLog;
  if (opcode == "tanh") return OpKind::kTanh;
  if (opcode == "sqrt") return OpKind::kSqrt;
  if (opcode == "rsqrt") return OpKind::kRsqrt;
  return std::nullopt;
}

std::optional<OpKind> BinaryKind(const std::string& opcode) {
  if (opcode == "add") return OpKind::kAdd;
  if (opcode == "subtract") return OpKind::kSub;
  if (opcode == "multiply") return OpKind::kMul;
  if (opcode == "divide") return OpKind::kDiv;
  if (opcode == "maximum") return OpKind::kMax;
  if (opcode == "minimum") return OpKind::kMin;
  if (opcode == "power") return OpKind::kPow;
  return std::nullopt;
}

// Elementwise opcodes the IR lacks, written with its ops.
Result<int32_t> LowerComposedElementwise(GraphBuilder& b, const HloInstruction& instruction,
                                         const std::vector<HloValue>& operands, bool* handled) {
  *handled = true;
  const std::string& opcode = instruction.opcode;
  if (opcode == "logistic") {
    int32_t x = operands[0].id;
    int32_t one = b.ScalarLike(1.0, x);
    return b.Div(one, b.Add(one, b.Unary(OpKind::kExp, b.Unary(OpKind::kNeg, x))));
  }
  if (opcode == "exponential-minus-one") {
    int32_t x = operands[0].id;
    return b.Sub(b.Unary(OpKind::kExp, x), b.ScalarLike(1.0, x));
  }
  if (opcode == "log-plus-one") {
    int32_t x = operands[0].id;
    return b.Unary(OpKind::kLog, b.Add(x, b.ScalarLike(1.0, x)));
  }
  if (opcode == "clamp") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 3));
    int32_t x = operands[1].id;
    int32_t lo = BroadcastScalarTo(b, operands[0].id, x);
    int32_t hi = BroadcastScalarTo(b, operands[2].id, x);
    return b.Binary(OpKind::kMin, b.Binary(OpKind::kMax, x, lo), hi);
  }
  if ((opcode == "and" || opcode == "or") && b.dtype(operands[0].id) == DType::kPred) {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
    int32_t x = operands[0].id;
    int32_t y = operands[1].id;
    // On pred: x and y = select(x, y, false); x or y = select(x, true, y).
    return opcode == "and" ? b.Select(x, y, b.ScalarLike(0.0, x))
                           : b.Select(x, b.ScalarLike(1.0, x), y);
  }
  if (opcode == "not" && b.dtype(operands[0].id) == DType::kPred) {
    int32_t x = operands[0].id;
    return b.Select(x, b.ScalarLike(0.0, x), b.ScalarLike(1.0, x));
  }
  *handled = false;
  return -1;
}

Result<Comparison> ComparisonOf(const HloInstruction& instruction) {
  Result<const HloAttribute*> direction = RequiredAttribute(instruction, "direction");
  if (!direction.ok()) return direction.status();
  const std::string& d = direction.value()->value;
  if (d == "EQ") return Comparison::kEq;
  if (d == "NE") return Comparison::kNe;
  if (d == "LT") return Comparison::kLt;
  if (d == "LE") return Comparison::kLe;
  if (d == "GT") return Comparison::kGt;
  if (d == "GE") return Comparison::kGe;
  return InstructionError(instruction, "unknown comparison direction \"" + d + "\"",
                          StatusCode::kParse);
}

// What a two-parameter reducer computation computes: "add", "maximum", "minimum", ... ("" if
// it is not one binary op of its two parameters).
std::string ReducerOpcode(const HloLowering& lowering, const HloInstruction& instruction,
                          const std::string& attribute) {
  const HloAttribute* to_apply = instruction.FindAttribute(attribute);
  if (to_apply == nullptr) return "";
  const HloComputation* reducer = lowering.module->FindComputation(to_apply->value);
  if (reducer == nullptr) return "";
  const HloInstruction& root = reducer->root();
  if (root.operands.size() != 2) return "";
  for (const std::string& operand : root.operands) {
    bool is_parameter = false;
    for (const HloInstruction& i : reducer->instructions) {
      if (i.name == operand && i.opcode == "parameter") is_parameter = true;
    }
    if (!is_parameter) return "";
  }
  if (root.opcode == "compare") {
    const HloAttribute* direction = root.FindAttribute("direction");
    return direction == nullptr ? "" : "compare-" + direction->value;
  }
  return root.opcode;
}

Result<HloValue> LowerReduce(HloLowering& lowering, const HloInstruction& instruction,
                             const std::vector<HloValue>& operands) {
  if (operands.size() != 2) {
    return InstructionError(instruction, "a reduce of " + std::to_string(operands.size() / 2) +
                                             " arrays at once (e.g. argmax) is not supported");
  }
  ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
  Result<Dims> dims = IntListAttribute(instruction, "dimensions");
  if (!dims.ok()) return dims.status();
  GraphBuilder& b = lowering.builder;
  const std::string reducer = ReducerOpcode(lowering, instruction, "to_apply");
  int32_t x = operands[0].id;
  int32_t init = operands[1].id;
  std::optional<double> init_value = KnownSplat(lowering, init);
  int32_t result = -1;
  if (reducer == "add") {
    result = b.ReduceSum(x, dims.value());
    if (init_value == 0.0) return Array(result);
    return Array(b.Add(result, b.BroadcastInDim(init, b.shape(result), {})));
  }
  if (reducer == "maximum") {
    result = b.ReduceMax(x, dims.value());
    if (init_value && std::isinf(*init_value) && *init_value < 0) return Array(result);
    return Array(b.Binary(OpKind::kMax, result, b.BroadcastInDim(init, b.shape(result), {})));
  }
  if (reducer == "minimum") {
    // min(x) = -max(-x).
    result = b.Unary(OpKind::kNeg, b.ReduceMax(b.Unary(OpKind::kNeg, x), dims.value()));
    if (init_value && std::isinf(*init_value) && *init_value > 0) return Array(result);
    return Array(b.Binary(OpKind::kMin, result, b.BroadcastInDim(init, b.shape(result), {})));
  }
  return InstructionError(instruction,
                          "a reduce whose to_apply computes \"" +
                              (reducer.empty() ? std::string("something else") : reducer) +
                              "\"; the importer takes add, maximum and minimum");
}

Result<std::vector<HloWindowDim>> WindowOf(const HloInstruction& instruction, size_t rank) {
  Result<const HloAttribute*> window = RequiredAttribute(instruction, "window");
  if (!window.ok()) return window.status();
  Result<std::vector<HloWindowDim>> dims = ParseWindow(window.value()->value);
  if (!dims.ok()) {
    return InstructionError(instruction, dims.status().message(), StatusCode::kParse);
  }
  if (dims.value().size() != rank) {
    return InstructionError(instruction,
                            "the window has " + std::to_string(dims.value().size()) +
                                " dims, the operand " + std::to_string(rank),
                            StatusCode::kParse);
  }
  return dims;
}

struct WindowAttrs {
  Dims size, strides, lo, hi;
};

Result<WindowAttrs> PlainWindow(const HloInstruction& instruction,
                                const std::vector<HloWindowDim>& window) {
  WindowAttrs attrs;
  for (const HloWindowDim& d : window) {
    if (d.lhs_dilation != 1 || d.rhs_dilation != 1 || d.reversal) {
      return InstructionError(instruction, "a dilated or reversed window is not supported here");
    }
    attrs.size.push_back(d.size);
    attrs.strides.push_back(d.stride);
    attrs.lo.push_back(d.pad_lo);
    attrs.hi.push_back(d.pad_hi);
  }
  return attrs;
}

Result<HloValue> LowerReduceWindow(HloLowering& lowering, const HloInstruction& instruction,
                                   const std::vector<HloValue>& operands) {
  ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
  GraphBuilder& b = lowering.builder;
  int32_t x = operands[0].id;
  Result<std::vector<HloWindowDim>> window = WindowOf(instruction, static_cast<size_t>(b.rank(x)));
  if (!window.ok()) return window.status();
  Result<WindowAttrs> attrs = PlainWindow(instruction, window.value());
  if (!attrs.ok()) return attrs.status();
  const std::string reducer = ReducerOpcode(lowering, instruction, "to_apply");
  std::optional<double> init = KnownSplat(lowering, operands[1].id);
  ReduceKind kind;
  if (reducer == "add" && init == 0.0) {
    kind = ReduceKind::kSum;
  } else if (reducer == "maximum" && init && std::isinf(*init) && *init < 0) {
    kind = ReduceKind::kMax;
  } else {
    return InstructionError(instruction,
                            "a reduce-window must sum from 0 or take the maximum "
                            "from -inf (found to_apply \"" +
                                reducer + "\")");
  }
  const WindowAttrs& w = attrs.value();
  return Array(b.ReduceWindow(kind, x, w.size, w.strides, w.lo, w.hi));
}

Result<HloValue> LowerSelectAndScatter(HloLowering& lowering, const HloInstruction& instruction,
                                       const std::vector<HloValue>& operands) {
  ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 3));
  GraphBuilder& b = lowering.builder;
  int32_t x = operands[0].id;
  Result<std::vector<HloWindowDim>> window = WindowOf(instruction, static_cast<size_t>(b.rank(x)));
  if (!window.ok()) return window.status();
  Result<WindowAttrs> attrs = PlainWindow(instruction, window.value());
  if (!attrs.ok()) return attrs.status();
  const std::string select = ReducerOpcode(lowering, instruction, "select");
  const std::string scatter = ReducerOpcode(lowering, instruction, "scatter");
  if (select != "compare-GE" || scatter != "add" || KnownSplat(lowering, operands[2].id) != 0.0) {
    return InstructionError(instruction,
                            "a select-and-scatter must select with GE (the "
                            "gradient of a max pool) and scatter with add from 0");
  }
  const WindowAttrs& w = attrs.value();
  return Array(b.SelectAndScatter(x, operands[1].id, w.size, w.strides, w.lo, w.hi));
}

Result<HloValue> LowerConvolution(HloLowering& lowering, const HloInstruction& instruction,
                                  const std::vector<HloValue>& operands) {
  ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
  GraphBuilder& b = lowering.builder;
  Result<const HloAttribute*> labels_text = RequiredAttribute(instruction, "dim_labels");
  if (!labels_text.ok()) return labels_text.status();
  Result<HloConvLabels> labels = ParseConvLabels(labels_text.value()->value);
  if (!labels.ok()) {
    return InstructionError(instruction, labels.status().message(), StatusCode::kParse);
  }
  const HloConvLabels& l = labels.value();
  const size_t spatial = l.input_spatial.size();
  if (static_cast<size_t>(b.rank(operands[0].id)) != spatial + 2 ||
      static_cast<size_t>(b.rank(operands[1].id)) != spatial + 2) {
    return InstructionError(instruction, "dim_labels do not match the operands' ranks",
                            StatusCode::kParse);
  }
  if (const HloAttribute* groups = instruction.FindAttribute("batch_group_count");
      groups != nullptr && groups->value != "1") {
    return InstructionError(instruction,
                            "batch_group_count " + groups->value + " is not supported (only 1)");
  }
  int64_t feature_groups = 1;
  if (const HloAttribute* groups = instruction.FindAttribute("feature_group_count")) {
    Result<Dims> value = ParseIntList(groups->value);
    if (!value.ok() || value.value().size() != 1) {
      return InstructionError(instruction, "feature_group_count is not an integer",
                              StatusCode::kParse);
    }
    feature_groups = value.value()[0];
  }
  std::vector<HloWindowDim> window(spatial);
  if (instruction.FindAttribute("window") != nullptr) {
    Result<std::vector<HloWindowDim>> parsed = WindowOf(instruction, spatial);
    if (!parsed.ok()) return parsed.status();
    window = parsed.value();
  }
  // The IR's convolution is [N, C, S...] x [O, I, K...] -> [N, O, T...]: transpose into it.
  Dims input_order = {l.input_batch, l.input_feature};
  Dims kernel_order = {l.kernel_output, l.kernel_input};
  input_order.insert(input_order.end(), l.input_spatial.begin(), l.input_spatial.end());
  kernel_order.insert(kernel_order.end(), l.kernel_spatial.begin(), l.kernel_spatial.end());
  int32_t x = operands[0].id;
  int32_t k = operands[1].id;
  Dims identity(spatial + 2);
  std::iota(identity.begin(), identity.end(), 0);
  if (input_order != identity) x = b.Transpose(x, input_order);
  if (kernel_order != identity) k = b.Transpose(k, kernel_order);
  for (size_t i = 0; i < spatial; ++i) {
    if (window[i].reversal) {
      k = b.Reverse(k, {static_cast<int64_t>(i + 2)});
    }
  }
  Dims strides, lo, hi, lhs_dilation, rhs_dilation;
  for (const HloWindowDim& d : window) {
    strides.push_back(d.stride);
    lo.push_back(d.pad_lo);
    hi.push_back(d.pad_hi);
    lhs_dilation.push_back(d.lhs_dilation);
    rhs_dilation.push_back(d.rhs_dilation);
  }
  int32_t y = b.Convolution(x, k, strides, lo, hi, lhs_dilation, rhs_dilation, feature_groups);
  // Output position p of the HLO result holds IR dim out_order_inverse[p].
  Dims output_order(spatial + 2);
  output_order[static_cast<size_t>(l.output_batch)] = 0;
  output_order[static_cast<size_t>(l.output_feature)] = 1;
  for (size_t i = 0; i < spatial; ++i) {
    output_order[static_cast<size_t>(l.output_spatial[i])] = static_cast<int64_t>(i + 2);
  }
  if (output_order != identity) y = b.Transpose(y, output_order);
  return Array(y);
}

// A gather / scatter that indexes one axis with whole slices of the others (numpy `take`,
// x[idx], x.at[idx].add(u)) is the IR's gather / scatter_add; the index array drops its
// index_vector_dim. `positions_of_window` says where the operand's other dims sit in the HLO
// result (offset_dims / update_window_dims). Returns the permutation from the IR's layout
// (x[:axis] ++ batch ++ x[axis+1:]) to the HLO's: HLO dim p = IR dim permutation[p].
Dims TakeLayout(const Dims& positions_of_window, int64_t axis, int64_t batch_rank,
                int64_t result_rank) {
  Dims permutation(static_cast<size_t>(result_rank), -1);
  for (size_t k = 0; k < positions_of_window.size(); ++k) {
    auto kk = static_cast<int64_t>(k);
    permutation[static_cast<size_t>(positions_of_window[k])] = kk < axis ? kk : kk + batch_rank;
  }
  int64_t j = 0;
  for (int64_t& p : permutation) {
    if (p < 0) p = axis + j++;
  }
  return permutation;
}

// The index array without its index_vector_dim (which must have size 1).
Result<int32_t> TakeIndices(GraphBuilder& b, const HloInstruction& instruction, int32_t indices,
                            int64_t index_vector_dim) {
  Dims shape = b.shape(indices);
  if (index_vector_dim == static_cast<int64_t>(shape.size())) return indices;
  if (index_vector_dim < 0 || index_vector_dim > static_cast<int64_t>(shape.size()) ||
      shape[static_cast<size_t>(index_vector_dim)] != 1) {
    return InstructionError(instruction,
                            "only one indexed dimension is supported "
                            "(index_vector_dim must have size 1)");
  }
  shape.erase(shape.begin() + index_vector_dim);
  return b.Reshape(indices, shape);
}

bool IsIdentity(const Dims& permutation) {
  for (size_t i = 0; i < permutation.size(); ++i) {
    if (permutation[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Result<int64_t> SingleIndexInteger(const HloInstruction& instruction, const std::string& name) {
  const HloAttribute* attribute = instruction.FindAttribute(name);
  if (attribute == nullptr) {
    return InstructionError(instruction, "lacks the attribute " + name, StatusCode::kParse);
  }
  Result<Dims> value = ParseIntList(attribute->value);
  if (!value.ok() || value.value().size() != 1) {
    return InstructionError(instruction, name + " is not an integer", StatusCode::kParse);
  }
  return value.value()[0];
}

Result<HloValue> LowerGather(HloLowering& lowering, const HloInstruction& instruction,
                             const std::vector<HloValue>& operands) {
  ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
  GraphBuilder& b = lowering.builder;
  int32_t x = operands[0].id;
  Result<Dims> offset_dims = IntListAttribute(instruction, "offset_dims");
  Result<Dims> collapsed = IntListAttribute(instruction, "collapsed_slice_dims");
  Result<Dims> start_map = IntListAttribute(instruction, "start_index_map");
  Result<Dims> slice_sizes = IntListAttribute(instruction, "slice_sizes");
  Result<Dims> batching = IntListAttribute(instruction, "operand_batching_dims", true);
  Result<int64_t> index_vector_dim = SingleIndexInteger(instruction, "index_vector_dim");
  for (const Status& s : {offset_dims.status(), collapsed.status(), start_map.status(),
                          slice_sizes.status(), batching.status(), index_vector_dim.status()}) {
    if (!s.ok()) return s;
  }
  const Dims& shape = b.shape(x);
  bool take = start_map.value().size() == 1 && collapsed.value() == start_map.value() &&
              batching.value().empty() && slice_sizes.value().size() == shape.size();
  int64_t axis = take ? start_map.value()[0] : 0;
  for (size_t d = 0; take && d < shape.size(); ++d) {
    int64_t expected = static_cast<int64_t>(d) == axis ? 1 : shape[d];
    take = slice_sizes.value()[d] == expected;
  }
  if (!take) {
    return InstructionError(instruction,
                            "only a gather of whole slices along one axis "
                            "(x[idx], jnp.take) is supported");
  }
  Result<int32_t> indices = TakeIndices(b, instruction, operands[1].id, index_vector_dim.value());
  if (!indices.ok()) return indices.status();
  int32_t y = b.Gather(x, indices.value(), axis);
  Dims permutation = TakeLayout(offset_dims.value(), axis, b.rank(indices.value()), b.rank(y));
  if (!IsIdentity(permutation)) y = b.Transpose(y, permutation);
  return Array(y);
}

Result<HloValue> LowerScatter(HloLowering& lowering, const HloInstruction& instruction,
                              const std::vector<HloValue>& operands) {
  if (operands.size() != 3) {
    return InstructionError(instruction, "a scatter of several arrays at once is not supported");
  }
  ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 3));
  if (ReducerOpcode(lowering, instruction, "to_apply") != "add") {
    return InstructionError(instruction, "only a scatter that adds (x.at[idx].add) is supported");
  }
  GraphBuilder& b = lowering.builder;
  int32_t x = operands[0].id;
  Result<Dims> window_dims = IntListAttribute(instruction, "update_window_dims");
  Result<Dims> inserted = IntListAttribute(instruction, "inserted_window_dims");
  Result<Dims> to_operand = IntListAttribute(instruction, "scatter_dims_to_operand_dims");
  Result<Dims> batching = IntListAttribute(instruction, "input_batching_dims", true);
  Result<int64_t> index_vector_dim = SingleIndexInteger(instruction, "index_vector_dim");
  for (const Status& s : {window_dims.status(), inserted.status(), to_operand.status(),
                          batching.status(), index_vector_dim.status()}) {
    if (!s.ok()) return s;
  }
  int32_t updates = operands[2].id;
  bool take = to_operand.value().size() == 1 && inserted.value() == to_operand.value() &&
              batching.value().empty() &&
              window_dims.value().size() + 1 == static_cast<size_t>(b.rank(x));
  int64_t axis = take ? to_operand.value()[0] : 0;
  if (take) {
    // The update windows must be whole slices of x's other dims.
    size_t k = 0;
    for (int64_t d = 0; d < b.rank(x) && take; ++d) {
      if (d == axis) continue;
      int64_t position = window_dims.value()[k++];
      take = position >= 0 && position < b.rank(updates) &&
             b.shape(updates)[static_cast<size_t>(position)] == b.shape(x)[static_cast<size_t>(d)];
    }
  }
  if (!take) {
    return InstructionError(instruction,
                            "only a scatter of whole slices along one axis "
                            "(x.at[idx].add(u)) is supported");
  }
  Result<int32_t> indices = TakeIndices(b, instruction, operands[1].id, index_vector_dim.value());
  if (!indices.ok()) return indices.status();
  Dims permutation =
      TakeLayout(window_dims.value(), axis, b.rank(indices.value()), b.rank(updates));
  if (!IsIdentity(permutation)) {
    // HLO dim p holds IR dim permutation[p]: the IR layout is its inverse.
    Dims inverse(permutation.size());
    for (size_t p = 0; p < permutation.size(); ++p) {
      inverse[static_cast<size_t>(permutation[p])] = static_cast<int64_t>(p);
    }
    updates = b.Transpose(updates, inverse);
  }
  return Array(b.ScatterAdd(x, indices.value(), updates, axis));
}

Result<HloValue> LowerDynamicSlice(HloLowering& lowering, const HloInstruction& instruction,
                                   const std::vector<HloValue>& operands) {
  GraphBuilder& b = lowering.builder;
  if (operands.empty()) return InstructionError(instruction, "has no operands", StatusCode::kParse);
  int32_t x = operands[0].id;
  Result<Dims> sizes = IntListAttribute(instruction, "dynamic_slice_sizes");
  if (!sizes.ok()) return sizes.status();
  const Dims& shape = b.shape(x);
  if (operands.size() != shape.size() + 1 || sizes.value().size() != shape.size()) {
    return InstructionError(instruction, "expected one start index and one size per dim",
                            StatusCode::kParse);
  }
  Dims starts, limits;
  for (size_t d = 0; d < shape.size(); ++d) {
    Result<double> start =
        RequireKnown(lowering, instruction, operands[d + 1].id, "start index " + std::to_string(d));
    if (!start.ok()) return start.status();
    int64_t size = sizes.value()[d];
    if (size < 0 || size > shape[d]) {
      return InstructionError(instruction, "slice size out of range", StatusCode::kParse);
    }
    // HLO clamps the start so that the slice stays inside the operand.
    double clamped = std::clamp(start.value(), 0.0, static_cast<double>(shape[d] - size));
    starts.push_back(static_cast<int64_t>(clamped));
    limits.push_back(starts.back() + size);
  }
  return Array(b.Slice(x, starts, limits));
}

Result<HloValue> LowerDataMovement(HloLowering& lowering, const HloInstruction& instruction,
                                   const std::vector<HloValue>& operands, bool* handled) {
  *handled = true;
  GraphBuilder& b = lowering.builder;
  const std::string& opcode = instruction.opcode;
  const Dims& out_dims = instruction.shape.dims;
  if (opcode == "broadcast") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 1));
    Result<Dims> dims = IntListAttribute(instruction, "dimensions");
    if (!dims.ok()) return dims.status();
    int32_t x = operands[0].id;
    Dims mapped = dims.value();
    if (mapped.size() != static_cast<size_t>(b.rank(x))) {
      return InstructionError(instruction,
                              "dimensions has " + std::to_string(mapped.size()) +
                                  " entries for an operand of rank " + std::to_string(b.rank(x)),
                              StatusCode::kParse);
    }
    // The IR's dims must increase: transpose the operand into the order of its output dims.
    Dims order(mapped.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
      return mapped[static_cast<size_t>(i)] < mapped[static_cast<size_t>(j)];
    });
    if (!IsIdentity(order)) {
      x = b.Transpose(x, order);
      Dims sorted;
      for (int64_t i : order) sorted.push_back(mapped[static_cast<size_t>(i)]);
      mapped = sorted;
    }
    int32_t y = b.BroadcastInDim(x, out_dims, mapped);
    if (std::optional<double> v = KnownSplat(lowering, operands[0].id)) {
      lowering.known_splats[y] = *v;
    }
    return Array(y);
  }
  if (opcode == "reshape" || opcode == "bitcast") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 1));
    int32_t x = operands[0].id;
    if (b.shape(x) == out_dims) return Array(x);
    int32_t y = b.Reshape(x, out_dims);
    if (std::optional<double> v = KnownSplat(lowering, x)) lowering.known_splats[y] = *v;
    return Array(y);
  }
  if (opcode == "transpose" || opcode == "reverse") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 1));
    Result<Dims> dims = IntListAttribute(instruction, "dimensions");
    if (!dims.ok()) return dims.status();
    if (opcode == "reverse") return Array(b.Reverse(operands[0].id, dims.value()));
    if (IsIdentity(dims.value())) return Array(operands[0].id);
    return Array(b.Transpose(operands[0].id, dims.value()));
  }
  if (opcode == "slice") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 1));
    Result<const HloAttribute*> text = RequiredAttribute(instruction, "slice");
    if (!text.ok()) return text.status();
    Result<std::vector<HloSliceDim>> dims = ParseSliceAttribute(text.value()->value);
    if (!dims.ok())
      return InstructionError(instruction, dims.status().message(), StatusCode::kParse);
    Dims starts, limits, strides;
    for (const HloSliceDim& d : dims.value()) {
      starts.push_back(d.start);
      limits.push_back(d.limit);
      strides.push_back(d.stride);
    }
    return Array(b.Slice(operands[0].id, starts, limits, strides));
  }
  if (opcode == "dynamic-slice") return LowerDynamicSlice(lowering, instruction, operands);
  if (opcode == "concatenate") {
    std::vector<int32_t> xs;
    for (const HloValue& v : operands) {
      if (v.is_tuple) return InstructionError(instruction, "a tuple operand is not supported");
      xs.push_back(v.id);
    }
    Result<Dims> dims = IntListAttribute(instruction, "dimensions");
    if (!dims.ok()) return dims.status();
    if (dims.value().size() != 1) {
      return InstructionError(instruction, "expected one concatenation dimension",
                              StatusCode::kParse);
    }
    return Array(b.Concatenate(xs, dims.value()[0]));
  }
  if (opcode == "pad") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
    Result<double> value = RequireKnown(lowering, instruction, operands[1].id, "the pad value");
    if (!value.ok()) return value.status();
    Result<const HloAttribute*> text = RequiredAttribute(instruction, "padding");
    if (!text.ok()) return text.status();
    Result<std::vector<HloPaddingDim>> dims = ParsePadding(text.value()->value);
    if (!dims.ok())
      return InstructionError(instruction, dims.status().message(), StatusCode::kParse);
    Dims lo, hi, interior;
    for (const HloPaddingDim& d : dims.value()) {
      lo.push_back(d.lo);
      hi.push_back(d.hi);
      interior.push_back(d.interior);
    }
    return Array(b.Pad(operands[0].id, value.value(), lo, hi, interior));
  }
  if (opcode == "iota") {
    Result<int64_t> axis = SingleIndexInteger(instruction, "iota_dimension");
    if (!axis.ok()) return axis.status();
    Result<DType> dtype = ElementDType(instruction, instruction.shape.element_type);
    if (!dtype.ok()) return dtype.status();
    return Array(b.Iota(out_dims, dtype.value(), axis.value()));
  }
  *handled = false;
  return HloValue{};
}

Result<HloValue> LowerElementwise(HloLowering& lowering, const HloInstruction& instruction,
                                  const std::vector<HloValue>& operands, bool* handled) {
  *handled = true;
  GraphBuilder& b = lowering.builder;
  const std::string& opcode = instruction.opcode;
  if (std::optional<OpKind> kind = UnaryKind(opcode)) {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 1));
    return Array(b.Unary(*kind, operands[0].id));
  }
  if (std::optional<OpKind> kind = BinaryKind(opcode)) {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
    return Array(b.Binary(*kind, operands[0].id, operands[1].id));
  }
  if (opcode == "convert") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 1));
    Result<DType> dtype = ElementDType(instruction, instruction.shape.element_type);
    if (!dtype.ok()) return dtype.status();
    if (b.dtype(operands[0].id) == dtype.value()) return Array(operands[0].id);
    int32_t y = b.Convert(operands[0].id, dtype.value());
    if (std::optional<double> v = KnownSplat(lowering, operands[0].id)) {
      double converted = IsInteger(dtype.value())        ? std::trunc(*v)
                         : dtype.value() == DType::kPred ? (*v != 0.0 ? 1.0 : 0.0)
                                                         : *v;
      lowering.known_splats[y] = converted;
    }
    return Array(y);
  }
  if (opcode == "compare") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
    Result<Comparison> comparison = ComparisonOf(instruction);
    if (!comparison.ok()) return comparison.status();
    return Array(b.Compare(comparison.value(), operands[0].id, operands[1].id));
  }
  if (opcode == "select") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 3));
    int32_t pred = BroadcastScalarTo(b, operands[0].id, operands[1].id);
    return Array(b.Select(pred, operands[1].id, operands[2].id));
  }
  if (opcode == "logistic" || opcode == "exponential-minus-one" || opcode == "log-plus-one" ||
      opcode == "clamp" || opcode == "and" || opcode == "or" || opcode == "not") {
    if (operands.empty())
      return InstructionError(instruction, "has no operands", StatusCode::kParse);
    for (const HloValue& v : operands) {
      if (v.is_tuple) return InstructionError(instruction, "a tuple operand is not supported");
    }
    bool composed = false;
    Result<int32_t> id = LowerComposedElementwise(b, instruction, operands, &composed);
    if (!id.ok()) return id.status();
    if (composed) return Array(id.value());
  }
  *handled = false;
  return HloValue{};
}

// Why an opcode the IR cannot express is refused, with the workaround when there is one.
std::string UnsupportedReason(const std::string& opcode) {
  if (opcode == "while") {
    return "loops are not supported: the IR is a straight-line graph; unroll lax.scan / "
           "fori_loop, e.g. jax.lax.scan(..., unroll=True) or a Python for loop";
  }
  if (opcode == "conditional") {
    return "conditionals are not supported: use jnp.where / lax.select on both branches";
  }
  if (opcode == "custom-call") {
    return "a custom-call is opaque to the importer: write the computation with jax.numpy / "
           "lax ops";
  }
  if (opcode == "sort") return "sort has no IR equivalent";
  if (opcode == "rng" || opcode == "rng-bit-generator" || opcode == "rng-get-and-update-state") {
    return "random number generation has no IR equivalent: draw the random numbers outside "
           "the step and pass them in";
  }
  return "the opcode has no IR equivalent";
}

}  // namespace

Status InstructionError(const HloInstruction& instruction, const std::string& message,
                        StatusCode code) {
  return Status(code, "line " + std::to_string(instruction.location.line) + ", column " +
                          std::to_string(instruction.location.column) + ": instruction \"" +
                          instruction.name + "\" (" + instruction.opcode + "): " + message);
}

Result<DType> ElementDType(const HloInstruction& instruction, const std::string& element_type) {
  Result<DType> dtype = ParseDType(element_type);
  if (!dtype.ok()) {
    return InstructionError(instruction, "element type " + element_type +
                                             " is not supported (the IR has f32, f16, bf16, f64, "
                                             "s8, s32, s64 and pred)");
  }
  return dtype;
}

Result<HloValue> LowerInstruction(HloLowering& lowering, const HloInstruction& instruction,
                                  const std::vector<HloValue>& operands) {
  const std::string& opcode = instruction.opcode;
  GraphBuilder& b = lowering.builder;
  if (opcode == "tuple") {
    HloValue value;
    value.is_tuple = true;
    value.elements = operands;
    return value;
  }
  if (opcode == "get-tuple-element") {
    Result<int64_t> index = SingleIndexInteger(instruction, "index");
    if (!index.ok()) return index.status();
    if (operands.size() != 1 || !operands[0].is_tuple || index.value() < 0 ||
        index.value() >= static_cast<int64_t>(operands[0].elements.size())) {
      return InstructionError(instruction, "index out of range of its tuple operand",
                              StatusCode::kParse);
    }
    return operands[0].elements[static_cast<size_t>(index.value())];
  }
  if (opcode == "copy" || opcode == "opt-barrier" || opcode == "optimization-barrier") {
    if (operands.size() != 1) {
      return InstructionError(instruction, "expected one operand", StatusCode::kParse);
    }
    return operands[0];
  }
  if (instruction.shape.is_tuple) {
    const bool lowered_for_arrays = opcode == "reduce" || opcode == "reduce-window" ||
                                    opcode == "scatter" || opcode == "select";
    return InstructionError(instruction, lowered_for_arrays
                                             ? "a tuple result (several arrays at once) is not "
                                               "supported"
                                             : UnsupportedReason(opcode));
  }
  Result<DType> dtype = ElementDType(instruction, instruction.shape.element_type);
  if (!dtype.ok()) return dtype.status();
  Result<HloValue> value = HloValue{};
  bool handled = true;
  if (opcode == "constant") {
    value = LowerConstant(lowering, instruction, dtype.value());
  } else if (opcode == "dot") {
    ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
    DotDims dims;
    Result<Dims> lb = IntListAttribute(instruction, "lhs_batch_dims", true);
    Result<Dims> rb = IntListAttribute(instruction, "rhs_batch_dims", true);
    Result<Dims> lc = IntListAttribute(instruction, "lhs_contracting_dims", true);
    Result<Dims> rc = IntListAttribute(instruction, "rhs_contracting_dims", true);
    for (const Status& s : {lb.status(), rb.status(), lc.status(), rc.status()}) {
      if (!s.ok()) return s;
    }
    dims.lhs_batch = lb.value();
    dims.rhs_batch = rb.value();
    dims.lhs_contracting = lc.value();
    dims.rhs_contracting = rc.value();
    int32_t lhs = operands[0].id;
    int32_t rhs = operands[1].id;
    // preferred_element_type: the IR's dot computes in the operands' type, then converts.
    if (b.dtype(lhs) != b.dtype(rhs)) rhs = b.Convert(rhs, b.dtype(lhs));
    int32_t y = b.DotGeneral(lhs, rhs, dims);
    if (b.ok() && b.dtype(y) != dtype.value()) y = b.Convert(y, dtype.value());
    value = Array(y);
  } else if (opcode == "convolution") {
    value = LowerConvolution(lowering, instruction, operands);
  } else if (opcode == "reduce") {
    value = LowerReduce(lowering, instruction, operands);
  } else if (opcode == "reduce-window") {
    value = LowerReduceWindow(lowering, instruction, operands);
  } else if (opcode == "select-and-scatter") {
    value = LowerSelectAndScatter(lowering, instruction, operands);
  } else if (opcode == "gather") {
    value = LowerGather(lowering, instruction, operands);
  } else if (opcode == "scatter") {
    value = LowerScatter(lowering, instruction, operands);
  } else {
    value = LowerElementwise(lowering, instruction, operands, &handled);
    if (value.ok() && !handled)
      value = LowerDataMovement(lowering, instruction, operands, &handled);
  }
  if (!value.ok()) return value.status();
  if (!handled) return InstructionError(instruction, UnsupportedReason(opcode));
  if (!b.ok()) return BuilderError(lowering, instruction);
  // What the IR computed must have the type the HLO states.
  const HloValue& result = value.value();
  if (!result.is_tuple &&
      (b.shape(result.id) != instruction.shape.dims || b.dtype(result.id) != dtype.value())) {
    return InstructionError(instruction,
                            "imported as " + ShapeText(b.dtype(result.id), b.shape(result.id)) +
                                " but the HLO states " +
                                ShapeText(dtype.value(), instruction.shape.dims),
                            StatusCode::kInvalidGraph);
  }
  return value;
}

}  // namespace alpa
