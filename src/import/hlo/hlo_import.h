// The HLO importer's entry points: XLA HLO text (as `jax.jit(step).lower(...).as_text(
// dialect="hlo")` or `compiler_ir("hlo").as_hlo_text()` prints it) -> a validated operator
// graph with roles, phases, aliases and layer markers (docs/hlo-import.md).
// Errors: kParse for text that is not HLO ("line L, column C: ..."), kUnsupported for an
// instruction the IR cannot express ("line 40, column 3: instruction "while.5" (while): loops
// are not supported: ... unroll ..."), kIo when the file cannot be read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/ir/graph.h"
#include "core/util/bounded_input.h"
#include "core/util/status.h"

namespace alpa {

Result<Graph> ImportHloText(std::string_view text);
// Reads the file (at most max_input_bytes) and imports it; messages start with the path.
Result<Graph> ReadHloFile(const std::string& path,
                          uint64_t max_input_bytes = kDefaultMaxInputBytes);

}  // namespace alpa
