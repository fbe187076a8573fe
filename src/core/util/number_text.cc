#include "core/util/number_text.h"

#include <cstdio>

namespace alpa {

std::string ExactDoubleText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string ByteSizeText(int64_t bytes) {
  constexpr double kKiB = 1024.0;
  const double magnitude = bytes < 0 ? -static_cast<double>(bytes) : static_cast<double>(bytes);
  if (magnitude < kKiB) return std::to_string(bytes) + " bytes";
  const char* unit = " GiB";
  double scale = kKiB * kKiB * kKiB;
  if (magnitude < kKiB * kKiB) {
    unit = " KiB";
    scale = kKiB;
  } else if (magnitude < kKiB * kKiB * kKiB) {
    unit = " MiB";
    scale = kKiB * kKiB;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f%s", static_cast<double>(bytes) / scale, unit);
  return buf;
}

std::string ExactByteSizeText(int64_t bytes) {
  const std::string text = ByteSizeText(bytes);
  if (bytes > -1024 && bytes < 1024) return text;
  return text + " (" + std::to_string(bytes) + " bytes)";
}

}  // namespace alpa
