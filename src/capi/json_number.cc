#include "capi/json_number.h"

#include <cmath>
#include <cstdint>

namespace alpa::capi {

nlohmann::json JsonNumber(long double value) {
  if (!std::isfinite(value)) return nullptr;
  constexpr long double kTwoTo63 = 9223372036854775808.0L;
  if (value == std::floor(value) && std::fabs(value) < kTwoTo63) {
    return static_cast<int64_t>(value);
  }
  return static_cast<double>(value);
}

}  // namespace alpa::capi
