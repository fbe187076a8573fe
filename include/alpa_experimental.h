/**
 * alpa_experimental.h: the experimental part of libalpa's C ABI, the reporting and convenience
 * calls: the model zoo's catalog, graph statistics, cost-model queries, layouts as text, manual
 * and Megatron-LM baseline plans, and plan simulation. They follow every convention of alpa.h
 * (which this header includes) and are exported by the same library, but their signatures,
 * structs and JSON may change in any minor version while the stable part (alpa.h) changes only
 * with the major version once 1.0 is out (docs/api-stability.md).
 */
#ifndef ALPA_EXPERIMENTAL_H_
#define ALPA_EXPERIMENTAL_H_

#include "alpa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Model zoo catalog --------------------------------------------------------------------- */
/** Number of presets; presets are indexed 0 .. count-1 in a stable order (family, then size). */
ALPA_API int64_t alpa_model_count(void);
/** Preset name ("gpt-39b") and family ("gpt"); static storage; "" for an index out of range. */
ALPA_API const char* alpa_model_name(int64_t index);
/** Family of preset `index` ("gpt"); static storage; "" when out of range. */
ALPA_API const char* alpa_model_family(int64_t index);
/** The parameter count the name claims (39e9 for gpt-39b); -1 for an index out of range. */
ALPA_API int64_t alpa_model_nominal_params(int64_t index);
/** The GPU count the Alpa benchmark pairs the preset with (0: none); -1 out of range. */
ALPA_API int32_t alpa_model_benchmark_gpus(int64_t index);

/** Every preset and the family keys as JSON: {"presets": [{"name", "family", "spec",
 * "nominal_params", "benchmark_gpus", "description"}, ...], "families": ["<family>: <keys and
 * defaults>", ...]}. Caller frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_model_zoo_to_json(alpa_buffer** out, alpa_error** err);

/* ---- Graph statistics ---------------------------------------------------------------------- */
/** Statistics of a finalized graph as one JSON object (FLOPs are numbers, integral values
 * exact below 2^63): {"ops", "layers", "parameters", "flops", "dot_flops", "conv_flops",
 * "parameter_bytes", "gradient_bytes", "optimizer_state_bytes", "input_bytes",
 * "activation_bytes", "ops_by_kind": {...}, "ops_by_phase": {...}, "flops_by_phase": {...}}.
 * flops counts one training step (every op of the graph; a multiply-add is 2). Caller frees
 * *out with alpa_buffer_free. */
ALPA_API int32_t alpa_graph_stats_to_json(alpa_buffer** out, const alpa_graph* graph,
                                          alpa_error** err);

/* ---- Cost-model queries -------------------------------------------------------------------- */
/** Compute classes of the roofline model (pinned values). */
#define ALPA_COMPUTE_MATMUL 0
#define ALPA_COMPUTE_CONVOLUTION 1
#define ALPA_COMPUTE_ELEMENTWISE 2
#define ALPA_COMPUTE_OTHER 3

/** Roofline time in seconds of one op on one device of the cluster: max(flops / (peak(dtype) *
 * efficiency(compute_class)), bytes_accessed / (memory bandwidth * memory efficiency)) plus the
 * calibration's per-op overhead. ALPA_ERR_INVALID_ARGUMENT for an unknown dtype or class, or
 * negative / non-finite flops or bytes. */
ALPA_API int32_t alpa_cluster_op_seconds(double* out_seconds, const alpa_cluster* cluster,
                                         double flops, double bytes_accessed, int32_t dtype,
                                         int32_t compute_class, alpa_error** err);

/** Alpha (seconds) and beta (seconds per byte) of the logical mesh that views the submesh
 * `submesh_hosts` x `submesh_devices_per_host` of the cluster as logical_shape[ndim] (ndim 1 or
 * 2, product = the submesh's device count). out_alpha[ndim] and out_beta[ndim] receive one value
 * per dimension; out_flat[2] (may be NULL) receives alpha and beta of the flattened mesh. A
 * dimension whose device groups span hosts uses the inter-host link, its bandwidth shared by the
 * groups that cross hosts at once (docs/cluster-format.md). ALPA_ERR_INVALID_ARGUMENT for a
 * submesh larger than the cluster or a shape that does not match it. */
