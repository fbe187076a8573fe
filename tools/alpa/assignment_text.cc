// The text form of an assignment (see assignment_text.h).
#include "assignment_text.h"

#include <cstdio>

#include "alpa.h"
#include "cli_output.h"

namespace alpa_cli {

std::string FormatAssignmentText(const std::vector<int32_t>& assignment) {
  std::string text = "[";
  for (size_t node = 0; node < assignment.size(); ++node) {
    if (node > 0) text += ", ";
    text += std::to_string(assignment[node]);
  }
  return text + "]";
}

std::string ParseAssignmentText(const std::string& text, std::vector<int32_t>* assignment) {
  assignment->clear();
  alpa_error* err = nullptr;
  const int64_t count = alpa_assignment_parse(text.data(), text.size(), nullptr, 0, &err);
  if (count < 0) {
    const std::string message = alpa_error_message(err);
    alpa_error_free(err);
    return message;
  }
  assignment->resize(static_cast<size_t>(count));
  alpa_assignment_parse(text.data(), text.size(), assignment->data(), count, nullptr);
  return "";
}

std::string ReadAssignmentArgument(const std::string& argument, int64_t max_bytes,
                                   std::string* text, std::string* source) {
  // A large assignment (65,000 nodes take about 200 KB) exceeds the operating system's limit on
  // the size of a command line: it comes from a file or from stdin instead.
  if (argument == "-") {
    *source = "stdin";
    std::string reason;
    if (!ReadStream(stdin, text, max_bytes, &reason)) {
      return "cannot read the assignment from stdin: " + reason;
    }
    return "";
  }
  if (!argument.empty() && argument[0] == '@') {
    *source = argument.substr(1);
    if (source->empty()) return "assignment: @ needs a file name (@assignment.txt)";
    std::string reason;
    if (!ReadFile(*source, text, max_bytes, &reason)) {
      return "cannot read assignment file " + *source + ": " + reason;
    }
    return "";
  }
  source->clear();
  *text = argument;
  return "";
}

}  // namespace alpa_cli
