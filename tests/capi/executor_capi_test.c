/* The executor through the C ABI, from C: a manual plan of a small MLP on 4 devices (dp 2 x
 * tp 2, 2 microbatches) trains for 3 steps equal to one device; parameters set by name go in and
 * come out whole; the loss goes down on a fixed batch; the program text lists collectives; bad
 * names, counts and configs are clear errors; a version-1 config still works; the CUDA backend
 * runs or answers ALPA_ERR_UNSUPPORTED. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpa_experimental.h"
#include "check.h"

#define MLP "mlp:layers=3,hidden=8,batch=8,dtype=f32"

static void print_error(alpa_error* err) {
  if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
  alpa_error_free(err);
}

static alpa_plan* make_plan(void) {
  alpa_cluster* c = NULL;
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  alpa_manual_plan spec = ALPA_MANUAL_PLAN_INIT;
  spec.data_parallel = 2;
  spec.tensor_parallel = 2;
  spec.pipeline_parallel = 1;
  spec.microbatches = 2;
  /* 4 of the host's 8 devices. */
  CHECK(alpa_cluster_create_preset(&c, "p3.16xlarge:devices_per_host=4", 0, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_model_plan_manual(&plan, MLP, c, &spec, NULL, &err) == ALPA_OK);
  print_error(err);
  alpa_cluster_destroy(c);
  return plan;
}

static void check_equal_to_one_device(const alpa_plan* plan) {
  alpa_executor_config config = ALPA_EXECUTOR_CONFIG_INIT;
  alpa_executor* ex = NULL;
  alpa_error* err = NULL;
  int i;
  config.check = 1;
  CHECK(alpa_executor_create(&ex, plan, &config, &err) == ALPA_OK);
  print_error(err);
  if (ex == NULL) return;
  CHECK(alpa_executor_devices(ex) == 4);
  for (i = 0; i < 3; ++i) {
    alpa_step_result r = ALPA_STEP_RESULT_INIT;
    err = NULL;
    CHECK(alpa_executor_run_step(ex, &r, sizeof r, &err) == ALPA_OK);
    print_error(err);
    CHECK(r.struct_size == sizeof r);
    CHECK(r.step == i);
    CHECK(r.passed == 1);
    CHECK(isfinite(r.loss) && r.loss > 0);
    CHECK(fabs(r.loss - r.reference_loss) <= 4e-5 + 1e-5 * fabs(r.reference_loss));
    CHECK(r.loss_error <= 1.0 && r.parameter_error <= 1.0);
    CHECK(r.peak_bytes > 0 && r.planned_bytes > 0);
  }
  alpa_executor_destroy(ex);
}

/* Parameters set by name come back whole; a fixed batch trained with the default Adam makes the
 * loss go down. */
static void check_parameters_and_inputs(const alpa_plan* plan) {
  alpa_executor* ex = NULL;
  alpa_error* err = NULL;
  double w[64], back[64], x[64], y[64];
  double first = 0, last = 0;
  int64_t n;
  int i;
  CHECK(alpa_executor_create(&ex, plan, NULL, &err) == ALPA_OK);
  print_error(err);
  if (ex == NULL) return;
  for (i = 0; i < 64; ++i) w[i] = 0.01 * (double)(i % 7) - 0.03;
  err = NULL;
  CHECK(alpa_executor_set_parameter(ex, "fc0.w", w, 64, &err) == ALPA_OK);
  print_error(err);
  n = alpa_executor_get_parameter(ex, "fc0.w", NULL, 0, NULL);
  CHECK(n == 64);
  CHECK(alpa_executor_get_parameter(ex, "fc0.w", back, 64, NULL) == 64);
  for (i = 0; i < 64; ++i) CHECK(fabs(back[i] - (double)(float)w[i]) < 1e-12);
  for (i = 0; i < 64; ++i) {
    x[i] = 0.1 * (double)(i % 5);
    y[i] = 0.05 * (double)(i % 3);
  }
  for (i = 0; i < 20; ++i) {
    alpa_step_result r = ALPA_STEP_RESULT_INIT;
    CHECK(alpa_executor_set_input(ex, "x", x, 64, NULL) == ALPA_OK);
    CHECK(alpa_executor_set_input(ex, "y", y, 64, NULL) == ALPA_OK);
    CHECK(alpa_executor_run_step(ex, &r, sizeof r, NULL) == ALPA_OK);
    CHECK(isnan(r.reference_loss));
    if (i == 0) first = r.loss;
    last = r.loss;
  }
  CHECK(last < 0.9 * first);
  CHECK(alpa_executor_get_parameter(ex, "fc0.w", back, 64, NULL) == 64);
  CHECK(memcmp(back, w, sizeof w) != 0);
  /* Misuse. */
  err = NULL;
  CHECK(alpa_executor_set_parameter(ex, "no.such", w, 64, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "no.such"));
  err = NULL;
  CHECK(alpa_executor_set_parameter(ex, "fc0.w", w, 63, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "64 values"));
  err = NULL;
  CHECK(alpa_executor_set_input(ex, "x", x, 3, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "'x'"));
  err = NULL;
  CHECK(alpa_executor_get_parameter(ex, "nope", NULL, 0, &err) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "nope"));
  CHECK(alpa_executor_get_parameter(ex, "fc0.w", NULL, 5, NULL) == -ALPA_ERR_INVALID_ARGUMENT);
  alpa_executor_destroy(ex);
}

