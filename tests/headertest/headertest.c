/* alpa.h alone, as C99: every declaration must be valid C with strict warnings. */
#include "alpa.h"

int alpa_headertest_c(void);
int alpa_headertest_c(void) {
  alpa_progress progress;
  progress.struct_size = sizeof(progress);
  progress.version = 1;
  return ALPA_OK + ALPA_SOLVE_OPTIMAL + (int)progress.version + (int)(ALPA_FORBIDDEN_COST > 0);
}
