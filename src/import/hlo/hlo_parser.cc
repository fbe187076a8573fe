// The HLO text parser: module header, debug blocks, computations and instructions.
#include "import/hlo/hlo_parser.h"

#include <set>
#include <string>
#include <utility>

#include "import/hlo/hlo_lexer.h"

namespace alpa {
namespace {

// Debug-info sections printed between the header and the computations (debug_info=True).
bool IsDebugBlock(const std::string& word) {
  return word == "FileNames" || word == "FunctionNames" || word == "FileLocations" ||
         word == "StackFrames";
}

class HloParser {
 public:
  explicit HloParser(std::string_view text) : lexer_(text) {}

  Result<HloModule> Parse() {
    HloModule module;
    ALPA_RETURN_IF_ERROR(ParseHeader(module));
    while (true) {
      ALPA_RETURN_IF_ERROR(lexer_.SkipSpace());
      if (lexer_.AtEnd()) break;
      HloLocation at = lexer_.location();
      std::string word = lexer_.Name();
      if (word.empty()) {
        return lexer_.Error("expected a computation name, found " +
                            DescribeChar(lexer_.Peek(), lexer_.AtEnd()));
      }
      if (IsDebugBlock(word) && lexer_.RestOfLineBlank()) {
        SkipDebugBlock();
        continue;
      }
      HloComputation computation;
      computation.location = at;
      if (word == "ENTRY") {
        computation.is_entry = true;
        ALPA_RETURN_IF_ERROR(lexer_.SkipSpace());
        word = lexer_.Name();
        if (word.empty()) return lexer_.Error("expected the entry computation's name");
      }
      computation.name = word;
      if (!names_.insert(word).second) {
        return HloLexer::ErrorAt(at, "computation \"" + word + "\" is defined twice");
      }
      ALPA_RETURN_IF_ERROR(ParseComputation(computation));
      module.computations.push_back(std::move(computation));
    }
    if (module.computations.empty()) return lexer_.Error("the module has no computation");
    int entries = 0;
    for (const HloComputation& c : module.computations) entries += c.is_entry ? 1 : 0;
    if (entries > 1) return lexer_.Error("the module has more than one ENTRY computation");
    return module;
  }

 private:
  Status ParseHeader(HloModule& module) {
    ALPA_RETURN_IF_ERROR(lexer_.SkipSpace());
    std::string keyword = lexer_.Name();
    if (keyword != "HloModule") {
      return HloLexer::ErrorAt({1, 1},
                               "expected \"HloModule\" at the start of the text (HLO "
                               "text as printed by as_hlo_text())");
    }
    ALPA_RETURN_IF_ERROR(lexer_.SkipInlineSpace());
    module.name = lexer_.Name();
    if (module.name.empty()) return lexer_.Error("expected the module's name after HloModule");
    return ParseAttributes(module.attributes, "the module header");
  }

  // ", name=value" pairs up to the end of the line.
  Status ParseAttributes(std::vector<HloAttribute>& out, const std::string& where) {
    while (true) {
      ALPA_RETURN_IF_ERROR(lexer_.SkipInlineSpace());
      if (lexer_.AtEnd() || lexer_.Peek() == '\n') return Status::Ok();
      if (lexer_.Peek() != ',') {
        return lexer_.Error("expected ',' or the end of the line in " + where + ", found " +
                            DescribeChar(lexer_.Peek(), lexer_.AtEnd()));
      }
      ALPA_RETURN_IF_ERROR(lexer_.Expect(',', "between attributes"));
      ALPA_RETURN_IF_ERROR(lexer_.SkipInlineSpace());
      HloAttribute attribute;
      attribute.location = lexer_.location();
      attribute.name = lexer_.Name();
      if (attribute.name.empty()) {
        return lexer_.Error("expected an attribute name in " + where + ", found " +
                            DescribeChar(lexer_.Peek(), lexer_.AtEnd()));
      }
      ALPA_RETURN_IF_ERROR(lexer_.SkipInlineSpace());
      if (lexer_.Peek() != '=') {
        return lexer_.Error("expected '=' after attribute \"" + attribute.name + "\", found " +
                            DescribeChar(lexer_.Peek(), lexer_.AtEnd()));
      }
      ALPA_RETURN_IF_ERROR(lexer_.Expect('=', "after the attribute name"));
      ALPA_RETURN_IF_ERROR(lexer_.SkipInlineSpace());
      Result<std::string> value = lexer_.BalancedText(",", /*stop_at_newline=*/true);
      if (!value.ok()) return value.status();
      attribute.value = std::move(value).value();
      out.push_back(std::move(attribute));
    }
  }

