// Lookups over the parsed HLO module.
#include "import/hlo/hlo_ast.h"

namespace alpa {
namespace {

const HloAttribute* FindIn(const std::vector<HloAttribute>& attributes, const std::string& name) {
  for (const HloAttribute& attribute : attributes) {
    if (attribute.name == name) return &attribute;
  }
  return nullptr;
}

}  // namespace

const HloAttribute* HloInstruction::FindAttribute(const std::string& attribute_name) const {
  return FindIn(attributes, attribute_name);
}

const HloInstruction& HloComputation::root() const {
  for (const HloInstruction& instruction : instructions) {
    if (instruction.is_root) return instruction;
  }
  return instructions.back();  // the parser refuses an empty computation
}

const HloAttribute* HloModule::FindAttribute(const std::string& attribute_name) const {
  return FindIn(attributes, attribute_name);
}

const HloComputation* HloModule::entry() const {
  for (const HloComputation& computation : computations) {
    if (computation.is_entry) return &computation;
  }
  return computations.empty() ? nullptr : &computations.back();
}

const HloComputation* HloModule::FindComputation(const std::string& computation_name) const {
  for (const HloComputation& computation : computations) {
    if (computation.name == computation_name) return &computation;
  }
  return nullptr;
}

}  // namespace alpa
