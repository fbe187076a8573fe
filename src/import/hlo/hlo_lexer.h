// The character level of the HLO text reader: a cursor with line and column, whitespace and
// /* */ comments, names, integers and balanced text spans. Every error is kParse and starts with
// the position: "line 12, column 7: expected '=' after the instruction name \"add.3\"".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/status.h"
#include "import/hlo/hlo_ast.h"

namespace alpa {

// The deepest nesting of brackets, braces, parentheses or tuple shapes the reader accepts; a
// hostile input gets an error instead of exhausting the stack or the time.
inline constexpr int32_t kMaxHloNesting = 64;

class HloLexer {
 public:
  explicit HloLexer(std::string_view text) : text_(text) {}

  HloLocation location() const { return {line_, column_}; }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  // Whether the cursor is at the start of a line (only spaces before it on this line).
  bool AtLineStart() const { return column_ == 1; }

  // Skips spaces, newlines and comments.
  Status SkipSpace();
  // Skips spaces and comments but stops at a newline (instructions and header end there).
  Status SkipInlineSpace();
  // After SkipSpace: consumes `c` if it is next.
  Result<bool> Consume(char c);
  Status Expect(char c, const std::string& context);
  // A name or keyword: letters, digits and _ . - % $ (a leading '%' is dropped). Empty if none.
  std::string Name();
  Result<int64_t> Integer(const std::string& context);
  // The text up to (not including) the first of `stops` outside brackets, braces, parentheses
  // and quoted strings, with comments removed and ends trimmed. With stop_at_newline, a newline
  // outside brackets ends it too.
  Result<std::string> BalancedText(std::string_view stops, bool stop_at_newline);
  // Skips the rest of the current line and the newline.
  void SkipLine();
  // Whether the rest of the current line is blank.
  bool RestOfLineBlank() const;

  Status Error(const std::string& message) const { return ErrorAt(location(), message); }
  static Status ErrorAt(HloLocation at, const std::string& message);

 private:
  void Advance();
  Status SkipComment();  // at "/*"

  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  int64_t column_ = 1;
};

// How a character is shown in messages: 'x', or "0x07" for an unprintable byte, or "the end".
std::string DescribeChar(char c, bool at_end);

}  // namespace alpa
