// HloModule -> the IR ops of its ENTRY computation, with `call`s inlined: what the importer's
// later steps (roles, phases, layers: hlo_training.h, hlo_layers.h) work on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "import/hlo/hlo_ast.h"
#include "import/hlo/hlo_attributes.h"

namespace alpa {

struct HloOutput {
  int32_t id = -1;                    // the IR op
  std::vector<int64_t> output_index;  // its path in the ROOT tuple ({} for a non-tuple ROOT)
};

struct HloImport {
  Graph graph;  // valid; roles, phases, layers, aliases not yet assigned
  // Per op: the op_name of the instruction's metadata ("" if none).
  std::vector<std::string> op_names;
  // The entry parameters' ops: op i is parameter(i).
  int32_t parameter_count = 0;
  std::vector<HloOutput> outputs;  // the ROOT's arrays, flattened in order
  std::vector<HloAlias> aliases;   // the module's input_output_alias
};

Result<HloImport> LowerHloModule(const HloModule& module);

}  // namespace alpa
