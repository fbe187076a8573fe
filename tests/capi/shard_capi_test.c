/* Auto-sharding through the C ABI, from C: options, alpa_graph_auto_shard, the plan's getters,
 * count-then-fill, errors, cancellation from the progress callback. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpa_experimental.h"
#include "check.h"

static void print_error(alpa_error* err) {
  if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
  alpa_error_free(err);
}

/* The data-parallel MLP case: 6 layers, batch 256, hidden 32 on a 4x1 mesh with alpha = beta =
 * 1 under Alpa's cost model. */
static alpa_graph* mlp_graph(void) {
  alpa_graph* g = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_model_build_graph(&g, "mlp:layers=6,batch=256,hidden=32", &err) == ALPA_OK);
  print_error(err);
  return g;
}

static alpa_mesh* mesh_4x1(void) {
  static const int64_t shape[2] = {4, 1};
  static const double alpha[2] = {1, 1};
  static const double beta[2] = {1, 1};
  alpa_mesh* m = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_mesh_create_abstract(&m, 2, shape, alpha, beta, &err) == ALPA_OK);
  print_error(err);
  return m;
}

static alpa_solve_options* alpa_cost_options(void) {
  alpa_solve_options* o = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_solve_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_int(o, ALPA_OPT_COST_MODEL, ALPA_COST_MODE_ALPA, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_int(o, ALPA_OPT_DETERMINISTIC, 1, &err) == ALPA_OK);
  print_error(err);
  return o;
}

