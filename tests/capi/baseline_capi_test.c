/* Manual plans and the Megatron-LM baseline search through the C ABI, from C:
 * alpa_model_plan_manual gives an ordinary plan with the stated degrees, alpa_model_plan_baseline
 * the fastest grid point (no slower than any manual plan of the grid, its table agreeing with
 * alpa_model_plan_manual), alpa_plan_manual_spec / alpa_plan_baseline_table, the "baseline" JSON
 * object (which alpa_plan_simulate_json still reads), simulation, errors and cancellation. A small
 * GPT on four devices: each call takes well under a second. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alpa_experimental.h"
#include "check.h"

#define SMALL_GPT "gpt:layers=4,hidden=256,heads=4,seq=64,batch=16,vocab=1024"
#define SMALL_GPT_BATCH 16
#define CLUSTER "p3.16xlarge:hosts=1,devices_per_host=4"
#define DEVICES 4

static void print_error(alpa_error* err) {
  if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
  alpa_error_free(err);
}

static double now_seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

static alpa_cluster* make_cluster(void) {
  alpa_cluster* c = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_cluster_create_preset(&c, CLUSTER, 0, &err) == ALPA_OK);
  print_error(err);
  CHECK(alpa_cluster_hosts(c) * alpa_cluster_devices_per_host(c) == DEVICES);
  return c;
}

/* Two threads: quick and repeatable. */
static alpa_plan_options* quick_options(void) {
  alpa_plan_options* o = NULL;
  CHECK(alpa_plan_options_create(&o, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_THREADS, 2, NULL) == ALPA_OK);
  return o;
}

static alpa_manual_plan make_spec(int64_t dp, int64_t tp, int64_t pp, int64_t b) {
  alpa_manual_plan spec = ALPA_MANUAL_PLAN_INIT;
  spec.data_parallel = dp;
  spec.tensor_parallel = tp;
  spec.pipeline_parallel = pp;
  spec.microbatches = b;
  return spec;
}

/* The plan's JSON at `detail` (caller frees); NULL on failure. */
static alpa_buffer* plan_json(const alpa_plan* plan, int32_t detail) {
  alpa_buffer* json = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_plan_to_json(&json, plan, detail, &err) == ALPA_OK);
  print_error(err);
  return json;
}

/* The plan simulates (from the handle and from its detailed JSON) and the simulation's closed
 * form matches the plan's iteration time. */