ALPA_API int32_t alpa_cluster_logical_mesh(double* out_alpha, double* out_beta, double* out_flat,
                                           const alpa_cluster* cluster, int64_t submesh_hosts,
                                           int64_t submesh_devices_per_host, int32_t ndim,
                                           const int64_t* logical_shape, alpa_error** err);

/** The cost of an ALPA_COLLECTIVE_* of `bytes` bytes (the full tensor: all-gather output,
 * all-reduce operand, reduce-scatter input; for send/recv the bytes moved) on mesh dimension
 * mesh_dim (or ALPA_MESH_DIM_FLATTENED) in an ALPA_COST_MODE_*. One device on the dimension
 * costs 0. ALPA_ERR_INVALID_ARGUMENT for an unknown kind, mode or dimension, or negative or
 * non-finite bytes. */
ALPA_API int32_t alpa_mesh_collective_cost(double* out_cost, const alpa_mesh* mesh, int32_t kind,
                                           int32_t mesh_dim, double bytes, int32_t mode,
                                           alpa_error** err);

/* ---- Layouts as text ----------------------------------------------------------------------- */
/** The layout of op `op`'s result as text: per tensor dim "R" or "S" and its mesh dims, then
 * " partial(...)" for a partial sum ("S0 R", "R S01", "scalar"); "" for free and fused ops and
 * for a plan without assignment. ALPA_ERR_INVALID_ARGUMENT for NULL arguments or an op id out
 * of range. Caller frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_sharding_plan_op_spec(alpa_buffer** out, const alpa_sharding_plan* plan,
                                            int32_t op, alpa_error** err);

/** The layout and strategy of op `op` on its stage's logical mesh as text, e.g.
 * "S0 R S1  (strategy: S0 = S0 x R @ {0})"; "" for ops of no stage and free / fused ops.
 * Caller frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_plan_op_spec(alpa_buffer** out, const alpa_plan* plan, int32_t op,
                                   alpa_error** err);

/* ---- Manual plans and the Megatron-LM baseline --------------------------------------------- */
/**
 * A pipeline plan stated the way a practitioner states one (Megatron-LM style: data, tensor and
 * pipeline degrees, microbatches, ZeRO stage), predicted with the planner's own cost model so
 * that it compares with alpa_model_plan on equal terms; and the grid search over such plans
 * that the planner is measured against (docs/planner.md, "Baseline"). Both return an ordinary
 * alpa_plan: every alpa_plan_* accessor, alpa_plan_to_json (with a "baseline" object) and
 * alpa_plan_simulate work on it. Lifecycle:
 *
 *   alpa_manual_plan spec = ALPA_MANUAL_PLAN_INIT;
 *   spec.data_parallel = 2; spec.tensor_parallel = 4; spec.pipeline_parallel = 2;
 *   spec.microbatches = 64;
 *   alpa_plan* plan;  alpa_model_plan_manual(&plan, "gpt-2.6b", c, &spec, NULL, &err);
 *   alpa_plan* best;  alpa_model_plan_baseline(&best, "gpt-2.6b", c, NULL, &err);
 *   alpa_plan_manual_spec(&spec, sizeof spec, best, &err);   the configuration it found
 *   alpa_plan_destroy(best); alpa_plan_destroy(plan);
 */

/** One manual configuration (version 2; version 1 ends at tensor_inside_host). As input the
 * caller sets struct_size to sizeof(alpa_manual_plan) and version to 2 (ALPA_MANUAL_PLAN_INIT
 * does both and sets the defaults); the library reads the first min(struct_size, its own size)
 * bytes, and a version-1 caller's fields of version 2 take their defaults. As output
 * (alpa_plan_manual_spec) struct_size is the bytes the library wrote, and version the last
 * version they hold. */
