/* The C ABI exercised from C: building, validating, solving, evaluating, serializing, errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpa_experimental.h"
#include "check.h"

/* The IOPDDL example: optimum [0, 0, 2, 1, 0] = 445 with limit 50, 415 without. */
static alpa_problem* build_example(int with_limit) {
  static const int32_t counts[5] = {1, 2, 3, 2, 1};
  static const double costs[9] = {15, 55, 65, 25, 45, 35, 85, 75, 95};
  static const int64_t usages[9] = {10, 25, 25, 15, 20, 15, 10, 10, 15};
  static const int64_t intervals[10] = {30, 70, 40, 70, 50, 120, 110, 140, 110, 150};
  static const int32_t endpoints[10] = {0, 1, 0, 2, 1, 3, 2, 4, 3, 4};
  static const double edge_costs[14] = {30, 40, 50, 10, 40, 90, 10, 20, 80, 60, 20, 30, 70, 60};
  alpa_problem* p = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_problem_create(&p, &err) == ALPA_OK);
  CHECK(alpa_problem_add_nodes(p, 5, counts, costs, usages, &err) == ALPA_OK);
  CHECK(alpa_problem_set_intervals(p, 5, intervals, &err) == ALPA_OK);
  CHECK(alpa_problem_add_edges(p, 5, endpoints, edge_costs, &err) == ALPA_OK);
  if (with_limit) CHECK(alpa_problem_set_memory_limit(p, 50, &err) == ALPA_OK);
  CHECK(alpa_problem_finalize(p, &err) == ALPA_OK);
  CHECK(err == NULL);
  return p;
}

static int32_t count_progress(void* user, const alpa_progress* progress) {
  int* calls = (int*)user;
  ++*calls;
  return progress->struct_size >= sizeof(alpa_progress) ? 0 : 1;
}

