// The HLO text cursor: positions, spaces, comments, names, integers and balanced spans.
#include "import/hlo/hlo_lexer.h"

#include <cstdio>
#include <limits>
#include <vector>

namespace alpa {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '%' || c == '$';
}

char ClosingOf(char open) {
  switch (open) {
    case '(':
      return ')';
    case '[':
      return ']';
    default:
      return '}';
  }
}

std::string Trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

}  // namespace

std::string DescribeChar(char c, bool at_end) {
  if (at_end) return "the end of the text";
  if (c == '\n') return "the end of the line";
  if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
  return std::string("byte ") + hex;
}

Status HloLexer::ErrorAt(HloLocation at, const std::string& message) {
  return ParseError("line " + std::to_string(at.line) + ", column " + std::to_string(at.column) +
                    ": " + message);
}

void HloLexer::Advance() {
  if (AtEnd()) return;
  if (text_[pos_] == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  ++pos_;
}

Status HloLexer::SkipComment() {
  HloLocation start = location();
  Advance();
  Advance();
  while (!AtEnd()) {
    if (text_[pos_] == '*' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      Advance();
      Advance();
      return Status::Ok();
    }
    Advance();
  }
  return ErrorAt(start, "unterminated comment (\"/*\" without \"*/\")");
}

Status HloLexer::SkipSpace() {
  while (!AtEnd()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      Advance();
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
      ALPA_RETURN_IF_ERROR(SkipComment());
    } else {
      break;
    }
  }
  return Status::Ok();
}

Status HloLexer::SkipInlineSpace() {
  while (!AtEnd()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\r') {
      Advance();
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
      ALPA_RETURN_IF_ERROR(SkipComment());
    } else {
      break;
    }
  }
  return Status::Ok();
}

Result<bool> HloLexer::Consume(char c) {
  ALPA_RETURN_IF_ERROR(SkipSpace());
  if (Peek() != c || AtEnd()) return false;
  Advance();
  return true;
}

Status HloLexer::Expect(char c, const std::string& context) {
  Result<bool> found = Consume(c);
  if (!found.ok()) return found.status();
  if (!found.value()) {
    return Error(std::string("expected '") + c + "' " + context + ", found " +
                 DescribeChar(Peek(), AtEnd()));
  }
  return Status::Ok();
}

std::string HloLexer::Name() {
  std::string name;
  while (!AtEnd() && IsNameChar(text_[pos_])) {
    name += text_[pos_];
    Advance();
  }
  if (!name.empty() && name[0] == '%') name.erase(0, 1);
  return name;
}

Result<int64_t> HloLexer::Integer(const std::string& context) {
  ALPA_RETURN_IF_ERROR(SkipSpace());
  HloLocation start = location();
  bool negative = false;
  if (Peek() == '-') {
    negative = true;
    Advance();
  }
  if (AtEnd() || Peek() < '0' || Peek() > '9') {
    return ErrorAt(start,
                   "expected an integer " + context + ", found " + DescribeChar(Peek(), AtEnd()));
  }
  int64_t value = 0;
  while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
    int digit = Peek() - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
      return ErrorAt(start, "integer " + context + " does not fit int64");
    }
    value = value * 10 + digit;
    Advance();
  }
  return negative ? -value : value;
}

Result<std::string> HloLexer::BalancedText(std::string_view stops, bool stop_at_newline) {
  std::string out;
  std::vector<char> open;  // the closers expected, innermost last
  while (!AtEnd()) {
    char c = text_[pos_];
    if (open.empty() &&
        (stops.find(c) != std::string_view::npos || (stop_at_newline && c == '\n'))) {
      break;
    }
    if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
      ALPA_RETURN_IF_ERROR(SkipComment());
      continue;
    }
    if (c == '"') {
      HloLocation start = location();
      out += c;
      Advance();
      while (true) {
        if (AtEnd() || Peek() == '\n') return ErrorAt(start, "unterminated string");
        char s = Peek();
        out += s;
        Advance();
        if (s == '\\' && !AtEnd()) {
          out += Peek();
          Advance();
        } else if (s == '"') {
          break;
        }
      }
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      if (static_cast<int32_t>(open.size()) >= kMaxHloNesting) {
        return Error("nesting deeper than " + std::to_string(kMaxHloNesting) + " levels");
      }
      open.push_back(ClosingOf(c));
    } else if (c == ')' || c == ']' || c == '}') {
      if (open.empty() || open.back() != c) {
        return Error(std::string("unbalanced '") + c + "'");
      }
      open.pop_back();
    }
    out += c;
    Advance();
  }
  if (!open.empty()) {
    return Error(std::string("expected '") + open.back() + "' before " +
                 DescribeChar(Peek(), AtEnd()));
  }
  return Trim(out);
}

void HloLexer::SkipLine() {
  while (!AtEnd() && Peek() != '\n') Advance();
  Advance();
}

bool HloLexer::RestOfLineBlank() const {
  for (size_t i = pos_; i < text_.size() && text_[i] != '\n'; ++i) {
    if (text_[i] != ' ' && text_[i] != '\t' && text_[i] != '\r') return false;
  }
  return true;
}

}  // namespace alpa
