// Lowering HLO instructions to IR ops through the GraphBuilder: the values of instructions
// (an op id, or a tuple of values), constants whose value is known (pad values, reduce
// initial values, dynamic-slice starts), and `call`s inlined. hlo_lower_ops.cc holds one
// function per opcode family; hlo_to_graph.cc drives the computations.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/graph_builder.h"
#include "core/util/status.h"
#include "import/hlo/hlo_ast.h"

namespace alpa {

// An instruction's value: an IR op (array shapes) or a tuple of values.
struct HloValue {
  int32_t id = -1;
  bool is_tuple = false;
  std::vector<HloValue> elements;
};

struct HloLowering {
  const HloModule* module = nullptr;
  GraphBuilder builder;
  // Per IR op: the HLO op_name metadata of the instruction that made it ("" if none).
  std::vector<std::string> op_names;
  // The source of the `call` instruction whose computation is being lowered ("" in ENTRY):
  // the ops of an inlined computation are sourced under it (JAX prints a nested jit's
  // instructions without the caller's name stack).
  std::string caller_source;
  // IR ops whose every element is known (splat constants and what is derived from them by
  // convert, broadcast and reshape).
  std::map<int32_t, double> known_splats;
  // Computations being lowered (a `call` cycle would never end).
  std::vector<std::string> call_stack;
};

// kUnsupported / kParse "line L, column C: instruction "name" (opcode): <message>".
Status InstructionError(const HloInstruction& instruction, const std::string& message,
                        StatusCode code = StatusCode::kUnsupported);

// The IR dtype of an HLO element type ("f32" -> kF32); an error for types the IR lacks.
Result<DType> ElementDType(const HloInstruction& instruction, const std::string& element_type);

// Lowers one instruction (not parameter, not call: hlo_to_graph.cc handles those) whose
// operands are already lowered.
Result<HloValue> LowerInstruction(HloLowering& lowering, const HloInstruction& instruction,
                                  const std::vector<HloValue>& operands);

// Lowers `computation` with its parameters bound to `arguments`; the ROOT's value.
Result<HloValue> LowerComputation(HloLowering& lowering, const HloComputation& computation,
                                  const std::vector<HloValue>& arguments);

}  // namespace alpa
