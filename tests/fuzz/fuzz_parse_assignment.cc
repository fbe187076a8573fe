// libFuzzer target: ParseAssignment, and FormatAssignment as its inverse.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/problem/problem_io.h"
#include "fuzz_round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  alpa::Result<std::vector<int32_t>> parsed = alpa::ParseAssignment(text);
  if (!parsed.ok()) {
    if (parsed.status().code() != alpa::StatusCode::kParse) alpa::fuzz::Fail("wrong error code");
    return 0;
  }
  for (int32_t s : parsed.value()) {
    if (s < 0) alpa::fuzz::Fail("a negative strategy was accepted");
  }
  const std::string printed = alpa::FormatAssignment(parsed.value());
  alpa::Result<std::vector<int32_t>> again = alpa::ParseAssignment(printed);
  if (!again.ok() || again.value() != parsed.value()) {
    alpa::fuzz::Fail("FormatAssignment output does not parse back: " + printed);
  }
  return 0;
}