static void check_program_text_and_config(const alpa_plan* plan) {
  alpa_executor* ex = NULL;
  alpa_executor_config config;
  alpa_buffer* text = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_executor_config_init(&config, sizeof config, NULL) == ALPA_OK);
  CHECK(config.schedule == ALPA_SCHEDULE_1F1B && config.rtol == 1e-5 && config.atol == 4e-5);
  config.schedule = 7;
  CHECK(alpa_executor_create(&ex, plan, &config, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "config.schedule"));
  CHECK(ex == NULL);
  /* 4, the value after ALPA_SCHEDULE_INTERLEAVED_1F1B, is no schedule either; ZB-H1 is one. */
  config.schedule = ALPA_SCHEDULE_INTERLEAVED_1F1B + 1;
  err = NULL;
  CHECK(alpa_executor_create(&ex, plan, &config, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "config.schedule"));
  CHECK(ex == NULL);
  /* Interleaved 1F1B runs only a plan made for it (several stages per device group). */
  config.schedule = ALPA_SCHEDULE_INTERLEAVED_1F1B;
  err = NULL;
  CHECK(alpa_executor_create(&ex, plan, &config, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "interleaved-1f1b runs a plan made for it"));
  CHECK(ex == NULL);
  config.schedule = ALPA_SCHEDULE_ZB_H1;
  err = NULL;
  CHECK(alpa_executor_create(&ex, plan, &config, &err) == ALPA_OK);
  print_error(err);
  alpa_executor_destroy(ex);
  ex = NULL;
  config.schedule = ALPA_SCHEDULE_GPIPE;
  err = NULL;
  CHECK(alpa_executor_create(&ex, plan, &config, &err) == ALPA_OK);
  print_error(err);
  if (ex == NULL) return;
  err = NULL;
  CHECK(alpa_executor_program_text(&text, ex, 1, &err) == ALPA_OK);
  print_error(err);
  if (text != NULL) {
    CHECK(strstr(alpa_buffer_data(text), "device 1: stage 0") != NULL);
    CHECK(strstr(alpa_buffer_data(text), "all-reduce") != NULL);
    CHECK(strstr(alpa_buffer_data(text), "dot_general") != NULL);
    CHECK(strstr(alpa_buffer_data(text), "device 0:") == NULL);
    alpa_buffer_free(text);
  }
  err = NULL;
  CHECK(alpa_executor_program_text(&text, ex, 9, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "device 9"));
  CHECK(alpa_executor_create(NULL, plan, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_executor_devices(NULL) == -1);
  alpa_executor_destroy(ex);
}

/* Version 1 of alpa_executor_config (a caller built before backend / allow_tf32 existed: a
 * struct ending at atol) still works, on the CPU backend. */
typedef struct config_v1 {
  size_t struct_size;
  int32_t version;
  int32_t schedule;
  uint64_t seed;
  int32_t check;
  int32_t devices;
  double rtol, atol;
} config_v1;

static void check_version_1_config(const alpa_plan* plan) {
  config_v1 old;
  alpa_executor* ex = NULL;
  alpa_error* err = NULL;
  memset(&old, 0x5a, sizeof old);
  CHECK(alpa_executor_config_init((alpa_executor_config*)&old, sizeof old, NULL) == ALPA_OK);
  CHECK(old.struct_size == sizeof old && old.version == 1 && old.rtol == 1e-5);
  CHECK(alpa_executor_create(&ex, plan, (const alpa_executor_config*)&old, &err) == ALPA_OK);
  print_error(err);
  CHECK(alpa_executor_gpu(ex, 0) == -1);
  alpa_executor_destroy(ex);
}

/* The CUDA backend: runs where there is a GPU (each device on one), else
 * ALPA_ERR_UNSUPPORTED with the reason; a backend value out of range is an invalid argument. */
static void check_backend(const alpa_plan* plan) {
  alpa_executor_config config = ALPA_EXECUTOR_CONFIG_INIT;
  alpa_executor* ex = NULL;
  alpa_error* err = NULL;
  int32_t status;
  CHECK(config.version == 2 && config.backend == ALPA_BACKEND_CPU && config.allow_tf32 == 0);
  config.backend = 5;
  CHECK(alpa_executor_create(&ex, plan, &config, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "config.backend"));
  config.backend = ALPA_BACKEND_CUDA;
  err = NULL;
  status = alpa_executor_create(&ex, plan, &config, &err);
  if (status == ALPA_OK) {
    CHECK(alpa_executor_gpu(ex, 0) >= 0 && alpa_executor_gpu(ex, 3) >= 0);
    CHECK(alpa_executor_gpu(ex, 4) == -1);
  } else {
    CHECK(status == ALPA_ERR_UNSUPPORTED);
    CHECK(ex == NULL);
    CHECK(error_mentions(err, "CUDA"));
  }
  alpa_executor_destroy(ex);
  CHECK(alpa_executor_gpu(NULL, 0) == -1);
}

int main(void) {
  alpa_plan* plan = make_plan();
  if (plan != NULL) {
    check_equal_to_one_device(plan);
    check_parameters_and_inputs(plan);
    check_program_text_and_config(plan);
    check_version_1_config(plan);
    check_backend(plan);
  }
  alpa_plan_destroy(plan);
  return check_summary();
}