static void test_solve_example(void) {
  alpa_problem* p = build_example(1);
  alpa_solve_options* o = NULL;
  alpa_solution* s = NULL;
  alpa_error* err = NULL;
  int progress_calls = 0;
  int32_t a[5] = {-1, -1, -1, -1, -1};
  static const int32_t expected[5] = {0, 0, 2, 1, 0};
  CHECK(alpa_solve_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_double(o, ALPA_OPT_TIME_LIMIT_SECONDS, 10.0, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_int(o, ALPA_OPT_DETERMINISTIC, 1, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_progress(o, count_progress, &progress_calls, &err) == ALPA_OK);
  CHECK(alpa_problem_solve(&s, p, o, &err) == ALPA_OK);
  CHECK(alpa_solution_status(s) == ALPA_SOLVE_OPTIMAL);
  CHECK(alpa_solution_objective(s) == 445.0);
  CHECK(alpa_solution_lower_bound(s) == 445.0);
  CHECK(alpa_solution_assignment(s, NULL, 0) == 5);
  CHECK(alpa_solution_assignment(s, a, 5) == 5);
  CHECK(memcmp(a, expected, sizeof(a)) == 0);
  CHECK(progress_calls >= 1);
  {
    alpa_buffer* json = NULL;
    CHECK(alpa_solution_to_json(&json, s, &err) == ALPA_OK);
    CHECK(strstr(alpa_buffer_data(json), "\"objective\":445") != NULL);
    CHECK(strstr(alpa_buffer_data(json), "\"status\":\"optimal\"") != NULL);
    alpa_buffer_free(json);
  }
  alpa_solution_destroy(s);
  alpa_solve_options_destroy(o);
  alpa_problem_destroy(p);

  /* Without the limit the optimum is 415, with no options object at all. */
  p = build_example(0);
  CHECK(alpa_problem_solve(&s, p, NULL, &err) == ALPA_OK);
  CHECK(alpa_solution_status(s) == ALPA_SOLVE_OPTIMAL);
  CHECK(alpa_solution_objective(s) == 415.0);
  alpa_solution_destroy(s);
  alpa_problem_destroy(p);
}

static void test_evaluate(void) {
  alpa_problem* p = build_example(1);
  alpa_error* err = NULL;
  double cost = 0;
  static const int32_t best[5] = {0, 0, 2, 1, 0};
  static const int32_t too_big[5] = {0, 0, 1, 1, 0};
  static const int32_t out_of_range[5] = {0, 0, 3, 1, 0};
  CHECK(alpa_problem_evaluate(&cost, p, 5, best, &err) == ALPA_OK && cost == 445.0);
  CHECK(alpa_problem_evaluate(&cost, p, 5, too_big, &err) == ALPA_ERR_INFEASIBLE);
  CHECK(error_mentions(err, "memory"));
  err = NULL;
  CHECK(alpa_problem_evaluate(&cost, p, 5, out_of_range, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "node 2"));
  err = NULL;
  CHECK(alpa_problem_evaluate(&cost, p, 4, best, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "5 nodes"));
  alpa_problem_destroy(p);
}

static void test_bad_input(void) {
  alpa_problem* p = NULL;
  alpa_error* err = NULL;
  static const int32_t counts[2] = {2, 2};
  static const double costs[4] = {1, 2, 3, 4};
  static const int32_t bad_edge[2] = {0, 7};
  static const double edge_costs[4] = {0, 0, 0, 0};
  static const int64_t bad_interval[4] = {5, 3, 0, 1};
  static const int32_t no_strategies[1] = {0};
  static const double forbidden[2] = {ALPA_FORBIDDEN_COST, 2e18};
  static const int32_t two[1] = {2};

  /* NULL handles and out-params are errors, never crashes. */
  CHECK(alpa_problem_create(NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "NULL"));
  err = NULL;
  CHECK(alpa_problem_finalize(NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_problem_solve(NULL, NULL, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  alpa_problem_destroy(NULL);
  alpa_solution_destroy(NULL);
  alpa_solve_options_destroy(NULL);
  alpa_buffer_free(NULL);
  alpa_error_free(NULL);
  alpa_cancel_token_destroy(NULL);

  CHECK(alpa_problem_create(&p, &err) == ALPA_OK);
  CHECK(alpa_problem_add_nodes(p, 2, counts, costs, NULL, &err) == ALPA_OK);
  CHECK(alpa_problem_add_edges(p, 1, bad_edge, edge_costs, &err) == ALPA_ERR_INVALID_PROBLEM);
  CHECK(error_mentions(err, "edge 0"));
  err = NULL;
  CHECK(alpa_problem_set_intervals(p, 2, bad_interval, &err) == ALPA_OK);
  CHECK(alpa_problem_finalize(p, &err) == ALPA_ERR_INVALID_PROBLEM);
  CHECK(error_mentions(err, "node 0"));
  err = NULL;
  {
    alpa_solution* s = NULL;
    CHECK(alpa_problem_solve(&s, p, NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "not finalized"));
    err = NULL;
    CHECK(s == NULL);
  }
  alpa_problem_destroy(p);

  CHECK(alpa_problem_create(&p, &err) == ALPA_OK);
  CHECK(alpa_problem_add_nodes(p, 1, no_strategies, costs, NULL, &err) == ALPA_OK);
  CHECK(alpa_problem_finalize(p, &err) == ALPA_ERR_INVALID_PROBLEM);
  CHECK(error_mentions(err, "node 0 has no strategies"));
  err = NULL;
  alpa_problem_destroy(p);

  CHECK(alpa_problem_create(&p, &err) == ALPA_OK);
  CHECK(alpa_problem_add_nodes(p, 1, two, forbidden, NULL, &err) == ALPA_OK);
  CHECK(alpa_problem_finalize(p, &err) == ALPA_ERR_INVALID_PROBLEM);
  CHECK(error_mentions(err, "forbidden"));
  err = NULL;
  alpa_problem_destroy(p);

  CHECK(alpa_problem_read_buffer(&p, "{\"problem\": [", 13, ALPA_FORMAT_AUTO, &err) ==
        ALPA_ERR_PARSE);
  CHECK(err != NULL && alpa_error_code(err) == ALPA_ERR_PARSE);
  alpa_error_free(err);
  err = NULL;
  CHECK(alpa_problem_read_file(&p, "/nonexistent/problem.json", ALPA_FORMAT_AUTO, &err) ==
        ALPA_ERR_IO);
  CHECK(error_mentions(err, "/nonexistent/problem.json"));
  err = NULL;
  {
    alpa_solve_options* o = NULL;
    CHECK(alpa_solve_options_create(&o, &err) == ALPA_OK);
    CHECK(alpa_solve_options_set_by_name(o, "time_limit_seconds", "2.5", &err) == ALPA_OK);
    CHECK(alpa_solve_options_set_by_name(o, "deterministic", "true", &err) == ALPA_OK);
    CHECK(alpa_solve_options_set_by_name(o, "speed", "11", &err) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "speed"));
    err = NULL;
    CHECK(alpa_solve_options_set_double(o, ALPA_OPT_RELATIVE_GAP, 2.0, &err) ==
          ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "relative_gap"));
    err = NULL;
    CHECK(alpa_solve_options_set_int(o, 999, 1, &err) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "999"));
    err = NULL;
    alpa_solve_options_destroy(o);
  }
  CHECK(strcmp(alpa_status_string(ALPA_ERR_INFEASIBLE), "infeasible") == 0);
}

static void test_serialization(const char* golden_dir) {
  char path[4096];
  alpa_problem* p = NULL;
  alpa_problem* again = NULL;
  alpa_buffer* text = NULL;
  alpa_solution* s = NULL;
  alpa_error* err = NULL;
  snprintf(path, sizeof(path), "%s/iopddl_example.json", golden_dir);
  CHECK(alpa_problem_read_file(&p, path, ALPA_FORMAT_AUTO, &err) == ALPA_OK);
  if (p == NULL) {
    if (err) fprintf(stderr, "  %s\n", alpa_error_message(err));
    alpa_error_free(err);
    return;
  }
  CHECK(alpa_problem_node_count(p) == 5);
  CHECK(alpa_problem_edge_count(p) == 5);
  CHECK(alpa_problem_strategy_count(p, 2) == 3);
  CHECK(alpa_problem_strategy_count(p, 5) == -1);
  CHECK(alpa_problem_to_json(&text, p, ALPA_FORMAT_ALPA, &err) == ALPA_OK ||
        (err != NULL && alpa_error_code(err) == ALPA_ERR_UNSUPPORTED));
  alpa_error_free(err);
  err = NULL;
  alpa_buffer_free(text);
  text = NULL;
  CHECK(alpa_problem_to_json(&text, p, ALPA_FORMAT_IOPDDL, &err) == ALPA_OK);
  CHECK(alpa_problem_read_buffer(&again, alpa_buffer_data(text), alpa_buffer_size(text),
                                 ALPA_FORMAT_IOPDDL, &err) == ALPA_OK);
  CHECK(alpa_problem_solve(&s, again, NULL, &err) == ALPA_OK);
  CHECK(alpa_solution_objective(s) == 445.0);
  alpa_solution_destroy(s);
  alpa_problem_destroy(again);

  {
    /* One-shot JSON: a problem object plus options. */
    static const char* request =
        "{\"options\": {\"time_limit_seconds\": 5, \"deterministic\": true},"
        " \"problem\": {\"name\": \"example\", \"nodes\": {"
        "\"intervals\": [[30, 70], [40, 70], [50, 120], [110, 140], [110, 150]],"
        "\"costs\": [[15], [55, 65], [25, 45, 35], [85, 75], [95]],"
        "\"usages\": [[10], [25, 25], [15, 20, 15], [10, 10], [15]]},"
        "\"edges\": {\"nodes\": [[0, 1], [0, 2], [1, 3], [2, 4], [3, 4]],"
        "\"costs\": [[30, 40], [50, 10, 40], [90, 10, 20, 80], [60, 20, 30], [70, 60]]},"
        "\"usage_limit\": 50}}";
    alpa_buffer* result = NULL;
    CHECK(alpa_problem_solve_json(&result, request, strlen(request), &err) == ALPA_OK);
    if (err) fprintf(stderr, "  %s\n", alpa_error_message(err));
    CHECK(result != NULL && strstr(alpa_buffer_data(result), "\"assignment\":[0,0,2,1,0]"));
    alpa_buffer_free(result);
    result = NULL;
    CHECK(alpa_problem_solve_json(&result, "[1,2]", 5, &err) == ALPA_ERR_PARSE);
    alpa_error_free(err);
    err = NULL;
  }
  alpa_buffer_free(text);
  alpa_problem_destroy(p);
}

static void test_cancel(void) {
  alpa_problem* p = build_example(1);
  alpa_cancel_token* token = NULL;
  alpa_solve_options* o = NULL;
  alpa_solution* s = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_cancel_token_create(&token, &err) == ALPA_OK);
  CHECK(alpa_solve_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_cancel_token(o, token, &err) == ALPA_OK);
  alpa_cancel_token_trigger(token);
  {
    /* Cancelled before any search: either nothing was left to search (optimal by reductions),
     * or no answer (ALPA_ERR_CANCELLED, no solution), or the cancelled solve kept a first
     * assignment; never a crash or a wrong optimum. */
    const int32_t rc = alpa_problem_solve(&s, p, o, &err);
    CHECK(rc == ALPA_OK || rc == ALPA_ERR_CANCELLED);
    if (rc == ALPA_ERR_CANCELLED) {
      CHECK(s == NULL && err != NULL && alpa_error_code(err) == ALPA_ERR_CANCELLED);
      alpa_error_free(err);
      err = NULL;
    } else {
      CHECK(alpa_solution_status(s) == ALPA_SOLVE_CANCELLED ||
            (alpa_solution_status(s) == ALPA_SOLVE_OPTIMAL && alpa_solution_objective(s) == 445.0));
    }
  }
  alpa_solution_destroy(s);
  alpa_solve_options_destroy(o);
  alpa_cancel_token_destroy(token);
  alpa_problem_destroy(p);
}

/* Operator graphs: the MLP of tests/golden/graph_mlp.json built by arrays, queries, errors that
 * name the op, reading and the model zoo. */
static char* read_text(const char* path) {
  FILE* f = fopen(path, "rb");
  char* text = NULL;
  long size = 0;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    text = (char*)calloc((size_t)size + 1, 1);
    if (text != NULL && fread(text, 1, (size_t)size, f) != (size_t)size) {
      free(text);
      text = NULL;
    }
  }
  fclose(f);
  return text;
}

