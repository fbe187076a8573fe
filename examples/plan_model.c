/* Plans the training of a small GPT on one host of two H100s (Alpa's two-level search: pipeline
 * stages by the stage DP, sharding inside each stage by the ILP) and prints the stages: their
 * layers, submesh, logical mesh, devices, parallel degrees, latency and memory. Exits non-zero
 * unless the plan is a sound pipeline: at least one stage, the stages cover the planned graph's
 * layers in order without gaps, each stage's degrees multiply to its device count and no device
 * serves two stages. */
#include <stdio.h>

#include "alpa.h"

#define MODEL "gpt:layers=4,hidden=64,heads=2,seq=32,vocab=128,batch=8"
#define CLUSTER "dgx-h100:hosts=1,devices_per_host=2"
#define MAX_DEVICES 64

static int fail(alpa_error* err) {
  fprintf(stderr, "error: %s\n", err ? alpa_error_message(err) : "?");
  alpa_error_free(err);
  return 1;
}

/* Prints stage `stage` and checks it against the stages before it: it starts at layer
 * `next_layer` and uses none of the devices marked in used[]. Returns the layer after its last,
 * or -1 (with a message) when the stage breaks the pipeline. */
static int32_t print_stage(const alpa_plan* plan, int32_t stage, int32_t next_layer,
                           int used[MAX_DEVICES]) {
  alpa_stage_info info;
  alpa_error* err = NULL;
  int64_t devices[MAX_DEVICES];
  int64_t count, i;
  if (alpa_plan_stage(&info, sizeof info, plan, stage, &err) != ALPA_OK) {
    fail(err);
    return -1;
  }
  count = alpa_plan_stage_devices(plan, stage, devices, MAX_DEVICES);
  printf(
      "stage %d: layers %d-%d, submesh %lldx%lld, logical mesh %lldx%lld, dp %lld x tp %lld, "
      "latency %.1f us, %.2f MiB per device, devices",
      (int)stage, (int)info.first_layer, (int)info.last_layer, (long long)info.submesh_hosts,
      (long long)info.submesh_devices_per_host, (long long)info.logical_mesh[0],
      (long long)info.logical_mesh[1], (long long)info.data_parallel,
      (long long)info.tensor_parallel, info.latency_seconds * 1e6,
      (double)info.memory_bytes / (1024.0 * 1024.0));
  for (i = 0; i < count && i < MAX_DEVICES; ++i) printf(" %lld", (long long)devices[i]);
  printf("\n");
  if (info.first_layer != next_layer || info.last_layer < info.first_layer) {
    fprintf(stderr, "stage %d covers layers %d-%d; expected it to start at layer %d\n", (int)stage,
            (int)info.first_layer, (int)info.last_layer, (int)next_layer);
    return -1;
  }
  if (count < 1 || count > MAX_DEVICES || count != info.devices ||
      info.data_parallel * info.tensor_parallel != info.devices) {
    fprintf(stderr, "stage %d: %lld device ids for %lld devices of degrees %lld x %lld\n",
            (int)stage, (long long)count, (long long)info.devices, (long long)info.data_parallel,
            (long long)info.tensor_parallel);
    return -1;
  }
  for (i = 0; i < count; ++i) {
    if (devices[i] < 0 || devices[i] >= MAX_DEVICES || used[devices[i]]) {
      fprintf(stderr, "stage %d: device %lld is out of range or serves another stage\n", (int)stage,
              (long long)devices[i]);
      return -1;
    }
    used[devices[i]] = 1;
  }
  return info.last_layer + 1;
}

/* The number of pipeline layers of the plan's graph (one more than the largest op layer), or -1
 * with a message. */
static int32_t planned_layer_count(const alpa_plan* plan) {
  alpa_graph* graph = NULL;
  alpa_error* err = NULL;
  int32_t op, ops, layers = 0;
  if (alpa_plan_copy_graph(&graph, plan, &err) != ALPA_OK) {
    fail(err);
    return -1;
  }
  ops = (int32_t)alpa_graph_op_count(graph);
  for (op = 0; op < ops; ++op) {
    const int32_t layer = alpa_graph_op_layer(graph, op);
    if (layer + 1 > layers) layers = layer + 1;
  }
  alpa_graph_destroy(graph);
  return layers;
}

int main(void) {
  alpa_error* err = NULL;
  alpa_cluster* cluster = NULL;
  alpa_plan_options* options = NULL;
  alpa_plan* plan = NULL;
  int used[MAX_DEVICES] = {0};
  int32_t stage, stages, next_layer = 0;
  int rc = 0;

  /* Two threads for the intra-op solves keep the run short and its output repeatable. */
  if (alpa_cluster_create_preset(&cluster, CLUSTER, 0, &err) != ALPA_OK ||
      alpa_plan_options_create(&options, &err) != ALPA_OK ||
      alpa_plan_options_set_int(options, ALPA_PLAN_OPT_THREADS, 2, &err) != ALPA_OK ||
      alpa_model_plan(&plan, MODEL, cluster, options, &err) != ALPA_OK) {
    rc = fail(err);
    goto done;
  }
  stages = alpa_plan_stage_count(plan);
  printf("%s on %s: %d stages, %lld microbatches, predicted iteration %.1f us\n", MODEL, CLUSTER,
         (int)stages, (long long)alpa_plan_microbatches(plan),
         alpa_plan_iteration_seconds(plan) * 1e6);
  if (stages < 1) {
    fprintf(stderr, "the plan has no stage\n");
    rc = 1;
    goto done;
  }
  for (stage = 0; stage < stages && next_layer >= 0; ++stage) {
    next_layer = print_stage(plan, stage, next_layer, used);
  }
  if (next_layer < 0) {
    rc = 1;
  } else if (next_layer != planned_layer_count(plan)) {
    fprintf(stderr, "the stages end at layer %d of %d\n", (int)next_layer - 1,
            (int)planned_layer_count(plan));
    rc = 1;
  }

done:
  alpa_plan_destroy(plan);
  alpa_plan_options_destroy(options);
  alpa_cluster_destroy(cluster);
  return rc;
}
