/* alpa.h alone, then alpa_experimental.h, as C99: every declaration must be valid C with strict
 * warnings, and no public struct may have implicit padding (-Wpadded): a binding generator that
 * lays structs out field by field must get the C layout. */
#include "alpa.h"
#include "alpa_experimental.h"

int alpa_headertest_c(void);
int alpa_headertest_c(void) {
  alpa_progress progress;
  alpa_manual_plan spec = ALPA_MANUAL_PLAN_INIT; /* the initializer is valid C99 */
  progress.struct_size = sizeof(progress);
  progress.version = 1;
  return ALPA_OK + ALPA_SOLVE_OPTIMAL + (int)progress.version + (int)(ALPA_FORBIDDEN_COST > 0) +
         (int)spec.version;
}
