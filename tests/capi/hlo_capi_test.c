/* XLA HLO text through the C ABI, from C: alpa_graph_read_hlo_file on a real JAX SGD step
 * (tests/fixtures/hlo/sgd_step.hlo: roles, aliases, phases), alpa_graph_read_hlo_buffer on a
 * small module, and the errors (arguments, not HLO, an unsupported instruction). */
#include <stdio.h>
#include <string.h>

#include "alpa.h"
#include "check.h"

static void test_sgd_step_file(const char* golden) {
  char path[4096];
  snprintf(path, sizeof path, "%s/../fixtures/hlo/sgd_step.hlo", golden);
  alpa_graph* g = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_graph_read_hlo_file(&g, path, &err) == ALPA_OK);
  if (g == NULL) {
    alpa_error_free(err);
    return;
  }
  int32_t outputs[16];
  const int64_t n_outputs = alpa_graph_outputs(g, outputs, 16);
  CHECK(n_outputs == 7); /* the loss, then the six updated weights */
  int64_t weights = 0;
  int64_t inputs = 0;
  for (int32_t op = 0; op < 8; ++op) {
    if (alpa_graph_op_role(g, op) == ALPA_ROLE_PARAMETER) ++weights;
    if (alpa_graph_op_role(g, op) == ALPA_ROLE_INPUT) ++inputs;
  }
  CHECK(weights == 6);
  CHECK(inputs == 2);
  CHECK(alpa_graph_op_phase(g, outputs[0]) == ALPA_PHASE_FORWARD);
  for (int64_t i = 1; i < n_outputs && i < 16; ++i) {
    const int32_t target = alpa_graph_op_alias(g, outputs[i]);
    CHECK(target >= 0 && alpa_graph_op_role(g, target) == ALPA_ROLE_PARAMETER);
    CHECK(alpa_graph_op_phase(g, outputs[i]) == ALPA_PHASE_UPDATE);
  }
  alpa_graph_destroy(g);
}

static void test_buffer_and_errors(void) {
  static const char kText[] =
      "HloModule m\nENTRY e {\n  a = f32[2,3] parameter(0)\n"
      "  ROOT t = f32[3,2] transpose(a), dimensions={1,0}\n}\n";
  alpa_graph* g = NULL;
  alpa_error* err = NULL;
  /* Not NUL-terminated: the length bounds the text. */
  CHECK(alpa_graph_read_hlo_buffer(&g, kText, strlen(kText), &err) == ALPA_OK);
  CHECK(alpa_graph_op_count(g) == 2);
  CHECK(alpa_graph_op_kind(g, 1) == ALPA_OP_TRANSPOSE);
  alpa_graph_destroy(g);

  g = NULL;
  CHECK(alpa_graph_read_hlo_buffer(&g, "{\"ops\": []}", 11, &err) == ALPA_ERR_PARSE);
  CHECK(g == NULL);
  CHECK(error_mentions(err, "line 1, column 1: expected \"HloModule\""));
  err = NULL;
  static const char kLoop[] =
      "HloModule m\nc {\n  p = f32[] parameter(0)\n  ROOT l = pred[] compare(p, p), "
      "direction=LT\n}\n"
      "ENTRY e {\n  a = f32[] parameter(0)\n  ROOT w = f32[] while(a), condition=c, body=c\n}\n";
  CHECK(alpa_graph_read_hlo_buffer(&g, kLoop, strlen(kLoop), &err) == ALPA_ERR_UNSUPPORTED);
  CHECK(
      error_mentions(err, "line 8, column 8: instruction \"w\" (while): loops are not supported"));
  err = NULL;
  CHECK(alpa_graph_read_hlo_buffer(NULL, kText, strlen(kText), &err) == ALPA_ERR_INVALID_ARGUMENT);
  alpa_error_free(err);
  err = NULL;
  CHECK(alpa_graph_read_hlo_buffer(&g, NULL, 4, &err) == ALPA_ERR_INVALID_ARGUMENT);
  alpa_error_free(err);
  err = NULL;
  CHECK(alpa_graph_read_hlo_file(&g, "/nonexistent/step.hlo", &err) == ALPA_ERR_IO);
  CHECK(error_mentions(err, "/nonexistent/step.hlo"));
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s GOLDEN_DIR\n", argv[0]);
    return 2;
  }
  test_sgd_step_file(argv[1]);
  test_buffer_and_errors();
  return check_summary();
}
