/* The pipeline planner through the C ABI, from C: options, alpa_model_plan / alpa_graph_plan,
 * the plan's getters and their invariants (stages cover the layers once, devices partition the
 * cluster, the iteration time is the 1F1B formula, schedules run every microbatch forward then
 * backward), JSON, errors, cancellation. Small GPT cases: each planning call takes about a
 * second on two threads. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alpa_experimental.h"
#include "check.h"

#define SMALL_GPT "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=16"
#define SMALL_GPT_BATCH 16

static void print_error(alpa_error* err) {
  if (err != NULL) fprintf(stderr, "  error: %s\n", alpa_error_message(err));
  alpa_error_free(err);
}

static double now_seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

static alpa_cluster* make_cluster(const char* spec) {
  alpa_cluster* c = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_cluster_create_preset(&c, spec, 0, &err) == ALPA_OK);
  print_error(err);
  return c;
}

/* Options for a quick, repeatable plan: two threads. */
static alpa_plan_options* quick_options(void) {
  alpa_plan_options* o = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_plan_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_THREADS, 2, &err) == ALPA_OK);
  print_error(err);
  return o;
}

/* How often `needle` occurs in `text`. */
static int64_t count_occurrences(const char* text, const char* needle) {
  int64_t n = 0;
  const char* p = text;
  size_t len = strlen(needle);
  while ((p = strstr(p, needle)) != NULL) {
    ++n;
    p += len;
  }
  return n;
}

/* Progress callback: counts reports, checks the struct, remembers whether "dp" ran. */
typedef struct progress_log {
  int calls;
  int saw_dp;
  int bad;
  int cancel_after; /* return non-zero on this call (1-based); 0: never */
} progress_log;

static int32_t on_progress(void* user_data, const alpa_plan_progress* p) {
  progress_log* log = (progress_log*)user_data;
  ++log->calls;
  if (p == NULL || p->struct_size < sizeof(alpa_plan_progress) || p->version != 2 ||
      p->phase == NULL || p->microbatches < 1 || p->seconds < 0 || p->done < 0 ||
      p->done > p->total || p->time_limit_seconds != 0) {
    log->bad = 1;
  } else if (strcmp(p->phase, "dp") == 0) {
    log->saw_dp = 1;
  } else if (strcmp(p->phase, "estimate") == 0) {
    /* The work estimate comes before the solves it counts. */
    if (p->piece_types < 1 || p->logical_meshes < 1 ||
        p->solves_per_count != p->piece_types * p->logical_meshes ||
        p->max_solves_per_count < p->solves_per_count || p->microbatch_counts < 1 ||
        p->estimated_solves != p->solves_per_count * p->microbatch_counts ||
        p->stage_candidates < 1 || p->done != 0) {
      log->bad = 1;
    }
  } else if (strcmp(p->phase, "build") != 0 && strcmp(p->phase, "cluster") != 0 &&
             strcmp(p->phase, "intra-op") != 0) {
    log->bad = 1;
  }
  return log->cancel_after > 0 && log->calls >= log->cancel_after ? 1 : 0;
}

/* Whether two boxes of `rank` dims share no element. */
static int boxes_disjoint(const int64_t* a_off, const int64_t* a_size, const int64_t* b_off,
                          const int64_t* b_size, int32_t rank) {
  int32_t d;
  for (d = 0; d < rank; ++d) {
    if (a_off[d] + a_size[d] <= b_off[d] || b_off[d] + b_size[d] <= a_off[d]) return 1;
  }
  return 0;
}

static int64_t box_volume(const int64_t* size, int32_t rank) {
  int64_t v = 1;
  int32_t d;
  for (d = 0; d < rank; ++d) v *= size[d];
  return v;
}

/* The slice moves of transfer t: senders are devices of from_stage, receivers of to_stage; the
 * boxes a receiver gets are disjoint and fill its tile (their bounding box); receivers' tiles
 * coincide or are disjoint and the distinct ones cover the tensor once (their bytes sum to the
 * transfer's bytes); all moves' bytes sum to that times the destination's replication (every
 * receiver gets its whole tile). Returns that replication (0 on failure). */