static void check_simulates(const alpa_plan* plan) {
  alpa_simulation* sim = NULL;
  alpa_simulation* from_json = NULL;
  alpa_buffer* json = plan_json(plan, 1);
  alpa_error* err = NULL;
  double t = alpa_plan_schedule_seconds(plan);
  CHECK(alpa_plan_simulate(&sim, plan, ALPA_SCHEDULE_1F1B, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(sim != NULL && alpa_simulation_iteration_seconds(sim) > 0);
  CHECK(sim != NULL && fabs(alpa_simulation_closed_form_seconds(sim) - t) <= 1e-9 * t);
  CHECK(json != NULL);
  if (json != NULL) {
    /* The "baseline" object is unknown to the simulator's reader and ignored. */
    CHECK(alpa_plan_simulate_json(&from_json, alpa_buffer_data(json), alpa_buffer_size(json),
                                  ALPA_SCHEDULE_1F1B, &err) == ALPA_OK);
    print_error(err);
    CHECK(from_json != NULL &&
          alpa_simulation_planner_seconds(from_json) == alpa_plan_iteration_seconds(plan));
  }
  alpa_simulation_destroy(from_json);
  alpa_simulation_destroy(sim);
  alpa_buffer_free(json);
}

/* The plan's configuration as alpa_plan_manual_spec gives it equals `want`. */
static void check_spec(const alpa_plan* plan, const alpa_manual_plan* want) {
  alpa_manual_plan got;
  alpa_error* err = NULL;
  memset(&got, 0xab, sizeof got);
  CHECK(alpa_plan_manual_spec(&got, sizeof got, plan, &err) == ALPA_OK);
  print_error(err);
  CHECK(got.struct_size == sizeof(alpa_manual_plan) && got.version == 2);
  CHECK(got.data_parallel == want->data_parallel);
  CHECK(got.tensor_parallel == want->tensor_parallel);
  CHECK(got.pipeline_parallel == want->pipeline_parallel);
  CHECK(got.microbatches == want->microbatches);
  CHECK(got.zero_stage == want->zero_stage);
  CHECK(got.remat == want->remat);
  CHECK(got.tensor_inside_host == want->tensor_inside_host);
  CHECK(got.virtual_stages == want->virtual_stages && got.reserved == 0);
}

static alpa_plan* g_manual = NULL; /* dp=2 tp=2 pp=1 B=2, for the baseline's comparison */

static void test_manual(void) {
  alpa_cluster* c = make_cluster();
  alpa_plan_options* o = quick_options();
  alpa_manual_plan spec = make_spec(2, 2, 1, 2);
  alpa_plan* plan = NULL;
  alpa_stage_info info;
  alpa_buffer* json = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &spec, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (plan == NULL) goto done;
  CHECK(alpa_plan_stage_count(plan) == 1);
  CHECK(alpa_plan_microbatches(plan) == 2);
  CHECK(alpa_plan_iteration_seconds(plan) > 0);
  CHECK(alpa_plan_peak_memory_bytes(plan) > 0);
  CHECK(alpa_plan_compile_seconds(plan) >= 0);
  CHECK(alpa_plan_stage(&info, sizeof info, plan, 0, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(info.data_parallel == 2 && info.tensor_parallel == 2 && info.devices == DEVICES);
  CHECK(info.zero == 0 && info.remat == 0);
  check_spec(plan, &spec);
  /* A manual plan has no search table. */
  CHECK(alpa_plan_baseline_table(plan, NULL, 0, sizeof(alpa_baseline_point)) == 0);
  CHECK(alpa_plan_baseline_evaluated(plan) == 0);
  json = plan_json(plan, 0);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"baseline\":{") != NULL);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"kind\":\"manual\"") != NULL);
  CHECK(json != NULL && strstr(alpa_buffer_data(json),
                               "\"config\":\"dp=2 tp=2 pp=1 B=2 zero=0 remat=off\"") != NULL);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"evaluated\"") == NULL);
  alpa_buffer_free(json);
  check_simulates(plan);
  g_manual = plan;
done:
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

/* Two pipeline stages with ZeRO and remat: stages of two devices each, cross-stage transfers. */
static void test_manual_pipeline(void) {
  alpa_cluster* c = make_cluster();
  alpa_plan_options* o = quick_options();
  alpa_manual_plan spec = make_spec(2, 1, 2, 4);
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  int32_t s;
  spec.zero_stage = 1;
  spec.remat = 1;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &spec, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (plan != NULL) {
    CHECK(alpa_plan_stage_count(plan) == 2);
    for (s = 0; s < alpa_plan_stage_count(plan); ++s) {
      alpa_stage_info info;
      CHECK(alpa_plan_stage(&info, sizeof info, plan, s, NULL) == ALPA_OK);
      CHECK(info.devices == 2 && info.data_parallel == 2 && info.tensor_parallel == 1);
      CHECK(info.remat == 1 && info.zero == 1);
    }
    CHECK(alpa_plan_transfers(plan, NULL, 0, sizeof(alpa_transfer)) > 0);
    check_spec(plan, &spec);
    check_simulates(plan);
  }
  alpa_plan_destroy(plan);
  plan = NULL;

  /* Selective recomputation (the attention cores): stage info 2, "selective" in the JSON. */
  spec.remat = 2;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &spec, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (plan != NULL) {
    alpa_buffer* json = plan_json(plan, 0);
    for (s = 0; s < alpa_plan_stage_count(plan); ++s) {
      alpa_stage_info info;
      CHECK(alpa_plan_stage(&info, sizeof info, plan, s, NULL) == ALPA_OK);
      CHECK(info.remat == 2);
    }
    CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"remat\":\"selective\"") != NULL);
    CHECK(json != NULL && strstr(alpa_buffer_data(json), "remat=selective") != NULL);
    alpa_buffer_free(json);
    check_spec(plan, &spec);
    check_simulates(plan);
  }
  alpa_plan_destroy(plan);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

