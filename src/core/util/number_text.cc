#include "core/util/number_text.h"

#include <cstdio>

namespace alpa {

std::string ExactDoubleText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace alpa
