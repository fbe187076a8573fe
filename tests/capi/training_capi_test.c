/* Forward graphs made training steps through the C ABI, from C: alpa_graph_make_training on an
 * MLP built op by op (the backward pass, the optimizers' state and update), its auto-sharding and
 * pipeline plan, and the errors that name what is wrong. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpa.h"
#include "check.h"

static void print_error(alpa_error* err) {
  if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
  alpa_error_free(err);
}

#define MLP_OPS 8

/* x [8, 4] -> dot w1 [4, 16] -> relu (layer 0) -> dot w2 [16, 2] -> sum of squares (layer 1);
 * outputs: {loss}. `loss_op` picks the first output (the loss by convention); `weight_role` is
 * the role of w1 and w2. Finalized. */
static alpa_graph* mlp_forward(int32_t loss_op, int32_t weight_role) {
  static const int32_t kinds[MLP_OPS] = {ALPA_OP_PARAMETER, ALPA_OP_PARAMETER, ALPA_OP_DOT_GENERAL,
                                         ALPA_OP_RELU,      ALPA_OP_PARAMETER, ALPA_OP_DOT_GENERAL,
                                         ALPA_OP_MUL,       ALPA_OP_REDUCE_SUM};
  static const int32_t dtypes[MLP_OPS] = {
      ALPA_DTYPE_F32, ALPA_DTYPE_F32, -1, -1, ALPA_DTYPE_F32, -1, -1, -1};
  static const int32_t phases[MLP_OPS] = {0, 0, 0, 0, 0, 0, 0, 0};
  static const int32_t layers[MLP_OPS] = {0, 0, 0, 0, 1, 1, 1, 1};
  static const int64_t operand_offsets[MLP_OPS + 1] = {0, 0, 0, 2, 3, 3, 5, 7, 8};
  static const int32_t operands[8] = {0, 1, 2, 3, 4, 5, 5, 6};
  static const int64_t shape_offsets[MLP_OPS + 1] = {0, 2, 4, 4, 4, 6, 6, 6, 6};
  static const int64_t shape_dims[6] = {8, 4, 4, 16, 16, 2};
  /* dot_general: [nb, nc, lhs_contracting, rhs_contracting]; reduce_sum: its dims */
  static const int64_t attr_offsets[MLP_OPS + 1] = {0, 0, 0, 4, 4, 4, 8, 8, 10};
  static const int64_t attrs[10] = {0, 1, 1, 0, 0, 1, 1, 0, 0, 1};
  static const char* const names[MLP_OPS] = {"x", "w1", "h", "r", "w2", "y", "sq", "loss"};
  int32_t roles[MLP_OPS] = {ALPA_ROLE_INPUT, 0, 0, 0, 0, 0, 0, 0};
  alpa_graph* g = NULL;
  alpa_error* err = NULL;
  roles[1] = weight_role;
  roles[4] = weight_role;
  CHECK(alpa_graph_create(&g, &err) == ALPA_OK);
  CHECK(alpa_graph_add_ops(g, MLP_OPS, kinds, dtypes, roles, phases, layers, operand_offsets,
                           operands, shape_offsets, shape_dims, attr_offsets, attrs, NULL, names,
                           &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_graph_set_outputs(g, 1, &loss_op, &err) == ALPA_OK);
  CHECK(alpa_graph_finalize(g, &err) == ALPA_OK);
  print_error(err);
  return g;
}

/* Per-phase op counts and per-role counts of parameter ops. */
typedef struct {
  int64_t phase[3];
  int64_t gradients;
  int64_t optimizer_state;
  int64_t outputs;
  int64_t aliased_outputs;
} graph_counts;

static graph_counts count_graph(const alpa_graph* g) {
  graph_counts c;
  int64_t i, n = alpa_graph_op_count(g);
  int32_t* outputs = NULL;
  memset(&c, 0, sizeof(c));
  for (i = 0; i < n; ++i) {
    const int32_t phase = alpa_graph_op_phase(g, (int32_t)i);
    const int32_t role = alpa_graph_op_role(g, (int32_t)i);
    if (phase >= 0 && phase <= 2) ++c.phase[phase];
    if (role == ALPA_ROLE_GRADIENT) ++c.gradients;
    if (role == ALPA_ROLE_OPTIMIZER_STATE && alpa_graph_op_kind(g, (int32_t)i) == ALPA_OP_PARAMETER)
      ++c.optimizer_state;
  }
  c.outputs = alpa_graph_outputs(g, NULL, 0);
  outputs = (int32_t*)calloc((size_t)c.outputs + 1, sizeof(int32_t));
  if (outputs != NULL && alpa_graph_outputs(g, outputs, c.outputs) == c.outputs) {
    for (i = 0; i < c.outputs; ++i) {
      if (alpa_graph_op_alias(g, outputs[i]) >= 0) ++c.aliased_outputs;
    }
    CHECK(outputs[0] == 7); /* the loss stays the first output */
  }
  free(outputs);
  return c;
}

static void test_adam(void) {
  alpa_graph* forward = mlp_forward(7, ALPA_ROLE_PARAMETER);
  alpa_graph* train = NULL;
  alpa_error* err = NULL;
  graph_counts c;
  CHECK(alpa_graph_make_training(&train, forward, "adam:lr=0.0003,eps=1e-6", &err) == ALPA_OK);
  print_error(err);
  if (train == NULL) goto done;
  CHECK(alpa_graph_op_count(forward) == MLP_OPS); /* the forward graph is unchanged */
  c = count_graph(train);
  CHECK(c.phase[ALPA_PHASE_FORWARD] == MLP_OPS);
  CHECK(c.phase[ALPA_PHASE_BACKWARD] > 0);
  CHECK(c.phase[ALPA_PHASE_UPDATE] > 0);
  CHECK(c.gradients == 2); /* dloss/dw1, dloss/dw2 */
  /* w1.m, w1.v, w2.m, w2.v and the shared step counter */
  CHECK(c.optimizer_state == 5);
  /* the loss, then the new w1, w2 and the five new states, each aliasing what it replaces */
  CHECK(c.outputs == 8);
  CHECK(c.aliased_outputs == 7);
  /* a training graph is finalized: it serializes as it is */
  {
    alpa_buffer* json = NULL;
    CHECK(alpa_graph_to_json(&json, train, &err) == ALPA_OK);
    print_error(err);
    err = NULL;
    CHECK(json != NULL && strstr(alpa_buffer_data(json), "\"w1.m\"") != NULL);
    alpa_buffer_free(json);
  }
  /* a training graph cannot be made a training graph again */
  {
    alpa_graph* twice = NULL;
    CHECK(alpa_graph_make_training(&twice, train, "adam", &err) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "already has a backward phase"));
    CHECK(twice == NULL);
    err = NULL;
  }
done:
  alpa_graph_destroy(train);
  alpa_graph_destroy(forward);
}

