// The JSON form of an operator graph (docs/graph-format.md, docs/graph.schema.json):
//   {"format": "alpa-graph", "version": 1,
//    "ops": [{"id": 0, "kind": "parameter", "name": "w", "dtype": "f32", "shape": [8, 16],
//             "role": "parameter", "phase": "forward", "layer": 0}, ...],
//    "outputs": [12, 40]}
// Writing then reading gives an equal Graph (operator==): doubles are written in their shortest
// round-trip form, non-finite constants as the strings "inf", "-inf", "nan".
// Unknown fields are rejected (a misspelt attribute must not silently become its default).
// Errors: malformed JSON, wrong types and unknown names are kParse with the JSON path
// ("graph.ops[3] 'w1': shape[1]: expected an integer"); a well-formed but inconsistent graph is
// kInvalidGraph from the same checks as ValidateGraph, naming the op as
// "graph.ops[12] 'attn.qkv' (dot_general): contracting dim sizes differ ...".
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/ir/graph.h"
#include "core/util/bounded_input.h"
#include "core/util/status.h"

namespace alpa {

// Whether a kind's result shape / dtype is an input to type inference (given by the caller)
// rather than inferred from the operands. Shape: parameter, constant, iota, broadcast_in_dim,
// reshape. DType: parameter, constant, iota, convert.
bool ShapeIsGiven(OpKind kind);
bool DTypeIsGiven(OpKind kind);

// The attributes an op of `kind` starts from when a reader leaves them out: OpAttrs{} except
// select_and_scatter, which is always max-based (reduce = kMax, as GraphBuilder makes it).
OpAttrs DefaultAttrs(OpKind kind);

// Parses and validates a graph. gzip-compressed bytes are inflated first. The decoded text may
// hold at most `max_input_bytes` (core/util/bounded_input.h); running out of memory is
// kOutOfMemory, never an abort.
Result<Graph> ReadGraphBuffer(std::string_view bytes,
                              uint64_t max_input_bytes = kDefaultMaxInputBytes);
// The same from a file, read in pieces (a file that does not start like JSON or gzip fails after
// its first bytes); kIo when it cannot be read (messages start with the path).
Result<Graph> ReadGraphFile(const std::string& path,
                            uint64_t max_input_bytes = kDefaultMaxInputBytes);
// The same from an already parsed JSON value.
Result<Graph> GraphFromJson(const nlohmann::json& json);

// Serializes a graph (validated first: kInvalidGraph if it is not valid). Deterministic: equal
// graphs give identical bytes. One op per line.
Result<std::string> WriteGraphJson(const Graph& graph);

}  // namespace alpa
