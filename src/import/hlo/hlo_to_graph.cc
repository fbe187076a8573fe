// Driving the lowering: entry parameters, computations in order, `call` inlined, the ROOT
// flattened into outputs.
#include "import/hlo/hlo_to_graph.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "core/util/printable_text.h"
#include "import/hlo/hlo_lexer.h"
#include "import/hlo/hlo_lowering.h"

namespace alpa {
namespace {

Status CheckDefined(const HloInstruction& instruction, const std::string& operand,
                    const std::map<std::string, HloValue>& values) {
  if (values.count(operand) == 0) {
    return InstructionError(instruction,
                            "operand \"" + operand + "\" is not defined before its use",
                            StatusCode::kParse);
  }
  return Status::Ok();
}

Result<int64_t> ParameterNumber(const HloInstruction& instruction) {
  const std::string& text = instruction.literal;
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return InstructionError(instruction, "expected a parameter number, found \"" + text + "\"",
                            StatusCode::kParse);
  }
  return std::stoll(text);
}

// Creates the entry computation's parameters as ops 0..P-1 in parameter-number order.
Result<std::vector<HloValue>> LowerEntryParameters(HloLowering& lowering,
                                                   const HloComputation& entry) {
  std::map<int64_t, const HloInstruction*> by_number;
  for (const HloInstruction& instruction : entry.instructions) {
    if (instruction.opcode != "parameter") continue;
    Result<int64_t> number = ParameterNumber(instruction);
    if (!number.ok()) return number.status();
    if (!by_number.emplace(number.value(), &instruction).second) {
      return InstructionError(
          instruction, "parameter number " + std::to_string(number.value()) + " appears twice",
          StatusCode::kParse);
    }
  }
  std::vector<HloValue> parameters;
  for (const auto& [number, instruction] : by_number) {
    if (number != static_cast<int64_t>(parameters.size())) {
      return InstructionError(*instruction,
                              "parameter numbers must be 0, 1, ... without gaps; " +
                                  std::to_string(parameters.size()) + " is missing",
                              StatusCode::kParse);
    }
    if (instruction->shape.is_tuple) {
      return InstructionError(*instruction,
                              "a tuple-shaped entry parameter is not supported (pass the "
                              "arrays as separate arguments)");
    }
    Result<DType> dtype = ElementDType(*instruction, instruction->shape.element_type);
    if (!dtype.ok()) return dtype.status();
    const HloAttribute* metadata = instruction->FindAttribute("metadata");
    const std::string op_name =
        metadata == nullptr ? std::string() : MetadataOpName(metadata->value);
    // The pytree path names the weight when jax printed it; else the instruction's name. Names
    // reach JSON and other languages' strings: bytes that are not UTF-8 are written as \xNN.
    std::string name = op_name.empty() ? instruction->name : PrintableText(op_name);
    int32_t id = lowering.builder.Parameter(instruction->shape.dims, dtype.value(),
                                            TensorRole::kInput, std::move(name));
    if (!lowering.builder.ok())
      return InstructionError(*instruction, lowering.builder.status().message());
    lowering.op_names.resize(static_cast<size_t>(lowering.builder.graph().size()));
    lowering.op_names[static_cast<size_t>(id)] = op_name;
    lowering.builder.SetSource(id, PrintableText(op_name));
    HloValue value;
    value.id = id;
    parameters.push_back(value);
  }
  return parameters;
}

// An op's source: its instruction's op_name under the calling instruction's source, as the
// name stack of an inlined lowering would read ("jit(step)/jvp(layers_1)/jit(inner)" and
// "select_n" give "jit(step)/jvp(layers_1)/jit(inner)/select_n"); an op_name that already
// starts with the caller's source is kept. Kept printable UTF-8.
std::string SourceOf(const std::string& caller_source, const std::string& op_name) {
  if (caller_source.empty() || op_name.rfind(caller_source, 0) == 0) return PrintableText(op_name);
  if (op_name.empty()) return caller_source;
  return caller_source + "/" + PrintableText(op_name);
}

void FlattenOutputs(const HloValue& value, std::vector<int64_t>& path,
                    std::vector<HloOutput>& out) {
  if (!value.is_tuple) {
    out.push_back({value.id, path});
    return;
  }
  for (size_t i = 0; i < value.elements.size(); ++i) {
    path.push_back(static_cast<int64_t>(i));
    FlattenOutputs(value.elements[i], path, out);
    path.pop_back();
  }
}

}  // namespace