typedef struct alpa_manual_plan {
  size_t struct_size;
  int32_t version; /**< 2 (1: ends at tensor_inside_host) */
  /** 0: off; 1: optimizer state (and with it the update) sharded over the data-parallel
   * devices; 2: as 1, and the gradients it reduce-scatters are reduce-scattered every microbatch
   * and accumulated as shards; 3: as 2, with the weights sharded too, gathered where each
   * microbatch's forward and backward read them; no effect when data_parallel is 1. */
  int32_t zero_stage;
  /** Degrees, each >= 1, data_parallel x tensor_parallel x pipeline_parallel = the cluster's
   * devices. Stage s of pipeline_parallel gets devices s*D/pp .. (s+1)*D/pp - 1 (whole hosts, or
   * an even slice of one) and consecutive layers (layers / pp each when pp divides them, else
   * split by forward FLOPs); its logical mesh is (data_parallel, tensor_parallel). */
  int64_t data_parallel, tensor_parallel, pipeline_parallel;
  int64_t microbatches; /**< >= 1, dividing the batch; data_parallel divides batch / microbatches */
  int32_t remat;        /**< 0 off, 1 full, 2 selective recomputation in every stage */
  /** 1 (default): tensor parallelism on mesh dim 1, inside a host (tensor_parallel must divide
   * the devices per host); 0: data parallelism there, tensor parallelism across hosts. */
  int32_t tensor_inside_host;
  /* Version 2. */
  /** Stages per device group (Megatron-LM's virtual pipeline stages): 1 (default), or v >= 2:
   * the layers cut into pipeline_parallel x v stages, stage s on the devices of group s %
   * pipeline_parallel, run under ALPA_SCHEDULE_INTERLEAVED_1F1B (the plan's schedule;
   * alpa_plan_virtual_stages). v >= 2 needs pipeline_parallel >= 2, microbatches a multiple of
   * pipeline_parallel and pipeline_parallel x v stages at most the layers. */
  int32_t virtual_stages;
  int32_t reserved; /**< 0 */
} alpa_manual_plan;
/** dp = tp = pp = 1, 1 microbatch, ZeRO off, remat off, tensor parallelism inside a host, one
 * stage per device group. */
#define ALPA_MANUAL_PLAN_INIT \
  { sizeof(alpa_manual_plan), 2, 0, 1, 1, 1, 1, 0, 1, 1, 0 }
/** The function twin of ALPA_MANUAL_PLAN_INIT, for bindings that cannot expand a brace macro:
 * writes the defaults above into the first min(size, sizeof(alpa_manual_plan)) bytes of *spec,
 * with struct_size set to that number and version to 2 (1 for a size below version 2's, whose
 * struct ends at tensor_inside_host). ALPA_ERR_INVALID_ARGUMENT for a NULL spec or a size below
 * version 1's. */
ALPA_API int32_t alpa_manual_plan_init(alpa_manual_plan* spec, size_t size, alpa_error** err);

/** Evaluates one manual plan of a model-zoo spec (as alpa_model_plan's) on a cluster. options
 * may be NULL; used: threads, intra_op_exact / time limit / gap, device_memory_bytes,
 * clustering_delta (the fallback split), cancel token and progress ("intra-op" reports);
 * spec->remat wins over ALPA_PLAN_OPT_REMAT and spec->microbatches over
 * ALPA_PLAN_OPT_MICROBATCHES. Errors: ALPA_ERR_INVALID_ARGUMENT for NULL out / model_spec /
 * cluster / spec, struct_size below version 1's size, a bad model spec and a bad configuration,
 * the message naming the field ("manual plan: data_parallel x tensor_parallel x
 * pipeline_parallel = 2 x 2 x 2 must equal the cluster's 4 devices"; remat 0, 1 or 2,
 * tensor_inside_host 0 or 1, zero_stage 0 to 3, microbatches must divide the batch,
 * pipeline_parallel (times virtual_stages) may not exceed the layers, virtual_stages >= 2 needs
 * pipeline_parallel >= 2 and microbatches a multiple of it, ...); ALPA_ERR_INFEASIBLE when a
 * stage (with virtual stages: a device group) does not fit the device memory (the message names
 * it and the bytes it needs);
 * ALPA_ERR_CANCELLED. Caller frees *out with alpa_plan_destroy. */
ALPA_API int32_t alpa_model_plan_manual(alpa_plan** out, const char* model_spec,
                                        const alpa_cluster* cluster, const alpa_manual_plan* spec,
                                        const alpa_plan_options* options, alpa_error** err);