static int32_t count_progress(void* user_data, const alpa_plan_progress* p) {
  int* calls = (int*)user_data;
  if (p != NULL && p->struct_size >= sizeof(alpa_plan_progress) && p->version == 2) ++*calls;
  return 0;
}

static void test_baseline(void) {
  alpa_cluster* c = make_cluster();
  alpa_plan_options* o = quick_options();
  alpa_plan* plan = NULL;
  alpa_manual_plan best;
  alpa_baseline_point* table = NULL;
  alpa_buffer* json = NULL;
  alpa_error* err = NULL;
  int64_t n, i, found = 0, feasible = 0;
  int progress = 0;
  double t;
  CHECK(alpa_plan_options_set_progress(o, count_progress, &progress, NULL) == ALPA_OK);
  CHECK(alpa_model_plan_baseline(&plan, SMALL_GPT, c, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(progress > 0);
  if (plan == NULL) goto done;
  t = alpa_plan_iteration_seconds(plan);
  CHECK(t > 0);
  CHECK(alpa_plan_compile_seconds(plan) > 0); /* the search's time */
  CHECK(g_manual != NULL && t <= alpa_plan_iteration_seconds(g_manual));

  /* The configuration it found is a valid grid point. */
  CHECK(alpa_plan_manual_spec(&best, sizeof best, plan, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(best.data_parallel * best.tensor_parallel * best.pipeline_parallel == DEVICES);
  CHECK(best.microbatches >= best.pipeline_parallel && SMALL_GPT_BATCH % best.microbatches == 0);
  CHECK((SMALL_GPT_BATCH / best.microbatches) % best.data_parallel == 0);
  CHECK(best.zero_stage == 0 || best.zero_stage == 1);
  CHECK(best.tensor_inside_host == 1);
  CHECK(alpa_plan_stage_count(plan) == best.pipeline_parallel);
  CHECK(alpa_plan_microbatches(plan) == best.microbatches);

  /* The table: every evaluated point, fastest first, the best first; the manual plan's point
   * at the manual plan's time. */
  n = alpa_plan_baseline_table(plan, NULL, 0, sizeof(alpa_baseline_point));
  CHECK(n > 0 && n == alpa_plan_baseline_evaluated(plan));
  CHECK(alpa_plan_baseline_feasible(plan) > 0 && alpa_plan_baseline_feasible(plan) <= n);
  CHECK(alpa_plan_baseline_pruned(plan) >= 0);
  CHECK(alpa_plan_baseline_table(plan, NULL, 1, sizeof(alpa_baseline_point)) == -1);
  if (n <= 0) goto done;
  table = (alpa_baseline_point*)malloc((size_t)n * sizeof *table);
  if (table == NULL) goto done;
  CHECK(alpa_plan_baseline_table(plan, table, n, 8) == -1);
  CHECK(alpa_plan_baseline_table(plan, table, n, sizeof *table) == n);
  CHECK(table[0].feasible == 1 && table[0].iteration_seconds == t);
  CHECK(table[0].data_parallel == best.data_parallel &&
        table[0].tensor_parallel == best.tensor_parallel &&
        table[0].pipeline_parallel == best.pipeline_parallel &&
        table[0].microbatches == best.microbatches && table[0].zero_stage == best.zero_stage &&
        table[0].remat == best.remat);
  for (i = 0; i < n; ++i) {
    const alpa_baseline_point* p = &table[i];
    CHECK(p->struct_size == sizeof(alpa_baseline_point) && p->version == 1 && p->reserved == 0);
    CHECK(p->data_parallel * p->tensor_parallel * p->pipeline_parallel == DEVICES);
    CHECK(p->feasible == (isinf(p->iteration_seconds) ? 0 : 1));
    if (i > 0) CHECK(p->iteration_seconds >= table[i - 1].iteration_seconds);
    feasible += p->feasible;
    if (p->data_parallel == 2 && p->tensor_parallel == 2 && p->pipeline_parallel == 1 &&
        p->microbatches == 2 && p->zero_stage == 0 && p->remat == 0 && p->tensor_inside_host == 1) {
      ++found;
      CHECK(g_manual != NULL &&
            fabs(p->iteration_seconds - alpa_plan_iteration_seconds(g_manual)) <=
                1e-9 * p->iteration_seconds);
    }
  }
  CHECK(found == 1);
  CHECK(feasible == alpa_plan_baseline_feasible(plan));

  /* The JSON: the configuration and the counts; the table at detail 1. */
  json = plan_json(plan, 0);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"baseline\":{") != NULL);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"kind\":\"search\"") != NULL);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"evaluated\":") != NULL);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"search_seconds\":") != NULL);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"table\":") == NULL);
  alpa_buffer_free(json);
  json = plan_json(plan, 1);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"table\":[{") != NULL);
  alpa_buffer_free(json);
  check_simulates(plan);
