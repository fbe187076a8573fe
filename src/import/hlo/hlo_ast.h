// The parsed form of XLA's HLO text (what `jax.jit(f).lower(...).as_text(dialect="hlo")` and
// `compiler_ir("hlo").as_hlo_text()` print): a module of computations of instructions. Kept
// close to the text: attribute values stay as their source text and are interpreted by the
// importer (hlo_attributes.h), so the parser accepts every attribute XLA may print.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace alpa {

// Where a construct starts in the text; both 1-based.
struct HloLocation {
  int64_t line = 1;
  int64_t column = 1;
};

// An array shape ("f32[3,4]{1,0}": the layout is dropped) or a tuple of shapes.
struct HloShape {
  bool is_tuple = false;
  std::string element_type;        // "f32", "s32", "pred", ... (array shapes)
  std::vector<int64_t> dims;       // array shapes
  std::vector<HloShape> elements;  // tuple shapes
};

struct HloAttribute {
  std::string name;
  std::string value;  // the source text after '=' ("{1,0}", "region_0.1", "\"x\"")
  HloLocation location;
};

struct HloInstruction {
  std::string name;  // without a leading '%'
  HloShape shape;
  std::string opcode;
  // Operand instruction names; for parameter, constant and iota the raw text between the
  // parentheses instead ("0", "{ {1}, {2} }", "").
  std::vector<std::string> operands;
  std::string literal;
  std::vector<HloAttribute> attributes;
  bool is_root = false;
  HloLocation location;

  // The attribute's value, or nullptr.
  const HloAttribute* FindAttribute(const std::string& attribute_name) const;
};

struct HloComputation {
  std::string name;
  bool is_entry = false;
  std::vector<HloInstruction> instructions;
  HloLocation location;

  // The ROOT instruction (the last one when none is marked, as XLA does).
  const HloInstruction& root() const;
};

struct HloModule {
  std::string name;
  // Header attributes ("input_output_alias", "entry_computation_layout", ...).
  std::vector<HloAttribute> attributes;
  std::vector<HloComputation> computations;

  const HloAttribute* FindAttribute(const std::string& attribute_name) const;
  // The ENTRY computation (the last one when none is marked, as XLA does), or nullptr if none.
  const HloComputation* entry() const;
  const HloComputation* FindComputation(const std::string& computation_name) const;
};

}  // namespace alpa
