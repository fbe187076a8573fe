// The text form of an assignment (see assignment_text.h).
#include "assignment_text.h"

#include <cstdio>

#include <nlohmann/json.hpp>

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
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_array()) {
    return "assignment must look like \"[0, 0, 2, 1, 0]\"";
  }
  assignment->reserve(parsed.size());
  for (size_t node = 0; node < parsed.size(); ++node) {
    const nlohmann::json& entry = parsed[node];
    if (!entry.is_number_integer() || entry.get<int64_t>() < INT32_MIN ||
        entry.get<int64_t>() > INT32_MAX) {
      return "assignment entry " + std::to_string(node) + " is not a strategy index";
    }
    assignment->push_back(static_cast<int32_t>(entry.get<int64_t>()));
  }
  return "";
}

std::string ReadAssignmentArgument(const std::string& argument, std::string* text,
                                   std::string* source) {
  // A large assignment (65,000 nodes take about 200 KB) exceeds the operating system's limit on
  // the size of a command line: it comes from a file or from stdin instead.
  if (argument == "-") {
    *source = "stdin";
    if (!ReadStream(stdin, text)) return "cannot read the assignment from stdin";
    return "";
  }
  if (!argument.empty() && argument[0] == '@') {
    *source = argument.substr(1);
    if (source->empty()) return "assignment: @ needs a file name (@assignment.txt)";
    std::string reason;
    if (!ReadFile(*source, text, &reason)) {
      return "cannot read assignment file " + *source + ": " + reason;
    }
    return "";
  }
  source->clear();
  *text = argument;
  return "";
}

}  // namespace alpa_cli