done:
  free(table);
  alpa_plan_destroy(plan);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

/* Fixed options narrow the grid: one B, remat on only. */
static void test_baseline_options(void) {
  alpa_cluster* c = make_cluster();
  alpa_plan_options* o = quick_options();
  alpa_plan* plan = NULL;
  alpa_baseline_point table[64];
  alpa_error* err = NULL;
  int64_t n, i;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, 4, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "remat", "on", NULL) == ALPA_OK);
  CHECK(alpa_model_plan_baseline(&plan, SMALL_GPT, c, o, &err) == ALPA_OK);
  print_error(err);
  n = alpa_plan_baseline_table(plan, table, 64, sizeof table[0]);
  CHECK(n > 0 && n <= 64);
  for (i = 0; i < n && i < 64; ++i) CHECK(table[i].microbatches == 4 && table[i].remat == 1);
  CHECK(alpa_plan_microbatches(plan) == 4);
  alpa_plan_destroy(plan);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

/* Interleaved 1F1B (virtual_stages, version 2 of alpa_manual_plan): 2 device groups of 2 stages
 * each, stage s on the devices of stage s % 2; a version-1 caller gets one stage per group. */
static void test_manual_interleaved(void) {
  alpa_cluster* c = make_cluster();
  alpa_plan_options* o = quick_options();
  alpa_manual_plan spec = make_spec(2, 1, 2, 4);
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  int32_t s;
  spec.virtual_stages = 2;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &spec, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (plan != NULL) {
    alpa_buffer* json = plan_json(plan, 0);
    alpa_buffer* text = NULL;
    CHECK(alpa_plan_pipeline_schedule(plan) == ALPA_SCHEDULE_INTERLEAVED_1F1B);
    CHECK(alpa_plan_virtual_stages(plan) == 2);
    CHECK(alpa_plan_stage_count(plan) == 4);
    for (s = 0; s < alpa_plan_stage_count(plan); ++s) {
      alpa_stage_info info;
      CHECK(alpa_plan_stage(&info, sizeof info, plan, s, NULL) == ALPA_OK);
      CHECK(info.devices == 2 && info.data_parallel == 2);
    }
    check_spec(plan, &spec);
    CHECK(json != NULL && strstr(alpa_buffer_data(json), "vp=2") != NULL);
    CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"virtual_stages\":2") != NULL);
    alpa_buffer_free(json);
    /* Megatron-LM runs it with its interleaved schedule; DeepSpeed has none. */
    CHECK(alpa_plan_launch_config(&text, plan, ALPA_LAUNCH_MEGATRON, &err) == ALPA_OK);
    print_error(err);
    err = NULL;
    CHECK(text != NULL &&
          strstr(alpa_buffer_data(text), "--num-layers-per-virtual-pipeline-stage 1") != NULL);
    alpa_buffer_free(text);
    text = NULL;
    CHECK(alpa_plan_launch_config(&text, plan, ALPA_LAUNCH_DEEPSPEED, &err) ==
          ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "virtual_stages"));
    err = NULL;
  }
  alpa_plan_destroy(plan);
  plan = NULL;
  /* A version-1 struct ends before virtual_stages: whatever follows it is not read. */
  spec.struct_size = offsetof(alpa_manual_plan, virtual_stages);
  spec.version = 1;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &spec, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (plan != NULL) {
    CHECK(alpa_plan_stage_count(plan) == 2 && alpa_plan_virtual_stages(plan) == 1);
    CHECK(alpa_plan_pipeline_schedule(plan) == ALPA_SCHEDULE_1F1B);
  }
  alpa_plan_destroy(plan);
  plan = NULL;
  /* Interleaving needs two device groups. */
  spec = make_spec(2, 2, 1, 4);
  spec.virtual_stages = 2;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &spec, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "needs pipeline_parallel >= 2"));
  CHECK(plan == NULL);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

