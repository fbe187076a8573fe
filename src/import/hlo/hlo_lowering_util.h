// Helpers shared by the lowerings of hlo_lower_ops.cc, hlo_lower_windows.cc and
// hlo_lower_indexing.cc, and the lowerings each of those files provides.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "import/hlo/hlo_lowering.h"

namespace alpa {

HloValue Array(int32_t id);
// "f32[2, 3]".
std::string ShapeText(DType dtype, const Dims& dims);
// The builder's first error, as an error of this instruction.
Status BuilderError(const HloLowering& lowering, const HloInstruction& instruction);
Result<const HloAttribute*> RequiredAttribute(const HloInstruction& instruction,
                                              const std::string& name);
// An attribute's integer list ({} when absent and `optional`).
Result<Dims> IntListAttribute(const HloInstruction& instruction, const std::string& name,
                              bool optional = false);
// A one-integer attribute ("index=2", "iota_dimension=0").
Result<int64_t> SingleIndexInteger(const HloInstruction& instruction, const std::string& name);
// Exactly `count` array operands.
Status ExpectOperands(const HloInstruction& instruction, const std::vector<HloValue>& operands,
                      size_t count);
// The known value of a splat op, if any; RequireKnown: an error naming `what` if unknown.
std::optional<double> KnownSplat(const HloLowering& lowering, int32_t id);
Result<double> RequireKnown(const HloLowering& lowering, const HloInstruction& instruction,
                            int32_t id, const std::string& what);
// What a two-parameter reducer computation (attribute `attribute`: to_apply, select, scatter)
// computes: "add", "maximum", "compare-GE", ... ("" if it is not one op of its parameters).
std::string ReducerOpcode(const HloLowering& lowering, const HloInstruction& instruction,
                          const std::string& attribute);
bool IsIdentity(const Dims& permutation);

// hlo_lower_windows.cc
Result<HloValue> LowerReduce(HloLowering& lowering, const HloInstruction& instruction,
                             const std::vector<HloValue>& operands);
Result<HloValue> LowerReduceWindow(HloLowering& lowering, const HloInstruction& instruction,
                                   const std::vector<HloValue>& operands);
Result<HloValue> LowerSelectAndScatter(HloLowering& lowering, const HloInstruction& instruction,
                                       const std::vector<HloValue>& operands);
Result<HloValue> LowerConvolution(HloLowering& lowering, const HloInstruction& instruction,
                                  const std::vector<HloValue>& operands);

// hlo_lower_indexing.cc
Result<HloValue> LowerGather(HloLowering& lowering, const HloInstruction& instruction,
                             const std::vector<HloValue>& operands);
Result<HloValue> LowerScatter(HloLowering& lowering, const HloInstruction& instruction,
                              const std::vector<HloValue>& operands);
Result<HloValue> LowerDynamicSlice(HloLowering& lowering, const HloInstruction& instruction,
                                   const std::vector<HloValue>& operands);

}  // namespace alpa
