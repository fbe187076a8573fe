#include "core/json_util.h"

namespace alpa {

Status CheckJsonNesting(std::string_view bytes, int max_depth, std::string_view what) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char ch = bytes[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;  // an escaped quote does not end the string
      } else if (ch == '"') {
        in_string = false;
      }
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max_depth) {
        return ParseError(std::string(what) + ": JSON nesting deeper than " +
                          std::to_string(max_depth) + " levels at byte " + std::to_string(i));
      }
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return Status::Ok();
}

std::string JsonErrorMessage(const char* what) {
  std::string m(what);
  if (!m.empty() && m[0] == '[') {
    const size_t close = m.find("] ");
    if (close != std::string::npos) m.erase(0, close + 2);
  }
  return m;
}

}  // namespace alpa
