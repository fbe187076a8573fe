/* Reading an executable plan JSON through the C ABI, from C: alpa_plan_read_json and
 * alpa_plan_read_file give a plan whose accessors and JSON equal the original's (the cluster and
 * the model name included), and reject corrupted bytes with a message naming the element. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpa.h"
#include "check.h"

#define TINY_MLP "mlp:layers=4,hidden=16,batch=16,dtype=f32"

static void print_error(alpa_error* err) {
  if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
  alpa_error_free(err);
}

static alpa_plan* plan_tiny_mlp(void) {
  alpa_cluster* c = NULL;
  alpa_plan_options* o = NULL;
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_cluster_create_preset(&c, "p3.16xlarge:devices_per_host=4", 0, &err) == ALPA_OK);
  CHECK(alpa_plan_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_THREADS, 2, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, 2, &err) == ALPA_OK);
  CHECK(alpa_model_plan(&plan, TINY_MLP, c, o, &err) == ALPA_OK);
  print_error(err);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
  return plan;
}

/* The plan's JSON at `detail`, as a NUL-terminated copy the caller frees. */
static char* plan_json(const alpa_plan* plan, int32_t detail) {
  alpa_buffer* buffer = NULL;
  alpa_error* err = NULL;
  char* text = NULL;
  CHECK(alpa_plan_to_json(&buffer, plan, detail, &err) == ALPA_OK);
  print_error(err);
  if (buffer == NULL) return NULL;
  text = (char*)malloc(alpa_buffer_size(buffer) + 1);
  memcpy(text, alpa_buffer_data(buffer), alpa_buffer_size(buffer));
  text[alpa_buffer_size(buffer)] = '\0';
  alpa_buffer_free(buffer);
  return text;
}

static void test_round_trip(const alpa_plan* plan, const char* path) {
  char* text = plan_json(plan, 2);
  alpa_plan* read = NULL;
  alpa_error* err = NULL;
  FILE* f = NULL;
  char* again = NULL;
  char* summary = NULL;
  char* summary_again = NULL;
  if (text == NULL) return;
  CHECK(strstr(text, "\"graph\"") != NULL && strstr(text, "\"executable\"") != NULL);
  CHECK(alpa_plan_read_json(&read, text, strlen(text), &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (read != NULL) {
    again = plan_json(read, 2);
    CHECK(again != NULL && strcmp(again, text) == 0); /* cluster and model included */
    summary = plan_json(plan, 0);
    summary_again = plan_json(read, 0);
    CHECK(summary != NULL && summary_again != NULL && strcmp(summary, summary_again) == 0);
    CHECK(alpa_plan_stage_count(read) == alpa_plan_stage_count(plan));
    CHECK(alpa_plan_microbatches(read) == alpa_plan_microbatches(plan));
    CHECK(alpa_plan_iteration_seconds(read) == alpa_plan_iteration_seconds(plan));
    free(again);
    free(summary);
    free(summary_again);
    alpa_plan_destroy(read);
    read = NULL;
  }

  f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f != NULL) {
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    CHECK(alpa_plan_read_file(&read, path, &err) == ALPA_OK);
    print_error(err);
    err = NULL;
    if (read != NULL) {
      again = plan_json(read, 2);
      CHECK(again != NULL && strcmp(again, text) == 0);
      free(again);
      alpa_plan_destroy(read);
    }
    remove(path);
  }
  free(text);
}

static void test_errors(const alpa_plan* plan) {
  char* text = plan_json(plan, 2);
  char* summary = plan_json(plan, 1);
  char* devices = NULL;
  alpa_plan* read = NULL;
  alpa_error* err = NULL;
  if (text == NULL || summary == NULL) return;

  CHECK(alpa_plan_read_json(NULL, text, strlen(text), &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "NULL"));
  err = NULL;
  CHECK(alpa_plan_read_json(&read, NULL, 5, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "NULL"));
  err = NULL;
  /* Truncated. */
  CHECK(alpa_plan_read_json(&read, text, strlen(text) / 2, &err) == ALPA_ERR_PARSE);
  CHECK(error_mentions(err, "plan JSON"));
  err = NULL;
  /* The summary has no graph. */
  CHECK(alpa_plan_read_json(&read, summary, strlen(summary), &err) == ALPA_ERR_PARSE);
  CHECK(error_mentions(err, "graph"));
  err = NULL;
  /* A device id out of the cluster's range (the first stage's devices: the cluster's NVLink
   * links name devices too). */
  devices = strstr(text, "\"stages\":[");
  if (devices != NULL) devices = strstr(devices, "\"devices\":[");
  CHECK(devices != NULL);
  if (devices != NULL) {
    memcpy(devices + strlen("\"devices\":["), "9", 1);
    CHECK(alpa_plan_read_json(&read, text, strlen(text), &err) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "devices[0]"));
    err = NULL;
  }
  CHECK(alpa_plan_read_file(&read, "/nonexistent/plan.json", &err) == ALPA_ERR_IO);
  CHECK(error_mentions(err, "/nonexistent/plan.json"));
  CHECK(read == NULL);
  free(text);
  free(summary);
}

int main(int argc, char** argv) {
  alpa_plan* plan = plan_tiny_mlp();
  (void)argc;
  (void)argv;
  if (plan != NULL) {
    test_round_trip(plan, "plan_read_capi_test.json");
    test_errors(plan);
    alpa_plan_destroy(plan);
  }
  return check_summary();
}
