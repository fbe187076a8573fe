/* Simulation of a plan through the C ABI, from C: alpa_plan_simulate and alpa_plan_simulate_json
 * agree, the closed form is the plan's iteration time, stage statistics add up, the timeline is
 * an SVG, the JSON report names the planner's prediction, alpa_plan_simulate_programs prices the
 * device programs next to the plan, and misuse and bad JSON are clear errors. A small GPT:
 * planning takes about a second on two threads. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpa_experimental.h"
#include "check.h"

#define SMALL_GPT "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=16"

static void print_error(alpa_error* err) {
  if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
  alpa_error_free(err);
}

static alpa_plan* make_plan(int64_t hosts) {
  alpa_cluster* c = NULL;
  alpa_plan_options* o = NULL;
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_cluster_create_preset(&c, "p3.16xlarge", hosts, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_plan_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_THREADS, 2, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, 4, &err) == ALPA_OK);
  CHECK(alpa_model_plan(&plan, SMALL_GPT, c, o, &err) == ALPA_OK);
  print_error(err);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
  return plan;
}

static int close_to(double a, double b, double relative) {
  return fabs(a - b) <= relative * fabs(b);
}

/* Statistics of every stage: busy + communication wait + idle = the iteration; memory and
 * in-flight counts under 1F1B are the plan's. */
static void check_stages(const alpa_simulation* sim, const alpa_plan* plan, int one_f_one_b) {
  int32_t s;
  double t = alpa_simulation_iteration_seconds(sim);
  CHECK(alpa_simulation_stage_count(sim) == alpa_plan_stage_count(plan));
  for (s = 0; s < alpa_simulation_stage_count(sim); ++s) {
    alpa_simulated_stage st;
    alpa_stage_info info;
    alpa_error* err = NULL;
    memset(&st, 0xab, sizeof st);
    CHECK(alpa_simulation_stage(&st, sizeof st, sim, s, &err) == ALPA_OK);
    print_error(err);
    CHECK(alpa_plan_stage(&info, sizeof info, plan, s, NULL) == ALPA_OK);
    CHECK(st.struct_size == sizeof st);
    CHECK(st.version == 1);
    CHECK(st.reserved == 0);
    CHECK(st.busy_seconds > 0);
    CHECK(st.communication_wait_seconds >= 0);
    CHECK(st.idle_seconds >= 0);
    CHECK(close_to(st.busy_seconds + st.communication_wait_seconds + st.idle_seconds, t, 1e-9));
    CHECK(st.bubble_fraction >= 0 && st.bubble_fraction < 1);
    CHECK(st.finish_seconds > 0 && st.finish_seconds <= t * (1 + 1e-12));
    if (one_f_one_b) {
      CHECK(st.peak_in_flight == info.in_flight);
      CHECK(st.peak_memory_bytes == info.memory_bytes);
    } else {
      CHECK(st.peak_in_flight == alpa_plan_microbatches(plan));
      CHECK(st.peak_memory_bytes >= info.memory_bytes);
    }
  }
}

