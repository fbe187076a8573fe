// Small pieces shared by the JSON readers (problems, graphs, clusters); not part of any API.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace alpa {

// Rejects text whose arrays and objects nest deeper than `max_depth`, before it is parsed, so
// that nothing downstream (parser stacks, recursive visitors of the DOM) can be driven into deep
// recursion. Brackets inside strings do not count; the text need not be valid JSON.
// kParse "<what>: JSON nesting deeper than <max_depth> levels at byte <offset>".
Status CheckJsonNesting(std::string_view bytes, int max_depth, std::string_view what);

// An nlohmann exception's message without its "[json.exception.parse_error.101] " prefix.
std::string JsonErrorMessage(const char* what);

}  // namespace alpa