Result<HloValue> LowerComputation(HloLowering& lowering, const HloComputation& computation,
                                  const std::vector<HloValue>& arguments) {
  if (std::find(lowering.call_stack.begin(), lowering.call_stack.end(), computation.name) !=
      lowering.call_stack.end()) {
    return HloLexer::ErrorAt(computation.location, "computation \"" + computation.name +
                                                       "\" calls itself (a call cycle)");
  }
  if (static_cast<int32_t>(lowering.call_stack.size()) >= 64) {
    return Status(StatusCode::kUnsupported,
                  "calls nested deeper than 64 levels at computation \"" + computation.name + "\"");
  }
  lowering.call_stack.push_back(computation.name);
  std::map<std::string, HloValue> values;
  for (const HloInstruction& instruction : computation.instructions) {
    HloValue value;
    if (instruction.opcode == "parameter") {
      Result<int64_t> number = ParameterNumber(instruction);
      if (!number.ok()) return number.status();
      if (number.value() >= static_cast<int64_t>(arguments.size())) {
        return InstructionError(instruction,
                                "parameter " + std::to_string(number.value()) +
                                    " of a computation called with " +
                                    std::to_string(arguments.size()) + " arguments",
                                StatusCode::kParse);
      }
      value = arguments[static_cast<size_t>(number.value())];
    } else {
      std::vector<HloValue> operands;
      for (const std::string& operand : instruction.operands) {
        ALPA_RETURN_IF_ERROR(CheckDefined(instruction, operand, values));
        operands.push_back(values.at(operand));
      }
      if (instruction.opcode == "call") {
        const HloAttribute* to_apply = instruction.FindAttribute("to_apply");
        const HloComputation* callee =
            to_apply == nullptr ? nullptr : lowering.module->FindComputation(to_apply->value);
        if (callee == nullptr) {
          return InstructionError(instruction, "calls an unknown computation", StatusCode::kParse);
        }
        const HloAttribute* metadata = instruction.FindAttribute("metadata");
        std::string caller_source =
            SourceOf(lowering.caller_source,
                     metadata == nullptr ? std::string() : MetadataOpName(metadata->value));
        std::swap(caller_source, lowering.caller_source);
        Result<HloValue> result = LowerComputation(lowering, *callee, operands);
        std::swap(caller_source, lowering.caller_source);
        if (!result.ok()) return result.status();
        value = std::move(result).value();
      } else {
        const int32_t first_new = lowering.builder.graph().size();
        Result<HloValue> result = LowerInstruction(lowering, instruction, operands);
        if (!result.ok()) return result.status();
        value = std::move(result).value();
        const HloAttribute* metadata = instruction.FindAttribute("metadata");
        const std::string op_name =
            metadata == nullptr ? std::string() : MetadataOpName(metadata->value);
        const int32_t end = lowering.builder.graph().size();
        lowering.op_names.resize(static_cast<size_t>(end));
        const std::string source = SourceOf(lowering.caller_source, op_name);
        for (int32_t id = first_new; id < end; ++id) {
          lowering.op_names[static_cast<size_t>(id)] = op_name;
          lowering.builder.SetSource(id, source);
        }
        if (!value.is_tuple && value.id >= first_new) {
          lowering.builder.SetName(value.id, instruction.name);
        }
      }
    }
    values[instruction.name] = std::move(value);
  }
  lowering.call_stack.pop_back();
  return values.at(computation.root().name);
}

Result<HloImport> LowerHloModule(const HloModule& module) {
  const HloComputation* entry = module.entry();
  if (entry == nullptr) return ParseError("the module has no computation");
  HloLowering lowering;
  lowering.module = &module;
  Result<std::vector<HloValue>> parameters = LowerEntryParameters(lowering, *entry);
  if (!parameters.ok()) return parameters.status();
  Result<HloValue> root = LowerComputation(lowering, *entry, parameters.value());
  if (!root.ok()) return root.status();
  HloImport import;
  import.parameter_count = static_cast<int32_t>(parameters.value().size());
  std::vector<int64_t> path;
  FlattenOutputs(root.value(), path, import.outputs);
  if (const HloAttribute* alias = module.FindAttribute("input_output_alias")) {
    Result<std::vector<HloAlias>> aliases = ParseInputOutputAlias(alias->value);
    if (!aliases.ok()) {
      return HloLexer::ErrorAt(alias->location, aliases.status().message());
    }
    import.aliases = std::move(aliases).value();
  }
  for (const HloOutput& output : import.outputs) lowering.builder.AddOutput(output.id);
  import.op_names = std::move(lowering.op_names);
  Result<Graph> graph = std::move(lowering.builder).Finish();
  if (!graph.ok()) return graph.status();
  import.graph = std::move(graph).value();
  import.op_names.resize(import.graph.ops.size());
  return import;
}

}  // namespace alpa
