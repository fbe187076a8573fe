/* The C tests' check harness: CHECK counts passes and failures, check_summary prints the plain
 * "N passed, N failed" line and gives the exit code. Included by one test file each. */
#ifndef ALPA_TESTS_CAPI_CHECK_H
#define ALPA_TESTS_CAPI_CHECK_H

#include <stdio.h>
#include <string.h>

#include "alpa.h"

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++g_passed;                                                              \
    } else {                                                                   \
      ++g_failed;                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* True when err holds a message containing `needle`; frees err. */
static int error_mentions(alpa_error* err, const char* needle) {
  int found = err != NULL && strstr(alpa_error_message(err), needle) != NULL;
  if (err != NULL && !found) fprintf(stderr, "  message was: %s\n", alpa_error_message(err));
  if (err == NULL) fprintf(stderr, "  no error message\n");
  alpa_error_free(err);
  return found;
}

/* Prints "N passed, N failed"; the exit code: 0 when nothing failed. */
static int check_summary(void) {
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

#endif
