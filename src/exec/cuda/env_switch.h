// The environment variables that turn the CUDA runner's features on and off (ALPA_CUDA_FUSION,
// ALPA_CUDA_MULTI_OUTPUT, ...: docs/executor.md), read the same way everywhere.
#pragma once

#include <cstdlib>
#include <string>

namespace alpa {
namespace cuda {

// A feature on by default: off only where `variable` is set to "0".
inline bool SwitchedOnByDefault(const char* variable) {
  const char* value = std::getenv(variable);
  return value == nullptr || std::string(value) != "0";
}

// A feature off by default: on only where `variable` is set to "1".
inline bool SwitchedOn(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr && std::string(value) == "1";
}

}  // namespace cuda
}  // namespace alpa
