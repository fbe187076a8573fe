// Layer markers of an imported step from the op_name metadata (docs/hlo-import.md):
//   - a name scope "layers_N", "layer_N", "blocks_N", "block_N" or "h_N" anywhere in an op's
//     op_name ("jit(step)/transpose(jvp(layers_3))/dot_general") marks it layer N;
//   - so does a pytree path or scope that names one of those words and then the index N
//     ("params['layers'][3]['kernel']", "jit(step)/layers/3/dot_general");
//   - an op without a marker takes the largest layer of its operands; one without marked
//     operands (a constant, an unmarked parameter) the smallest layer of its users; else 0.
// Without any marker every op is layer 0, and the planner's clustering cuts the layers (the
// CLI warns, as for a JSON graph without markers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "import/hlo/hlo_to_graph.h"

namespace alpa {

// The layer an op_name marks, if any (the first marker in it).
std::optional<int32_t> LayerMarker(const std::string& op_name);

void AssignLayers(HloImport& import);

}  // namespace alpa
