/* alpa.h alone, as C99: every declaration must be valid C with strict warnings. */
#include "alpa.h"

int alpa_headertest_c(void);
int alpa_headertest_c(void) {
  alpa_progress progress;
  alpa_manual_plan spec = ALPA_MANUAL_PLAN_INIT; /* the initializer is valid C99 */
  progress.struct_size = sizeof(progress);
  progress.version = 1;
  return ALPA_OK + ALPA_SOLVE_OPTIMAL + (int)progress.version + (int)(ALPA_FORBIDDEN_COST > 0) +
         (int)spec.version;
}
