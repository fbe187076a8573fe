// Helpers shared by the lowerings of hlo_lower_*.cc (hlo_lowering_util.h).
#include "import/hlo/hlo_lowering_util.h"

#include <utility>

#include "import/hlo/hlo_attributes.h"

namespace alpa {

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
                              bool optional) {
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

}  // namespace alpa
