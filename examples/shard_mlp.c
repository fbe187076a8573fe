/* Auto-shards the training step of a wide MLP on a 1-D mesh of 4 devices (Alpa's cost units)
 * and prints how each weight is laid out and which collectives the plan inserts: Megatron-style
 * tensor parallelism, weights split by column and by row in turn. */
#include <stdio.h>

#include "alpa_experimental.h"

static int fail(alpa_error* err) {
  fprintf(stderr, "error: %s\n", err ? alpa_error_message(err) : "?");
  alpa_error_free(err);
  return 1;
}

int main(void) {
  const int64_t shape[1] = {4};
  const double alpha[1] = {1}, beta[1] = {1};
  alpa_error* err = NULL;
  alpa_graph* graph = NULL;
  alpa_mesh* mesh = NULL;
  alpa_solve_options* options = NULL;
  alpa_sharding_plan* plan = NULL;
  int64_t counts[4];
  int64_t op, ops;
  int rc = 0;

  if (alpa_model_build_graph(&graph, "mlp:layers=4,batch=32,hidden=256", &err) != ALPA_OK ||
      alpa_mesh_create_abstract(&mesh, 1, shape, alpha, beta, &err) != ALPA_OK ||
      alpa_solve_options_create(&options, &err) != ALPA_OK ||
      alpa_solve_options_set_int(options, ALPA_OPT_COST_MODEL, ALPA_COST_MODE_ALPA, &err) !=
          ALPA_OK ||
      alpa_graph_auto_shard(&plan, graph, mesh, NULL, options, &err) != ALPA_OK) {
    rc = fail(err);
    goto done;
  }
  if (alpa_sharding_plan_status(plan) != ALPA_SOLVE_OPTIMAL) {
    fprintf(stderr, "no optimal plan: %s\n", alpa_sharding_plan_message(plan));
    rc = 1;
    goto done;
  }
  printf("objective %g\n", alpa_sharding_plan_objective(plan));
  ops = alpa_graph_op_count(graph);
  for (op = 0; op < ops; ++op) {
    alpa_buffer* spec = NULL;
    if (alpa_graph_op_role(graph, (int32_t)op) != ALPA_ROLE_PARAMETER) continue;
    if (alpa_sharding_plan_op_spec(&spec, plan, (int32_t)op, &err) != ALPA_OK) {
      rc = fail(err);
      goto done;
    }
    printf("  %-6s %s\n", alpa_graph_op_name(graph, (int32_t)op), alpa_buffer_data(spec));
    alpa_buffer_free(spec);
  }
  if (alpa_sharding_plan_collective_counts(plan, 1, counts, 4) != 4) {
    rc = 1;
    goto done;
  }
  printf("all-reduce %lld, all-gather %lld, reduce-scatter %lld, all-to-all %lld\n",
         (long long)counts[ALPA_COLLECTIVE_ALL_REDUCE],
         (long long)counts[ALPA_COLLECTIVE_ALL_GATHER],
         (long long)counts[ALPA_COLLECTIVE_REDUCE_SCATTER],
         (long long)counts[ALPA_COLLECTIVE_ALL_TO_ALL]);
  /* Megatron on 4 layers: 2 all-reduces forward, 1 backward (the first layer's input needs no
   * gradient). */
  if (counts[ALPA_COLLECTIVE_ALL_REDUCE] != 3) rc = 1;

done:
  alpa_sharding_plan_destroy(plan);
  alpa_solve_options_destroy(options);
  alpa_mesh_destroy(mesh);
  alpa_graph_destroy(graph);
  return rc;
}