static void test_errors(void) {
  alpa_cluster* c = make_cluster();
  alpa_plan_options* o = quick_options();
  alpa_manual_plan spec = make_spec(2, 2, 1, 2);
  alpa_manual_plan bad;
  alpa_manual_plan out;
  alpa_plan* plan = NULL;
  alpa_plan* planned = NULL;
  alpa_cancel_token* token = NULL;
  alpa_error* err = NULL;

  /* NULL arguments. */
  CHECK(alpa_model_plan_manual(NULL, SMALL_GPT, c, &spec, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "out"));
  err = NULL;
  CHECK(alpa_model_plan_manual(&plan, NULL, c, &spec, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "model_spec"));
  err = NULL;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, NULL, &spec, o, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "cluster"));
  err = NULL;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, NULL, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "spec"));
  err = NULL;
  CHECK(alpa_model_plan_baseline(NULL, SMALL_GPT, c, o, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_model_plan_baseline(&plan, NULL, c, o, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_model_plan_baseline(&plan, SMALL_GPT, NULL, o, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_manual_spec(NULL, sizeof out, g_manual, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_manual_spec(&out, sizeof out, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_baseline_table(NULL, NULL, 0, sizeof(alpa_baseline_point)) ==
        -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_baseline_evaluated(NULL) == 0 && alpa_plan_baseline_feasible(NULL) == 0 &&
        alpa_plan_baseline_pruned(NULL) == 0);
  CHECK(alpa_model_plan_manual(&plan, "nosuchmodel:layers=2", c, &spec, o, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "nosuchmodel"));
  err = NULL;

  /* Bad configurations: the message names the field. */
  bad = make_spec(2, 2, 2, 2); /* 8 devices on 4 */
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &bad, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "data_parallel x tensor_parallel x pipeline_parallel"));
  err = NULL;
  bad = make_spec(0, 4, 1, 2);
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &bad, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "data_parallel"));
  err = NULL;
  bad = make_spec(2, 2, 1, 3);
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &bad, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "microbatches"));
  err = NULL;
  bad = make_spec(2, 2, 1, 2);
  bad.zero_stage = 4;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &bad, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "zero_stage"));
  err = NULL;
  {
    /* ZeRO-2: the stage reports zero 2 and holds less than the same plan's ZeRO-1. */
    alpa_plan* one = NULL;
    alpa_plan* two = NULL;
    alpa_stage_info info;
    alpa_manual_plan z = make_spec(DEVICES, 1, 1, 2);
    z.zero_stage = 1;
    CHECK(alpa_model_plan_manual(&one, SMALL_GPT, c, &z, o, NULL) == ALPA_OK);
    z.zero_stage = 2;
    CHECK(alpa_model_plan_manual(&two, SMALL_GPT, c, &z, o, NULL) == ALPA_OK);
    if (one != NULL && two != NULL) {
      CHECK(alpa_plan_stage(&info, sizeof info, two, 0, NULL) == ALPA_OK);
      CHECK(info.zero == 2);
      CHECK(alpa_plan_stage(&info, sizeof info, one, 0, NULL) == ALPA_OK);
      CHECK(info.zero == 1);
      CHECK(alpa_plan_peak_memory_bytes(two) < alpa_plan_peak_memory_bytes(one));
    }
    alpa_plan_destroy(one);
    alpa_plan_destroy(two);
  }
  bad = make_spec(2, 2, 1, 2);
  bad.remat = 3;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &bad, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "remat"));
  err = NULL;
  bad = make_spec(2, 2, 1, 2);
  bad.tensor_inside_host = -1;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &bad, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "tensor_inside_host"));
  err = NULL;
  bad = make_spec(2, 2, 1, 2);
  bad.struct_size = 8;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &bad, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "struct_size"));
  err = NULL;
  bad = make_spec(2, 2, 1, 2);
  bad.version = 0;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &bad, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "version"));
  err = NULL;
  bad = make_spec(1, 1, 8, 8); /* more stages than devices and layers */
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &bad, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  alpa_error_free(err);
  err = NULL;
  CHECK(plan == NULL);

  /* A plan of alpa_model_plan has no manual configuration. */
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, 2, NULL) == ALPA_OK);
  CHECK(alpa_model_plan(&planned, SMALL_GPT, c, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_plan_manual_spec(&out, sizeof out, planned, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "alpa_model_plan_manual"));
  err = NULL;
  CHECK(alpa_plan_baseline_table(planned, NULL, 0, sizeof(alpa_baseline_point)) == 0);
  alpa_plan_destroy(planned);
  CHECK(alpa_plan_manual_spec(&out, 8, g_manual, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "size"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, 0, NULL) == ALPA_OK);

  /* 1000 bytes per device: infeasible, naming the stage / the lightest configuration. */
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, 1000, NULL) == ALPA_OK);
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &spec, o, &err) == ALPA_ERR_INFEASIBLE);
  CHECK(error_mentions(err, "stage 0"));
  err = NULL;
  CHECK(alpa_model_plan_baseline(&plan, SMALL_GPT, c, o, &err) == ALPA_ERR_INFEASIBLE);
  CHECK(error_mentions(err, "least memory-hungry"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, 0, NULL) == ALPA_OK);

  /* A token triggered before the call. */
  CHECK(alpa_cancel_token_create(&token, NULL) == ALPA_OK);
  alpa_cancel_token_trigger(token);
  CHECK(alpa_plan_options_set_cancel_token(o, token, NULL) == ALPA_OK);
  CHECK(alpa_model_plan_baseline(&plan, SMALL_GPT, c, o, &err) == ALPA_ERR_CANCELLED);
  CHECK(err != NULL && alpa_error_code(err) == ALPA_ERR_CANCELLED);
  alpa_error_free(err);
  err = NULL;
  CHECK(alpa_model_plan_manual(&plan, SMALL_GPT, c, &spec, o, NULL) == ALPA_ERR_CANCELLED);
  CHECK(alpa_plan_options_set_cancel_token(o, NULL, NULL) == ALPA_OK);
  alpa_cancel_token_destroy(token);
  CHECK(plan == NULL);

  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