/** The Megatron-LM baseline: the fastest feasible manual plan of a grid (tp: powers of two
 * dividing the devices per host, inside a host; pp: divisors of D / tp that divide the layers and
 * give every stage whole hosts or an even slice of one; dp = D / (tp * pp); microbatches: powers
 * of two dividing the batch from pp up to ALPA_PLAN_OPT_MAX_MICROBATCHES, or
 * ALPA_PLAN_OPT_MICROBATCHES when set; ZeRO 0, 1, 2 or 3 (1 to 3 only when dp > 1, 2 unless
 * ALPA_PLAN_OPT_ZERO2 is 0, 3 unless ALPA_PLAN_OPT_ZERO3 is 0); remat off, full and (for graphs
 * with attention) selective, or as ALPA_PLAN_OPT_REMAT fixes it). Options used otherwise as for
 * alpa_model_plan_manual; alpa_plan_compile_seconds is the search's time. Errors:
 * ALPA_ERR_INVALID_ARGUMENT (NULL arguments, a bad model spec or option, an empty grid),
 * ALPA_ERR_INFEASIBLE (no grid point fits the device memory; the message names the least
 * memory-hungry one and what it needs), ALPA_ERR_CANCELLED. Caller frees *out with
 * alpa_plan_destroy. */
ALPA_API int32_t alpa_model_plan_baseline(alpa_plan** out, const char* model_spec,
                                          const alpa_cluster* cluster,
                                          const alpa_plan_options* options, alpa_error** err);
/** alpa_model_plan_manual of a finalized graph instead of a zoo spec: the graph is the global
 * batch when ALPA_PLAN_OPT_GRAPH_BATCH_DIM is set in options (spec->microbatches then splits
 * it), else one microbatch (alpa_graph_plan's semantics). Errors as alpa_model_plan_manual's,
 * with NULL / unfinalized graph for the spec, plus ALPA_ERR_INVALID_GRAPH. */
ALPA_API int32_t alpa_graph_plan_manual(alpa_plan** out, const alpa_graph* graph,
                                        const alpa_cluster* cluster, const alpa_manual_plan* spec,
                                        const alpa_plan_options* options, alpa_error** err);
/** alpa_model_plan_baseline of a finalized graph, with alpa_graph_plan_manual's semantics. */
ALPA_API int32_t alpa_graph_plan_baseline(alpa_plan** out, const alpa_graph* graph,
                                          const alpa_cluster* cluster,
                                          const alpa_plan_options* options, alpa_error** err);
/** The configuration of a plan made by alpa_model_plan_manual or alpa_model_plan_baseline (size =
 * sizeof(alpa_manual_plan); the library writes the first min(size, its own size) bytes).
 * ALPA_ERR_INVALID_ARGUMENT for NULLs, size below version 1's size, or a plan of
 * alpa_model_plan / alpa_graph_plan (which has no such configuration). */
ALPA_API int32_t alpa_plan_manual_spec(alpa_manual_plan* out, size_t size, const alpa_plan* plan,
                                       alpa_error** err);

/** One grid point of an alpa_model_plan_baseline search (version 1). */
typedef struct alpa_baseline_point {
  size_t struct_size; /**< bytes the library wrote */
  int32_t version;    /**< 1 */
  int32_t zero_stage;
  int64_t data_parallel, tensor_parallel, pipeline_parallel, microbatches;
  int32_t remat;              /**< 0 off, 1 full, 2 selective */
  int32_t tensor_inside_host; /**< 0/1 */
  int32_t feasible;           /**< 1: fits the device memory */
  int32_t reserved;           /**< 0 */
  double iteration_seconds;   /**< predicted; +inf when it does not fit */
} alpa_baseline_point;
/** Count-then-fill over the grid points an alpa_model_plan_baseline search evaluated, fastest first
 * (the points that do not fit last; ties in grid order). Points skipped because the same
 * configuration did not fit with more microbatches are not listed. element_size:
 * sizeof(alpa_baseline_point); the library writes the first min(element_size, its own size)
 * bytes of each. Returns the count (0 for a plan not made by alpa_model_plan_baseline). */
ALPA_API int64_t alpa_plan_baseline_table(const alpa_plan* plan, alpa_baseline_point* out,
                                          int64_t capacity, size_t element_size);