static void test_data_parallel_mlp(void) {
  alpa_graph* g = mlp_graph();
  alpa_mesh* m = mesh_4x1();
  alpa_solve_options* o = alpa_cost_options();
  alpa_sharding_plan* plan = NULL;
  alpa_error* err = NULL;
  int64_t counts[4] = {-1, -1, -1, -1};
  int64_t per_tensor[4] = {-1, -1, -1, -1};
  int64_t ops, i, n_collectives, weights = 0, all_replicated = 1, all_reduces = 0;
  int32_t* strategies = NULL;
  alpa_collective* list = NULL;
  alpa_buffer* json = NULL;

  CHECK(alpa_graph_auto_shard(&plan, g, m, NULL, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (plan == NULL) goto done;
  CHECK(alpa_sharding_plan_status(plan) == ALPA_SOLVE_OPTIMAL);
  CHECK(isfinite(alpa_sharding_plan_objective(plan)));
  CHECK(alpa_sharding_plan_lower_bound(plan) <= alpa_sharding_plan_objective(plan) + 1e-9);
  CHECK(fabs(alpa_sharding_plan_cost(plan, ALPA_PLAN_COST_COMPUTE) +
             alpa_sharding_plan_cost(plan, ALPA_PLAN_COST_COMMUNICATION) +
             alpa_sharding_plan_cost(plan, ALPA_PLAN_COST_RESHARDING) -
             alpa_sharding_plan_objective(plan)) <=
        1e-6 * (1 + alpa_sharding_plan_objective(plan)));
  CHECK(isnan(alpa_sharding_plan_cost(plan, 7)));
  CHECK(alpa_sharding_plan_peak_memory_bytes(plan) > 0);
  CHECK(strcmp(alpa_sharding_plan_message(plan), "") == 0 ||
        alpa_sharding_plan_message(plan) != NULL);

  /* Data parallelism: the gradients' all-reduces fuse into exactly one, nothing else. */
  CHECK(alpa_sharding_plan_collective_counts(plan, 1, NULL, 0) == 4);
  CHECK(alpa_sharding_plan_collective_counts(plan, 1, counts, 4) == 4);
  CHECK(counts[ALPA_COLLECTIVE_ALL_REDUCE] == 1);
  CHECK(counts[ALPA_COLLECTIVE_ALL_GATHER] == 0);
  CHECK(counts[ALPA_COLLECTIVE_REDUCE_SCATTER] == 0);
  CHECK(counts[ALPA_COLLECTIVE_ALL_TO_ALL] == 0);
  CHECK(alpa_sharding_plan_collective_counts(plan, 0, per_tensor, 4) == 4);
  CHECK(per_tensor[ALPA_COLLECTIVE_ALL_REDUCE] >= 1);
  CHECK(per_tensor[ALPA_COLLECTIVE_ALL_GATHER] == 0);
  {
    /* A capacity too small: the count is still 4, and nothing past out[1] is written. */
    int64_t two[3] = {-7, -7, -7};
    CHECK(alpa_sharding_plan_collective_counts(plan, 1, two, 2) == 4);
    CHECK(two[ALPA_COLLECTIVE_ALL_GATHER] == 0 && two[ALPA_COLLECTIVE_ALL_REDUCE] == 1);
    CHECK(two[2] == -7);
  }
  CHECK(alpa_sharding_plan_collective_counts(NULL, 1, counts, 4) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_sharding_plan_collective_counts(plan, 1, NULL, 4) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_sharding_plan_collective_counts(plan, 1, counts, -1) == -ALPA_ERR_INVALID_ARGUMENT);

  /* Count-then-fill: capacity 0 (and out NULL) only counts. */
  ops = alpa_sharding_plan_op_strategies(plan, NULL, 0);
  CHECK(ops == alpa_graph_op_count(g));
  strategies = (int32_t*)calloc((size_t)ops + 1, sizeof(int32_t));
  if (strategies == NULL) goto done;
  strategies[ops] = 12345; /* must stay untouched */
  CHECK(alpa_sharding_plan_op_strategies(plan, strategies, ops) == ops);
  CHECK(strategies[ops] == 12345);
  for (i = 0; i < ops; ++i) CHECK(strategies[i] >= -1);
  CHECK(alpa_sharding_plan_op_strategies(NULL, strategies, ops) == -ALPA_ERR_INVALID_ARGUMENT);

  n_collectives = alpa_sharding_plan_collectives(plan, NULL, 0, sizeof(alpa_collective));
  CHECK(n_collectives == per_tensor[0] + per_tensor[1] + per_tensor[2] + per_tensor[3]);
  CHECK(alpa_sharding_plan_collectives(plan, NULL, 1, sizeof(alpa_collective)) ==
        (n_collectives > 0 ? -1 : 0));
  list = (alpa_collective*)calloc((size_t)n_collectives + 1, sizeof(alpa_collective));
  if (list == NULL) goto done;
  CHECK(alpa_sharding_plan_collectives(plan, list, n_collectives + 1, sizeof(alpa_collective)) ==
        n_collectives);
  CHECK(alpa_sharding_plan_collectives(plan, list, 1, 8) == -1); /* element too small */
  for (i = 0; i < n_collectives; ++i) {
    CHECK(list[i].struct_size == sizeof(alpa_collective));
    CHECK(list[i].version == 1);
    CHECK(list[i].kind == ALPA_COLLECTIVE_ALL_REDUCE);
    CHECK(list[i].mesh_dims == 1u); /* mesh dim 0, the one with 4 devices */
    CHECK((list[i].flags & ALPA_COLLECTIVE_FLAG_GRADIENT_SYNC) != 0);
    CHECK(list[i].bytes > 0 && list[i].cost > 0);
    CHECK(list[i].tensor >= 0 && list[i].tensor < ops);
    CHECK(list[i].consumer >= -1 && list[i].consumer < ops);
    CHECK(list[i].consumer >= 0 || list[i].operand == -1); /* -1: for all its readers */
    if (list[i].kind == ALPA_COLLECTIVE_ALL_REDUCE) ++all_reduces;
  }
  CHECK(all_reduces == per_tensor[ALPA_COLLECTIVE_ALL_REDUCE]);

  /* Every weight is replicated. */
  for (i = 0; i < ops; ++i) {
    alpa_buffer* spec = NULL;
    if (alpa_graph_op_kind(g, (int32_t)i) != ALPA_OP_PARAMETER ||
        alpa_graph_op_role(g, (int32_t)i) != ALPA_ROLE_PARAMETER) {
      continue;
    }
    CHECK(alpa_sharding_plan_op_spec(&spec, plan, (int32_t)i, &err) == ALPA_OK);
    print_error(err);
    err = NULL;
    if (spec == NULL) continue;
    ++weights;
    if (alpa_graph_op_shape(g, (int32_t)i, NULL, 0) == 2 &&
        strcmp(alpa_buffer_data(spec), "R R") != 0) {
      fprintf(stderr, "  weight %s has spec '%s'\n", alpa_graph_op_name(g, (int32_t)i),
              alpa_buffer_data(spec));
      all_replicated = 0;
    }
    if (alpa_graph_op_shape(g, (int32_t)i, NULL, 0) == 1 &&
        strcmp(alpa_buffer_data(spec), "R") != 0) {
      all_replicated = 0;
    }
    alpa_buffer_free(spec);
  }
  CHECK(weights == 12); /* 6 kernels and 6 biases */
  CHECK(all_replicated);
  {
    alpa_buffer* spec = NULL;
    CHECK(alpa_sharding_plan_op_spec(&spec, plan, (int32_t)ops, &err) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "out of range"));
    err = NULL;
    CHECK(alpa_sharding_plan_op_spec(&spec, plan, -1, NULL) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(spec == NULL);
  }

  CHECK(alpa_sharding_plan_to_json(&json, plan, &err) == ALPA_OK);
  if (json != NULL) {
    const char* text = alpa_buffer_data(json);
    CHECK(text[0] == '{' && strlen(text) == alpa_buffer_size(json));
    CHECK(strstr(text, "\"objective\":") != NULL);
    CHECK(strstr(text, "\"collectives\":") != NULL);
    CHECK(strstr(text, "\"all_reduce\":1") != NULL);
    CHECK(strstr(text, "\"peak_memory_bytes\":") != NULL);
    CHECK(strstr(text, "\"tensors\":") != NULL);
    CHECK(strstr(text, "\"status\":\"optimal\"") != NULL);
  }
  alpa_buffer_free(json);

done:
  free(strategies);
  free(list);
  alpa_sharding_plan_destroy(plan);
  alpa_solve_options_destroy(o);
  alpa_mesh_destroy(m);
  alpa_graph_destroy(g);
}

/* The plan keeps no pointer to its inputs: destroy them first, then use the plan. */
static void test_plan_outlives_inputs(void) {
  alpa_graph* g = mlp_graph();
  alpa_mesh* m = mesh_4x1();
  alpa_solve_options* o = alpa_cost_options();
  alpa_sharding_plan* plan = NULL;
  alpa_buffer* json = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_graph_auto_shard(&plan, g, m, NULL, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  alpa_graph_destroy(g);
  alpa_mesh_destroy(m);
  alpa_solve_options_destroy(o);
  CHECK(alpa_sharding_plan_to_json(&json, plan, &err) == ALPA_OK);
  CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"tensors\":") != NULL);
  alpa_buffer_free(json);
  alpa_sharding_plan_destroy(plan);
}

static void test_errors(void) {
  alpa_graph* g = mlp_graph();
  alpa_graph* building = NULL;
  alpa_mesh* m = mesh_4x1();
  alpa_solve_options* o = NULL;
  alpa_sharding_plan* plan = NULL;
  alpa_error* err = NULL;

  CHECK(alpa_graph_auto_shard(NULL, g, m, NULL, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_graph_auto_shard(&plan, NULL, m, NULL, NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "graph is NULL"));
  err = NULL;
  CHECK(alpa_graph_auto_shard(&plan, g, NULL, NULL, NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "mesh is NULL"));
  err = NULL;
  CHECK(alpa_graph_create(&building, &err) == ALPA_OK);
  CHECK(alpa_graph_auto_shard(&plan, building, m, NULL, NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "not finalized"));
  err = NULL;
  /* The default (real) cost model needs a cluster. */
  CHECK(alpa_graph_auto_shard(&plan, g, m, NULL, NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "cluster is NULL"));
  err = NULL;
  CHECK(plan == NULL);

  CHECK(alpa_solve_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_int(o, ALPA_OPT_ZERO, 7, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "zero"));
  err = NULL;
  CHECK(alpa_solve_options_set_int(o, ALPA_OPT_COST_MODEL, 2, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "cost_model"));
  err = NULL;
  CHECK(alpa_solve_options_set_int(o, ALPA_OPT_ALLOW_ALL_GATHER, 2, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "allow_all_gather"));
  err = NULL;
  CHECK(alpa_solve_options_set_int(o, ALPA_OPT_BATCH_MESH_DIM, -3, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "batch_mesh_dim"));
  err = NULL;
  CHECK(alpa_solve_options_set_double(o, ALPA_OPT_MEMORY_BUDGET_BYTES, 1.5, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "memory_budget_bytes"));
  err = NULL;
  CHECK(alpa_solve_options_set_by_name(o, "zero", "sometimes", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "sometimes"));
  err = NULL;
  /* Names and symbolic values. */
  CHECK(alpa_solve_options_set_by_name(o, "cost_model", "alpa", &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_by_name(o, "zero", "search", &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_by_name(o, "zero", "off", &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_by_name(o, "force_data_parallel", "false", &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_by_name(o, "batch_mesh_dim", "free", &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_by_name(o, "allow_all_to_all", "1", &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_by_name(o, "memory_budget_bytes", "1e12", &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_by_name(o, "memory_budget_bytes", "9223372036854775807", &err) ==
        ALPA_OK);
  CHECK(alpa_solve_options_set_by_name(o, "memory_budget_bytes", "none", &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  /* A mesh dim the mesh does not have is an error at the call, naming the option. */
  CHECK(alpa_solve_options_set_int(o, ALPA_OPT_BATCH_MESH_DIM, 2, &err) == ALPA_OK);
  CHECK(alpa_graph_auto_shard(&plan, g, m, NULL, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "batch_mesh_dim"));
  err = NULL;
  CHECK(plan == NULL);

  alpa_sharding_plan_destroy(NULL);
  CHECK(alpa_sharding_plan_status(NULL) == 0);
  CHECK(isnan(alpa_sharding_plan_objective(NULL)));
  CHECK(alpa_sharding_plan_peak_memory_bytes(NULL) == 0);
  CHECK(strcmp(alpa_sharding_plan_message(NULL), "") == 0);
  CHECK(alpa_sharding_plan_collectives(NULL, NULL, 0, sizeof(alpa_collective)) ==
        -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_sharding_plan_to_json(NULL, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);

  alpa_solve_options_destroy(o);
  alpa_graph_destroy(building);
  alpa_mesh_destroy(m);
  alpa_graph_destroy(g);
}

/* A memory budget below what any plan needs: no answer, so ALPA_ERR_INFEASIBLE and no plan. */
static void test_infeasible_budget(void) {
  alpa_graph* g = mlp_graph();
  alpa_mesh* m = mesh_4x1();
  alpa_solve_options* o = alpa_cost_options();
  alpa_sharding_plan* plan = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_solve_options_set_int(o, ALPA_OPT_MEMORY_BUDGET_BYTES, 1000, &err) == ALPA_OK);
  CHECK(alpa_graph_auto_shard(&plan, g, m, NULL, o, &err) == ALPA_ERR_INFEASIBLE);
  CHECK(plan == NULL);
  CHECK(err != NULL && alpa_error_code(err) == ALPA_ERR_INFEASIBLE);
  CHECK(err != NULL && strstr(alpa_error_message(err), "memory budget") != NULL);
  alpa_error_free(err);
  alpa_solve_options_destroy(o);
  alpa_mesh_destroy(m);
  alpa_graph_destroy(g);
}

/* The real cost model with a preset cluster and a derived mesh. */
static void test_real_cost_model(void) {
  static const int64_t shape[2] = {2, 4};
  alpa_graph* g = mlp_graph();
  alpa_cluster* c = NULL;
  alpa_mesh* m = NULL;
  alpa_sharding_plan* plan = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_cluster_create_preset(&c, "p3.16xlarge", 0, &err) == ALPA_OK);
  CHECK(alpa_mesh_create(&m, c, 1, 8, 2, shape, &err) == ALPA_OK);
  CHECK(alpa_graph_auto_shard(&plan, g, m, c, NULL, &err) == ALPA_OK);
  print_error(err);
  CHECK(alpa_sharding_plan_status(plan) == ALPA_SOLVE_OPTIMAL ||
        alpa_sharding_plan_status(plan) == ALPA_SOLVE_FEASIBLE);
  CHECK(alpa_sharding_plan_objective(plan) > 0 && alpa_sharding_plan_objective(plan) < 1.0);
  alpa_sharding_plan_destroy(plan);
  alpa_mesh_destroy(m);
  alpa_cluster_destroy(c);
  alpa_graph_destroy(g);
}

struct progress_log {
  int calls;
  int cancel_after; /* return non-zero from this call on (1-based); 0: never */
};

static int32_t on_progress(void* user, const alpa_progress* p) {
  struct progress_log* log = (struct progress_log*)user;
  ++log->calls;
  if (p->struct_size < sizeof(alpa_progress) || p->version != 1 || p->phase == NULL) return 1;
  return log->cancel_after > 0 && log->calls >= log->cancel_after;
}

/* The progress callback runs on this thread; a non-zero return cancels. The MLP problem may be
 * solved entirely by the reductions before the first report, so either the plan is cancelled
 * or it is already complete (optimal, with strategies); never an error or a wrong status. */
static void test_progress_and_cancel(void) {
  alpa_graph* g = mlp_graph();
  alpa_mesh* m = mesh_4x1();
  alpa_solve_options* o = alpa_cost_options();
  alpa_sharding_plan* plan = NULL;
  alpa_cancel_token* token = NULL;
  alpa_error* err = NULL;
  struct progress_log log = {0, 0};
  int32_t status;

  CHECK(alpa_solve_options_set_progress(o, on_progress, &log, &err) == ALPA_OK);
  CHECK(alpa_graph_auto_shard(&plan, g, m, NULL, o, &err) == ALPA_OK);
  CHECK(alpa_sharding_plan_status(plan) == ALPA_SOLVE_OPTIMAL);
  CHECK(log.calls >= 1);
  printf("progress: %d reports without cancelling\n", log.calls);
  alpa_sharding_plan_destroy(plan);
  plan = NULL;

  log.calls = 0;
  log.cancel_after = 1;
  CHECK(alpa_graph_auto_shard(&plan, g, m, NULL, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  status = alpa_sharding_plan_status(plan);
  printf("progress: cancelling at the first report gave status %d with %lld op strategies\n",
         (int)status, (long long)alpa_sharding_plan_op_strategies(plan, NULL, 0));
  /* Observed: ALPA_SOLVE_CANCELLED with every op's strategy (the first report comes with the
   * heuristic's incumbent, which the cancelled plan keeps). */
  CHECK(status == ALPA_SOLVE_CANCELLED || status == ALPA_SOLVE_OPTIMAL);
  /* A plan handle always has an answer: every op's strategy and a finite objective. */
  CHECK(alpa_sharding_plan_op_strategies(plan, NULL, 0) == alpa_graph_op_count(g));
  CHECK(isfinite(alpa_sharding_plan_objective(plan)));
  alpa_sharding_plan_destroy(plan);
  plan = NULL;

  /* A cancel token triggered before the call. */
  CHECK(alpa_solve_options_set_progress(o, NULL, NULL, &err) == ALPA_OK);
  CHECK(alpa_cancel_token_create(&token, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_cancel_token(o, token, &err) == ALPA_OK);
  alpa_cancel_token_trigger(token);
  /* Cancelled before any assignment: no answer, so ALPA_ERR_CANCELLED and no plan (or, when the
   * reductions alone solved it before the first check, an optimal plan). */
  {
    const int32_t rc = alpa_graph_auto_shard(&plan, g, m, NULL, o, &err);
    printf("cancel token: rc %d\n", (int)rc);
    CHECK(rc == ALPA_ERR_CANCELLED || rc == ALPA_OK);
    if (rc == ALPA_ERR_CANCELLED) {
      CHECK(plan == NULL);
      CHECK(err != NULL && alpa_error_code(err) == ALPA_ERR_CANCELLED);
      alpa_error_free(err);
      err = NULL;
    } else {
      status = alpa_sharding_plan_status(plan);
      CHECK(status == ALPA_SOLVE_CANCELLED || status == ALPA_SOLVE_OPTIMAL);
    }
  }
  alpa_sharding_plan_destroy(plan);

  alpa_solve_options_destroy(o);
  alpa_cancel_token_destroy(token);
  alpa_mesh_destroy(m);
  alpa_graph_destroy(g);
}

int main(void) {
  test_data_parallel_mlp();
  test_plan_outlives_inputs();
  test_errors();
  test_infeasible_budget();
  test_real_cost_model();
  test_progress_and_cancel();
  return check_summary();
}