  void SkipDebugBlock() {
    lexer_.SkipLine();
    while (!lexer_.AtEnd() && !lexer_.RestOfLineBlank()) lexer_.SkipLine();
  }

  Status ParseComputation(HloComputation& computation) {
    ALPA_RETURN_IF_ERROR(lexer_.SkipSpace());
    if (lexer_.Peek() == '(') {
      // The signature "(p: f32[2]) -> f32[]" repeats what the parameters say.
      Result<std::string> signature = lexer_.BalancedText("{", /*stop_at_newline=*/true);
      if (!signature.ok()) return signature.status();
    }
    ALPA_RETURN_IF_ERROR(
        lexer_.Expect('{', "after the computation name \"" + computation.name + "\""));
    std::set<std::string> instruction_names;
    while (true) {
      Result<bool> closed = lexer_.Consume('}');
      if (!closed.ok()) return closed.status();
      if (closed.value()) break;
      if (lexer_.AtEnd()) {
        return HloLexer::ErrorAt(computation.location,
                                 "computation \"" + computation.name + "\" has no closing '}'");
      }
      HloInstruction instruction;
      ALPA_RETURN_IF_ERROR(ParseInstruction(instruction));
      if (!instruction_names.insert(instruction.name).second) {
        return HloLexer::ErrorAt(instruction.location, "instruction \"" + instruction.name +
                                                           "\" is defined twice in "
                                                           "computation \"" +
                                                           computation.name + "\"");
      }
      computation.instructions.push_back(std::move(instruction));
    }
    if (computation.instructions.empty()) {
      return HloLexer::ErrorAt(computation.location,
                               "computation \"" + computation.name + "\" has no instructions");
    }
    return Status::Ok();
  }

  Status ParseInstruction(HloInstruction& instruction) {
    instruction.location = lexer_.location();
    std::string name = lexer_.Name();
    if (name == "ROOT") {
      instruction.is_root = true;
      ALPA_RETURN_IF_ERROR(lexer_.SkipInlineSpace());
      instruction.location = lexer_.location();
      name = lexer_.Name();
    }
    if (name.empty()) {
      return lexer_.Error("expected an instruction name, found " +
                          DescribeChar(lexer_.Peek(), lexer_.AtEnd()));
    }
    instruction.name = name;
    ALPA_RETURN_IF_ERROR(
        lexer_.Expect('=', "after the instruction name \"" + instruction.name + "\""));
    ALPA_RETURN_IF_ERROR(lexer_.SkipInlineSpace());
    ALPA_RETURN_IF_ERROR(ParseShape(instruction.shape, 0));
    ALPA_RETURN_IF_ERROR(lexer_.SkipInlineSpace());
    instruction.opcode = lexer_.Name();
    if (instruction.opcode.empty()) {
      return lexer_.Error("expected the opcode of \"" + instruction.name + "\", found " +
                          DescribeChar(lexer_.Peek(), lexer_.AtEnd()));
    }
    ALPA_RETURN_IF_ERROR(lexer_.Expect('(', "after the opcode \"" + instruction.opcode + "\""));
    Result<std::string> inside = lexer_.BalancedText(")", /*stop_at_newline=*/false);
    if (!inside.ok()) return inside.status();
    ALPA_RETURN_IF_ERROR(lexer_.Expect(')', "after the operands of \"" + instruction.name + "\""));
    const std::string& opcode = instruction.opcode;
    if (opcode == "parameter" || opcode == "constant" || opcode == "iota") {
      instruction.literal = std::move(inside).value();
    } else {
      ALPA_RETURN_IF_ERROR(SplitOperands(inside.value(), instruction));
    }
    return ParseAttributes(instruction.attributes, "instruction \"" + instruction.name + "\"");
  }

