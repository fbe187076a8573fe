// alpa.h alone, then alpa_experimental.h, as C++17: must compile with strict warnings (-Wpadded
// included) and without a C++ wrapper.
#include "alpa.h"
#include "alpa_experimental.h"

int alpa_headertest_cxx();
int alpa_headertest_cxx() {
  alpa_progress progress{};
  const alpa_manual_plan spec = ALPA_MANUAL_PLAN_INIT;  // and valid C++ (no narrowing)
  progress.struct_size = sizeof(progress);
  return ALPA_OK + ALPA_SOLVE_OPTIMAL + static_cast<int>(progress.struct_size > 0) + spec.version;
}
