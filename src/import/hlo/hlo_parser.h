// HLO text -> HloModule (hlo_ast.h). Reads the module header (its attributes kept as text:
// input_output_alias, entry_computation_layout, ...), skips the debug-info blocks (FileNames,
// FunctionNames, FileLocations, StackFrames), and parses every computation:
//   [ENTRY] name [(signature) -> shape] {
//     [ROOT] name = shape opcode(operands), attribute=value, ...
//   }
// Shapes are element_type[dims]{layout} (the layout is dropped) or tuples "(s, s, ...)".
// Bounded: nesting deeper than kMaxHloNesting is an error, and the work is linear in the text.
// Errors are kParse "line L, column C: ..." naming what was expected and what was found.
#pragma once

#include <string_view>

#include "core/util/status.h"
#include "import/hlo/hlo_ast.h"

namespace alpa {

Result<HloModule> ParseHloModule(std::string_view text);

}  // namespace alpa