static void test_sgd_and_momentum(void) {
  alpa_graph* forward = mlp_forward(7, ALPA_ROLE_PARAMETER);
  alpa_graph* sgd = NULL;
  alpa_graph* momentum = NULL;
  alpa_error* err = NULL;
  graph_counts c;
  CHECK(alpa_graph_make_training(&sgd, forward, "sgd:lr=0.1", &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_graph_make_training(&momentum, forward, "momentum:momentum=0.8", &err) == ALPA_OK);
  print_error(err);
  if (sgd != NULL) {
    c = count_graph(sgd);
    CHECK(c.optimizer_state == 0);
    CHECK(c.outputs == 3 && c.aliased_outputs == 2);
  }
  if (momentum != NULL) {
    c = count_graph(momentum);
    CHECK(c.optimizer_state == 2); /* w1.momentum, w2.momentum */
    CHECK(c.outputs == 5 && c.aliased_outputs == 4);
  }
  alpa_graph_destroy(momentum);
  alpa_graph_destroy(sgd);
  alpa_graph_destroy(forward);
}

/* The training graph shards on one mesh and plans on a cluster; its optimizer state makes the
 * sharded step's memory larger than the forward graph's. */
static void test_shard_and_plan(void) {
  static const int64_t shape[2] = {2, 1};
  static const double alpha[2] = {1, 1};
  static const double beta[2] = {1, 1};
  alpa_graph* forward = mlp_forward(7, ALPA_ROLE_PARAMETER);
  alpa_graph* train = NULL;
  alpa_mesh* m = NULL;
  alpa_solve_options* so = NULL;
  alpa_sharding_plan* forward_shard = NULL;
  alpa_sharding_plan* train_shard = NULL;
  alpa_cluster* cluster = NULL;
  alpa_plan_options* po = NULL;
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_graph_make_training(&train, forward, "adam", &err) == ALPA_OK);
  CHECK(alpa_mesh_create_abstract(&m, 2, shape, alpha, beta, &err) == ALPA_OK);
  CHECK(alpa_solve_options_create(&so, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_int(so, ALPA_OPT_COST_MODEL, ALPA_COST_MODE_ALPA, &err) == ALPA_OK);
  CHECK(alpa_solve_options_set_int(so, ALPA_OPT_DETERMINISTIC, 1, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (train == NULL) goto done;
  CHECK(alpa_graph_auto_shard(&forward_shard, forward, m, NULL, so, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_graph_auto_shard(&train_shard, train, m, NULL, so, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (forward_shard != NULL && train_shard != NULL) {
    CHECK(alpa_sharding_plan_status(train_shard) == ALPA_SOLVE_OPTIMAL);
    CHECK(isfinite(alpa_sharding_plan_objective(train_shard)));
    CHECK(alpa_sharding_plan_peak_memory_bytes(train_shard) >
          alpa_sharding_plan_peak_memory_bytes(forward_shard));
  }
  CHECK(alpa_cluster_create_preset(&cluster, "p3.16xlarge:devices_per_host=2", 0, &err) == ALPA_OK);
  CHECK(alpa_plan_options_create(&po, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(po, "threads", "1", &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(po, "microbatches", "2", &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_graph_plan(&plan, train, cluster, po, &err) == ALPA_OK);
  print_error(err);
  if (plan != NULL) {
    CHECK(alpa_plan_stage_count(plan) >= 1);
    CHECK(alpa_plan_iteration_seconds(plan) > 0);
  }
done:
  alpa_plan_destroy(plan);
  alpa_plan_options_destroy(po);
  alpa_cluster_destroy(cluster);
  alpa_sharding_plan_destroy(train_shard);
  alpa_sharding_plan_destroy(forward_shard);
  alpa_solve_options_destroy(so);
  alpa_mesh_destroy(m);
  alpa_graph_destroy(train);
  alpa_graph_destroy(forward);
}

static void expect_error(const alpa_graph* forward, const char* spec, int32_t code,
                         const char* needle) {
  alpa_graph* out = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_graph_make_training(&out, forward, spec, &err) == code);
  CHECK(out == NULL);
  CHECK(error_mentions(err, needle));
  alpa_graph_destroy(out);
}

static void test_errors(void) {
  alpa_graph* forward = mlp_forward(7, ALPA_ROLE_PARAMETER);
  alpa_graph* vector_loss = mlp_forward(5, ALPA_ROLE_PARAMETER); /* y [8, 2] as the loss */
  alpa_graph* no_weights = mlp_forward(7, ALPA_ROLE_INPUT);
  alpa_graph* building = NULL;
  alpa_graph* out = NULL;
  alpa_error* err = NULL;

  CHECK(alpa_graph_make_training(NULL, forward, "adam", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "must not be NULL"));
  err = NULL;
  CHECK(alpa_graph_make_training(&out, forward, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_graph_create(&building, &err) == ALPA_OK);
  expect_error(building, "adam", ALPA_ERR_INVALID_ARGUMENT, "not finalized");
  alpa_graph_destroy(building);

  expect_error(forward, "nadam", ALPA_ERR_INVALID_ARGUMENT, "\"nadam\" is not one of");
  expect_error(forward, "adam:lr=-1", ALPA_ERR_INVALID_ARGUMENT, "lr=\"-1\"");
  expect_error(forward, "adam:beta1=1", ALPA_ERR_INVALID_ARGUMENT, "beta1=\"1\"");
  expect_error(forward, "adam:lr", ALPA_ERR_INVALID_ARGUMENT, "\"lr\" is not key=value");
  expect_error(forward, "adam:warmup=3", ALPA_ERR_INVALID_ARGUMENT, "unknown optimizer key");
  expect_error(forward, "sgd:eps=1e-8", ALPA_ERR_INVALID_ARGUMENT, "does not apply to sgd");
  expect_error(forward, "adam:lr=1,lr=2", ALPA_ERR_INVALID_ARGUMENT, "given twice");
  expect_error(forward, "adam:master_weights=2", ALPA_ERR_INVALID_ARGUMENT, "0 or 1");
  expect_error(vector_loss, "adam", ALPA_ERR_INVALID_ARGUMENT, "'y' (dot_general)");
  expect_error(vector_loss, "adam", ALPA_ERR_INVALID_ARGUMENT, "floating-point scalar");
  expect_error(no_weights, "adam", ALPA_ERR_INVALID_ARGUMENT,
               "no parameter op with role parameter");

  alpa_graph_destroy(no_weights);
  alpa_graph_destroy(vector_loss);
  alpa_graph_destroy(forward);
}

int main(void) {
  test_adam();
  test_sgd_and_momentum();
  test_shard_and_plan();
  test_errors();
  return check_summary();
}