static alpa_simulation* simulate_json(const alpa_plan* plan, int32_t detail, int32_t schedule) {
  alpa_buffer* json = NULL;
  alpa_simulation* sim = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_plan_to_json(&json, plan, detail, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (json == NULL) return NULL;
  CHECK(alpa_plan_simulate_json(&sim, alpa_buffer_data(json), alpa_buffer_size(json), schedule,
                                &err) == ALPA_OK);
  print_error(err);
  alpa_buffer_free(json);
  return sim;
}

static void test_plan(int64_t hosts) {
  alpa_plan* plan = make_plan(hosts);
  alpa_simulation* sim = NULL;
  alpa_simulation* from_json = NULL;
  alpa_simulation* gpipe = NULL;
  alpa_simulation* zero_bubble = NULL;
  alpa_buffer* buffer = NULL;
  alpa_error* err = NULL;
  double planned;
  if (plan == NULL) return;
  planned = alpa_plan_schedule_seconds(plan);

  CHECK(alpa_plan_simulate(&sim, plan, ALPA_SCHEDULE_1F1B, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (sim == NULL) {
    alpa_plan_destroy(plan);
    return;
  }
  CHECK(alpa_simulation_iteration_seconds(sim) > 0);
  CHECK(close_to(alpa_simulation_closed_form_seconds(sim), planned, 1e-9));
  CHECK(alpa_simulation_planner_seconds(sim) == alpa_plan_iteration_seconds(plan));
  check_stages(sim, plan, 1);

  /* The detailed JSON is the same plan, slice moves included: the same iteration. */
  from_json = simulate_json(plan, 1, ALPA_SCHEDULE_1F1B);
  CHECK(from_json != NULL);
  if (from_json != NULL) {
    CHECK(alpa_simulation_iteration_seconds(from_json) == alpa_simulation_iteration_seconds(sim));
    CHECK(alpa_simulation_planner_seconds(from_json) == alpa_plan_iteration_seconds(plan));
    CHECK(alpa_simulation_closed_form_seconds(from_json) ==
          alpa_simulation_closed_form_seconds(sim));
  }
  alpa_simulation_destroy(from_json);
  /* The summary (bytes spread evenly): the same closed form. */
  from_json = simulate_json(plan, 0, ALPA_SCHEDULE_1F1B);
  CHECK(from_json != NULL);
  if (from_json != NULL) {
    CHECK(alpa_simulation_closed_form_seconds(from_json) ==
          alpa_simulation_closed_form_seconds(sim));
    CHECK(alpa_simulation_iteration_seconds(from_json) > 0);
  }
  alpa_simulation_destroy(from_json);

  /* GPipe holds every microbatch at once. */
  CHECK(alpa_plan_simulate(&gpipe, plan, ALPA_SCHEDULE_GPIPE, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (gpipe != NULL) check_stages(gpipe, plan, 0);
  alpa_simulation_destroy(gpipe);

  /* Timeline. */
  CHECK(alpa_simulation_timeline_to_svg(&buffer, sim, 0, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (buffer != NULL) {
    CHECK(alpa_buffer_size(buffer) > 100);
    CHECK(strncmp(alpa_buffer_data(buffer), "<svg", 4) == 0);
    CHECK(strstr(alpa_buffer_data(buffer), "</svg>") != NULL);
    CHECK(strstr(alpa_buffer_data(buffer), "stage 0: devices ") != NULL);
  }
  alpa_buffer_free(buffer);
  buffer = NULL;
  CHECK(alpa_simulation_timeline_to_svg(&buffer, sim, 800, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  alpa_buffer_free(buffer);
  buffer = NULL;

  /* JSON report. */
  CHECK(alpa_simulation_to_json(&buffer, sim, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (buffer != NULL) {
    const char* j = alpa_buffer_data(buffer);
    CHECK(j[0] == '{');
    CHECK(strstr(j, "\"iteration_seconds\":") != NULL);
    CHECK(strstr(j, "\"closed_form_seconds\":") != NULL);
    CHECK(strstr(j, "\"planner_iteration_seconds\":") != NULL);
    CHECK(strstr(j, "\"relative_error\":") != NULL);
    CHECK(strstr(j, "\"relative_error\":null") == NULL);
    CHECK(strstr(j, "\"peak_memory_bytes\":") != NULL);
    CHECK(strstr(j, "\"schedule\":\"1f1b\"") != NULL);
  }
  alpa_buffer_free(buffer);
  buffer = NULL;

  /* Misuse. */
  CHECK(alpa_simulation_stage(NULL, sizeof(alpa_simulated_stage), sim, 0, NULL) ==
        ALPA_ERR_INVALID_ARGUMENT);
  {
    alpa_simulated_stage st;
    CHECK(alpa_simulation_stage(&st, 8, sim, 0, &err) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "element_size"));
    err = NULL;
    CHECK(alpa_simulation_stage(&st, sizeof st, sim, alpa_simulation_stage_count(sim), &err) ==
          ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "out of range"));
    err = NULL;
  }
  CHECK(alpa_simulation_timeline_to_svg(&buffer, sim, 50, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "width"));
  err = NULL;
  CHECK(alpa_simulation_timeline_to_svg(NULL, sim, 0, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_simulation_to_json(NULL, sim, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_simulate(&gpipe, plan, 4, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "schedule"));
  err = NULL;
  /* Interleaved 1F1B needs a plan made for it (stages sharing device groups). */
  CHECK(alpa_plan_simulate(&gpipe, plan, ALPA_SCHEDULE_INTERLEAVED_1F1B, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "interleaved-1f1b"));
  err = NULL;
  /* ZB-H1 is accepted: every stage holds min(stages, microbatches) microbatches. */
  CHECK(alpa_plan_simulate(&zero_bubble, plan, ALPA_SCHEDULE_ZB_H1, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (zero_bubble != NULL) {
    const int32_t stages = alpa_simulation_stage_count(zero_bubble);
    const int64_t b = alpa_plan_microbatches(plan);
    alpa_simulated_stage st;
    CHECK(alpa_simulation_iteration_seconds(zero_bubble) > 0);
    CHECK(alpa_simulation_stage(&st, sizeof st, zero_bubble, stages - 1, &err) == ALPA_OK);
    CHECK(st.peak_in_flight == (stages < b ? stages : b));
  }
  alpa_simulation_destroy(zero_bubble);

  alpa_simulation_destroy(sim);
  alpa_plan_destroy(plan);
}

/* The device programs' simulation: the same stages and schedule, stage statistics that add up,
 * a JSON report saying it was priced from the programs, with each stage's priced tasks beside
 * the plan's; forward and backward within 10 % of the plan's (the programs price what runs). */
static void test_programs(int64_t hosts) {
  alpa_plan* plan = make_plan(hosts);
  alpa_simulation* sim = NULL;
  alpa_buffer* json = NULL;
  alpa_error* err = NULL;
  if (plan == NULL) return;
  CHECK(alpa_plan_simulate_programs(&sim, plan, ALPA_SCHEDULE_1F1B, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (sim != NULL) {
    check_stages(sim, plan, 1);
    CHECK(alpa_simulation_planner_seconds(sim) == alpa_plan_iteration_seconds(plan));
    CHECK(alpa_simulation_to_json(&json, sim, &err) == ALPA_OK);
    if (json != NULL) {
      const char* text = alpa_buffer_data(json);
      CHECK(strstr(text, "\"priced_from\":\"programs\"") != NULL);
      CHECK(strstr(text, "\"lowered_microbatches\":2") != NULL);
      CHECK(strstr(text, "\"planned_forward_seconds\"") != NULL);
      CHECK(strstr(text, "\"bookkeeping\"") != NULL);
    }
    alpa_buffer_free(json);
  }
  alpa_simulation_destroy(sim);
  sim = NULL;
  CHECK(alpa_plan_simulate_programs(&sim, plan, 7, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "schedule"));
  err = NULL;
  CHECK(alpa_plan_simulate_programs(&sim, NULL, ALPA_SCHEDULE_1F1B, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "NULL"));
  err = NULL;
  CHECK(sim == NULL);
  alpa_plan_destroy(plan);
}

static void test_errors(void) {
  alpa_simulation* sim = NULL;
  alpa_error* err = NULL;
  alpa_buffer* buffer = NULL;
  const char* not_json = "{\"format\": ";
  const char* not_plan = "{\"format\": \"alpa-cluster\"}";
  const char* old_plan =
      "{\"format\": \"alpa-plan\", \"version\": 1, \"cluster\": {\"name\": \"p3.16xlarge\", "
      "\"hosts\": 1, \"devices_per_host\": 8, \"device_memory_bytes\": 17179869184}}";

  CHECK(alpa_plan_simulate(NULL, NULL, ALPA_SCHEDULE_1F1B, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_simulate(&sim, NULL, ALPA_SCHEDULE_1F1B, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "NULL"));
  err = NULL;
  CHECK(sim == NULL);
  CHECK(alpa_plan_simulate_json(&sim, NULL, 0, ALPA_SCHEDULE_1F1B, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "NULL"));
  err = NULL;
  CHECK(alpa_plan_simulate_json(&sim, not_json, strlen(not_json), ALPA_SCHEDULE_1F1B, &err) ==
        ALPA_ERR_PARSE);
  CHECK(error_mentions(err, "plan JSON"));
  err = NULL;
  CHECK(alpa_plan_simulate_json(&sim, not_plan, strlen(not_plan), ALPA_SCHEDULE_1F1B, &err) ==
        ALPA_ERR_PARSE);
  CHECK(error_mentions(err, "format"));
  err = NULL;
  CHECK(alpa_plan_simulate_json(&sim, old_plan, strlen(old_plan), ALPA_SCHEDULE_1F1B, &err) ==
        ALPA_ERR_PARSE);
  CHECK(error_mentions(err, "cluster"));
  err = NULL;
  CHECK(alpa_plan_simulate_json(&sim, not_plan, strlen(not_plan), -1, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "schedule"));
  err = NULL;
  CHECK(sim == NULL);

  /* NULL handles: NaN / 0 getters, destroy accepts NULL. */
  CHECK(isnan(alpa_simulation_iteration_seconds(NULL)));
  CHECK(isnan(alpa_simulation_closed_form_seconds(NULL)));
  CHECK(isnan(alpa_simulation_planner_seconds(NULL)));
  CHECK(alpa_simulation_stage_count(NULL) == 0);
  CHECK(alpa_simulation_timeline_to_svg(&buffer, NULL, 0, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_simulation_to_json(&buffer, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(buffer == NULL);
  alpa_simulation_destroy(NULL);
}

int main(void) {
  test_errors();
  test_plan(1);
  test_plan(2);
  test_programs(1);
  test_programs(2);
  return check_summary();
}
