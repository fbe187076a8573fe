/* C trampolines between libalpa's progress callbacks and the Go functions exported in
 * callbacks.go. user_data carries a runtime/cgo.Handle (an integer), never a Go pointer. */
#include <stdint.h>

#include "_cgo_export.h"
#include "alpa.h"

static int32_t alpa_go_solve_trampoline(void* user_data, const alpa_progress* progress) {
  return alpaGoSolveProgress((uintptr_t)user_data, (alpa_progress*)progress);
}

static int32_t alpa_go_plan_trampoline(void* user_data, const alpa_plan_progress* progress) {
  return alpaGoPlanProgress((uintptr_t)user_data, (alpa_plan_progress*)progress);
}

int32_t alpa_go_solve_options_set_progress(alpa_solve_options* options, uintptr_t handle,
                                           alpa_error** err) {
  return alpa_solve_options_set_progress(options, handle ? alpa_go_solve_trampoline : NULL,
                                         (void*)handle, err);
}

int32_t alpa_go_plan_options_set_progress(alpa_plan_options* options, uintptr_t handle,
                                          alpa_error** err) {
  return alpa_plan_options_set_progress(options, handle ? alpa_go_plan_trampoline : NULL,
                                        (void*)handle, err);
}