/** Search statistics of a plan made by alpa_model_plan_baseline (0 for other plans and NULL): grid
 * points evaluated, of those feasible, and pruned (not evaluated: the configuration did not fit
 * with more microbatches). */
ALPA_API int64_t alpa_plan_baseline_evaluated(const alpa_plan* plan);
/** Grid points of the search that fit the device memory (0 as above). */
ALPA_API int64_t alpa_plan_baseline_feasible(const alpa_plan* plan);
/** Grid points not evaluated: the configuration did not fit with more microbatches (0 as above). */
ALPA_API int64_t alpa_plan_baseline_pruned(const alpa_plan* plan);

/** Launch configuration frameworks (alpa_plan_launch_config). */
#define ALPA_LAUNCH_MEGATRON 0  /**< Megatron-LM: a torchrun command line with its flags */
#define ALPA_LAUNCH_DEEPSPEED 1 /**< DeepSpeed: a ds_config.json */
/** The launch configuration of a plan made by alpa_model_plan_manual or alpa_model_plan_baseline:
 * the text a user pastes to run its degrees with Megatron-LM (ALPA_LAUNCH_MEGATRON: torchrun
 * --nnodes/--nproc-per-node, --tensor-model-parallel-size, --pipeline-model-parallel-size,
 * --micro-batch-size = batch / (dp x microbatches), --global-batch-size, ZeRO-1 as
 * --use-distributed-optimizer, remat as full or selective recompute, and the model flags of a gpt,
 * bert or llama spec) or DeepSpeed (ALPA_LAUNCH_DEEPSPEED: the config JSON, train_batch_size,
 * train_micro_batch_size_per_gpu, gradient_accumulation_steps, zero_optimization.stage,
 * fp16 / bf16, activation_checkpointing). Both begin with '#' note lines (the plan, the launch
 * command, what the framework needs besides: DeepSpeed's pipeline engine for the stages,
 * Megatron-DeepSpeed for tensor parallelism). ALPA_ERR_INVALID_ARGUMENT for NULLs, another
 * framework, a plan of alpa_model_plan / alpa_graph_plan, or a batch that data_parallel x
 * microbatches does not divide (the message gives the numbers). Caller frees *out with
 * alpa_buffer_free. */
ALPA_API int32_t alpa_plan_launch_config(alpa_buffer** out, const alpa_plan* plan,
                                         int32_t framework, alpa_error** err);

/**
 * Simulation of a plan (docs/planner.md, "Simulation"): one training iteration run event by
 * event, every stage its forward / backward tasks in the schedule's order (a forward of
 * latency_seconds' forward part, a backward of the rest), activations and gradients sent between
 * stages as the plan's slice moves over the cluster's links (FIFO contention on each device's
 * intra-host link and each host's NICs), then each stage's gradient synchronisation and update.
 * It checks the planner's closed-form iteration time and adds what that leaves out (transfers,
 * contention, the schedule's real dependencies). Lifecycle:
 *
 *   alpa_simulation* sim;  alpa_plan_simulate(&sim, plan, ALPA_SCHEDULE_1F1B, &err);
 *   alpa_simulation_iteration_seconds(sim), alpa_simulation_stage(&stats, sizeof stats, sim,
 *   s, &err), alpa_simulation_timeline_to_svg(&buffer, sim, 0, &err), ...
 *   alpa_simulation_destroy(sim);
 *
 * A simulation is immutable and may be shared between threads; it keeps no pointer to the plan.
 */
typedef struct alpa_simulation alpa_simulation;

/** Pipeline schedules: ALPA_SCHEDULE_GPIPE / ALPA_SCHEDULE_1F1B / ALPA_SCHEDULE_ZB_H1 /
 * ALPA_SCHEDULE_INTERLEAVED_1F1B (alpa.h). Under ZB-H1 each stage's backward runs as two tasks,
 * the input gradient (what the previous stage waits for) and then, when the schedule places it,
 * the weight gradient (the plan's weight_gradient_latency_seconds; 0 when the plan lacks it).
 * Under interleaved 1F1B each device group runs its stages' tasks in one order, and a stage's
 * statistics are its group's; it needs a plan with virtual stages (alpa_plan_virtual_stages),
 * which no other schedule runs. */

