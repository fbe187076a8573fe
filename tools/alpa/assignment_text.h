// The text form of an assignment (one strategy index per node), as IOPDDL prints it:
// "[0, 0, 2, 1, 0]". `alpa solve` writes it, `alpa evaluate` reads it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace alpa_cli {

// "[0, 0, 2, 1, 0]"; "[]" for an empty assignment.
std::string FormatAssignmentText(const std::vector<int32_t>& assignment);

// Parses an assignment with the library's parser (alpa_assignment_parse): "" on success, else
// its message naming the position ("assignment: entry 1: expected a non-negative integer at
// character 4").
std::string ParseAssignmentText(const std::string& text, std::vector<int32_t>* assignment);

// The assignment argument of `alpa evaluate`: "@PATH" reads the file PATH, "-" reads stdin,
// anything else is the assignment itself. Fills `text` and `source` (the file name, "stdin", or
// "" for the argument itself); "" on success, else the message naming the file. A file or stdin
// may hold at most `max_bytes`.
std::string ReadAssignmentArgument(const std::string& argument, int64_t max_bytes,
                                   std::string* text, std::string* source);

}  // namespace alpa_cli
