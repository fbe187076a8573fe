// Interpreting the text of HLO attribute values: integer lists ("{1,0}"), slices
// ("{[1:3:1], [0:6]}"), paddings ("1_0x0_2_1"), windows ("{size=3x3 stride=2x1 pad=1_1x0_1}"),
// convolution dim labels ("b01f_01io->b01f"), metadata's op_name, and the module's
// input_output_alias. Errors are kParse and name the attribute; the importer adds the
// instruction and its line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace alpa {

// "{1,0}" or "{}" (braces optional) -> {1, 0}.
Result<std::vector<int64_t>> ParseIntList(const std::string& text);

struct HloSliceDim {
  int64_t start = 0, limit = 0, stride = 1;
};
Result<std::vector<HloSliceDim>> ParseSliceAttribute(const std::string& text);

struct HloPaddingDim {
  int64_t lo = 0, hi = 0, interior = 0;
};
// "1_0x0_2" or "1_0_1x..." (lo_hi[_interior] per dim).
Result<std::vector<HloPaddingDim>> ParsePadding(const std::string& text);

struct HloWindowDim {
  int64_t size = 1, stride = 1, pad_lo = 0, pad_hi = 0, lhs_dilation = 1, rhs_dilation = 1;
  bool reversal = false;
};
// "{size=3x3 stride=2x1 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=1x2 rhs_reversal=0x0}".
Result<std::vector<HloWindowDim>> ParseWindow(const std::string& text);

// "b01f_01io->b01f": for each operand, where its batch / feature dim and each spatial dim are.
struct HloConvLabels {
  int64_t input_batch = 0, input_feature = 0;
  std::vector<int64_t> input_spatial;
  int64_t kernel_output = 0, kernel_input = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 0;
  std::vector<int64_t> output_spatial;
};
Result<HloConvLabels> ParseConvLabels(const std::string& text);

// The op_name inside metadata={op_name="..." ...} with escapes undone, or "" if none.
std::string MetadataOpName(const std::string& metadata_text);

// One entry of input_output_alias: output tuple path {i, ...} is the updated parameter.
struct HloAlias {
  std::vector<int64_t> output_index;
  int64_t parameter_number = 0;
};
// "{ {1}: (0, {}, may-alias), {2}: (1, {}, must-alias) }". A parameter index path other than
// {} (aliasing inside a tuple parameter) is an error.
Result<std::vector<HloAlias>> ParseInputOutputAlias(const std::string& text);

}  // namespace alpa