static void test_graph(const char* golden_dir) {
  static const int32_t kinds[14] = {ALPA_OP_PARAMETER,
                                    ALPA_OP_PARAMETER,
                                    ALPA_OP_PARAMETER,
                                    ALPA_OP_DOT_GENERAL,
                                    ALPA_OP_BROADCAST_IN_DIM,
                                    ALPA_OP_ADD,
                                    ALPA_OP_RELU,
                                    ALPA_OP_PARAMETER,
                                    ALPA_OP_DOT_GENERAL,
                                    ALPA_OP_MUL,
                                    ALPA_OP_REDUCE_SUM,
                                    ALPA_OP_CONSTANT,
                                    ALPA_OP_MUL,
                                    ALPA_OP_SUB};
  static const int32_t dtypes[14] = {0, 0, 0, -1, -1, -1, -1, 0, -1, -1, -1, 0, -1, -1};
  static const int32_t roles[14] = {ALPA_ROLE_INPUT, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  static const int32_t phases[14] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2};
  static const int32_t layers[14] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1};
  static const int64_t operand_offsets[15] = {0, 0, 0, 0, 2, 3, 5, 6, 6, 8, 10, 11, 11, 13, 15};
  static const int32_t operands[15] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 7, 11, 7, 12};
  static const int64_t shape_offsets[15] = {0, 2, 4, 5, 5, 7, 7, 7, 9, 9, 9, 9, 11, 11, 11};
  static const int64_t shape_dims[11] = {8, 4, 4, 16, 16, 8, 16, 16, 2, 16, 2};
  /* dot_general: [nb, lhs_batch.., rhs_batch.., nc, lhs_contracting.., rhs_contracting..] */
  static const int64_t attr_offsets[15] = {0, 0, 0, 0, 4, 5, 5, 5, 5, 9, 9, 11, 11, 11, 11};
  static const int64_t attrs[11] = {0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1};
  static const double values[14] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.01, 0, 0};
  static const char* const names[14] = {"x",  "w1", "b1", NULL,   NULL, NULL, NULL,
                                        "w2", NULL, NULL, "loss", NULL, NULL, "w2.new"};
  static const int32_t outputs[2] = {10, 13};
  static const int32_t bad_kind[1] = {ALPA_OP_DOT_GENERAL};
  static const int64_t bad_operand_offsets[2] = {0, 2};
  static const int32_t bad_operands[2] = {0, 0}; /* x [8, 4] . x [8, 4] over dims 1 and 0 */
  static const int64_t bad_attr_offsets[2] = {0, 4};
  static const char* const bad_names[1] = {"attn.qkv"};
  char path[4096];
  char* golden = NULL;
  alpa_graph* g = NULL;
  alpa_buffer* buf = NULL;
  alpa_error* err = NULL;
  int64_t shape[2] = {0, 0};
  int64_t i;
  int64_t model_count;
  int found = 0;

  CHECK(alpa_graph_create(&g, &err) == ALPA_OK);
  CHECK(alpa_graph_add_ops(g, 14, kinds, dtypes, roles, phases, layers, operand_offsets, operands,
                           shape_offsets, shape_dims, attr_offsets, attrs, values, names,
                           &err) == ALPA_OK);
  if (err) fprintf(stderr, "  %s\n", alpa_error_message(err));
  CHECK(alpa_graph_add_ops(g, 1, bad_kind, NULL, NULL, NULL, NULL, bad_operand_offsets,
                           bad_operands, NULL, NULL, bad_attr_offsets, attrs, NULL, bad_names,
                           &err) == ALPA_ERR_INVALID_GRAPH);
  CHECK(error_mentions(err, "op 14 'attn.qkv' (dot_general): contracting dim sizes differ"));
  err = NULL;
  CHECK(alpa_graph_op_count(g) == 14);
  CHECK(alpa_graph_set_alias(g, 13, 7, &err) == ALPA_OK);
  CHECK(alpa_graph_set_alias(g, 13, 12, &err) == ALPA_ERR_INVALID_GRAPH);
  CHECK(error_mentions(err, "not a parameter op"));
  err = NULL;
  /* stop_gradient: set, read back and cleared again (the golden file below has none). */
  CHECK(alpa_graph_set_stop_gradient(g, 14, 1, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "op 14 does not exist"));
  err = NULL;
  CHECK(alpa_graph_set_stop_gradient(g, 9, 2, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "must be 0 or 1 (got 2)"));
  err = NULL;
  CHECK(alpa_graph_set_stop_gradient(g, 9, 1, &err) == ALPA_OK);
  CHECK(alpa_graph_op_stop_gradient(g, 9) == 1 && alpa_graph_op_stop_gradient(g, 8) == 0);
  CHECK(alpa_graph_set_stop_gradient(g, 9, 0, &err) == ALPA_OK);
  CHECK(alpa_graph_op_stop_gradient(g, 9) == 0);
  CHECK(alpa_graph_op_stop_gradient(g, 14) == -1 && alpa_graph_op_stop_gradient(NULL, 0) == -1);
  CHECK(alpa_graph_set_outputs(g, 2, outputs, &err) == ALPA_OK);
  CHECK(alpa_graph_finalize(g, &err) == ALPA_OK);
  CHECK(alpa_graph_set_stop_gradient(g, 9, 1, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "finalized"));
  err = NULL;
  CHECK(alpa_graph_op_kind(g, 8) == ALPA_OP_DOT_GENERAL);
  CHECK(alpa_graph_op_kind(g, 14) == -1);
  CHECK(alpa_graph_op_shape(g, 8, shape, 2) == 2 && shape[0] == 8 && shape[1] == 2);
  CHECK(strcmp(alpa_graph_op_name(g, 10), "loss") == 0);
  CHECK(alpa_graph_to_json(&buf, g, &err) == ALPA_OK);
  snprintf(path, sizeof(path), "%s/graph_mlp.json", golden_dir);
  golden = read_text(path);
  CHECK(golden != NULL && buf != NULL && strcmp(golden, alpa_buffer_data(buf)) == 0);
  free(golden);
  alpa_buffer_free(buf);
  buf = NULL;
  CHECK(alpa_graph_stats_to_json(&buf, g, &err) == ALPA_OK);
  CHECK(buf != NULL && strstr(alpa_buffer_data(buf), "\"parameters\":112") != NULL);
  CHECK(buf != NULL && strstr(alpa_buffer_data(buf), "\"dot_flops\":1536") != NULL);
  alpa_buffer_free(buf);
  buf = NULL;
  alpa_graph_destroy(g);
  g = NULL;

  CHECK(alpa_graph_read_buffer(&g, "{\"ops\": [", 9, &err) == ALPA_ERR_PARSE);
  CHECK(err != NULL && alpa_error_code(err) == ALPA_ERR_PARSE);
  alpa_error_free(err);
  err = NULL;
  CHECK(alpa_graph_read_file(&g, path, &err) == ALPA_OK);
  CHECK(alpa_graph_op_count(g) == 14 && alpa_graph_op_alias(g, 13) == 7);
  alpa_graph_destroy(g);
  g = NULL;

  model_count = alpa_model_count();
  for (i = 0; i < model_count; ++i) {
    if (strcmp(alpa_model_name(i), "gpt-39b") == 0) {
      found = alpa_model_benchmark_gpus(i) == 64 && alpa_model_nominal_params(i) == 39000000000LL;
    }
  }
  CHECK(found);
  CHECK(alpa_model_build_graph(&g, "mlp:layers=1", &err) == ALPA_OK);
  CHECK(alpa_graph_stats_to_json(&buf, g, &err) == ALPA_OK);
  CHECK(buf != NULL && strstr(alpa_buffer_data(buf), "\"parameters\":1056") != NULL);
  alpa_buffer_free(buf);
  alpa_graph_destroy(g);
  g = NULL;
  CHECK(alpa_model_build_graph(&g, "mlp:layers=zero", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "layers"));
  CHECK(g == NULL);
}

int main(int argc, char** argv) {
  const char* golden_dir = argc > 1 ? argv[1] : "tests/golden";
  CHECK(strlen(alpa_version_string()) > 0);
  CHECK(alpa_version_number() == ALPA_VERSION_NUMBER);
  test_solve_example();
  test_evaluate();
  test_bad_input();
  test_serialization(golden_dir);
  test_cancel();
  test_graph(golden_dir);
  return check_summary();
}
