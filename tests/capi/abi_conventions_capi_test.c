/* The conventions of the C ABI that bindings rely on (docs/error-handling.md): option families
 * that reject each other's keys, count-then-fill with a short buffer and misuse, "no answer" as a
 * status, padding-free structs, the function twin of ALPA_MANUAL_PLAN_INIT, the assignment
 * parser, and the JSON spelling of solver statistics. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alpa_experimental.h"
#include "check.h"

/* One node with one strategy of `usage` bytes live at time 0, under a memory limit. */
static alpa_problem* one_node_problem(int64_t usage, int64_t limit) {
  alpa_problem* p = NULL;
  const int32_t counts[1] = {1};
  const double costs[1] = {3.0};
  const int64_t usages[1] = {usage};
  const int64_t lo_hi[2] = {0, 1};
  CHECK(alpa_problem_create(&p, NULL) == ALPA_OK);
  CHECK(alpa_problem_add_nodes(p, 1, counts, costs, usages, NULL) == ALPA_OK);
  CHECK(alpa_problem_set_intervals(p, 1, lo_hi, NULL) == ALPA_OK);
  CHECK(alpa_problem_set_memory_limit(p, limit, NULL) == ALPA_OK);
  CHECK(alpa_problem_finalize(p, NULL) == ALPA_OK);
  return p;
}

/* Option keys live in disjoint ranges; a key of another family is rejected by name. Before the
 * ranges, ALPA_OPT_THREADS on plan options silently set max_microbatches. */
