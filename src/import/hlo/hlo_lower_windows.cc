// Lowerings of reductions, windows and convolutions (hlo_lowering_util.h): reduce (sum, max,
// min as -max(-x), and / or on pred), reduce-window, select-and-scatter, convolution with its
// dim_labels as transposes around the IR's NCHW / OIHW convolution.
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "import/hlo/hlo_attributes.h"
#include "import/hlo/hlo_lowering_util.h"

namespace alpa {
namespace {

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

// The window attribute of a reduce-window / select-and-scatter over an operand of `rank` dims,
// which must be neither dilated nor reversed.
Result<WindowAttrs> PlainWindow(const HloInstruction& instruction, int64_t rank) {
  Result<std::vector<HloWindowDim>> window = WindowOf(instruction, static_cast<size_t>(rank));
  if (!window.ok()) return window.status();
  WindowAttrs attrs;
  for (const HloWindowDim& d : window.value()) {
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

}  // namespace

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
  if ((reducer == "and" || reducer == "or") && b.dtype(x) == DType::kPred) {
    // On pred as 0 / 1: all = min, any = max, from their identity (true / false) only.
    const bool all = reducer == "and";
    if (init_value != (all ? 1.0 : 0.0)) {
      return InstructionError(instruction, "a reduce of pred must start from " +
                                               std::string(all ? "true (and)" : "false (or)"));
    }
    int32_t numbers = b.Convert(x, DType::kF32);
    int32_t extreme =
        all ? b.Unary(OpKind::kNeg, b.ReduceMax(b.Unary(OpKind::kNeg, numbers), dims.value()))
            : b.ReduceMax(numbers, dims.value());
    return Array(b.Compare(Comparison::kGt, extreme, b.ScalarLike(0.5, extreme)));
  }
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
                              "\"; the importer takes add, maximum and minimum (and / or on pred)");
}

Result<HloValue> LowerReduceWindow(HloLowering& lowering, const HloInstruction& instruction,
                                   const std::vector<HloValue>& operands) {
  ALPA_RETURN_IF_ERROR(ExpectOperands(instruction, operands, 2));
  GraphBuilder& b = lowering.builder;
  int32_t x = operands[0].id;
  Result<WindowAttrs> attrs = PlainWindow(instruction, b.rank(x));
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
  Result<WindowAttrs> attrs = PlainWindow(instruction, b.rank(x));
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

}  // namespace alpa