/** Simulates `plan` on the cluster it was planned for (slice moves as planned). Errors:
 * ALPA_ERR_INVALID_ARGUMENT (NULL out / plan, a schedule other than the four above, a schedule
 * that does not fit the plan's virtual stages, a plan the simulator cannot run: more than 2^20
 * microbatches). Caller frees *out with alpa_simulation_destroy. */
ALPA_API int32_t alpa_plan_simulate(alpa_simulation** out, const alpa_plan* plan, int32_t schedule,
                                    alpa_error** err);
/** The same from a plan JSON of `size` bytes (alpa_plan_to_json, `alpa plan -o` / `--json`; not
 * NUL-terminated necessarily). At detail 1 the transfers' slice moves are simulated; at detail
 * 0 each transfer's bytes are spread evenly over min(senders, receivers) device pairs. The
 * plan's "schedule" is not read: `schedule` decides. Errors, each naming the field ("plan JSON:
 * stages[1].forward_latency_seconds: missing"): ALPA_ERR_PARSE (not JSON, not a plan, a missing
 * field or a field of the wrong type; plans written by libalpa before simulation existed lack
 * fields and need planning again), ALPA_ERR_INVALID_ARGUMENT (NULL out / json, a bad schedule,
 * values out of range: negative times, a device outside the cluster, a transfer whose direction
 * contradicts its stages, a move from a device outside its stage, ...). Caller frees *out with
 * alpa_simulation_destroy. */
ALPA_API int32_t alpa_plan_simulate_json(alpa_simulation** out, const char* json, size_t size,
                                         int32_t schedule, alpa_error** err);
/** Simulates `plan` on its device programs (docs/planner.md, "Simulation on the device
 * programs"): the plan lowered as alpa_executor_create lowers it, for min(microbatches, 2)
 * microbatches (every microbatch's task runs the same instructions), every instruction priced by
 * the cost model from its local shapes and group, the stages' tasks run under the lowering's
 * schedule for all microbatches, and the transfers moved as the programs send them. What runs is
 * priced, not the plan's own figures; the JSON (alpa_simulation_to_json) gives per stage the
 * priced parts (compute, collective, transfer, bookkeeping) beside the plan's. Errors: those of
 * alpa_plan_simulate, ALPA_ERR_UNSUPPORTED for a plan the executor cannot lower (naming the op),
 * the model spec's errors when the whole batch's graph is rebuilt from it (a plan without one
 * is lowered without it: the same instructions), ALPA_ERR_UNSUPPORTED for an interleaved plan
 * (its programs run several stages per device; not priced yet). Caller frees *out with
 * alpa_simulation_destroy. */
ALPA_API int32_t alpa_plan_simulate_programs(alpa_simulation** out, const alpa_plan* plan,
                                             int32_t schedule, alpa_error** err);
/** Frees a simulation; NULL is allowed. */
ALPA_API void alpa_simulation_destroy(alpa_simulation* simulation);

/** Scalars (NaN / 0 for NULL). The simulated iteration time (every stage's update finished). */
ALPA_API double alpa_simulation_iteration_seconds(const alpa_simulation* simulation);
/** The stage DP's closed form on the simulated stages: sum over stages of (latency + overhead) +
 * (microbatches - 1) * the largest latency; equals alpa_plan_schedule_seconds up to rounding. */
ALPA_API double alpa_simulation_closed_form_seconds(const alpa_simulation* simulation);
/** The plan's predicted iteration time (its JSON's "iteration_seconds"); NaN when unknown. */
ALPA_API double alpa_simulation_planner_seconds(const alpa_simulation* simulation);
/** Number of simulated stages; 0 for NULL. */
ALPA_API int32_t alpa_simulation_stage_count(const alpa_simulation* simulation);

/** One stage of a simulated iteration (version 1). busy + communication wait + idle = the
 * iteration time. */