static int64_t check_transfer_moves(const alpa_plan* plan, int64_t t, const alpa_transfer* tr) {
  int64_t from[64], to[64], lo[64][ALPA_SLICE_MOVE_MAX_RANK], hi[64][ALPA_SLICE_MOVE_MAX_RANK];
  int64_t received[64], receivers = 0, distinct = 0, distinct_bytes = 0, total = 0, elem = 0;
  int32_t rank = -1;
  int64_t nf = alpa_plan_stage_devices(plan, tr->from_stage, from, 64);
  int64_t nt = alpa_plan_stage_devices(plan, tr->to_stage, to, 64);
  int64_t n = alpa_plan_transfer_moves(plan, t, NULL, 0, sizeof(alpa_slice_move));
  int64_t i, j, r;
  int32_t d;
  alpa_slice_move* moves = NULL;
  CHECK(nf >= 1 && nf <= 64 && nt >= 1 && nt <= 64);
  CHECK(n >= 1);
  if (n < 1 || nf > 64 || nt > 64) return 0;
  CHECK(alpa_plan_transfer_moves(plan, t, NULL, 1, sizeof(alpa_slice_move)) == -1);
  moves = (alpa_slice_move*)malloc((size_t)n * sizeof(alpa_slice_move));
  if (moves == NULL) return 0;
  memset(moves, 0xab, (size_t)n * sizeof(alpa_slice_move));
  CHECK(alpa_plan_transfer_moves(plan, t, moves, n, 8) == -1);
  CHECK(alpa_plan_transfer_moves(plan, t, moves, n, sizeof(alpa_slice_move)) == n);
  memset(received, 0, sizeof received);
  for (r = 0; r < nt; ++r) {
    for (d = 0; d < ALPA_SLICE_MOVE_MAX_RANK; ++d) {
      lo[r][d] = INT64_MAX;
      hi[r][d] = -1;
    }
  }
  for (i = 0; i < n; ++i) {
    const alpa_slice_move* m = &moves[i];
    int sender = 0;
    CHECK(m->struct_size == sizeof(alpa_slice_move));
    CHECK(m->version == 1 && m->reserved0 == 0 && m->reserved1 == 0);
    CHECK(m->rank >= 0 && m->rank <= ALPA_SLICE_MOVE_MAX_RANK);
    if (m->rank < 0 || m->rank > ALPA_SLICE_MOVE_MAX_RANK) break;
    if (rank < 0) rank = m->rank;
    CHECK(m->rank == rank);
    for (j = 0; j < nf; ++j) sender |= from[j] == m->src_device;
    CHECK(sender);
    for (r = 0; r < nt && to[r] != m->dst_device; ++r) {
    }
    CHECK(r < nt);
    if (r == nt) continue;
    for (d = 0; d < ALPA_SLICE_MOVE_MAX_RANK; ++d) {
      if (d >= m->rank) {
        CHECK(m->offsets[d] == 0 && m->sizes[d] == 1);
        continue;
      }
      CHECK(m->offsets[d] >= 0 && m->sizes[d] >= 1);
      if (m->offsets[d] < lo[r][d]) lo[r][d] = m->offsets[d];
      if (m->offsets[d] + m->sizes[d] > hi[r][d]) hi[r][d] = m->offsets[d] + m->sizes[d];
    }
    /* One element size for the whole tensor. */
    CHECK(m->bytes > 0 && m->bytes % box_volume(m->sizes, m->rank) == 0);
    if (elem == 0) elem = m->bytes / box_volume(m->sizes, m->rank);
    CHECK(m->bytes == elem * box_volume(m->sizes, m->rank));
    /* Disjoint from the earlier boxes this receiver got. */
    for (j = 0; j < i; ++j) {
      if (moves[j].dst_device == m->dst_device) {
        CHECK(boxes_disjoint(moves[j].offsets, moves[j].sizes, m->offsets, m->sizes, m->rank));
      }
    }
    received[r] += m->bytes;
    total += m->bytes;
  }
  for (r = 0; r < nt && rank >= 0; ++r) {
    int64_t size[ALPA_SLICE_MOVE_MAX_RANK];
    int first = 1;
    if (received[r] == 0) continue; /* zero-filled (partial destination) */
    ++receivers;
    for (d = 0; d < rank; ++d) size[d] = hi[r][d] - lo[r][d];
    CHECK(received[r] == elem * box_volume(size, rank)); /* the boxes fill the tile */
    for (j = 0; j < r; ++j) {
      int64_t other[ALPA_SLICE_MOVE_MAX_RANK];
      int same = 1;
      if (received[j] == 0) continue;
      for (d = 0; d < rank; ++d) {
        other[d] = hi[j][d] - lo[j][d];
        same &= lo[j][d] == lo[r][d] && hi[j][d] == hi[r][d];
      }
      if (same) first = 0;
      CHECK(same || boxes_disjoint(lo[j], other, lo[r], size, rank));
    }
    if (first) {
      ++distinct;
      distinct_bytes += received[r];
    }
  }
  CHECK(distinct >= 1 && distinct_bytes == tr->bytes);
  CHECK(distinct >= 1 && total * distinct == tr->bytes * receivers);
  free(moves);
  return distinct >= 1 && receivers % distinct == 0 ? receivers / distinct : 0;
}

