// libFuzzer target: the Alpa-format reader and the writers behind it.
#include <cstddef>
#include <cstdint>

#include "fuzz_round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  alpa::fuzz::FuzzReader(data, size, alpa::ProblemFormat::kAlpa);
  return 0;
}