static void test_option_families(void) {
  alpa_solve_options* so = NULL;
  alpa_plan_options* po = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_solve_options_create(&so, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_create(&po, NULL) == ALPA_OK);

  CHECK(ALPA_OPT_TIME_LIMIT_SECONDS >= 100 && ALPA_OPT_RELATIVE_GAP < 200);
  CHECK(ALPA_OPT_COST_MODEL >= 200 && ALPA_OPT_MEMORY_BUDGET_BYTES < 300);
  CHECK(ALPA_PLAN_OPT_NUM_LAYERS >= 300 && ALPA_PLAN_OPT_INTRA_OP_EXACT < 400);

  CHECK(alpa_plan_options_set_int(po, ALPA_OPT_THREADS, 4, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "ALPA_OPT_THREADS (102, \"threads\") is a solve option"));
  err = NULL;
  CHECK(alpa_plan_options_set_double(po, ALPA_OPT_COST_MODEL, 0, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "is a shard option; set it on alpa_solve_options"));
  err = NULL;
  CHECK(alpa_solve_options_set_int(so, ALPA_PLAN_OPT_MICROBATCHES, 8, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "alpa_solve_options: ALPA_PLAN_OPT_MICROBATCHES (301"));
  err = NULL;
  CHECK(alpa_solve_options_set_by_name(so, "microbatches", "8", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "is a plan option; set it on alpa_plan_options"));
  err = NULL;
  CHECK(alpa_solve_options_set_int(so, 3, 1, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "alpa_solve_options: unknown option key 3"));
  err = NULL;
  CHECK(alpa_plan_options_set_by_name(po, "nonsense", "1", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "alpa_plan_options: unknown option \"nonsense\""));
  err = NULL;

  /* "threads" exists in both families: each handle sets its own. */
  CHECK(alpa_solve_options_set_by_name(so, "threads", "2", &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(po, "threads", "2", &err) == ALPA_OK);

  /* One message format for every family: <family> option "<name>": must be ... (got ...). */
  CHECK(alpa_solve_options_set_int(so, ALPA_OPT_THREADS, 5000, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "solve option \"threads\": must be an integer in 0..4096 (got 5000)"));
  err = NULL;
  CHECK(alpa_solve_options_set_double(so, ALPA_OPT_RELATIVE_GAP, 1.5, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "solve option \"relative_gap\": must be in [0, 1) (got 1.5)"));
  err = NULL;
  CHECK(alpa_solve_options_set_by_name(so, "zero", "sideways", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "shard option \"zero\": must be a ZeRO mode"));
  err = NULL;
  CHECK(alpa_plan_options_set_double(po, ALPA_PLAN_OPT_MICROBATCHES, 2.5, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "plan option \"microbatches\": must be an integer >= 0 (got 2.5)"));
  err = NULL;
  /* Symbols and integral doubles are accepted where they fit. */
  CHECK(alpa_solve_options_set_by_name(so, "memory_budget_bytes", "none", &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_double(so, ALPA_OPT_ZERO, 1.0, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(po, "remat", "off", &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(po, ALPA_PLAN_OPT_INTRA_OP_GAP, 0, &err) == ALPA_OK);

  alpa_plan_options_destroy(po);
  alpa_solve_options_destroy(so);
}

/* No answer is a status: a proven infeasible problem gives ALPA_ERR_INFEASIBLE and no solution;
 * the one-shot JSON call reports the same outcome inside its result. */
static void test_no_answer(void) {
  alpa_problem* p = one_node_problem(100, 10);
  alpa_solution* s = NULL;
  alpa_error* err = NULL;
  alpa_buffer* result = NULL;
  const char* request =
      "{\"problem\": {\"nodes\": {\"intervals\": [[0, 1]], \"costs\": [[3]], \"usages\": "
      "[[100]]}, \"edges\": {\"nodes\": [], \"costs\": []}, \"usage_limit\": 10}}";
  CHECK(alpa_problem_solve(&s, p, NULL, &err) == ALPA_ERR_INFEASIBLE);
  CHECK(s == NULL);
  CHECK(err != NULL && alpa_error_code(err) == ALPA_ERR_INFEASIBLE);
  alpa_error_free(err);
  err = NULL;
  alpa_problem_destroy(p);

  CHECK(alpa_problem_solve_json(&result, request, strlen(request), &err) == ALPA_OK);
  CHECK(result != NULL && strstr(alpa_buffer_data(result), "\"status\":\"infeasible\"") != NULL);
  alpa_buffer_free(result);

  /* The feasible twin: ALPA_OK, an optimal solution, and the statistics' shared spelling. */
  p = one_node_problem(100, 1000);
  CHECK(alpa_problem_solve(&s, p, NULL, &err) == ALPA_OK);
  CHECK(alpa_solution_status(s) == ALPA_SOLVE_OPTIMAL);
  CHECK(alpa_solution_objective(s) == 3.0);
  CHECK(alpa_solution_to_json(&result, s, &err) == ALPA_OK);
  CHECK(strstr(alpa_buffer_data(result), "\"problem_nodes\":1") != NULL);
  CHECK(strstr(alpa_buffer_data(result), "\"normalized_nodes\":") != NULL);
  CHECK(strstr(alpa_buffer_data(result), "\"work_nodes\"") == NULL);
  CHECK(strstr(alpa_buffer_data(result), "\"objective\":3,") != NULL);
  alpa_buffer_free(result);
  alpa_solution_destroy(s);
  alpa_problem_destroy(p);
}

/* Getters on a NULL handle or an index out of range: "" / NaN / -1 / 0, never a crash. */
static void test_out_of_range_getters(void) {
  CHECK(strcmp(alpa_cluster_preset_name(-1), "") == 0);
  CHECK(strcmp(alpa_model_name(-1), "") == 0);
  CHECK(alpa_model_nominal_params(-1) == -1);
  CHECK(isnan(alpa_solution_objective(NULL)));
  CHECK(isnan(alpa_cluster_peak_flops(NULL, ALPA_DTYPE_F32)));
  CHECK(alpa_mesh_dim_size(NULL, 0) == -1);
  CHECK(alpa_problem_node_count(NULL) == 0);
  CHECK(alpa_solution_assignment(NULL, NULL, 0) == -ALPA_ERR_INVALID_ARGUMENT);
}

/* No implicit padding in any public struct: each ends where its last field ends, and the
 * layouts are the ones the bindings are generated for (LP64). */
static void test_struct_layouts(void) {
  CHECK(sizeof(alpa_progress) == offsetof(alpa_progress, phase) + sizeof(const char*));
  CHECK(offsetof(alpa_progress, reserved) == offsetof(alpa_progress, version) + 4);
  CHECK(sizeof(alpa_plan_progress) ==
        offsetof(alpa_plan_progress, stage_candidates) + sizeof(int64_t));
  CHECK(offsetof(alpa_plan_progress, time_limit_seconds) ==
        offsetof(alpa_plan_progress, total) + sizeof(int64_t));
  CHECK(offsetof(alpa_plan_progress, seconds) == offsetof(alpa_plan_progress, reserved) + 4);
  CHECK(sizeof(alpa_stage_info) == offsetof(alpa_stage_info, in_flight) + sizeof(int64_t));
  CHECK(offsetof(alpa_stage_info, submesh_hosts) == offsetof(alpa_stage_info, reserved0) + 4);
  CHECK(offsetof(alpa_stage_info, logical_mesh) == offsetof(alpa_stage_info, reserved1) + 4);
  CHECK(sizeof(alpa_slice_move) == offsetof(alpa_slice_move, bytes) + sizeof(int64_t));
  CHECK(offsetof(alpa_slice_move, offsets) == offsetof(alpa_slice_move, reserved1) + 4);
  CHECK(sizeof(alpa_collective) == offsetof(alpa_collective, reserved) + sizeof(int32_t));
  CHECK(sizeof(alpa_transfer) == offsetof(alpa_transfer, seconds) + sizeof(double));
  CHECK(sizeof(alpa_manual_plan) == offsetof(alpa_manual_plan, reserved) + sizeof(int32_t));
  CHECK(offsetof(alpa_manual_plan, virtual_stages) ==
        offsetof(alpa_manual_plan, tensor_inside_host) + sizeof(int32_t));
  if (sizeof(void*) == 8 && sizeof(size_t) == 8) {
    CHECK(sizeof(alpa_progress) == 48);
    CHECK(sizeof(alpa_plan_progress) == 120);
    CHECK(sizeof(alpa_stage_info) == 128);
    CHECK(sizeof(alpa_slice_move) == 176);
  }
}

/* alpa_manual_plan_init writes what ALPA_MANUAL_PLAN_INIT expands to. */
static void test_manual_plan_init(void) {
  const alpa_manual_plan expected = ALPA_MANUAL_PLAN_INIT;
  alpa_manual_plan spec;
  alpa_error* err = NULL;
  memset(&spec, 0x5a, sizeof spec);
  CHECK(alpa_manual_plan_init(&spec, sizeof spec, &err) == ALPA_OK);
  CHECK(spec.struct_size == sizeof(alpa_manual_plan) && spec.version == 2);
  CHECK(spec.data_parallel == expected.data_parallel && spec.tensor_parallel == 1 &&
        spec.pipeline_parallel == 1 && spec.microbatches == 1);
  CHECK(spec.zero_stage == 0 && spec.remat == 0 && spec.tensor_inside_host == 1);
  CHECK(spec.virtual_stages == 1 && spec.reserved == 0);
  CHECK(memcmp(&spec, &expected, sizeof spec) == 0);
  /* A caller built against version 1 (its struct ends at tensor_inside_host) gets version 1. */
  memset(&spec, 0x5a, sizeof spec);
  CHECK(alpa_manual_plan_init(&spec, offsetof(alpa_manual_plan, virtual_stages), &err) == ALPA_OK);
  CHECK(spec.struct_size == offsetof(alpa_manual_plan, virtual_stages) && spec.version == 1);
  CHECK(spec.tensor_inside_host == 1 && spec.virtual_stages == 0x5a5a5a5a);
  CHECK(alpa_manual_plan_init(NULL, sizeof spec, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "spec is NULL"));
  err = NULL;
  CHECK(alpa_manual_plan_init(&spec, 8, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "smaller than version 1 of alpa_manual_plan"));
}

/* The assignment parser, count-then-fill, including a buffer that is too small. */
static void test_assignment_parse(void) {
  const char* text = " [0, 0, 2, 1, 0] ";
  int32_t out[5] = {-1, -1, -1, -1, -1};
  int32_t small[3] = {-1, -1, -1};
  alpa_error* err = NULL;
  CHECK(alpa_assignment_parse(text, strlen(text), NULL, 0, &err) == 5);
  CHECK(alpa_assignment_parse(text, strlen(text), out, 5, &err) == 5);
  CHECK(out[0] == 0 && out[1] == 0 && out[2] == 2 && out[3] == 1 && out[4] == 0);
  CHECK(alpa_assignment_parse(text, strlen(text), small, 2, &err) == 5);
  CHECK(small[0] == 0 && small[1] == 0 && small[2] == -1);
  CHECK(alpa_assignment_parse("[]", 2, NULL, 0, &err) == 0);
  /* Only `size` bytes are read: the text need not be NUL-terminated. */
  CHECK(alpa_assignment_parse("[7]garbage", 3, out, 1, &err) == 1 && out[0] == 7);

  CHECK(alpa_assignment_parse("[0, x]", 6, NULL, 0, &err) == -ALPA_ERR_PARSE);
  CHECK(error_mentions(err, "entry 1: expected a non-negative integer"));
  err = NULL;
  CHECK(alpa_assignment_parse("[9999999999]", 12, NULL, 0, &err) == -ALPA_ERR_PARSE);
  CHECK(error_mentions(err, "out of range"));
  err = NULL;
  CHECK(alpa_assignment_parse(text, strlen(text), NULL, 3, &err) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "out is NULL"));
  err = NULL;
  CHECK(alpa_assignment_parse(NULL, 4, NULL, 0, &err) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "text is NULL"));
}

/* The builder calls no other test reaches: followers, aliases, live sets, a warm start. Two
 * nodes of two strategies each; node 1 follows node 0, and the alias forbids both taking
 * strategy 0, so the only answer is (1, 1) at cost 5 + 6. */
static void test_followers_aliases_live_sets(void) {
  alpa_problem* p = NULL;
  alpa_solve_options* o = NULL;
  alpa_solution* s = NULL;
  alpa_error* err = NULL;
  const int32_t counts[2] = {2, 2};
  const double costs[4] = {1, 5, 1, 6};
  const int32_t follows[2] = {-1, 0};
  const int32_t pair[2] = {0, 1};
  const uint8_t forbidden[4] = {1, 0, 0, 0};
  const int64_t step_sizes[1] = {2};
  const int32_t live[2] = {0, 1};
  const int32_t start[2] = {1, 1};
  const int32_t both_zero[2] = {0, 0};
  int32_t assignment[2] = {-1, -1};
  double cost = 0;
  CHECK(alpa_problem_create(&p, &err) == ALPA_OK);
  CHECK(alpa_problem_add_nodes(p, 2, counts, costs, NULL, &err) == ALPA_OK);
  CHECK(alpa_problem_set_followers(p, 2, follows, &err) == ALPA_OK);
  CHECK(alpa_problem_add_aliases(p, 1, pair, forbidden, &err) == ALPA_OK);
  CHECK(alpa_problem_set_live_sets(p, 1, step_sizes, live, &err) == ALPA_OK);
  CHECK(alpa_problem_finalize(p, &err) == ALPA_OK);
  CHECK(alpa_problem_evaluate(&cost, p, 2, both_zero, &err) == ALPA_ERR_INFEASIBLE);
  CHECK(error_mentions(err, "alias"));
  err = NULL;
  CHECK(alpa_solve_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_warm_start(o, 2, start, &err) == ALPA_OK);
  CHECK(alpa_problem_solve(&s, p, o, &err) == ALPA_OK);
  CHECK(alpa_solution_status(s) == ALPA_SOLVE_OPTIMAL);
  CHECK(alpa_solution_objective(s) == 11.0);
  CHECK(alpa_solution_assignment(s, assignment, 2) == 2);
  CHECK(assignment[0] == 1 && assignment[1] == 1);
  alpa_solution_destroy(s);
  alpa_solve_options_destroy(o);
  alpa_problem_destroy(p);
}

int main(void) {
  test_followers_aliases_live_sets();
  test_option_families();
  test_no_answer();
  test_out_of_range_getters();
  test_struct_layouts();
  test_manual_plan_init();
  test_assignment_parse();
  return check_summary();
}