/* Every invariant of a plan that the C ABI exposes. global_batch 0: a fixed graph. */
static void check_plan(const alpa_plan* plan, const alpa_cluster* cluster, int64_t global_batch) {
  alpa_error* err = NULL;
  alpa_graph* graph = NULL;
  alpa_buffer* json = NULL;
  alpa_buffer* detailed = NULL;
  alpa_stage_info info;
  alpa_collective* collectives = NULL;
  alpa_transfer* transfers = NULL;
  int32_t* op_stages = NULL;
  int32_t* schedule = NULL;
  int64_t* device_seen = NULL;
  const int64_t cluster_devices =
      alpa_cluster_hosts(cluster) * alpa_cluster_devices_per_host(cluster);
  const int32_t stages = alpa_plan_stage_count(plan);
  const int64_t b = alpa_plan_microbatches(plan);
  int64_t layers = 0, total_devices = 0, ops = 0, n, i, k, specs = 0, peak = 0;
  int32_t s, next_layer = 0;
  double sum = 0, max_latency = 0, iteration, overheads = 0, first_overhead = 0;

  CHECK(stages >= 1);
  CHECK(b >= 1);
  if (global_batch > 0) CHECK(global_batch % b == 0);
  iteration = alpa_plan_iteration_seconds(plan);
  CHECK(iteration > 0 && isfinite(iteration));
  CHECK(alpa_plan_compile_seconds(plan) >= 0);
  CHECK(alpa_plan_tflops_per_device(plan) > 0);
  CHECK(alpa_plan_peak_memory_bytes(plan) > 0);

  /* The layer count, from the summary JSON (one "first_unit" per layer group). */
  CHECK(alpa_plan_to_json(&json, plan, 0, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (json == NULL) return;
  layers = count_occurrences(alpa_buffer_data(json), "\"first_unit\"");
  CHECK(layers >= 1);
  CHECK(alpa_buffer_size(json) > 2 && alpa_buffer_data(json)[0] == '{' &&
        alpa_buffer_data(json)[alpa_buffer_size(json) - 1] == '}');
  CHECK(strstr(alpa_buffer_data(json), "\"iteration_seconds\"") != NULL);
  CHECK(strstr(alpa_buffer_data(json), "\"stages\"") != NULL);
  CHECK(strstr(alpa_buffer_data(json), "\"microbatches\"") != NULL);
  CHECK(strstr(alpa_buffer_data(json), "\"peak_memory_bytes\"") != NULL);
  CHECK(strstr(alpa_buffer_data(json), "\"compile_seconds\"") != NULL);
  CHECK(strstr(alpa_buffer_data(json), "\"strategy\"") == NULL);
  CHECK(alpa_plan_to_json(&detailed, plan, 1, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(detailed != NULL && strstr(alpa_buffer_data(detailed), "\"strategy\"") != NULL);
  CHECK(alpa_plan_to_json(&detailed, plan, 3, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "detail"));
  err = NULL;

  device_seen = (int64_t*)calloc((size_t)cluster_devices, sizeof(int64_t));
  if (device_seen == NULL) goto done;

  /* Stages: consecutive layer ranges from 0, devices partitioning the cluster. */
  for (s = 0; s < stages; ++s) {
    int64_t devices[64];
    int64_t expected_in_flight = b < stages - s ? b : stages - s;
    memset(&info, 0xab, sizeof(info));
    CHECK(alpa_plan_stage(&info, sizeof(info), plan, s, &err) == ALPA_OK);
    print_error(err);
    err = NULL;
    CHECK(info.struct_size == sizeof(alpa_stage_info));
    CHECK(info.version == 1);
    CHECK(info.first_layer == next_layer);
    CHECK(info.last_layer >= info.first_layer);
    next_layer = info.last_layer + 1;
    CHECK(info.devices == info.submesh_hosts * info.submesh_devices_per_host);
    CHECK(info.devices >= 1);
    CHECK(info.data_parallel * info.tensor_parallel == info.devices);
    CHECK(info.logical_ndim == 1 || info.logical_ndim == 2);
    CHECK(info.logical_mesh[0] * info.logical_mesh[1] == info.devices);
    if (info.logical_ndim == 1) CHECK(info.logical_mesh[1] == 1);
    CHECK(info.zero == 0 || info.zero == 1);
    CHECK(info.remat == 0 || info.remat == 1);
    CHECK(info.latency_seconds > 0);
    CHECK(info.iteration_overhead_seconds >= 0);
    CHECK(info.memory_bytes > 0 && info.memory_bytes <= alpa_cluster_device_memory_bytes(cluster));
    CHECK(info.in_flight == expected_in_flight);
    if (info.memory_bytes > peak) peak = info.memory_bytes;
    sum += info.latency_seconds + info.iteration_overhead_seconds;
    overheads += info.iteration_overhead_seconds;
    if (s == 0) first_overhead = info.iteration_overhead_seconds;
    if (info.latency_seconds > max_latency) max_latency = info.latency_seconds;
    total_devices += info.devices;

    n = alpa_plan_stage_devices(plan, s, NULL, 0);
    CHECK(n == info.devices);
    CHECK(n <= 64);
    if (n > 64) continue;
    CHECK(alpa_plan_stage_devices(plan, s, devices, n) == n);
    for (i = 0; i < n; ++i) {
      CHECK(devices[i] >= 0 && devices[i] < cluster_devices);
      if (devices[i] >= 0 && devices[i] < cluster_devices) ++device_seen[devices[i]];
    }

    /* The 1F1B schedule: 2B tasks, each microbatch forward once, then backward once. */
    n = alpa_plan_stage_schedule(plan, s, NULL, 0);
    CHECK(n == 4 * b);
    schedule = (int32_t*)calloc((size_t)n, sizeof(int32_t));
    if (schedule == NULL) continue;
    CHECK(alpa_plan_stage_schedule(plan, s, schedule, n) == n);
    for (k = 0; k < b; ++k) {
      int64_t forward_at = -1, backward_at = -1, forwards = 0, backwards = 0;
      for (i = 0; i < n / 2; ++i) {
        if (schedule[2 * i + 1] != k) continue;
        if (schedule[2 * i] == 0) {
          ++forwards;
          forward_at = i;
        } else if (schedule[2 * i] == 1) {
          ++backwards;
          backward_at = i;
        }
      }
      CHECK(forwards == 1 && backwards == 1);
      CHECK(forward_at >= 0 && forward_at < backward_at);
    }
    for (i = 0; i < n / 2; ++i) {
      CHECK(schedule[2 * i] == 0 || schedule[2 * i] == 1);
      CHECK(schedule[2 * i + 1] >= 0 && schedule[2 * i + 1] < b);
    }
    free(schedule);
    schedule = NULL;
  }
  CHECK(next_layer == layers);
  CHECK(total_devices == cluster_devices);
  for (i = 0; i < cluster_devices; ++i) CHECK(device_seen[i] == 1);
  CHECK(peak == alpa_plan_peak_memory_bytes(plan));
  /* The DP's objective: sum (t_i + o_i) + (B - 1) max t_j; the prediction adds the transfers
   * (its period is at least the largest latency) and overlaps the overheads (each stage's runs
   * after its own last backward): at least stage 0's counts, at most all. */
  CHECK(fabs(alpa_plan_schedule_seconds(plan) - (sum + (double)(b - 1) * max_latency)) <=
        1e-9 * iteration);
  CHECK(iteration >= (alpa_plan_schedule_seconds(plan) - overheads + first_overhead) * (1 - 1e-12));
  CHECK(alpa_plan_period_seconds(plan) >= max_latency * (1 - 1e-12));

  /* Out-of-range stages and small elements. */
  CHECK(alpa_plan_stage(&info, sizeof(info), plan, stages, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "out of range"));
  err = NULL;
  CHECK(alpa_plan_stage(&info, sizeof(info), plan, -1, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_stage(&info, 8, plan, 0, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_stage(NULL, sizeof(info), plan, 0, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_stage_devices(plan, stages, NULL, 0) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_stage_schedule(plan, -1, NULL, 0) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_stage_collectives(plan, stages, NULL, 0, sizeof(alpa_collective)) ==
        -ALPA_ERR_INVALID_ARGUMENT);

  /* Per op: its stage, and the spec of the ops a stage computes. */
  CHECK(alpa_plan_copy_graph(&graph, plan, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (graph == NULL) goto done;
  ops = alpa_graph_op_count(graph);
  CHECK(ops > 0);
  CHECK(alpa_plan_op_stages(plan, NULL, 0) == ops);
  op_stages = (int32_t*)calloc((size_t)ops + 1, sizeof(int32_t));
  if (op_stages == NULL) goto done;
  op_stages[ops] = 12345; /* must stay untouched */
  CHECK(alpa_plan_op_stages(plan, op_stages, ops) == ops);
  CHECK(op_stages[ops] == 12345);
  for (s = 0; s < stages; ++s) {
    int64_t on_stage = 0;
    for (i = 0; i < ops; ++i) on_stage += op_stages[i] == s;
    CHECK(on_stage > 0);
  }
  for (i = 0; i < ops; ++i) {
    alpa_buffer* spec = NULL;
    CHECK(op_stages[i] >= -1 && op_stages[i] < stages);
    CHECK(alpa_plan_op_spec(&spec, plan, (int32_t)i, &err) == ALPA_OK);
    print_error(err);
    err = NULL;
    if (spec == NULL) continue;
    if (alpa_buffer_size(spec) > 0) {
      ++specs;
      CHECK(op_stages[i] >= 0);
      CHECK(strstr(alpa_buffer_data(spec), "  (strategy: ") != NULL);
    }
    if (op_stages[i] < 0) CHECK(alpa_buffer_size(spec) == 0);
    alpa_buffer_free(spec);
  }
  CHECK(specs > 0);
  {
    alpa_buffer* spec = NULL;
    CHECK(alpa_plan_op_spec(&spec, plan, (int32_t)ops, &err) == ALPA_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions(err, "out of range"));
    err = NULL;
    CHECK(alpa_plan_op_spec(&spec, NULL, 0, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  }

  /* Collectives per stage, with op ids of the planned graph. */
  for (s = 0; s < stages; ++s) {
    n = alpa_plan_stage_collectives(plan, s, NULL, 0, sizeof(alpa_collective));
    CHECK(n >= 0);
    if (n == 0) continue;
    CHECK(alpa_plan_stage_collectives(plan, s, NULL, 1, sizeof(alpa_collective)) == -1);
    collectives = (alpa_collective*)calloc((size_t)n, sizeof(alpa_collective));
    if (collectives == NULL) continue;
    CHECK(alpa_plan_stage_collectives(plan, s, collectives, n, 8) == -1);
    CHECK(alpa_plan_stage_collectives(plan, s, collectives, n, sizeof(alpa_collective)) == n);
    for (i = 0; i < n; ++i) {
      CHECK(collectives[i].struct_size == sizeof(alpa_collective));
      CHECK(collectives[i].version == 1);
      CHECK(collectives[i].kind >= ALPA_COLLECTIVE_ALL_GATHER &&
            collectives[i].kind <= ALPA_COLLECTIVE_ALL_TO_ALL);
      CHECK(collectives[i].tensor >= 0 && collectives[i].tensor < ops);
      CHECK(collectives[i].consumer >= -1 && collectives[i].consumer < ops);
      CHECK(collectives[i].bytes > 0 && collectives[i].cost >= 0);
    }
    free(collectives);
    collectives = NULL;
  }

  /* Transfers between distinct stages, forward or backward. */
  n = alpa_plan_transfers(plan, NULL, 0, sizeof(alpa_transfer));
  CHECK(n >= 0);
  if (stages > 1) CHECK(n > 0);
  if (n > 0) {
    CHECK(alpa_plan_transfers(plan, NULL, 1, sizeof(alpa_transfer)) == -1);
    transfers = (alpa_transfer*)calloc((size_t)n, sizeof(alpa_transfer));
    if (transfers == NULL) goto done;
    CHECK(alpa_plan_transfers(plan, transfers, n, 4) == -1);
    CHECK(alpa_plan_transfers(plan, transfers, n, sizeof(alpa_transfer)) == n);
    for (i = 0; i < n; ++i) {
      CHECK(transfers[i].struct_size == sizeof(alpa_transfer));
      CHECK(transfers[i].version == 1);
      CHECK(transfers[i].from_stage >= 0 && transfers[i].from_stage < stages);
      CHECK(transfers[i].to_stage >= 0 && transfers[i].to_stage < stages);
      CHECK(transfers[i].from_stage != transfers[i].to_stage);
      CHECK(transfers[i].tensor >= 0 && transfers[i].tensor < ops);
      CHECK(transfers[i].bytes > 0 && transfers[i].seconds > 0);
    }
    /* Cross-mesh resharding: the slice moves of every transfer. */
    {
      int64_t replicated = 0, moves = 0;
      for (i = 0; i < n; ++i) {
        const int64_t replication = check_transfer_moves(plan, i, &transfers[i]);
        CHECK(replication >= 1);
        replicated += replication > 1;
        moves += alpa_plan_transfer_moves(plan, i, NULL, 0, sizeof(alpa_slice_move));
      }
      printf("    %lld transfers, %lld slice moves, %lld to a replicated layout\n", (long long)n,
             (long long)moves, (long long)replicated);
    }
    CHECK(alpa_plan_transfer_moves(plan, n, NULL, 0, sizeof(alpa_slice_move)) ==
          -ALPA_ERR_INVALID_ARGUMENT);
    CHECK(alpa_plan_transfer_moves(plan, -1, NULL, 0, sizeof(alpa_slice_move)) ==
          -ALPA_ERR_INVALID_ARGUMENT);
    CHECK(alpa_plan_transfer_moves(NULL, 0, NULL, 0, sizeof(alpa_slice_move)) ==
          -ALPA_ERR_INVALID_ARGUMENT);
    CHECK(detailed != NULL && strstr(alpa_buffer_data(detailed), "\"moves\":[{\"") != NULL);
    CHECK(strstr(alpa_buffer_data(json), "\"move_count\"") != NULL &&
          strstr(alpa_buffer_data(json), "\"moves\"") == NULL);
  }

done:
  free(device_seen);
  free(op_stages);
  free(transfers);
  alpa_graph_destroy(graph);
  alpa_buffer_free(json);
  alpa_buffer_free(detailed);
}

/* microbatches 0: searched. */
static alpa_plan* plan_small_gpt(const char* cluster_spec, int64_t microbatches,
                                 alpa_cluster** cluster_out) {
  alpa_cluster* c = make_cluster(cluster_spec);
  alpa_plan_options* o = quick_options();
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  progress_log log = {0, 0, 0, 0};
  double t0 = now_seconds();
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, microbatches, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_progress(o, on_progress, &log, &err) == ALPA_OK);
  CHECK(alpa_model_plan(&plan, SMALL_GPT, c, o, &err) == ALPA_OK);
  print_error(err);
  printf("  %s on %s: %d stages, B = %lld, %.3f s per iteration (planned in %.2f s cpu)\n",
         SMALL_GPT, cluster_spec, alpa_plan_stage_count(plan),
         (long long)alpa_plan_microbatches(plan), alpa_plan_iteration_seconds(plan),
         now_seconds() - t0);
  CHECK(log.calls > 0 && log.saw_dp && !log.bad);
  if (microbatches > 0) CHECK(alpa_plan_microbatches(plan) == microbatches);
  alpa_plan_options_destroy(o);
  *cluster_out = c;
  return plan;
}

/* B fixed at 4 (searching every B on 8 devices takes several seconds): two stages. */
static void test_plan_model_one_host(void) {
  alpa_cluster* c = NULL;
  alpa_plan* plan = plan_small_gpt("p3.16xlarge", 4, &c);
  if (plan != NULL) check_plan(plan, c, SMALL_GPT_BATCH);
  alpa_plan_destroy(plan);
  alpa_cluster_destroy(c);
}

/* Six devices (not a power of two); B searched. */
static void test_plan_model_six_devices(void) {
  alpa_cluster* c = NULL;
  alpa_plan* plan = plan_small_gpt("p3.16xlarge:devices_per_host=6", 0, &c);
  CHECK(alpa_cluster_devices_per_host(c) == 6);
  if (plan != NULL) check_plan(plan, c, SMALL_GPT_BATCH);
  alpa_plan_destroy(plan);
  alpa_cluster_destroy(c);
}

/* A fixed graph of one microbatch; B from the options; the options are set by name. */
static void test_plan_graph(void) {
  alpa_cluster* c = make_cluster("p3.16xlarge:devices_per_host=4");
  alpa_plan_options* o = NULL;
  alpa_graph* g = NULL;
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_plan_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "threads", "2", &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "microbatches", "4", &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "remat", "search", &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "intra_op_gap", "0.01", &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "device_memory_bytes", "16e9", &err) == ALPA_OK);
  CHECK(alpa_model_build_graph(&g, "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=4",
                               &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_graph_plan(&plan, g, c, o, &err) == ALPA_OK);
  print_error(err);
  if (plan != NULL) {
    alpa_graph* copy = NULL;
    CHECK(alpa_plan_microbatches(plan) == 4);
    CHECK(alpa_plan_copy_graph(&copy, plan, NULL) == ALPA_OK);
    CHECK(alpa_graph_op_count(copy) == alpa_graph_op_count(g));
    alpa_graph_destroy(copy);
    check_plan(plan, c, 0);
  }
  alpa_plan_destroy(plan);
  alpa_graph_destroy(g);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

/* A graph of the global batch (ALPA_PLAN_OPT_GRAPH_BATCH_DIM 0) plans as its zoo spec does: the
 * same microbatch search, the same plan; microbatches that do not divide its batch and a batch
 * dim its inputs lack are refused. */
static void test_plan_graph_global_batch(void) {
  const char* spec = "gpt:layers=2,hidden=64,heads=2,seq=32,vocab=128,batch=16";
  alpa_cluster* c = make_cluster("p3.16xlarge:devices_per_host=4");
  alpa_plan_options* o = NULL;
  alpa_graph* g = NULL;
  alpa_plan* from_graph = NULL;
  alpa_plan* from_model = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_plan_options_create(&o, &err) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_THREADS, 2, NULL) == ALPA_OK);
  CHECK(alpa_model_build_graph(&g, spec, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_model_plan(&from_model, spec, c, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  CHECK(alpa_plan_options_set_by_name(o, "graph_batch_dim", "0", &err) == ALPA_OK);
  CHECK(alpa_graph_plan(&from_graph, g, c, o, &err) == ALPA_OK);
  print_error(err);
  err = NULL;
  if (from_graph != NULL && from_model != NULL) {
    CHECK(alpa_plan_microbatches(from_graph) == alpa_plan_microbatches(from_model));
    CHECK(alpa_plan_stage_count(from_graph) == alpa_plan_stage_count(from_model));
    CHECK(alpa_plan_iteration_seconds(from_graph) == alpa_plan_iteration_seconds(from_model));
  }
  alpa_plan_destroy(from_graph);
  from_graph = NULL;

  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, 3, NULL) == ALPA_OK);
  CHECK(alpa_graph_plan(&from_graph, g, c, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "3 microbatches do not divide the batch of 16"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, 0, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_GRAPH_BATCH_DIM, 5, NULL) == ALPA_OK);
  CHECK(alpa_graph_plan(&from_graph, g, c, o, &err) == ALPA_ERR_INVALID_GRAPH);
  CHECK(error_mentions(err, "no batch dim 5"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_GRAPH_BATCH_DIM, -2, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "graph_batch_dim"));
  err = NULL;
  alpa_plan_destroy(from_model);
  alpa_graph_destroy(g);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

static void test_options(void) {
  alpa_plan_options* o = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_plan_options_create(NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  alpa_error_free(err);
  err = NULL;
  CHECK(alpa_plan_options_create(&o, &err) == ALPA_OK);
  if (o == NULL) return;

  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, -1, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "plan option \"microbatches\": must be an integer >= 0 (got -1)"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, 99, 1, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "99"));
  err = NULL;
  CHECK(alpa_plan_options_set_double(o, 0, 1.0, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_options_set_by_name(o, "bogus", "1", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "bogus"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MAX_MICROBATCHES, 0, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "max_microbatches"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_NUM_LAYERS, -2, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "num_layers"));
  err = NULL;
  CHECK(alpa_plan_options_set_double(o, ALPA_PLAN_OPT_NUM_LAYERS, 2.5, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "integer"));
  err = NULL;
  CHECK(alpa_plan_options_set_double(o, ALPA_PLAN_OPT_NUM_LAYERS, 2.0, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_double(o, ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT, 0, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "intra_op_time_limit_seconds"));
  err = NULL;
  CHECK(alpa_plan_options_set_double(o, ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT, 0.25, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT, 1, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_double(o, ALPA_PLAN_OPT_INTRA_OP_GAP, -0.5, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "intra_op_gap"));
  err = NULL;
  CHECK(alpa_plan_options_set_double(o, ALPA_PLAN_OPT_CLUSTERING_DELTA, NAN, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "clustering_delta"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, -1, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "device_memory_bytes"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, 0, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_REMAT, 4, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "remat"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_REMAT, ALPA_REMAT_OFF, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "remat", "on", NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "remat", "sideways", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "remat"));
  err = NULL;
  CHECK(alpa_plan_options_set_by_name(o, "memory_levels", "x", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "memory_levels"));
  err = NULL;
  CHECK(alpa_plan_options_set_by_name(o, "clustering_delta", "0.25", NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "max_microbatches", "1e3", NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "threads", "-1", &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "threads"));
  err = NULL;
  CHECK(alpa_plan_options_set_by_name(o, NULL, "1", NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_options_set_by_name(o, "threads", NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_options_set_int(NULL, ALPA_PLAN_OPT_THREADS, 1, NULL) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_options_set_double(NULL, ALPA_PLAN_OPT_THREADS, 1, NULL) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_options_set_cancel_token(NULL, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_options_set_progress(NULL, NULL, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_options_set_cancel_token(o, NULL, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_progress(o, NULL, NULL, NULL) == ALPA_OK);
  /* The time limit and the work limits (0 / "none": no limit; NaN and negatives rejected). */
  CHECK(alpa_plan_options_set_double(o, ALPA_PLAN_OPT_TIME_LIMIT_SECONDS, 10.0, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "time_limit_seconds", "inf", NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "time_limit_seconds", "nan", &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "plan option \"time_limit_seconds\": must be a number of seconds"));
  err = NULL;
  CHECK(alpa_plan_options_set_by_name(o, "max_hosts", "none", NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MAX_DEVICES, 0, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_by_name(o, "max_graph_ops", "1e6", NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MAX_LAYERS, -1, &err) ==
        ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "plan option \"max_layers\": must be an integer >= 0 (0: no limit)"));
  err = NULL;
  CHECK(alpa_plan_options_set_by_name(o, "max_intra_op_solves", "5", NULL) == ALPA_OK);
  alpa_plan_options_destroy(o);
}

/* A cluster over the host limit is refused before any work, naming the option that raises it;
 * a time limit that expires before any plan is ALPA_ERR_TIMEOUT. */
static void test_limits(void) {
  alpa_cluster* c = NULL;
  alpa_plan_options* o = quick_options();
  alpa_plan* plan = NULL;
  alpa_error* err = NULL;
  CHECK(alpa_cluster_create_preset(&c, "p3.16xlarge", 4, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MAX_HOSTS, 2, NULL) == ALPA_OK);
  CHECK(alpa_model_plan(&plan, SMALL_GPT, c, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err,
                       "the cluster has 4 hosts, more than the limit of 2; raise the limit "
                       "with the plan option max_hosts"));
  err = NULL;
  CHECK(plan == NULL);
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MAX_HOSTS, 0, NULL) == ALPA_OK);
  CHECK(alpa_plan_options_set_double(o, ALPA_PLAN_OPT_TIME_LIMIT_SECONDS, 1e-9, NULL) == ALPA_OK);
  CHECK(alpa_model_plan(&plan, SMALL_GPT, c, o, &err) == ALPA_ERR_TIMEOUT);
  CHECK(error_mentions(err, "planning time limit of 1e-09 s reached before any plan was found"));
  CHECK(plan == NULL);
  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

static void test_errors(void) {
  alpa_cluster* c = make_cluster("p3.16xlarge");
  alpa_plan_options* o = quick_options();
  alpa_plan* plan = NULL;
  alpa_graph* unfinalized = NULL;
  alpa_cancel_token* token = NULL;
  alpa_error* err = NULL;
  progress_log log = {0, 0, 0, 1};

  CHECK(alpa_model_plan(NULL, SMALL_GPT, c, NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "out"));
  err = NULL;
  CHECK(alpa_model_plan(&plan, NULL, c, NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "model_spec"));
  err = NULL;
  CHECK(alpa_model_plan(&plan, SMALL_GPT, NULL, NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "cluster"));
  err = NULL;
  CHECK(alpa_model_plan(&plan, "nosuchmodel:layers=2", c, NULL, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "nosuchmodel"));
  err = NULL;
  CHECK(plan == NULL);

  /* Microbatches must divide the batch. */
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, 3, NULL) == ALPA_OK);
  CHECK(alpa_model_plan(&plan, SMALL_GPT, c, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "divide"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_MICROBATCHES, 4, NULL) == ALPA_OK);

  /* 1000 bytes per device: infeasible, with the memory the weights' state alone needs. */
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, 1000, NULL) == ALPA_OK);
  CHECK(alpa_model_plan(&plan, SMALL_GPT, c, o, &err) == ALPA_ERR_INFEASIBLE);
  CHECK(error_mentions(err, "optimizer state alone"));
  err = NULL;
  CHECK(alpa_plan_options_set_int(o, ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, 0, NULL) == ALPA_OK);

  /* An unfinalized graph. */
  CHECK(alpa_graph_create(&unfinalized, NULL) == ALPA_OK);
  CHECK(alpa_graph_plan(&plan, unfinalized, c, o, &err) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions(err, "finalize"));
  err = NULL;
  CHECK(alpa_graph_plan(&plan, NULL, c, o, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  alpa_graph_destroy(unfinalized);

  /* A token triggered before the call. */
  CHECK(alpa_cancel_token_create(&token, NULL) == ALPA_OK);
  alpa_cancel_token_trigger(token);
  CHECK(alpa_plan_options_set_cancel_token(o, token, NULL) == ALPA_OK);
  CHECK(alpa_model_plan(&plan, SMALL_GPT, c, o, &err) == ALPA_ERR_CANCELLED);
  CHECK(alpa_error_code(err) == ALPA_ERR_CANCELLED);
  alpa_error_free(err);
  err = NULL;
  CHECK(alpa_plan_options_set_cancel_token(o, NULL, NULL) == ALPA_OK);
  alpa_cancel_token_destroy(token);

  /* A progress callback that asks to stop at its first report. */
  CHECK(alpa_plan_options_set_progress(o, on_progress, &log, NULL) == ALPA_OK);
  CHECK(alpa_model_plan(&plan, SMALL_GPT, c, o, &err) == ALPA_ERR_CANCELLED);
  CHECK(error_mentions(err, "cancel"));
  err = NULL;
  CHECK(log.calls == 1 && !log.bad);
  /* ... and one that stops during the intra-op solves. */
  log.calls = 0;
  log.cancel_after = 3;
  CHECK(alpa_model_plan(&plan, SMALL_GPT, c, o, &err) == ALPA_ERR_CANCELLED);
  alpa_error_free(err);
  err = NULL;
  CHECK(log.calls >= 3 && !log.saw_dp && !log.bad);
  CHECK(plan == NULL);

  alpa_plan_options_destroy(o);
  alpa_cluster_destroy(c);
}

static void test_null_plan(void) {
  alpa_buffer* buffer = NULL;
  alpa_graph* graph = NULL;
  alpa_stage_info info;
  CHECK(isnan(alpa_plan_iteration_seconds(NULL)));
  CHECK(isnan(alpa_plan_compile_seconds(NULL)));
  CHECK(isnan(alpa_plan_tflops_per_device(NULL)));
  CHECK(alpa_plan_microbatches(NULL) == 0);
  CHECK(alpa_plan_peak_memory_bytes(NULL) == 0);
  CHECK(alpa_plan_stage_count(NULL) == 0);
  CHECK(alpa_plan_stage_devices(NULL, 0, NULL, 0) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_op_stages(NULL, NULL, 0) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_stage_collectives(NULL, 0, NULL, 0, sizeof(alpa_collective)) ==
        -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_transfers(NULL, NULL, 0, sizeof(alpa_transfer)) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_stage_schedule(NULL, 0, NULL, 0) == -ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_stage(&info, sizeof(info), NULL, 0, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_to_json(&buffer, NULL, 0, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(alpa_plan_copy_graph(&graph, NULL, NULL) == ALPA_ERR_INVALID_ARGUMENT);
  CHECK(buffer == NULL && graph == NULL);
  alpa_plan_destroy(NULL);
  alpa_plan_options_destroy(NULL);
}

static void timed(const char* name, void (*test)(void)) {
  double t0 = now_seconds();
  test();
  printf("  %s: %.2f s cpu\n", name, now_seconds() - t0);
}

int main(void) {
  timed("options", test_options);
  timed("null plan", test_null_plan);
  timed("plan model, one host", test_plan_model_one_host);
  timed("plan model, six devices", test_plan_model_six_devices);
  timed("plan graph", test_plan_graph);
  timed("plan graph of the global batch", test_plan_graph_global_batch);
  timed("errors", test_errors);
  timed("limits", test_limits);
  return check_summary();
}
