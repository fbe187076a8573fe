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
#include "import/hlo/hlo_lowering_util.h"

namespace alpa {
namespace {

// The most elements of a non-splat array constant: each becomes a concatenated piece.
constexpr int64_t kMaxArrayConstantElements = 1024;

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