/* The manual plan as launch configurations: Megatron-LM's flags with the micro-batch size
 * 16 / (dp 2 x B 2) = 4, DeepSpeed's JSON with the same arithmetic; bad calls. */
static void test_launch_config(void) {
  alpa_buffer* text = NULL;
  alpa_error* err = NULL;
  if (g_manual == NULL) return;
  CHECK(alpa_plan_launch_config(&text, g_manual, ALPA_LAUNCH_MEGATRON, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(text != NULL && strstr(alpa_buffer_data(text),
                               "torchrun --nnodes 1 --nproc-per-node 4 pretrain_gpt.py \\\n"
                               "    --tensor-model-parallel-size 2 \\\n"
                               "    --pipeline-model-parallel-size 1 \\\n"
                               "    --micro-batch-size 4 \\\n"
                               "    --global-batch-size 16 \\\n") != NULL);
  CHECK(text != NULL && strstr(alpa_buffer_data(text), "--recompute") == NULL);
  alpa_buffer_free(text);
  text = NULL;
  CHECK(alpa_plan_launch_config(&text, g_manual, ALPA_LAUNCH_DEEPSPEED, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(text != NULL && strstr(alpa_buffer_data(text),
                               "\"train_micro_batch_size_per_gpu\": 4,\n"
                               "  \"gradient_accumulation_steps\": 2,") != NULL);
  alpa_buffer_free(text);
  text = NULL;
  CHECK(alpa_plan_launch_config(&text, g_manual, 7, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "framework must be ALPA_LAUNCH_MEGATRON (0) or"));
  err = NULL;
  CHECK(alpa_plan_launch_config(&text, NULL, ALPA_LAUNCH_MEGATRON, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "plan is NULL"));
  err = NULL;
  CHECK(alpa_plan_launch_config(NULL, g_manual, ALPA_LAUNCH_MEGATRON, NULL) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(text == NULL);
}

static void timed(const char* name, void (*test)(void)) {
  double t0 = now_seconds();
  test();
  printf("  %s: %.2f s cpu\n", name, now_seconds() - t0);
}

/* The baseline and a manual plan of the zoo graph of SMALL_GPT, read as the global batch, equal
 * those of the spec. */
static void test_graph_baseline(void) {
  alpa_cluster* c = make_cluster();
  alpa_plan_options* o = quick_options();
  alpa_graph* g = NULL;
  alpa_plan* from_graph = NULL;
  alpa_plan* from_model = NULL;
  alpa_manual_plan spec = make_spec(2, 2, 1, 2);
  alpa_manual_plan graph_best, model_best;
  alpa_error* err = NULL;
  CHECK(alpa_model_build_graph(&g, SMALL_GPT, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_GRAPH_BATCH_DIM, 0, NULL) == ALPA_OK);

  CHECK(alpa_model_plan_baseline(&from_model, SMALL_GPT, c, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_graph_plan_baseline(&from_graph, g, c, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (from_graph != NULL && from_model != NULL) {
    CHECK(alpa_plan_iteration_seconds(from_graph) == alpa_plan_iteration_seconds(from_model));
    CHECK(alpa_plan_manual_spec(&graph_best, sizeof graph_best, from_graph, NULL) == ALPA_OK);
    CHECK(alpa_plan_manual_spec(&model_best, sizeof model_best, from_model, NULL) == ALPA_OK);
    CHECK(graph_best.data_parallel == model_best.data_parallel &&
          graph_best.tensor_parallel == model_best.tensor_parallel &&
          graph_best.pipeline_parallel == model_best.pipeline_parallel &&
          graph_best.microbatches == model_best.microbatches &&
          graph_best.zero_stage == model_best.zero_stage && graph_best.remat == model_best.remat);
    CHECK(alpa_plan_baseline_evaluated(from_graph) == alpa_plan_baseline_evaluated(from_model));
  }
  alpa_plan_destroy(from_graph);
  alpa_plan_destroy(from_model);
  from_graph = NULL;
  from_model = NULL;

  CHECK(alpa_model_plan_manual(&from_model, SMALL_GPT, c, &spec, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_graph_plan_manual(&from_graph, g, c, &spec, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (from_graph != NULL && from_model != NULL) {
    CHECK(alpa_plan_iteration_seconds(from_graph) == alpa_plan_iteration_seconds(from_model));
    CHECK(alpa_plan_microbatches(from_graph) == 2);
  }
  alpa_plan_destroy(from_graph);
  from_graph = NULL;

  spec.microbatches = 3;
  CHECK(alpa_graph_plan_manual(&from_graph, g, c, &spec, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(err != NULL &&
        strstr(alpa_error_message(err), "microbatches 3 do not divide the batch of 16") != NULL);
  alpa_error_free(err);
  err = NULL;
  CHECK(alpa_graph_plan_baseline(&from_graph, NULL, c, o, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_graph_plan_manual(&from_graph, g, NULL, &spec, o, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  alpa_plan_destroy(from_model);
  alpa_graph_destroy(g);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

int main(void) {
  timed("manual plan", test_manual);
  timed("manual plan, two stages", test_manual_pipeline);
  timed("manual plan, interleaved", test_manual_interleaved);
  timed("baseline search", test_baseline);
  timed("baseline options", test_baseline_options);
  timed("errors", test_errors);
  timed("launch configurations", test_launch_config);
  timed("baseline of a graph", test_graph_baseline);
  alpa_plan_destroy(g_manual);
  return check_summary();
}