typedef struct alpa_simulated_stage {
  size_t struct_size;  /**< bytes the library wrote */
  int32_t version;     /**< 1 */
  int32_t reserved;    /**< 0 */
  double busy_seconds; /**< forward + backward + gradient synchronisation + update */
  /** Blocked on inputs already sent but not yet arrived (transfers on the links). */
  double communication_wait_seconds;
  /** Nothing to run: waiting for upstream compute (the pipeline bubble), before the first task
   * and after the update. */
  double idle_seconds;
  double bubble_fraction; /**< idle / iteration */
  double finish_seconds;  /**< when its update ended */
  /** The most microbatches between their forward's start and their backward's end (under
   * ZB-H1 their weight gradient's end) at once. */
  int64_t peak_in_flight;
  int64_t peak_memory_bytes; /**< per device: persistent + peak_in_flight x activations */
} alpa_simulated_stage;
/** Fills *out (element_size = sizeof(alpa_simulated_stage); the library writes the first
 * min(element_size, its own size) bytes). ALPA_ERR_INVALID_ARGUMENT for NULLs, a stage out of
 * range or element_size below version 1's size. */
ALPA_API int32_t alpa_simulation_stage(alpa_simulated_stage* out, size_t element_size,
                                       const alpa_simulation* simulation, int32_t stage,
                                       alpa_error** err);
/** The iteration's timeline as a self-contained SVG picture `width` pixels wide (0: 1600; else
 * 200..20000): a row per stage (its devices and layers), forward / backward / communication
 * wait / synchronisation / update / idle in distinct colours, a legend and a time axis. The
 * simulation is run again with its timeline recorded (deterministic: the same iteration).
 * ALPA_ERR_INVALID_ARGUMENT for NULLs or a width out of range. Caller frees *out with
 * alpa_buffer_free. */
ALPA_API int32_t alpa_simulation_timeline_to_svg(alpa_buffer** out,
                                                 const alpa_simulation* simulation, int32_t width,
                                                 alpa_error** err);
/** The simulation as one JSON object (docs/planner.md, "Simulation JSON"): "schedule",
 * "microbatches", "iteration_seconds", "closed_form_seconds", "planner_iteration_seconds" and
 * "relative_error" ((simulated - planned) / planned; both null when unknown), per stage its
 * times and the statistics above, and the transfers' totals. Caller frees *out with
 * alpa_buffer_free. */
ALPA_API int32_t alpa_simulation_to_json(alpa_buffer** out, const alpa_simulation* simulation,
                                         alpa_error** err);

/* ---- Calibration on a GPU ------------------------------------------------------------------ */
/** Measures the first GPU with CUDA events (median of several repeats after a warm-up):
 * cuBLASLt GEMMs over square and GPT-like shapes in bf16 (f16, f32 and TF32 on one square),
 * HBM streaming (cudaMemcpy and a read + write kernel), elementwise kernels (add and gelu over
 * large arrays; FMA chains for the arithmetic rate) and empty-kernel launches; then fits the
 * roofline's efficiency factors against the peaks of cluster preset `preset` (NULL or "": the
 * preset matching the GPU's name, e.g. "dgx-h100" for "NVIDIA H100 80GB HBM3";
 * docs/cluster-format.md, "Calibrating on a GPU"). quick != 0: fewer shapes, smaller arrays and
 * fewer repeats (under 10 s on an H100; otherwise under 40 s). *out_json: {"device", "gpus",
 * "libraries", "preset", "quick", "calibration" (a calibration file's object), "measurements":
 * [{"kind", "name", "dtype", "tf32", "fit", "work", "seconds", "rate", "peak",
 * "fraction_of_peak"}], "notes": [...]}; rate is FLOP/s, bytes/s or launches/s; peak and
 * fraction_of_peak are null for launches. NCCL bus bandwidth is not measured here (a note says
 * so where 2+ GPUs are visible). ALPA_ERR_UNSUPPORTED when libalpa was built without CUDA or
 * the machine has no usable GPU (the message says which); ALPA_ERR_INVALID_ARGUMENT for an
 * unknown preset or a GPU no preset describes; ALPA_ERR_INTERNAL naming the measurement for a
 * CUDA or cuBLASLt failure. Caller frees *out_json with alpa_buffer_free. */
ALPA_API int32_t alpa_calibrate(alpa_buffer** out_json, const char* preset, int32_t quick,
                                alpa_error** err);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ALPA_EXPERIMENTAL_H_ */
