// The attribute table shared by the graph JSON reader (graph_json.cc) and writer
// (graph_json_writer.cc); not part of any API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace alpa::graph_json_internal {

inline constexpr const char* kFormatName = "alpa-graph";
inline constexpr int64_t kFormatVersion = 1;

// Every list-valued attribute's JSON name, in the order the writer emits them.
inline constexpr const char* kListAttrs[] = {
    "dims",       "lhs_batch",        "rhs_batch",    "lhs_contracting", "rhs_contracting",
    "starts",     "limits",           "strides",      "window",          "padding_lo",
    "padding_hi", "padding_interior", "lhs_dilation", "rhs_dilation"};

// The list attribute called `name` (one of kListAttrs); nullptr for any other name.
const std::vector<int64_t>* ListAttr(const OpAttrs& a, const std::string& name);
std::vector<int64_t>* ListAttr(OpAttrs& a, const std::string& name);

}  // namespace alpa::graph_json_internal
