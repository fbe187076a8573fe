// libFuzzer target: the IOPDDL reader (plain and gzip input) and the writers behind it.
#include <cstddef>
#include <cstdint>

#include "fuzz_round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  alpa::fuzz::FuzzReader(data, size, alpa::ProblemFormat::kIopddl);
  return 0;
}