  // "a.1, b.2" or "f32[2]{0} %a.1, ..." (operands printed with their shapes): the names.
  Status SplitOperands(const std::string& text, HloInstruction& instruction) {
    if (text.empty()) return Status::Ok();
    int depth = 0;
    std::string current;
    auto finish = [&]() -> Status {
      size_t begin = current.find_last_of(" \t\r\n");
      std::string name = begin == std::string::npos ? current : current.substr(begin + 1);
      size_t first = name.find_first_not_of(" \t\r\n");
      name = first == std::string::npos ? "" : name.substr(first);
      if (!name.empty() && name[0] == '%') name.erase(0, 1);
      if (name.empty()) {
        return HloLexer::ErrorAt(instruction.location,
                                 "instruction \"" + instruction.name + "\" has an empty operand");
      }
      instruction.operands.push_back(name);
      current.clear();
      return Status::Ok();
    };
    for (char c : text) {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      if (c == ',' && depth == 0) {
        ALPA_RETURN_IF_ERROR(finish());
      } else {
        current += c;
      }
    }
    // Trailing spaces would otherwise hide the name.
    size_t end = current.find_last_not_of(" \t\r\n");
    current = end == std::string::npos ? "" : current.substr(0, end + 1);
    return finish();
  }

  Status ParseShape(HloShape& shape, int32_t depth) {
    if (depth >= kMaxHloNesting) {
      return lexer_.Error("tuple shapes nested deeper than " + std::to_string(kMaxHloNesting) +
                          " levels");
    }
    if (lexer_.Peek() == '(') {
      shape.is_tuple = true;
      ALPA_RETURN_IF_ERROR(lexer_.Expect('(', "to open a tuple shape"));
      Result<bool> empty = lexer_.Consume(')');
      if (!empty.ok()) return empty.status();
      if (empty.value()) return Status::Ok();
      while (true) {
        ALPA_RETURN_IF_ERROR(lexer_.SkipSpace());
        HloShape element;
        ALPA_RETURN_IF_ERROR(ParseShape(element, depth + 1));
        shape.elements.push_back(std::move(element));
        Result<bool> more = lexer_.Consume(',');
        if (!more.ok()) return more.status();
        if (!more.value()) break;
      }
      return lexer_.Expect(')', "to close a tuple shape");
    }
    HloLocation at = lexer_.location();
    shape.element_type = lexer_.Name();
    if (shape.element_type.empty()) {
      return lexer_.Error("expected a shape (such as f32[2,3]), found " +
                          DescribeChar(lexer_.Peek(), lexer_.AtEnd()));
    }
    if (lexer_.Peek() != '[') {
      return lexer_.Error("expected '[' after the element type \"" + shape.element_type +
                          "\", found " + DescribeChar(lexer_.Peek(), lexer_.AtEnd()));
    }
    ALPA_RETURN_IF_ERROR(lexer_.Expect('[', "after the element type"));
    Result<bool> closed = lexer_.Consume(']');
    if (!closed.ok()) return closed.status();
    while (!closed.value()) {
      ALPA_RETURN_IF_ERROR(lexer_.SkipSpace());
      if (lexer_.Peek() == '?' || lexer_.Peek() == '<') {
        return lexer_.Error("dynamic dimensions are not supported (shape of element type " +
                            shape.element_type + ")");
      }
      Result<int64_t> dim = lexer_.Integer("as a dimension size");
      if (!dim.ok()) return dim.status();
      if (dim.value() < 0) return HloLexer::ErrorAt(at, "negative dimension size");
      shape.dims.push_back(dim.value());
      Result<bool> more = lexer_.Consume(',');
      if (!more.ok()) return more.status();
      if (more.value()) continue;
      ALPA_RETURN_IF_ERROR(lexer_.Expect(']', "to close the dimensions"));
      break;
    }
    if (lexer_.Peek() == '{') {
      // The layout ("{1,0}", "{1,0:T(8,128)}") says how the array is laid out in memory: the IR
      // is row-major by definition, so the layout is irrelevant to the graph.
      Result<std::string> layout = lexer_.BalancedText(" \t\r\n,)=", /*stop_at_newline=*/true);
      if (!layout.ok()) return layout.status();
    }
    return Status::Ok();
  }

  HloLexer lexer_;
  std::set<std::string> names_;
};

}  // namespace

Result<HloModule> ParseHloModule(std::string_view text) { return HloParser(text).Parse(); }

}  // namespace alpa
