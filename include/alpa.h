/**
 * alpa.h: the stable C ABI of libalpa, an automatic parallelization planner for deep learning.
 * The reporting and convenience calls (model zoo catalog, graph statistics, cost-model queries,
 * layout text, manual and baseline plans, simulation) are in alpa_experimental.h, which may
 * change between minor versions (docs/api-stability.md).
 *
 * Lifecycle of the sharding-problem tier (the "raw solver" that frameworks with their own
 * strategy enumeration use):
 *
 *   alpa_problem* p;  alpa_error* err = NULL;
 *   alpa_problem_create(&p, &err);                       build: add nodes, edges, ...
 *   alpa_problem_add_nodes(p, n, counts, costs, usages, &err);
 *   alpa_problem_add_edges(p, m, endpoints, costs, &err);
 *   alpa_problem_finalize(p, &err);                      validate; the problem is now immutable
 *   alpa_solve_options* o;  alpa_solve_options_create(&o, &err);
 *   alpa_solve_options_set_double(o, ALPA_OPT_TIME_LIMIT_SECONDS, 10.0, &err);
 *   alpa_solution* s;  alpa_problem_solve(&s, p, o, &err);  status, assignment, objective, bound
 *   alpa_solution_destroy(s); alpa_solve_options_destroy(o); alpa_problem_destroy(p);
 *
 * Or in one call over serialized bytes: alpa_problem_solve_json (JSON request in, JSON result
 * out).
 *
 * Conventions (see docs/error-handling.md and docs/threading.md):
 *   - Names read alpa_<object>_<verb>: the object is the handle (or input) acted on. Results of
 *     an operation are new handles (alpa_graph_plan makes an alpa_plan of a graph); getters are
 *     alpa_<object>_<attribute>; alpa_<object>_to_json serializes a handle into an alpa_buffer;
 *     alpa_<object>_read_file / _read_buffer read one; a `_json` suffix on an operation
 *     (alpa_problem_solve_json, alpa_plan_simulate_json) takes its input as JSON bytes.
 *   - Fallible functions return an int32_t status (ALPA_OK or an ALPA_ERR_* code) and take an
 *     optional trailing `alpa_error** err`: when non-NULL and the call fails, *err receives a
 *     message naming the offending element; the caller frees it with alpa_error_free. On
 *     success *err is left untouched (NULL if the caller set it so).
 *   - Out-params come first. Every constructor names the function that frees its result; every
 *     destroy / free accepts NULL.
 *   - "No answer" is a status: a call that ends without a result (infeasible, a time limit or a
 *     cancellation before the first answer) returns ALPA_ERR_INFEASIBLE / ALPA_ERR_TIMEOUT /
 *     ALPA_ERR_CANCELLED and no handle. Only the one-shot JSON calls report every outcome inside
 *     their JSON result.
 *   - Getters never fail: for a NULL handle or an index out of range, pointer getters return ""
 *     (never NULL), double getters NaN, integer getters taking an index -1, counts 0.
 *   - Count-then-fill: array getters return the full count and copy min(count, capacity)
 *     entries (out may be NULL when capacity is 0); misuse (a NULL handle, an index out of
 *     range, a negative capacity, capacity > 0 with out NULL, an element_size below version 1's)
 *     returns a negative status, -ALPA_ERR_INVALID_ARGUMENT, never a count.
 *   - The library never keeps a caller's pointer after a call returns: inputs are copied.
 *   - A finalized problem and a solution are immutable and may be shared between threads.
 *     Building a problem (add_*, set_*) needs exclusive access to it.
 *   - Costs are doubles; a cost >= 1e18 (ALPA_FORBIDDEN_COST) forbids that choice; negative
 *     costs are allowed. Memory usages and limits are int64 bytes.
 */
#ifndef ALPA_H_
#define ALPA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ALPA_API
#elif defined(__GNUC__) || defined(__clang__)
#define ALPA_API __attribute__((visibility("default")))
#else
#define ALPA_API
#endif

/* ---- Versions ------------------------------------------------------------------------------ */
#define ALPA_VERSION_MAJOR 0
#define ALPA_VERSION_MINOR 1
#define ALPA_VERSION_PATCH 0
#define ALPA_VERSION_NUMBER \
  (ALPA_VERSION_MAJOR * 10000 + ALPA_VERSION_MINOR * 100 + ALPA_VERSION_PATCH)

/** The library's version at run time, e.g. "0.1.0". Static storage; never NULL. */
ALPA_API const char* alpa_version_string(void);
/** ALPA_VERSION_NUMBER of the library actually loaded. */
ALPA_API int32_t alpa_version_number(void);

/* ---- Status codes (values are pinned and never reused) ------------------------------------- */
#define ALPA_OK 0
#define ALPA_ERR_INVALID_ARGUMENT 1 /**< a NULL pointer, a bad length, an unknown option */
/** inconsistent problem data; the message names the element */
#define ALPA_ERR_INVALID_PROBLEM 2
#define ALPA_ERR_INFEASIBLE 3 /**< no assignment meets the constraints */
#define ALPA_ERR_TIMEOUT 4
#define ALPA_ERR_CANCELLED 5
#define ALPA_ERR_UNSUPPORTED 6
#define ALPA_ERR_OUT_OF_MEMORY 7
#define ALPA_ERR_INTERNAL 8
#define ALPA_ERR_IO 9             /**< a file could not be read or written */
#define ALPA_ERR_PARSE 10         /**< bytes are not valid JSON or not the expected format */
#define ALPA_ERR_INVALID_GRAPH 11 /**< inconsistent operator graph; the message names the op */

/** A short English name for a status code ("ok", "invalid argument", ...). Static storage. */
ALPA_API const char* alpa_status_string(int32_t status);

/* ---- Errors -------------------------------------------------------------------------------- */
typedef struct alpa_error alpa_error;
/** The status code of the failure. err may not be NULL. */
ALPA_API int32_t alpa_error_code(const alpa_error* err);
/** The UTF-8 message, valid until alpa_error_free. err may not be NULL. */
ALPA_API const char* alpa_error_message(const alpa_error* err);
/** Frees an error; NULL is allowed. */
ALPA_API void alpa_error_free(alpa_error* err);

/* ---- Buffers (serialized output) ----------------------------------------------------------- */
typedef struct alpa_buffer alpa_buffer;
/** The bytes, valid until alpa_buffer_free; NUL-terminated for convenience (not counted). */
ALPA_API const char* alpa_buffer_data(const alpa_buffer* buffer);
/** The number of bytes (without the terminating NUL); 0 for NULL. */
ALPA_API size_t alpa_buffer_size(const alpa_buffer* buffer);
/** Frees a buffer; NULL is allowed. */
ALPA_API void alpa_buffer_free(alpa_buffer* buffer);

/* ---- Cancellation -------------------------------------------------------------------------- */
typedef struct alpa_cancel_token alpa_cancel_token;
/** A cancel token, not triggered. Caller frees *out with alpa_cancel_token_destroy, after
 * every call using it has returned. */
ALPA_API int32_t alpa_cancel_token_create(alpa_cancel_token** out, alpa_error** err);
/** Requests cancellation; safe to call from any thread, any number of times. */
ALPA_API void alpa_cancel_token_trigger(alpa_cancel_token* token);
/** Frees a cancel token; NULL is allowed. */
ALPA_API void alpa_cancel_token_destroy(alpa_cancel_token* token);

/* ---- Sharding problems --------------------------------------------------------------------- */
#define ALPA_FORBIDDEN_COST 1e18

/** File / buffer formats. */
#define ALPA_FORMAT_AUTO 0   /**< Alpa JSON if the object has "format": "alpa", else IOPDDL */
#define ALPA_FORMAT_IOPDDL 1 /**< the IOPDDL contest JSON, plain or gzip */
#define ALPA_FORMAT_ALPA 2   /**< Alpa's serialized solver arrays as JSON */

typedef struct alpa_problem alpa_problem;

/** An empty problem in the building state. Caller frees with alpa_problem_destroy. */
ALPA_API int32_t alpa_problem_create(alpa_problem** out, alpa_error** err);
/** Frees a problem; NULL is allowed. */
ALPA_API void alpa_problem_destroy(alpa_problem* problem);

/** Appends `count` nodes. strategy_counts[count] gives each node's number of strategies k_i;
 * costs[sum k_i] their costs (compute + communication) node after node; usages[sum k_i] their
 * memory bytes, or NULL for all zero. New nodes are free (follow nobody) and never live until
 * intervals or live sets say otherwise. Node ids continue from the current node count. */
ALPA_API int32_t alpa_problem_add_nodes(alpa_problem* problem, int64_t count,
                                        const int32_t* strategy_counts, const double* costs,
                                        const int64_t* usages, alpa_error** err);

/** Sets the liveness of the first `count` nodes as half-open intervals: lo_hi[2*count] holds
 * lo, hi of node 0, then node 1, ...; usage counts at times lo..hi-1. */
ALPA_API int32_t alpa_problem_set_intervals(alpa_problem* problem, int64_t count,
                                            const int64_t* lo_hi, alpa_error** err);

/** Sets liveness as explicit live sets (replacing intervals): step_sizes[num_steps] gives the
 * number of live nodes at each time step; node_ids[sum step_sizes] lists them step after step. */
ALPA_API int32_t alpa_problem_set_live_sets(alpa_problem* problem, int64_t num_steps,
                                            const int64_t* step_sizes, const int32_t* node_ids,
                                            alpa_error** err);

/** Appends `count` edges. endpoints[2*count] holds (u, v) pairs; costs[sum k_u*k_v] each edge's
 * matrix row-major (rows = u's strategies). Several edges on one pair add up. */
ALPA_API int32_t alpa_problem_add_edges(alpa_problem* problem, int64_t count,
                                        const int32_t* endpoints, const double* costs,
                                        alpa_error** err);

/** Sets followers for the first `count` nodes: follows[i] = -1 (free) or the node whose choice
 * node i shares (it must have the same number of strategies). */
ALPA_API int32_t alpa_problem_set_followers(alpa_problem* problem, int64_t count,
                                            const int32_t* follows, alpa_error** err);

/** Appends `count` alias pairs. pairs[2*count] holds (u, v); forbidden[sum k_u*k_v] row-major,
 * non-zero where u taking i and v taking j together is not allowed. */
ALPA_API int32_t alpa_problem_add_aliases(alpa_problem* problem, int64_t count,
                                          const int32_t* pairs, const uint8_t* forbidden,
                                          alpa_error** err);

/** The memory limit in bytes; a negative value removes it (the default is no limit). */
ALPA_API int32_t alpa_problem_set_memory_limit(alpa_problem* problem, int64_t limit,
                                               alpa_error** err);

/** Validates and freezes the problem. On failure (ALPA_ERR_INVALID_PROBLEM, the message names
 * the node, edge, alias or time step) the problem stays in the building state. Idempotent. */
ALPA_API int32_t alpa_problem_finalize(alpa_problem* problem, alpa_error** err);

/** Reads a problem (finalized) from a file (.json or .json.gz) in an ALPA_FORMAT_*. ALPA_ERR_IO
 * when the file cannot be read, ALPA_ERR_PARSE / ALPA_ERR_INVALID_PROBLEM naming the element.
 * Caller frees *out with alpa_problem_destroy. */
ALPA_API int32_t alpa_problem_read_file(alpa_problem** out, const char* path, int32_t format,
                                        alpa_error** err);
/** The same from bytes (data[size], gzip detected; need not be NUL-terminated). Caller frees
 * *out with alpa_problem_destroy. */
ALPA_API int32_t alpa_problem_read_buffer(alpa_problem** out, const char* data, size_t size,
                                          int32_t format, alpa_error** err);
/** Serializes a finalized problem (ALPA_FORMAT_IOPDDL or ALPA_FORMAT_ALPA). Caller frees *out with
 * alpa_buffer_free. ALPA_ERR_UNSUPPORTED when the format cannot express the problem. */
ALPA_API int32_t alpa_problem_to_json(alpa_buffer** out, const alpa_problem* problem,
                                      int32_t format, alpa_error** err);

/** Counts (0 for NULL). */
ALPA_API int64_t alpa_problem_node_count(const alpa_problem* problem);
/** Number of edges (0 for NULL). */
ALPA_API int64_t alpa_problem_edge_count(const alpa_problem* problem);
/** Strategies of one node, or -1 if the node does not exist. */
ALPA_API int32_t alpa_problem_strategy_count(const alpa_problem* problem, int64_t node);

/** Evaluates an assignment (assignment[count], count = node count) of a finalized problem with
 * the independent evaluator. ALPA_OK: *out_cost is the total cost. ALPA_ERR_INFEASIBLE: the
 * message names the violated constraint (forbidden choice, follower, alias, memory at time t).
 * ALPA_ERR_INVALID_ARGUMENT: wrong length or a strategy out of range. */
ALPA_API int32_t alpa_problem_evaluate(double* out_cost, const alpa_problem* problem, int64_t count,
                                       const int32_t* assignment, alpa_error** err);

/** Parses an assignment written as IOPDDL prints it ("[0, 0, 2, 1, 0]": a JSON array of
 * integers; text[size], need not be NUL-terminated), for alpa_problem_evaluate and warm starts.
 * Count-then-fill: returns the number of strategies and copies min(count, capacity) of them to
 * out. -ALPA_ERR_PARSE when the text is not such an array (the message names the position and
 * what was expected; values outside int32 included); -ALPA_ERR_INVALID_ARGUMENT for NULL text
 * with size > 0 or the count-then-fill misuse. */
ALPA_API int64_t alpa_assignment_parse(const char* text, size_t size, int32_t* out,
                                       int64_t capacity, alpa_error** err);

/* ---- Solve options ------------------------------------------------------------------------- */
typedef struct alpa_solve_options alpa_solve_options;

/** Option keys (pinned values). Each family has its own range: solve 100..199, shard 200..299
 * (both set on alpa_solve_options), plan 300..399 (ALPA_PLAN_OPT_*, set on alpa_plan_options).
 * A key of a family the options object does not hold is ALPA_ERR_INVALID_ARGUMENT naming the key
 * and its family. */
/** Solve family (alpa_problem_solve and the solve inside alpa_graph_auto_shard). */
/** double >= 0, default: none (0 or inf: none; NaN and negative values are rejected). One
 * deadline from the start of the call, covering every phase; when it passes the call returns the
 * best answer so far (ALPA_SOLVE_FEASIBLE), or ALPA_ERR_TIMEOUT when there is none. */
#define ALPA_OPT_TIME_LIMIT_SECONDS 100
/** int 0/1, default 0. 1: the same answer (status, objective, bound, assignment) for the same
 * problem, options and build, whatever the machine's load and the number of threads (a large core
 * always gets 2 local searches, which the threads share). The time limit becomes a work budget:
 * counted steps scaled from it (local-search moves, GLPK branch-and-bound nodes), not the clock,
 * end the solve, so wall time may exceed the limit on a slow or busy machine; the clock stops the
 * solve only at 10 times the limit, a safety stop (a run that reaches it returns the best answer
 * so far, which then depends on timing). A cancel still stops the solve at once. */
#define ALPA_OPT_DETERMINISTIC 101
#define ALPA_OPT_THREADS 102      /**< int 0..4096, default 0 = all hardware threads */
#define ALPA_OPT_RELATIVE_GAP 103 /**< double in [0, 1), default 0: stop within this gap */
/** int64 >= 1, default 1073741824 (1 GiB): the most bytes of decoded input (after gzip inflation)
 * that alpa_problem_read_file_with_options and alpa_graph_read_file_with_options accept; a larger
 * input is ALPA_ERR_PARSE naming the limit. The readers without options use the default. */
#define ALPA_OPT_MAX_INPUT_BYTES 104
/** Shard family (alpa_graph_auto_shard; alpa_problem_solve ignores them). Integers; set them with
 * alpa_solve_options_set_int (set_double accepts integral values). */
/** ALPA_COST_MODE_REAL_UNITS (1, default: seconds; needs a cluster) or ALPA_COST_MODE_ALPA (0:
 * Alpa's abstract formulas and tie-breakers; the cluster is optional). */
#define ALPA_OPT_COST_MODEL 200
#define ALPA_OPT_ZERO 201                /**< ALPA_ZERO_*, default ALPA_ZERO_OFF */
#define ALPA_OPT_FORCE_DATA_PARALLEL 202 /**< 0/1, default 0: weights replicated, batch split */
/** The mesh dim every input's batch dim (dim 0) is split over: ALPA_BATCH_MESH_DIM_FREE (-2,
 * default: no constraint), ALPA_BATCH_MESH_DIM_ALL (-1: all mesh dims) or a mesh dim k >= 0
 * (checked against the mesh at alpa_graph_auto_shard). */
#define ALPA_OPT_BATCH_MESH_DIM 203
#define ALPA_OPT_ALLOW_ALL_GATHER 204 /**< 0/1, default 1: resharding may use all-gathers */
#define ALPA_OPT_ALLOW_ALL_TO_ALL 205 /**< 0/1, default 1: resharding may use all-to-alls */
/** int64 bytes per device, default: none; a negative value removes the budget. A budget no plan
 * meets makes alpa_graph_auto_shard return ALPA_ERR_INFEASIBLE (the message gives the smallest
 * peak found without it). */
#define ALPA_OPT_MEMORY_BUDGET_BYTES 206

/** ZeRO modes of ALPA_OPT_ZERO (pinned values): off (optimizer state and updates follow their
 * weight's layout), search (the solver may shard them: reduce-scatter, sharded update,
 * all-gather), force (as search, and optimizer state must be sharded where it can be). */
#define ALPA_ZERO_OFF 0
#define ALPA_ZERO_SEARCH 1
#define ALPA_ZERO_FORCE 2
/** Special values of ALPA_OPT_BATCH_MESH_DIM. */
#define ALPA_BATCH_MESH_DIM_FREE (-2)
#define ALPA_BATCH_MESH_DIM_ALL (-1)

/** Defaults as above. Caller frees with alpa_solve_options_destroy. */
ALPA_API int32_t alpa_solve_options_create(alpa_solve_options** out, alpa_error** err);
/** Frees solve options; NULL is allowed. */
ALPA_API void alpa_solve_options_destroy(alpa_solve_options* options);
/** Sets option `key` (ALPA_OPT_*, solve or shard family). ALPA_ERR_INVALID_ARGUMENT for a NULL
 * options, an unknown key, a key of the plan family ("alpa_solve_options:
 * ALPA_PLAN_OPT_THREADS (303, \"threads\") is a plan option; set it on alpa_plan_options") or a
 * value out of range ("solve option \"threads\": must be an integer in 0..4096 (got 5000)"); the
 * option then keeps its value. set_double accepts integral values for integer options, set_int
 * any value for double options. An options object needs exclusive access while it is changed; a
 * solve only reads it. */
ALPA_API int32_t alpa_solve_options_set_double(alpa_solve_options* options, int32_t key,
                                               double value, alpa_error** err);
/** Sets option `key` from an integer (see alpa_solve_options_set_double). */
ALPA_API int32_t alpa_solve_options_set_int(alpa_solve_options* options, int32_t key, int64_t value,
                                            alpa_error** err);
/** By name, for CLIs and config files: "time_limit_seconds", "deterministic", "threads",
 * "relative_gap", "max_input_bytes", "cost_model", "zero", "force_data_parallel", "batch_mesh_dim",
 * "allow_all_gather", "allow_all_to_all", "memory_budget_bytes". value is parsed as a number in
 * any strtod form (integer options need an integral value; integer literals are read exactly up
 * to 2^63-1); "true"/"false" are accepted for the 0/1 options, "alpa" / "real" for cost_model,
 * "off" / "search" / "force" for zero, "free" / "all" for batch_mesh_dim, "none" for
 * memory_budget_bytes. Errors as for set_int, and for an unknown name. */
ALPA_API int32_t alpa_solve_options_set_by_name(alpa_solve_options* options, const char* name,
                                                const char* value, alpa_error** err);
/** alpa_problem_read_file with the input limit of `options` (ALPA_OPT_MAX_INPUT_BYTES; NULL:
 * the default, 1 GiB). Every reader reads files in pieces: a file that starts like neither JSON
 * nor gzip fails after its first bytes ("not JSON: byte 0 is 0x00 ..."), a file or inflated
 * stream over the limit fails before it is read whole ("input exceeds the limit of ... bytes
 * ...; raise the limit with ..."), and memory running out while parsing is
 * ALPA_ERR_OUT_OF_MEMORY. Caller frees *out with alpa_problem_destroy. */
ALPA_API int32_t alpa_problem_read_file_with_options(alpa_problem** out, const char* path,
                                                     int32_t format,
                                                     const alpa_solve_options* options,
                                                     alpa_error** err);
/** A starting assignment (assignment[count], one strategy per node); count 0 clears it. Invalid
 * or infeasible warm starts are ignored by the solver, never an error at solve time. */
ALPA_API int32_t alpa_solve_options_set_warm_start(alpa_solve_options* options, int64_t count,
                                                   const int32_t* assignment, alpa_error** err);
/** Cancel token (may be NULL to remove). The token must outlive every solve using it. */
ALPA_API int32_t alpa_solve_options_set_cancel_token(alpa_solve_options* options,
                                                     alpa_cancel_token* token, alpa_error** err);

/** Progress reports, passed to the progress callback. */
typedef struct alpa_progress {
  size_t struct_size; /**< sizeof(alpa_progress) of the library that filled it */
  int32_t version;    /**< 1 */
  int32_t reserved;   /**< 0 */
  double seconds;     /**< since the solve started */
  double objective;   /**< best feasible objective so far, +inf if none */
  double lower_bound; /**< best proven lower bound, -inf if none */
  const char* phase;  /**< "reduce", "elimination", "heuristic", "ilp", "warm_start" (static) */
} alpa_progress;
/** Runs on the thread that called alpa_problem_solve (or alpa_graph_auto_shard). Return non-zero to
 * cancel the solve. */
typedef int32_t (*alpa_progress_fn)(void* user_data, const alpa_progress* progress);
/** Progress callback (NULL to remove) and its user_data, for alpa_problem_solve and
 * alpa_graph_auto_shard. */
ALPA_API int32_t alpa_solve_options_set_progress(alpa_solve_options* options,
                                                 alpa_progress_fn callback, void* user_data,
                                                 alpa_error** err);

/* ---- Solving ------------------------------------------------------------------------------- */
/** Solution status (pinned values). A solution handle or sharding plan is OPTIMAL, FEASIBLE or
 * CANCELLED (with the assignment found before the cancellation); INFEASIBLE, INVALID_INPUT and
 * NO_SOLUTION appear only in the JSON results of alpa_problem_solve_json, the handle calls
 * returning ALPA_ERR_INFEASIBLE, ALPA_ERR_INVALID_PROBLEM and ALPA_ERR_TIMEOUT instead. */
#define ALPA_SOLVE_OPTIMAL 1       /**< proven optimal (within the relative gap) */
#define ALPA_SOLVE_FEASIBLE 2      /**< time limit hit; the best feasible assignment found */
#define ALPA_SOLVE_INFEASIBLE 3    /**< proven infeasible (JSON results only) */
#define ALPA_SOLVE_INVALID_INPUT 4 /**< the problem failed validation (JSON results only) */
#define ALPA_SOLVE_CANCELLED 5     /**< cancelled after a first assignment: the best found */
#define ALPA_SOLVE_NO_SOLUTION 6   /**< time limit before any assignment (JSON results only) */

typedef struct alpa_solution alpa_solution;

/** Solves a finalized problem. options may be NULL (defaults). ALPA_OK with a solution whose
 * status is OPTIMAL, FEASIBLE (time limit) or CANCELLED (after a first assignment). No answer is
 * an error and leaves *out NULL: ALPA_ERR_INFEASIBLE (proven infeasible; the message names the
 * reason), ALPA_ERR_TIMEOUT (time limit before any feasible assignment), ALPA_ERR_CANCELLED
 * (cancelled before one); ALPA_ERR_INVALID_ARGUMENT for a NULL or unfinalized problem. Caller
 * frees *out with alpa_solution_destroy. Thread-safe for distinct options objects. */
ALPA_API int32_t alpa_problem_solve(alpa_solution** out, const alpa_problem* problem,
                                    const alpa_solve_options* options, alpa_error** err);
/** Frees a solution; NULL is allowed. */
ALPA_API void alpa_solution_destroy(alpa_solution* solution);

/** ALPA_SOLVE_OPTIMAL, _FEASIBLE or _CANCELLED; 0 for NULL. */
ALPA_API int32_t alpa_solution_status(const alpa_solution* solution);
/** The objective of the assignment and the best proven lower bound (-inf if none); NaN for NULL.
 * Both are rounded to double; the JSON form prints them exactly. */
ALPA_API double alpa_solution_objective(const alpa_solution* solution);
/** The best proven lower bound (-inf if none); NaN for NULL. */
ALPA_API double alpa_solution_lower_bound(const alpa_solution* solution);
/** Seconds the solve took; NaN for NULL. */
ALPA_API double alpa_solution_seconds(const alpa_solution* solution);
/** Count-then-fill over the assignment: one strategy per node (0 for a problem of no nodes). */
ALPA_API int64_t alpa_solution_assignment(const alpa_solution* solution, int32_t* out,
                                          int64_t capacity);
/** Why the solve stopped short of proving optimality (time limit, cancellation), "" otherwise.
 * Valid while the solution lives. */
ALPA_API const char* alpa_solution_message(const alpa_solution* solution);
/** The solution as one JSON object (docs/formats.md): status, objective, lower_bound, seconds,
 * assignment, message, stats (the solver statistics, spelled as in the auto-sharding JSON).
 * Caller frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_solution_to_json(alpa_buffer** out, const alpa_solution* solution,
                                       alpa_error** err);

/** One-shot solve over JSON: request = {"problem": <IOPDDL problem object or Alpa object>,
 * "options": {"time_limit_seconds": 10, "deterministic": true, "threads": 1,
 * "relative_gap": 0, "warm_start": [...]}} ("options" optional; solve-family names only). On
 * ALPA_OK *out holds the result JSON of alpa_solution_to_json, whatever the outcome: "status"
 * is "infeasible", "no_solution" or "invalid_input" (with "message") where alpa_problem_solve
 * would return an error. Malformed requests give ALPA_ERR_PARSE, unknown or out-of-range
 * options ALPA_ERR_INVALID_ARGUMENT. Caller frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_problem_solve_json(alpa_buffer** out, const char* request, size_t size,
                                         alpa_error** err);

/* ---- Operator graphs ----------------------------------------------------------------------- */
/** A training step as an HLO-like operator graph (semantics: docs/graph-format.md). Every op
 * produces one tensor and refers to its operands by op id (its index); ops are added in
 * topological order. Lifecycle:
 *
 *   alpa_graph* g;  alpa_graph_create(&g, &err);
 *   alpa_graph_add_ops(g, n, kinds, dtypes, ...);   types are inferred and checked op by op
 *   alpa_graph_set_alias(g, update_op, parameter_op, &err);  alpa_graph_set_outputs(...);
 *   alpa_graph_finalize(g, &err);                   validates; the graph is now immutable
 *   alpa_graph_to_json / queries ...;  alpa_graph_destroy(g);
 *
 * Or read one (finalized) with alpa_graph_read_file / alpa_graph_read_buffer, or build a model
 * of the zoo with alpa_model_build_graph. Errors about ops are ALPA_ERR_INVALID_GRAPH and name
 * the op: "op 12 'attn.qkv' (dot_general): contracting dim sizes differ: ...". A finalized graph
 * may be shared between threads; building needs exclusive access. */

/** Element types (pinned values). */
#define ALPA_DTYPE_F32 0
#define ALPA_DTYPE_F16 1
#define ALPA_DTYPE_BF16 2
#define ALPA_DTYPE_F64 3
#define ALPA_DTYPE_S8 4
#define ALPA_DTYPE_S32 5
#define ALPA_DTYPE_S64 6
#define ALPA_DTYPE_PRED 7 /**< boolean, one byte */

/** Op kinds (pinned values). The int64 attribute words each kind takes in alpa_graph_add_ops
 * are given in brackets; r is the operand's rank, k the number of spatial dims. */
#define ALPA_OP_PARAMETER 0 /**< []; shape and dtype given */
#define ALPA_OP_CONSTANT 1  /**< []; splat of values[i]; shape and dtype given */
#define ALPA_OP_IOTA 2      /**< [axis]; shape and dtype given */
#define ALPA_OP_NEG 10      /**< unary ops 10..19: [] */
#define ALPA_OP_ABS 11
#define ALPA_OP_EXP 12
#define ALPA_OP_LOG 13
#define ALPA_OP_TANH 14
#define ALPA_OP_SQRT 15
#define ALPA_OP_RSQRT 16
#define ALPA_OP_GELU 17
#define ALPA_OP_RELU 18
#define ALPA_OP_CONVERT 19 /**< []; the target dtype given */
#define ALPA_OP_ADD 30     /**< binary ops 30..36: [] */
#define ALPA_OP_SUB 31
#define ALPA_OP_MUL 32
#define ALPA_OP_DIV 33
#define ALPA_OP_MAX 34
#define ALPA_OP_MIN 35
#define ALPA_OP_POW 36
#define ALPA_OP_COMPARE 37 /**< [ALPA_CMP_*] */
#define ALPA_OP_SELECT 38  /**< []; operands (pred, x, y) */
/** [nb, lhs_batch[nb], rhs_batch[nb], nc, lhs_contracting[nc], rhs_contracting[nc]] */
#define ALPA_OP_DOT_GENERAL 50
/** [k, strides[k], padding_lo[k], padding_hi[k], lhs_dilation[k], rhs_dilation[k],
 *  feature_group_count]; operands (input [N, C, S..], kernel [O, C/groups, K..]) */
#define ALPA_OP_CONVOLUTION 51
#define ALPA_OP_BROADCAST_IN_DIM 60 /**< [dims[r]]: operand dim i -> output dim; shape given */
#define ALPA_OP_RESHAPE 61          /**< []; shape given */
#define ALPA_OP_TRANSPOSE 62        /**< [permutation[r]] */
#define ALPA_OP_SLICE 63            /**< [r, starts[r], limits[r], strides[r]] */
#define ALPA_OP_CONCATENATE 64      /**< [axis]; any number (>= 1) of operands */
/** [r, padding_lo[r], padding_hi[r], padding_interior[r]]; filled with values[i] */
#define ALPA_OP_PAD 65
#define ALPA_OP_REVERSE 66    /**< [dims...] */
#define ALPA_OP_REDUCE_SUM 80 /**< [dims...] (reduced away) */
#define ALPA_OP_REDUCE_MAX 81 /**< [dims...] */
/** [ALPA_REDUCE_*, r, window[r], strides[r], padding_lo[r], padding_hi[r]] */
#define ALPA_OP_REDUCE_WINDOW 82
/** [r, window[r], strides[r], padding_lo[r], padding_hi[r]]; operands (x, source) */
#define ALPA_OP_SELECT_AND_SCATTER 83
#define ALPA_OP_GATHER 90      /**< [axis]; operands (x, indices) */
#define ALPA_OP_SCATTER_ADD 91 /**< [axis]; operands (base, indices, updates) */

/** Tensor roles (pinned values): what a tensor is, for memory accounting and planning. */
#define ALPA_ROLE_ACTIVATION 0      /**< computed inside the step (the default) */
#define ALPA_ROLE_PARAMETER 1       /**< trainable weight */
#define ALPA_ROLE_GRADIENT 2        /**< gradient of a weight */
#define ALPA_ROLE_OPTIMIZER_STATE 3 /**< momentum, Adam moments, master weights, step counter */
#define ALPA_ROLE_INPUT 4           /**< data fed each step */

/** Phases of the training step (pinned values). */
#define ALPA_PHASE_FORWARD 0
#define ALPA_PHASE_BACKWARD 1
#define ALPA_PHASE_UPDATE 2

/** Comparisons of ALPA_OP_COMPARE (pinned values). */
#define ALPA_CMP_EQ 0
#define ALPA_CMP_NE 1
#define ALPA_CMP_LT 2
#define ALPA_CMP_LE 3
#define ALPA_CMP_GT 4
#define ALPA_CMP_GE 5

/** Reductions of ALPA_OP_REDUCE_WINDOW (pinned values). */
#define ALPA_REDUCE_SUM 0
#define ALPA_REDUCE_MAX 1

typedef struct alpa_graph alpa_graph;

/** An empty graph in the building state. Caller frees with alpa_graph_destroy. */
ALPA_API int32_t alpa_graph_create(alpa_graph** out, alpa_error** err);
/** Frees a graph; NULL is allowed. */
ALPA_API void alpa_graph_destroy(alpa_graph* graph);

/** Appends `count` ops (ids continue from the current op count). Per op i:
 *   kinds[i]   ALPA_OP_*.
 *   dtypes[i]  ALPA_DTYPE_*: required for parameter, constant, iota and convert; -1 (infer)
 *              for the other kinds, where a given dtype is checked against the inferred one.
 *              dtypes may be NULL: all -1.
 *   roles[i], phases[i], layers[i]: ALPA_ROLE_*, ALPA_PHASE_*, pipeline layer (>= 0, or -1 for
 *              none); each array may be NULL for ACTIVATION, FORWARD, 0.
 *   operands[operand_offsets[i] .. operand_offsets[i+1]): operand op ids, each smaller than i's
 *              own id (added before it, in this call or an earlier one).
 *   shape_dims[shape_offsets[i] .. shape_offsets[i+1]): for parameter, constant, iota,
 *              broadcast_in_dim and reshape the result shape (empty range: a scalar); for the
 *              other kinds the shape is inferred, and a non-empty range is checked against it.
 *   attrs[attr_offsets[i] .. attr_offsets[i+1]): the kind's int64 attribute words, laid out
 *              as documented at its ALPA_OP_* constant; the length must match exactly.
 *   values[i]  the splat value of constant and the fill value of pad (ignored for other kinds);
 *              values may be NULL: 0.0.
 *   names[i]   a UTF-8 name or NULL; names may be NULL (no names).
 * Each *_offsets array has count + 1 non-decreasing, non-negative entries and may be NULL when
 * every range is empty (then its data array may be NULL too). Arrays are copied.
 * Errors: ALPA_ERR_INVALID_ARGUMENT for a NULL graph, a finalized graph, NULL arrays or bad
 * offsets; ALPA_ERR_INVALID_GRAPH naming the first bad op ("op 7 'fc1' (dot_general): ...").
 * All or nothing: on failure no op of the batch is added. */
ALPA_API int32_t alpa_graph_add_ops(alpa_graph* graph, int64_t count, const int32_t* kinds,
                                    const int32_t* dtypes, const int32_t* roles,
                                    const int32_t* phases, const int32_t* layers,
                                    const int64_t* operand_offsets, const int32_t* operands,
                                    const int64_t* shape_offsets, const int64_t* shape_dims,
                                    const int64_t* attr_offsets, const int64_t* attrs,
                                    const double* values, const char* const* names,
                                    alpa_error** err);

/** Marks op `op` (an update result) as the new value of parameter op `parameter` after the
 * step; parameter = -1 removes the mark. The parameter must be a parameter op of the same
 * shape and dtype, replaced by no other op (ALPA_ERR_INVALID_GRAPH naming both ops). */
ALPA_API int32_t alpa_graph_set_alias(alpa_graph* graph, int32_t op, int32_t parameter,
                                      alpa_error** err);
/** Marks op `op` stop_gradient (flag 1) or clears the mark (0): alpa_graph_make_training's
 * autodiff treats its result as a constant, so no gradient flows into it or through it to its
 * operands (JAX's lax.stop_gradient); the forward value is unchanged. The model zoo marks the row
 * maximum a softmax subtracts to keep exp in range, whose gradient is zero in exact arithmetic:
 * the backward pass then skips the ops that would compute its rounding noise.
 * ALPA_ERR_INVALID_ARGUMENT for an op out of range or a flag other than 0 and 1. */
ALPA_API int32_t alpa_graph_set_stop_gradient(alpa_graph* graph, int32_t op, int32_t flag,
                                              alpa_error** err);
/** Sets the graph's outputs (ids[count], loss first by convention), replacing earlier ones. */
ALPA_API int32_t alpa_graph_set_outputs(alpa_graph* graph, int64_t count, const int32_t* ids,
                                        alpa_error** err);
/** Validates the whole graph and freezes it (ALPA_ERR_INVALID_GRAPH naming the op; the graph
 * then stays in the building state). Idempotent. */
ALPA_API int32_t alpa_graph_finalize(alpa_graph* graph, alpa_error** err);

/** Reads a graph in the JSON graph format (docs/graph-format.md; gzip accepted) from a file or
 * from bytes; the result is finalized. ALPA_ERR_IO: the file cannot be read (the message
 * starts with the path); ALPA_ERR_PARSE: malformed JSON, a wrong type or an unknown name or
 * field, with its JSON path ("graph.ops[3] 'w1': shape[1]: expected an integer");
 * ALPA_ERR_INVALID_GRAPH: an inconsistent graph ("graph.ops[12] 'attn.qkv' (dot_general): ...").
 * Caller frees *out with alpa_graph_destroy. */
ALPA_API int32_t alpa_graph_read_file(alpa_graph** out, const char* path, alpa_error** err);
/** alpa_graph_read_file with the input limit of `options` (ALPA_OPT_MAX_INPUT_BYTES; NULL: the
 * default, 1 GiB), as alpa_problem_read_file_with_options. Caller frees *out with
 * alpa_graph_destroy. */
ALPA_API int32_t alpa_graph_read_file_with_options(alpa_graph** out, const char* path,
                                                   const alpa_solve_options* options,
                                                   alpa_error** err);
/** The same from bytes (data[size], need not be NUL-terminated). Caller frees *out with
 * alpa_graph_destroy. */
ALPA_API int32_t alpa_graph_read_buffer(alpa_graph** out, const char* data, size_t size,
                                        alpa_error** err);
/** Imports XLA HLO text, as `jax.jit(step).lower(*args).as_text(dialect="hlo")` or
 * `compiler_ir("hlo").as_hlo_text()` prints it, from a file or from bytes (text[length], need not
 * be NUL-terminated); the result is finalized (docs/hlo-import.md). Entry parameters become
 * parameter ops (named by their metadata op_name, the pytree path, when present); the module's
 * input_output_alias (donate_argnums) gives the roles (a donated parameter the loss depends on is
 * a trainable parameter, another donated one optimizer state, the rest inputs), the alias_of of
 * the updated outputs and the phases; op_name name scopes such as `layers_3` give the layers.
 * ALPA_ERR_IO: the file cannot be read (the message starts with the path); ALPA_ERR_PARSE: not
 * HLO text ("line 3, column 9: expected '=' after the instruction name \"x\"");
 * ALPA_ERR_UNSUPPORTED: an instruction the IR cannot express, naming it, its opcode and its line,
 * with the workaround
 * ("line 40, column 3: instruction \"while.5\" (while): loops are not supported: ... unroll
 * lax.scan / fori_loop, e.g. jax.lax.scan(..., unroll=True) ..."). Caller frees *out with
 * alpa_graph_destroy. */
ALPA_API int32_t alpa_graph_read_hlo_file(alpa_graph** out, const char* path, alpa_error** err);
/** alpa_graph_read_hlo_file from bytes. Caller frees *out with alpa_graph_destroy. */
ALPA_API int32_t alpa_graph_read_hlo_buffer(alpa_graph** out, const char* text, size_t length,
                                            alpa_error** err);
/** Serializes a finalized graph as JSON (one op per line; reading it back gives the same
 * graph). Caller frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_graph_to_json(alpa_buffer** out, const alpa_graph* graph, alpa_error** err);

/** Queries (building or finalized graphs). The op count: 0 for NULL. */
ALPA_API int64_t alpa_graph_op_count(const alpa_graph* graph);
/** ALPA_OP_*, ALPA_DTYPE_*, ALPA_ROLE_*, ALPA_PHASE_* of one op; -1 for a NULL graph or an op
 * id out of range. */
ALPA_API int32_t alpa_graph_op_kind(const alpa_graph* graph, int32_t op);
/** ALPA_DTYPE_* of one op; -1 for a NULL graph or an op id out of range. */
ALPA_API int32_t alpa_graph_op_dtype(const alpa_graph* graph, int32_t op);
/** ALPA_ROLE_* of one op; -1 for a NULL graph or an op id out of range. */
ALPA_API int32_t alpa_graph_op_role(const alpa_graph* graph, int32_t op);
/** ALPA_PHASE_* of one op; -1 for a NULL graph or an op id out of range. */
ALPA_API int32_t alpa_graph_op_phase(const alpa_graph* graph, int32_t op);
/** The op's pipeline layer, -1 when it has none, and also -1 for an id out of range. */
ALPA_API int32_t alpa_graph_op_layer(const alpa_graph* graph, int32_t op);
/** The parameter op this op's result replaces after the step, or -1 (also for a bad id). */
ALPA_API int32_t alpa_graph_op_alias(const alpa_graph* graph, int32_t op);
/** 1 when op `op` is marked stop_gradient (alpa_graph_set_stop_gradient), else 0; -1 for NULL
 * or an op out of range. */
ALPA_API int32_t alpa_graph_op_stop_gradient(const alpa_graph* graph, int32_t op);
/** The constant / pad value of the op (0.0 for other kinds; NaN for NULL or a bad id). */
ALPA_API double alpa_graph_op_value(const alpa_graph* graph, int32_t op);
/** Count-then-fill over the op's shape dims / operands / attribute words (-1 =
 * -ALPA_ERR_INVALID_ARGUMENT for a NULL graph or a bad id). The attribute words use
 * alpa_graph_add_ops's layout, so queried ops can be added to another graph unchanged. */
ALPA_API int64_t alpa_graph_op_shape(const alpa_graph* graph, int32_t op, int64_t* out,
                                     int64_t capacity);
/** Count-then-fill over the op's operand op ids (as alpa_graph_op_shape). */
ALPA_API int64_t alpa_graph_op_operands(const alpa_graph* graph, int32_t op, int32_t* out,
                                        int64_t capacity);
/** Count-then-fill over the op's attribute words (as alpa_graph_op_shape). */
ALPA_API int64_t alpa_graph_op_attrs(const alpa_graph* graph, int32_t op, int64_t* out,
                                     int64_t capacity);
/** The op's name ("" if none or for a bad id); valid until the graph changes or is destroyed. */
ALPA_API const char* alpa_graph_op_name(const alpa_graph* graph, int32_t op);
/** Where the op came from in the program it was imported from ("" if none or for a bad id):
 * for alpa_graph_read_hlo_file / _buffer, the metadata op_name of the HLO
 * instruction it was lowered from ("jit(step)/jvp(layers_3)/dot_general"); the JSON field
 * "source". No pass reads it. Valid until the graph changes or is destroyed. */
ALPA_API const char* alpa_graph_op_source(const alpa_graph* graph, int32_t op);
/** Count-then-fill over the graph's outputs. */
ALPA_API int64_t alpa_graph_outputs(const alpa_graph* graph, int32_t* out, int64_t capacity);

/** Turns a finalized forward graph into its training step (a new finalized graph): the backward
 * pass of the loss (outputs[0], a floating-point scalar) with respect to every parameter op of
 * role ALPA_ROLE_PARAMETER (gradients get ALPA_ROLE_GRADIENT, ALPA_PHASE_BACKWARD), then the
 * optimizer's update (ALPA_PHASE_UPDATE; its state as ALPA_ROLE_OPTIMIZER_STATE parameter ops;
 * each new value aliases the op it replaces and is an output after the loss), as the model zoo
 * builds its training graphs. Backward and update ops keep the layer of the op they come from.
 * optimizer_spec: "KIND[:key=value,...]" with KIND sgd, momentum or adam and the keys lr (default
 * 0.001), momentum (momentum only, default 0.9), beta1 / beta2 (adam, 0.9 / 0.999), eps (adam,
 * 1e-8; alias adam_eps) and master_weights (0/1, default 1: f32 master copies of f16 / bf16
 * parameters), e.g. "adam", "adam:lr=0.0003,eps=1e-6", "momentum:momentum=0.8"
 * (docs/graph-format.md). Errors: ALPA_ERR_INVALID_ARGUMENT for NULL arguments, a forward graph not
 * finalized, a bad optimizer spec (naming the kind, key or value), a graph without outputs, a loss
 * that is not a floating-point scalar or an op already in the backward or update phase (naming the
 * op), or no parameter op of role parameter; ALPA_ERR_UNSUPPORTED for an op kind autodiff cannot
 * differentiate (naming the op). The forward graph is unchanged and may be shared between threads
 * meanwhile. Caller frees *out with alpa_graph_destroy. */
ALPA_API int32_t alpa_graph_make_training(alpa_graph** out, const alpa_graph* forward,
                                          const char* optimizer_spec, alpa_error** err);

/* ---- Model zoo ----------------------------------------------------------------------------- */
/** Training graphs of the benchmark models (GPT, MoE, Wide-ResNet, ...; docs/models.md) built
 * through the graph IR and autodiff. A spec is a preset name ("gpt-39b"), a family with keys
 * ("gpt:hidden=1024,layers=2,heads=16,seq=128,vocab=1000,batch=8", "mlp:layers=6,hidden=32"),
 * or a preset refined by keys ("gpt-350m:batch=8,layers=2"). */

/** Builds the (finalized) graph of a spec. ALPA_ERR_INVALID_ARGUMENT for a bad spec, the message
 * naming the unknown family, key or bad value. Caller frees *out with alpa_graph_destroy. */
ALPA_API int32_t alpa_model_build_graph(alpa_graph** out, const char* spec, alpa_error** err);

/* ---- Clusters and the cost model ----------------------------------------------------------- */
/**
 * A cluster is hosts x devices-per-host identical devices (peak FLOP/s per dtype, memory, memory
 * bandwidth), a link inside a host and a link between hosts (bandwidth in bytes/s, latency in
 * seconds), and the efficiency factors of the roofline compute model. A logical mesh views a
 * submesh (hosts x devices each) as a 1-D or 2-D device array with a latency alpha and an
 * inverse bandwidth beta per dimension; collective costs are computed on it. Formats, units and
 * the bandwidth model: docs/cluster-format.md. Cluster and mesh handles are immutable once
 * created and may be shared between threads.
 */

/** Collective kinds (pinned values). */
#define ALPA_COLLECTIVE_ALL_GATHER 0
#define ALPA_COLLECTIVE_ALL_REDUCE 1
#define ALPA_COLLECTIVE_REDUCE_SCATTER 2
#define ALPA_COLLECTIVE_ALL_TO_ALL 3
#define ALPA_COLLECTIVE_SEND_RECV 4
/** Cost modes: Alpa's formulas with its tie-breaking constants (+0.1 all-gather, +0.01
 * all-reduce, +0.001 reduce-scatter and all-to-all), or the pure formulas (seconds). */
#define ALPA_COST_MODE_ALPA 0
#define ALPA_COST_MODE_REAL_UNITS 1
/** The mesh_dim meaning "all mesh dimensions at once" (the flattened mesh). */
#define ALPA_MESH_DIM_FLATTENED (-1)

typedef struct alpa_cluster alpa_cluster;
typedef struct alpa_mesh alpa_mesh;

/** The built-in presets: their number, and the canonical name of preset `index` (static storage;
 * "" when index is out of range). Names: "p3.16xlarge", "dgx-a100-80g", "dgx-a100-40g",
 * "dgx-h100", "pcie-a100-80g"; aliases such as "dgx-a100" and "h100" are accepted too. */
ALPA_API int32_t alpa_cluster_preset_count(void);
/** The canonical name of preset `index` (static storage); "" when out of range. */
ALPA_API const char* alpa_cluster_preset_name(int32_t index);

/** A preset cluster. spec is a preset name (case-insensitive), optionally with options:
 * "p3.16xlarge:hosts=8" or "dgx-h100:hosts=2,devices_per_host=4". hosts > 0 sets the host count
 * (overriding the spec's); hosts == 0 keeps the spec's (default 1); hosts < 0 is an error.
 * Specs joined by '+' give a cluster of mixed GPU types, each part with its own hosts
 * ("dgx-a100-80g:hosts=2+p3.16xlarge:hosts=2"; docs/cluster-format.md "Mixed clusters"); hosts
 * must then be 0. ALPA_ERR_INVALID_ARGUMENT for an unknown name or a bad option. Caller frees
 * *out with alpa_cluster_destroy. */
ALPA_API int32_t alpa_cluster_create_preset(alpa_cluster** out, const char* spec, int64_t hosts,
                                            alpa_error** err);
/** Reads a cluster JSON file / buffer (data[size], need not be NUL-terminated). ALPA_ERR_IO when
 * the file cannot be read, ALPA_ERR_PARSE for malformed JSON or fields of the wrong type,
 * ALPA_ERR_INVALID_ARGUMENT for out-of-range values; the message names the field
 * ("cluster.device.memory_bytes: ..."). Caller frees *out with alpa_cluster_destroy. */
ALPA_API int32_t alpa_cluster_read_file(alpa_cluster** out, const char* path, alpa_error** err);
/** The same from bytes (data[size]). Caller frees *out with alpa_cluster_destroy. */
ALPA_API int32_t alpa_cluster_read_buffer(alpa_cluster** out, const char* data, size_t size,
                                          alpa_error** err);
/** A copy of `cluster` whose calibration is overridden by a calibration JSON document (data[size];
 * keys it leaves out keep the cluster's values). A cluster of mixed GPU types: every pool's
 * calibration, keys left out keeping each pool's values. Errors as for alpa_cluster_read_buffer.
 * Caller frees *out with alpa_cluster_destroy. */
ALPA_API int32_t alpa_cluster_apply_calibration(alpa_cluster** out, const alpa_cluster* cluster,
                                                const char* data, size_t size, alpa_error** err);
/** The cluster as a JSON document (every field; reading it back gives the same cluster). Caller
 * frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_cluster_to_json(alpa_buffer** out, const alpa_cluster* cluster,
                                      alpa_error** err);
/** Frees a cluster; NULL is allowed. Meshes created from it stay valid. */
ALPA_API void alpa_cluster_destroy(alpa_cluster* cluster);

/** Getters: "" (name), 0 (integers) or NaN (doubles) for a NULL cluster. The name is valid while
 * the cluster lives. */
ALPA_API const char* alpa_cluster_name(const alpa_cluster* cluster);
/** Hosts of the cluster; 0 for NULL. */
ALPA_API int64_t alpa_cluster_hosts(const alpa_cluster* cluster);
/** Devices per host; 0 for NULL. */
ALPA_API int64_t alpa_cluster_devices_per_host(const alpa_cluster* cluster);
/** Memory of one device in bytes; 0 for NULL. */
ALPA_API int64_t alpa_cluster_device_memory_bytes(const alpa_cluster* cluster);
/** Bytes per second of one device's memory. */
ALPA_API double alpa_cluster_device_memory_bandwidth(const alpa_cluster* cluster);
/** Peak FLOP/s of one device for an ALPA_DTYPE_* (NaN for an unknown dtype or NULL). */
ALPA_API double alpa_cluster_peak_flops(const alpa_cluster* cluster, int32_t dtype);

/** A logical mesh derived from a cluster as in alpa_cluster_logical_mesh. Caller frees *out with
 * alpa_mesh_destroy; it does not refer to the cluster afterwards. */
ALPA_API int32_t alpa_mesh_create(alpa_mesh** out, const alpa_cluster* cluster,
                                  int64_t submesh_hosts, int64_t submesh_devices_per_host,
                                  int32_t ndim, const int64_t* logical_shape, alpa_error** err);
/** A logical mesh in Alpa's abstract units: shape[ndim], alpha[ndim], beta[ndim] (alpha / beta
 * NULL: Alpa's defaults alpha = (1, 1), beta = (1, 0.1)). The flattened mesh takes the largest
 * alpha and beta, as Alpa does. Caller frees *out with alpa_mesh_destroy. */
ALPA_API int32_t alpa_mesh_create_abstract(alpa_mesh** out, int32_t ndim, const int64_t* shape,
                                           const double* alpha, const double* beta,
                                           alpa_error** err);
/** Frees a mesh; NULL is allowed. */
ALPA_API void alpa_mesh_destroy(alpa_mesh* mesh);
/** Number of dimensions (0 for NULL) and the size of one (-1 when out of range or NULL). */
ALPA_API int32_t alpa_mesh_ndim(const alpa_mesh* mesh);
/** Devices along dimension `dim`; -1 when out of range or NULL. */
ALPA_API int64_t alpa_mesh_dim_size(const alpa_mesh* mesh, int32_t dim);
/** Alpha / beta of a dimension or of ALPA_MESH_DIM_FLATTENED; NaN when out of range or NULL. */
ALPA_API double alpa_mesh_alpha(const alpa_mesh* mesh, int32_t dim);
/** Beta (seconds per byte) of a dimension or of ALPA_MESH_DIM_FLATTENED; NaN when out of range
 * or NULL. */
ALPA_API double alpa_mesh_beta(const alpa_mesh* mesh, int32_t dim);

/* ---- Auto-sharding ------------------------------------------------------------------------- */
/**
 * Alpa's intra-op pass: one sharding strategy per operator of a finalized graph on one logical
 * mesh, chosen by the sharding solver to minimize compute + communication + resharding cost
 * (docs/auto-sharding.md). Lifecycle:
 *
 *   int64_t shape[2] = {4, 1};
 *   alpa_graph* g;  alpa_model_build_graph(&g, "mlp:layers=6,batch=256,hidden=32", &err);
 *   alpa_mesh* m;   alpa_mesh_create_abstract(&m, 2, shape, NULL, NULL, &err);
 *   alpa_solve_options* o;  alpa_solve_options_create(&o, &err);
 *   alpa_solve_options_set_int(o, ALPA_OPT_COST_MODEL, ALPA_COST_MODE_ALPA, &err);
 *   alpa_sharding_plan* plan;  alpa_graph_auto_shard(&plan, g, m, NULL, o, &err);
 *   alpa_sharding_plan_status(plan);  alpa_sharding_plan_objective(plan);
 *   int64_t counts[4];  alpa_sharding_plan_collective_counts(plan, 1, counts, 4);
 *   alpa_sharding_plan_to_json(&buffer, plan, &err);  alpa_buffer_free(buffer);
 *   alpa_sharding_plan_destroy(plan); alpa_solve_options_destroy(o); alpa_mesh_destroy(m);
 *   alpa_graph_destroy(g);
 *
 * A plan is immutable and may be shared between threads; it keeps its own copy of the graph,
 * so the graph, mesh, cluster and options may be destroyed right after the call.
 */

/** Which cost of alpa_sharding_plan_cost (pinned values); the three add up to the objective. */
#define ALPA_PLAN_COST_COMPUTE 0       /**< operators' compute (roofline, or Alpa's penalties) */
#define ALPA_PLAN_COST_COMMUNICATION 1 /**< collectives inside operators' strategies */
#define ALPA_PLAN_COST_RESHARDING 2    /**< collectives between operators (layout changes) */

/** Flags of alpa_collective (bits). */
#define ALPA_COLLECTIVE_FLAG_INSIDE_OP 1 /**< part of an operator's strategy, not a resharding */
#define ALPA_COLLECTIVE_FLAG_GRADIENT_SYNC 2 /**< moves a gradient into the update (combinable) */

/** One collective the plan inserts (version 1). */
typedef struct alpa_collective {
  size_t struct_size; /**< bytes of this element the library wrote */
  int32_t version;    /**< 1 */
  int32_t kind;       /**< ALPA_COLLECTIVE_ALL_GATHER .. ALPA_COLLECTIVE_ALL_TO_ALL */
  uint32_t mesh_dims; /**< bit k set: the collective runs over mesh dimension k */
  uint32_t flags;     /**< ALPA_COLLECTIVE_FLAG_* */
  double bytes;       /**< the cost model's b: the full tensor (see alpa_mesh_collective_cost) */
  double cost;        /**< in the plan's cost units (seconds with the real cost model) */
  int32_t tensor;     /**< the op whose result it moves */
  int32_t consumer;   /**< the op that needs it (== tensor for a collective inside an op; -1 when
                       * it lays the tensor out once for all its readers, which reshard further
                       * from there if they must) */
  int32_t operand;    /**< which operand of consumer it feeds; -1 inside an op or for all readers */
  int32_t reserved;   /**< 0 */
} alpa_collective;

typedef struct alpa_sharding_plan alpa_sharding_plan;

/** Auto-shards a finalized graph on a logical mesh. cluster supplies the device for compute
 * times and may be NULL only with ALPA_OPT_COST_MODEL = ALPA_COST_MODE_ALPA; options may be NULL
 * (defaults: real cost model, ZeRO off, no memory budget, no time limit). The options' time
 * limit, threads, cancel token and progress callback (on the calling thread; a non-zero return
 * cancels) apply to the solve. ALPA_OK with a plan whose status is OPTIMAL, FEASIBLE (time
 * limit) or CANCELLED (after a first assignment). No answer is an error and leaves *out NULL:
 * ALPA_ERR_INFEASIBLE (no plan meets the memory budget; the message gives the smallest peak
 * found without it), ALPA_ERR_TIMEOUT, ALPA_ERR_CANCELLED. Errors: ALPA_ERR_INVALID_ARGUMENT for a
 * NULL out, a NULL or unfinalized graph, a NULL mesh, a NULL cluster with the real cost model, an
 * option that does not fit the mesh (batch_mesh_dim >= its rank); ALPA_ERR_INVALID_GRAPH for a
 * graph the pass cannot shard (the message names the op). Inputs are copied. Caller frees *out with
 * alpa_sharding_plan_destroy. Thread-safe for distinct options objects (or a shared one that no
 * thread changes meanwhile). */
ALPA_API int32_t alpa_graph_auto_shard(alpa_sharding_plan** out, const alpa_graph* graph,
                                       const alpa_mesh* mesh, const alpa_cluster* cluster,
                                       const alpa_solve_options* options, alpa_error** err);
/** Frees a plan; NULL is allowed. */
ALPA_API void alpa_sharding_plan_destroy(alpa_sharding_plan* plan);

/** ALPA_SOLVE_OPTIMAL, _FEASIBLE or _CANCELLED; 0 for NULL. */
ALPA_API int32_t alpa_sharding_plan_status(const alpa_sharding_plan* plan);
/** Objective (compute + communication + resharding) and the solver's best proven lower bound
 * (-inf if none), in the plan's cost units; NaN for NULL. */
ALPA_API double alpa_sharding_plan_objective(const alpa_sharding_plan* plan);
/** The solver's best proven lower bound (-inf if none); NaN for NULL. */
ALPA_API double alpa_sharding_plan_lower_bound(const alpa_sharding_plan* plan);
/** One part of the objective: which = ALPA_PLAN_COST_*; NaN for NULL or an unknown `which`. */
ALPA_API double alpa_sharding_plan_cost(const alpa_sharding_plan* plan, int32_t which);
/** Peak bytes live on one device over the plan's schedule; 0 for NULL. */
ALPA_API int64_t alpa_sharding_plan_peak_memory_bytes(const alpa_sharding_plan* plan);
/** Why the solve stopped short of proving optimality (time limit, cancellation), "" otherwise.
 * Valid while the plan lives. */
ALPA_API const char* alpa_sharding_plan_message(const alpa_sharding_plan* plan);

/** Count-then-fill over the collective counts by kind, indexed by ALPA_COLLECTIVE_*:
 * out[ALPA_COLLECTIVE_ALL_GATHER], out[ALPA_COLLECTIVE_ALL_REDUCE],
 * out[ALPA_COLLECTIVE_REDUCE_SCATTER], out[ALPA_COLLECTIVE_ALL_TO_ALL]. Returns the number of
 * kinds counted (4 in this version; later versions may append kinds). combined != 0: gradient
 * synchronizations of one kind over the same mesh dims count once (one fused bucket, as a
 * runtime issues them); combined == 0: every tensor's collective counts. */
ALPA_API int64_t alpa_sharding_plan_collective_counts(const alpa_sharding_plan* plan,
                                                      int32_t combined, int64_t* out,
                                                      int64_t capacity);
/** Count-then-fill: the strategy index each op chose (one entry per graph op, in op order; -1 for
 * free ops (constants and what they feed alone) and broadcasts fused into their consumers). */
ALPA_API int64_t alpa_sharding_plan_op_strategies(const alpa_sharding_plan* plan, int32_t* out,
                                                  int64_t capacity);
/** Count-then-fill over the collectives to insert, in execution order. out[capacity] holds
 * elements of element_size bytes each (pass sizeof(alpa_collective)); the library writes the
 * first min(element_size, its own sizeof(alpa_collective)) bytes of each, struct_size set to
 * that number, so programs built against an older or newer header both work. Returns the
 * number of collectives. */
ALPA_API int64_t alpa_sharding_plan_collectives(const alpa_sharding_plan* plan,
                                                alpa_collective* out, int64_t capacity,
                                                size_t element_size);
/** The plan as one JSON object (docs/auto-sharding.md): status, message, objective and its split,
 * lower_bound, peak_memory_bytes, collectives (counts by kind, combined and per tensor, and the
 * ordered list), tensors (name, role, spec of parameters, optimizer state and inputs), ops
 * (name, kind, strategy), stats (sharding-problem size before and after reductions). Caller
 * frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_sharding_plan_to_json(alpa_buffer** out, const alpa_sharding_plan* plan,
                                            alpa_error** err);

/* ---- Pipeline planning --------------------------------------------------------------------- */
/**
 * Alpa's two-level search (docs/planner.md): layers clustered from the graph's layer markers,
 * every distinct layer auto-sharded on every logical mesh of every submesh shape, stage
 * candidates composed from them, and the stage DP choosing stages, submeshes and logical meshes
 * that minimise the iteration time of a 1F1B pipeline within the device memory. Lifecycle:
 *
 *   alpa_cluster* c;  alpa_cluster_create_preset(&c, "p3.16xlarge", 2, &err);
 *   alpa_plan* plan;  alpa_model_plan(&plan, "gpt-2.6b", c, NULL, &err);
 *   alpa_plan_iteration_seconds(plan), alpa_plan_stage_count(plan), alpa_plan_stage(...), ...
 *   alpa_plan_to_json(&buffer, plan, 0, &err);
 *   alpa_plan_destroy(plan); alpa_cluster_destroy(c);
 *
 * A plan is immutable and may be shared between threads. It keeps its own copy of the planned
 * graph (one microbatch; alpa_plan_copy_graph), whose op ids the per-op accessors use. Setting
 * an ALPA_OPT_* key on plan options (or an ALPA_PLAN_OPT_* key on solve options) is
 * ALPA_ERR_INVALID_ARGUMENT naming the key and its family.
 */
typedef struct alpa_plan_options alpa_plan_options;

/** Planner option keys (pinned values). */
#define ALPA_PLAN_OPT_NUM_LAYERS 300          /**< int >= 0, default 0: the graph's, <= 16..128 */
#define ALPA_PLAN_OPT_MICROBATCHES 301        /**< int >= 0, default 0: searched (divisors) */
#define ALPA_PLAN_OPT_MAX_MICROBATCHES 302    /**< int >= 1, default 1024: the search's largest */
#define ALPA_PLAN_OPT_THREADS 303             /**< int 0..4096, default 0: all hardware threads */
#define ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT 304 /**< double > 0 seconds per intra-op solve, 0.5 */
#define ALPA_PLAN_OPT_INTRA_OP_GAP 305        /**< double >= 0, default 0.01 (relative) */
#define ALPA_PLAN_OPT_MEMORY_LEVELS 306       /**< int >= 0, default 3 (docs/planner.md) */
/** int >= 0, default 0: the cluster's device memory */
#define ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES 307
#define ALPA_PLAN_OPT_CLUSTERING_DELTA 308 /**< double >= 0, default 0.5: FLOPs balance slack */
#define ALPA_PLAN_OPT_REMAT 309            /**< ALPA_REMAT_*, default ALPA_REMAT_SEARCH */
#define ALPA_PLAN_OPT_INTRA_OP_EXACT 310   /**< 0/1, default 0: local search only; 1: GLPK proves */
/** double seconds for the whole call, default 0 (0 or inf: none). When it expires no intra-op
 * solve starts (a running one ends at it), microbatch counts not yet started are skipped and the
 * stage DP runs on the logical meshes solved so far: the best plan so far is returned, or
 * ALPA_ERR_TIMEOUT when there is none. alpa_model_plan and alpa_graph_plan; the baseline search
 * does not use it. */
#define ALPA_PLAN_OPT_TIME_LIMIT_SECONDS 311
/* Work limits, checked before the work starts (0: none). A call beyond one fails with
 * ALPA_ERR_INVALID_ARGUMENT, its message naming the limit and the option that raises it. */
#define ALPA_PLAN_OPT_MAX_HOSTS 312     /**< int >= 0, default 1024: the cluster's hosts */
#define ALPA_PLAN_OPT_MAX_DEVICES 313   /**< int >= 0, default 16384: the cluster's devices */
#define ALPA_PLAN_OPT_MAX_GRAPH_OPS 314 /**< int >= 0, default 1000000: microbatch graph ops */
#define ALPA_PLAN_OPT_MAX_LAYERS 315    /**< int >= 0, default 4096: the model's layers */
#define ALPA_PLAN_OPT_MAX_INTRA_OP_SOLVES 316 /**< int >= 0, default 100000: estimated solves */
/* Pins: what the caller knows about the plan, each pruning the search (docs/planner.md). */
/** int >= 0, default 0 (searched): exactly this many pipeline stages (at most the layer groups
 * and the cluster's devices; ALPA_ERR_INVALID_ARGUMENT otherwise) */
#define ALPA_PLAN_OPT_PIPELINE_STAGES 317
/** int >= 0, default 0 (no limit): a stage's tensor-parallel degree at most this; the batch is
 * then split over the logical mesh's first dim */
#define ALPA_PLAN_OPT_MAX_TENSOR_PARALLEL 318
/** 0/1, default 0: 1 keeps tensor parallelism inside a host (on a stage of several hosts the
 * batch is split over the mesh dim that spans them) */
#define ALPA_PLAN_OPT_TENSOR_PARALLEL_INSIDE_HOST 319
/** int >= -1, default -1: alpa_graph_plan's graph is one microbatch (B of them make an
 * iteration). d >= 0: the graph holds the global batch in dim d of its input parameters (role
 * ALPA_ROLE_INPUT), and each microbatch runs it rebatched to batch / B: B is searched (powers of
 * two dividing the batch, as for alpa_model_plan) or ALPA_PLAN_OPT_MICROBATCHES, which must divide
 * the batch. The graph's loss should be a mean over its batch, as the zoo writes it (the mean's
 * divisor becomes the microbatch's; docs/graph-format.md, "Batch"). A graph whose batch cannot be
 * followed through its ops is ALPA_ERR_INVALID_GRAPH naming the op. */
#define ALPA_PLAN_OPT_GRAPH_BATCH_DIM 320
/** double >= 0, default 0.05: a plan whose tensor parallelism crosses hosts must be predicted this
 * fraction faster than the best plan that keeps it inside hosts (0: the faster prediction wins;
 * infinity: inside hosts whenever such a plan fits). Unlike
 * ALPA_PLAN_OPT_TENSOR_PARALLEL_INSIDE_HOST it prunes nothing: the search without such stages runs
 * after the full one */
#define ALPA_PLAN_OPT_TENSOR_PARALLEL_ACROSS_HOSTS_MARGIN 321
/** 0/1, default 1: ZeRO-2 (gradients reduce-scattered every microbatch and accumulated as shards)
 * is a stage option where it lets a stage fit in fewer bytes (docs/planner.md); 0: ZeRO-1 at
 * most */
#define ALPA_PLAN_OPT_ZERO2 322
/** 0/1, default 1: ZeRO-3 (a weight held as shards over the data-parallel devices and
 * all-gathered where the forward and backward read it, every microbatch) is a per-weight choice
 * of the intra-op solves, taken where a memory level's budget makes the gathers pay (stage info's
 * zero is then 3; docs/planner.md); 0: every weight is read in the layout it is stored in. The
 * Megatron baseline grid tries ZeRO-3 unless this is 0 */
#define ALPA_PLAN_OPT_ZERO3 323
/** 0/1, default 0: the zero-bubble schedule ZB-H1 (ALPA_SCHEDULE_ZB_H1) is the schedule of a plan
 * where every stage fits its memory under it (each stage holds min(stages, microbatches)
 * microbatches, plus an activation's worth per weight gradient it keeps pending) and it is
 * predicted faster than 1F1B (docs/planner.md); 0: 1F1B */
#define ALPA_PLAN_OPT_ZERO_BUBBLE 324
/** 0/1, default 1: where the cluster's NICs sit next to some GPUs of a host only (a cluster file's
 * "nic_locality", docs/cluster-format.md), the stages sharing a host are reordered so that those
 * sending to or receiving from other hosts sit next to the NICs, where that is predicted faster;
 * 0: stages stay where they are packed. No effect on clusters without NIC locality */
#define ALPA_PLAN_OPT_NIC_PLACEMENT 325
/** 0/1, default 0: interleaved 1F1B (ALPA_SCHEDULE_INTERLEAVED_1F1B: each device group runs v
 * stages, v = 2..8, the bubble shrinking by v at the price of v times the transfers between
 * groups and more microbatches in flight) as the schedule of a plan, its 1F1B stages' submeshes
 * becoming the device groups, where every group fits its memory and the prediction is faster
 * (docs/planner.md); 0: a stage per submesh */
#define ALPA_PLAN_OPT_INTERLEAVE 326

#define ALPA_REMAT_SEARCH 0 /**< per stage: none, full, or selective where there is attention */
#define ALPA_REMAT_OFF 1
#define ALPA_REMAT_ON 2 /**< full: every piece's forward recomputed in the backward */
/** Selective: only the attention cores (the [batch, heads, seq, seq] scores, softmax and their
 * product with V) recomputed; the rest kept (Megatron-LM's selective recomputation). */
#define ALPA_REMAT_SELECTIVE 3

/** Defaults as listed above. Caller frees *out with alpa_plan_options_destroy. */
ALPA_API int32_t alpa_plan_options_create(alpa_plan_options** out, alpa_error** err);
/** Frees plan options; NULL is allowed. */
ALPA_API void alpa_plan_options_destroy(alpa_plan_options* options);
/** Sets one option; ALPA_ERR_INVALID_ARGUMENT for an unknown key, a key of the solve or shard
 * family ("alpa_plan_options: ALPA_OPT_THREADS (102, \"threads\") is a solve option; set it on
 * alpa_solve_options") or a value out of range ("plan option \"microbatches\": must be an
 * integer >= 0 (got -1)"), leaving the option unchanged. set_double accepts integral values for
 * integer keys; set_int accepts any key. */
ALPA_API int32_t alpa_plan_options_set_int(alpa_plan_options* options, int32_t key, int64_t value,
                                           alpa_error** err);
/** Sets one option from a double (see alpa_plan_options_set_int). */
ALPA_API int32_t alpa_plan_options_set_double(alpa_plan_options* options, int32_t key, double value,
                                              alpa_error** err);
/** By name: "num_layers", "microbatches", "max_microbatches", "threads",
 * "intra_op_time_limit_seconds", "intra_op_gap", "memory_levels", "device_memory_bytes",
 * "clustering_delta", "intra_op_exact" (0/1/true/false), "remat" ("search" / "off" / "on" /
 * "selective" or the number), "time_limit_seconds", "max_hosts", "max_devices", "max_graph_ops",
 * "max_layers", "max_intra_op_solves". Integer options take an integer in any strtod form ("16e9").
 * Errors as for set_int, and for an unknown name or text that is not a number. */
ALPA_API int32_t alpa_plan_options_set_by_name(alpa_plan_options* options, const char* name,
                                               const char* value, alpa_error** err);
/** Cancel token (may be NULL to remove); it must outlive every planning call using it. */
ALPA_API int32_t alpa_plan_options_set_cancel_token(alpa_plan_options* options,
                                                    alpa_cancel_token* token, alpa_error** err);

/** Progress of a planning call (version 2; version 1 ends at `total`: read the later fields
 * only when struct_size covers them). */
typedef struct alpa_plan_progress {
  size_t struct_size; /**< sizeof(alpa_plan_progress) of the library that filled it */
  int32_t version;    /**< 2 */
  int32_t reserved;   /**< 0 */
  double seconds;     /**< since the call started */
  /** "build", "cluster", "estimate" (the work of this microbatch count, before its solves),
   * "intra-op", "dp", "time limit" (the deadline ended the search; the best plan so far is
   * returned) (static storage) */
  const char* phase;
  int64_t microbatches; /**< the microbatch count being planned */
  int64_t done, total;  /**< intra-op solves finished / scheduled for it */
  /* Version 2: the time limit and the work estimate (zeros before the first "estimate"). */
  double time_limit_seconds;    /**< the call's time limit; 0: none */
  int64_t estimated_solves;     /**< level-0 intra-op solves over the counts to try */
  int64_t solves_per_count;     /**< piece types x logical meshes */
  int64_t max_solves_per_count; /**< with every memory level solved */
  int64_t piece_types;          /**< distinct layer pieces */
  int64_t logical_meshes;       /**< over all submesh shapes */
  int64_t microbatch_counts;    /**< counts the search tries (at most) */
  int64_t stage_candidates;     /**< per count, at most */
} alpa_plan_progress;
/** Runs on the calling thread only (intra-op solves run on worker threads too; the calling
 * thread reports the count of all finished ones as it finishes its own, and once at the end).
 * A non-zero return cancels the call (ALPA_ERR_CANCELLED). */
typedef int32_t (*alpa_plan_progress_fn)(void* user_data, const alpa_plan_progress* progress);
/** Progress callback (NULL to remove) and its user_data for the planning calls. */
ALPA_API int32_t alpa_plan_options_set_progress(alpa_plan_options* options,
                                                alpa_plan_progress_fn fn, void* user_data,
                                                alpa_error** err);

typedef struct alpa_plan alpa_plan;

/** Plans a model-zoo spec (alpa_model_build_graph's; its batch is the global batch the
 * microbatches split) on a cluster. options may be NULL (defaults). Errors:
 * ALPA_ERR_INVALID_ARGUMENT (NULL out / spec / cluster, a bad spec or option, microbatches that
 * do not divide the batch), ALPA_ERR_INFEASIBLE (no plan fits the device memory; the message
 * gives the smallest device memory that fits, when one does, or, when the weights, gradients
 * and optimizer state alone exceed the cluster's memory, the least memory per device and the
 * fewest devices they need), ALPA_ERR_CANCELLED. Caller frees *out with alpa_plan_destroy. */
ALPA_API int32_t alpa_model_plan(alpa_plan** out, const char* model_spec,
                                 const alpa_cluster* cluster, const alpa_plan_options* options,
                                 alpa_error** err);
/** Plans a finalized graph: by default one microbatch (B = ALPA_PLAN_OPT_MICROBATCHES, or 1 when
 * 0); with ALPA_PLAN_OPT_GRAPH_BATCH_DIM set, the global batch, split into searched or given
 * microbatches like a zoo model's. Its ops' layer markers (alpa_graph_add_ops) are the layers;
 * without them ops are clustered. Same errors, plus ALPA_ERR_INVALID_GRAPH. Caller frees *out
 * with alpa_plan_destroy. */
ALPA_API int32_t alpa_graph_plan(alpa_plan** out, const alpa_graph* graph,
                                 const alpa_cluster* cluster, const alpa_plan_options* options,
                                 alpa_error** err);
/** Frees a plan; NULL is allowed. */
ALPA_API void alpa_plan_destroy(alpa_plan* plan);

/** Scalars (NaN / 0 for NULL). The predicted iteration time: one microbatch through every stage
 * and transfer and back, then (microbatches - 1) steady-state periods of the 1F1B schedule with
 * the transfers between stages, plus the once-per-iteration overheads, which every stage runs on
 * its own devices after its own last backward (the latest end counts; docs/planner.md,
 * "Simulation"); for a ZB-H1 plan (alpa_plan_pipeline_schedule) the same model evaluated task by
 * task under ZB-H1. What the planner ranks plans by. */
ALPA_API double alpa_plan_iteration_seconds(const alpa_plan* plan);
/** The steady-state seconds per microbatch of that prediction (at least the largest latency). */
ALPA_API double alpa_plan_period_seconds(const alpa_plan* plan);
/** The stage DP's objective, without the transfers: sum over stages of (latency +
 * once-per-iteration overhead) + (microbatches - 1) * the largest stage latency. */
ALPA_API double alpa_plan_schedule_seconds(const alpa_plan* plan);
/** Seconds the planning call took; NaN for NULL. */
ALPA_API double alpa_plan_compile_seconds(const alpa_plan* plan);
/** Microbatches per iteration; 0 for NULL. */
ALPA_API int64_t alpa_plan_microbatches(const alpa_plan* plan);
/** The schedule the plan is made for: ALPA_SCHEDULE_1F1B, ALPA_SCHEDULE_ZB_H1 where
 * ALPA_PLAN_OPT_ZERO_BUBBLE let the planner choose it, or ALPA_SCHEDULE_INTERLEAVED_1F1B where
 * ALPA_PLAN_OPT_INTERLEAVE did (its prediction, in-flight counts and memory assume it; run it with
 * that executor schedule); -1 for NULL. */
ALPA_API int32_t alpa_plan_pipeline_schedule(const alpa_plan* plan);
/** Stages per device group: 1, or v >= 2 under ALPA_SCHEDULE_INTERLEAVED_1F1B (stage s then runs
 * on the devices of stage s % (stages / v): alpa_plan_stage_devices gives the same list); 0 for
 * NULL. */
ALPA_API int32_t alpa_plan_virtual_stages(const alpa_plan* plan);
/** The largest per-device memory over the stages; 0 for NULL. */
ALPA_API int64_t alpa_plan_peak_memory_bytes(const alpa_plan* plan);
/** Achieved TFLOP/s per device at the predicted iteration time; NaN for NULL. */
ALPA_API double alpa_plan_tflops_per_device(const alpa_plan* plan);
/** Number of pipeline stages; 0 for NULL. */
ALPA_API int32_t alpa_plan_stage_count(const alpa_plan* plan);
/** The planned microbatch graph (a finalized copy). Caller frees *out with alpa_graph_destroy. */
ALPA_API int32_t alpa_plan_copy_graph(alpa_graph** out, const alpa_plan* plan, alpa_error** err);

/** One pipeline stage (version 1). */
typedef struct alpa_stage_info {
  size_t struct_size;              /**< bytes the library wrote */
  int32_t version;                 /**< 1 */
  int32_t first_layer, last_layer; /**< layer groups, inclusive */
  int32_t reserved0;               /**< 0 */
  int64_t submesh_hosts, submesh_devices_per_host;
  int32_t logical_ndim;                   /**< 1 or 2 */
  int32_t reserved1;                      /**< 0 */
  int64_t logical_mesh[2];                /**< unused entries 1 */
  int64_t devices;                        /**< submesh_hosts * submesh_devices_per_host */
  int64_t data_parallel, tensor_parallel; /**< degrees; product = devices */
  int32_t zero;  /**< 1: optimizer state sharded over data-parallel devices; 2: gradients too;
                    3: weights too, gathered where read (ZeRO-3; whether its gradients are held
                    as shards as well: the plan JSON's shard_gradients) */
  int32_t remat; /**< 0 none, 1 forward recomputed, 2 attention cores */
  double latency_seconds;            /**< one microbatch, forward + backward */
  double iteration_overhead_seconds; /**< gradient synchronisation and update, once */
  int64_t memory_bytes;              /**< per device at its peak */
  int64_t in_flight;                 /**< microbatches of activations it holds (1F1B) */
} alpa_stage_info;
/** Fills *out (element_size = sizeof(alpa_stage_info); the library writes the first
 * min(element_size, its own size) bytes). ALPA_ERR_INVALID_ARGUMENT for NULLs, a stage out of
 * range or element_size below version 1's size. */
ALPA_API int32_t alpa_plan_stage(alpa_stage_info* out, size_t element_size, const alpa_plan* plan,
                                 int32_t stage, alpa_error** err);
/** Count-then-fill: the stage's physical device ids (host * devices_per_host + local index). */
ALPA_API int64_t alpa_plan_stage_devices(const alpa_plan* plan, int32_t stage, int64_t* out,
                                         int64_t capacity);
/** Count-then-fill: per op of the planned graph, the stage that computes it (-1 for ops of no
 * layer, such as a global step counter, which every stage that needs them computes). */
ALPA_API int64_t alpa_plan_op_stages(const alpa_plan* plan, int32_t* out, int64_t capacity);
/** Count-then-fill over the collectives a stage inserts, piece (layer) after piece, each in
 * execution order (element_size as for alpa_sharding_plan_collectives). tensor / consumer are op
 * ids of the planned graph: a tensor the stage receives from another stage (or a parameter it
 * shares) is named by the op that computes it there; consumer -1 as in alpa_collective. */
ALPA_API int64_t alpa_plan_stage_collectives(const alpa_plan* plan, int32_t stage,
                                             alpa_collective* out, int64_t capacity,
                                             size_t element_size);

/** A tensor one stage sends another each microbatch (version 1). */
typedef struct alpa_transfer {
  size_t struct_size;
  int32_t version; /**< 1 */
  int32_t from_stage, to_stage;
  int32_t tensor; /**< op id in the planned graph */
  int64_t bytes;  /**< the whole tensor */
  double seconds; /**< estimate: its slice moves' busiest link (bytes / bandwidth) + latency */
} alpa_transfer;
/** Count-then-fill over the cross-stage transfers (element_size = sizeof(alpa_transfer), as for
 * alpa_sharding_plan_collectives). */
ALPA_API int64_t alpa_plan_transfers(const alpa_plan* plan, alpa_transfer* out, int64_t capacity,
                                     size_t element_size);

/** The most tensor dims an alpa_slice_move describes. */
#define ALPA_SLICE_MOVE_MAX_RANK 8

/** One slice of a transfer's tensor that one device sends another (cross-mesh resharding,
 * docs/planner.md; version 1). */
typedef struct alpa_slice_move {
  size_t struct_size;
  int32_t version;    /**< 1 */
  int32_t reserved0;  /**< 0 */
  int64_t src_device; /**< physical id, a device of the transfer's from_stage */
  int64_t dst_device; /**< physical id, a device of the transfer's to_stage */
  int32_t rank;       /**< the tensor's dims, 0..ALPA_SLICE_MOVE_MAX_RANK */
  int32_t reserved1;  /**< 0 */
  int64_t offsets[ALPA_SLICE_MOVE_MAX_RANK]; /**< the box, in elements; entries past rank: 0 */
  int64_t sizes[ALPA_SLICE_MOVE_MAX_RANK];   /**< entries past rank: 1 */
  int64_t bytes;                             /**< product of sizes * element bytes */
} alpa_slice_move;
/** Count-then-fill over the slice moves of transfer `transfer` (0 .. alpa_plan_transfers - 1):
 * every device of to_stage receives its whole tile of the tensor (its layout on to_stage's
 * logical mesh), cut along the tiles of from_stage's layout, each element exactly once; a slice
 * that several from_stage devices hold (replication) is sent by one of them, chosen to balance
 * the bytes each sends. A partial-sum source is all-reduced on from_stage first (not included
 * here); a partial-sum destination is received by the devices at partial coordinate 0 only (the
 * others hold zeros). So the bytes of all moves sum to the transfer's bytes times the number of
 * to_stage devices holding each element (1 when the destination layout is not replicated).
 * Moves are listed by receiving device (logical order), then slice (row-major). element_size:
 * sizeof(alpa_slice_move); the library writes the first min(element_size, its own size) bytes
 * of each. Returns the count; besides the count-then-fill misuse, -ALPA_ERR_UNSUPPORTED (-6),
 * also when counting, when the tensor has more than ALPA_SLICE_MOVE_MAX_RANK dims (the plan JSON
 * at detail 1 lists those moves). */
ALPA_API int64_t alpa_plan_transfer_moves(const alpa_plan* plan, int64_t transfer,
                                          alpa_slice_move* out, int64_t capacity,
                                          size_t element_size);
/** Count-then-fill over a stage's schedule (the plan's: alpa_plan_pipeline_schedule): out[2*i] =
 * 0 forward / 1 backward (under ZB-H1 the input gradient alone) / 2 weight gradient (ZB-H1 only),
 * out[2*i+1] = microbatch (0..B-1). Returns the number of ints (2 * tasks: 1F1B and interleaved
 * 1F1B 4 * microbatches, each microbatch once forward and later once backward; ZB-H1 6 *
 * microbatches; under interleaved 1F1B the stage's own tasks, in its device group's order);
 * -ALPA_ERR_OUT_OF_MEMORY when the schedule cannot be built. */
ALPA_API int64_t alpa_plan_stage_schedule(const alpa_plan* plan, int32_t stage, int32_t* out,
                                          int64_t capacity);
/** The plan as one JSON object (docs/planner.md). detail 0: the summary (stages, transfers with
 * their move counts, compile time split); detail 1: also each stage's per-op strategies and
 * collectives and each transfer's slice moves; detail 2: the executable plan, detail 1 plus the
 * planned graph, the clustering and every piece's subgraph boundary and auto-sharding, which
 * alpa_plan_read_json reads back (what `alpa plan -o` writes); other values:
 * ALPA_ERR_INVALID_ARGUMENT. A plan of alpa_model_plan_manual / alpa_model_plan_baseline adds a
 * "baseline" object (its configuration; for a search the grid counts, and at detail >= 1 the grid
 * table). Caller frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_plan_to_json(alpa_buffer** out, const alpa_plan* plan, int32_t detail,
                                   alpa_error** err);

/** Reads an executable plan JSON (alpa_plan_to_json at detail 2, `alpa plan -o`; docs/planner.md)
 * back into a plan: json[length] (UTF-8, need not be NUL-terminated). The plan's cluster and
 * model name come from the JSON; its graph is validated and every piece is cut from it again and
 * checked against the stored one. The result is an ordinary plan (every accessor,
 * alpa_plan_to_json, alpa_plan_simulate; its "baseline" object, if any, is not read back).
 * ALPA_ERR_PARSE: not JSON, a missing field or a wrong type, an unknown "format" or "version", a
 * plan written at detail 0 or 1; ALPA_ERR_INVALID_GRAPH: a graph that does not validate;
 * ALPA_ERR_INVALID_ARGUMENT: NULL out (or NULL json with length > 0), or content that does not fit
 * together (an op id out of range, a spec invalid for its tensor on the stage's mesh, a device
 * in two stages, ...). Messages name the element by its JSON path ("plan JSON:
 * stages[1].devices[0]: ..."). Caller frees *out with alpa_plan_destroy. */
ALPA_API int32_t alpa_plan_read_json(alpa_plan** out, const char* json, size_t length,
                                     alpa_error** err);
/** The same from the file at `path`; ALPA_ERR_IO when it cannot be read. Messages start with the
 * path. Caller frees *out with alpa_plan_destroy. */
ALPA_API int32_t alpa_plan_read_file(alpa_plan** out, const char* path, alpa_error** err);

/* ---- Executor: a plan's device programs run on CPU devices or GPUs (docs/executor.md) ----
 *
 * The plan is lowered to one program per device (its SPMD pieces, the planned collectives, the
 * cross-stage slice moves, the pipeline schedule, gradient accumulation and the update) and each
 * step runs every device as a thread of this process, with real collectives between them.
 * Parameters and optimizer state live on the devices from step to step. They start from
 * deterministic synthetic values (config.seed), and so does each step's data unless the caller
 * sets it; both can be set by name, as whole (unsharded) tensors in row-major order. With
 * config.check, the one-device interpreter steps along on the same data and every step is
 * compared with it.
 *
 *   alpa_executor_config config = ALPA_EXECUTOR_CONFIG_INIT;
 *   config.check = 1;
 *   alpa_executor_create(&ex, plan, &config, &err);
 *   alpa_step_result r = ALPA_STEP_RESULT_INIT;
 *   for (int i = 0; i < 3; ++i) alpa_executor_run_step(ex, &r, sizeof(r), &err);
 *   n = alpa_executor_get_parameter(ex, "fc0.w", NULL, 0, &err);  // then fill
 *   alpa_executor_destroy(ex);
 */
/** Pipeline schedules (pinned values; also the simulator's, alpa_experimental.h). */
#define ALPA_SCHEDULE_GPIPE 0 /**< every forward, then every backward */
#define ALPA_SCHEDULE_1F1B 1  /**< one forward one backward, as the planner assumes by default */
/** Zero-bubble ZB-H1: the backward split into the input gradient and the weight gradient, stage s
 * keeping its s latest weight gradients for later (fills the drain; every stage holds
 * min(stages, microbatches) microbatches); a plan made with ALPA_PLAN_OPT_ZERO_BUBBLE. */
#define ALPA_SCHEDULE_ZB_H1 2
/** Interleaved 1F1B (Megatron-LM's virtual pipeline stages): each device group runs several
 * stages (alpa_plan_virtual_stages), stage s on the devices of stage s % groups, its forwards and
 * backwards interleaved over them so that the bubble shrinks by that factor; only for a plan
 * made for it (ALPA_PLAN_OPT_INTERLEAVE, or `alpa baseline --virtual-stages`), and such a plan
 * runs only under it. */
#define ALPA_SCHEDULE_INTERLEAVED_1F1B 3

/** How the executor's devices run: as threads of this process, or one per MPI process (device =
 * the process's rank; every process of the job creates the executor with the same plan and
 * config and makes the same calls; after each step rank 0 gathers the results and every process
 * gets the same alpa_step_result; alpa_executor_get_parameter answers on rank 0). A failing
 * process ends every process of the job with its message. Destroying the executor finalizes MPI
 * for the process (one MPI executor per process). ALPA_ERR_UNSUPPORTED when the library was
 * built without MPI.
 * ALPA_DEVICES_NCCL: one device per process as with MPI, the processes talking over NCCL, each
 * on a GPU of its own (its rank modulo the GPUs it sees; NCCL allows no two ranks of one
 * communicator on one GPU). They meet through ALPA_RENDEZVOUS ("file:/fresh/path" or
 * "tcp:host:port", with ALPA_RANK and ALPA_WORLD_SIZE in each process's environment) or, unset
 * under mpirun, through MPI; a failing process ends the others with its message. The executor
 * splits off a communicator for each group its collectives run over. ALPA_ERR_UNSUPPORTED when
 * the library was built without CUDA or NCCL or a GPU cannot be used, with the reason. */
#define ALPA_DEVICES_THREADS 0
#define ALPA_DEVICES_MPI 1
#define ALPA_DEVICES_NCCL 2

/** What runs the devices' programs: the CPU runtime (exact in double, rounded per dtype), or the
 * CUDA backend (each device's program on a GPU: device d on GPU d modulo the GPUs the process
 * sees, so that the devices of a plan larger than the machine share its GPUs, each with its own
 * stream; docs/executor.md). ALPA_ERR_UNSUPPORTED from alpa_executor_create for the CUDA backend
 * when the library was built without CUDA (ALPA_WITH_CUDA=OFF) or no GPU can be used, with the
 * reason. */
#define ALPA_BACKEND_CPU 0
#define ALPA_BACKEND_CUDA 1

typedef struct alpa_executor_config {
  size_t struct_size; /**< sizeof(alpa_executor_config) */
  int32_t version;    /**< 2 (1: ends at atol; the later fields then take their defaults) */
  /** ALPA_SCHEDULE_1F1B (default), ALPA_SCHEDULE_GPIPE, ALPA_SCHEDULE_ZB_H1, or
   * ALPA_SCHEDULE_INTERLEAVED_1F1B (only, and required, for a plan with virtual stages) */
  int32_t schedule;
  uint64_t seed;     /**< synthetic parameters and data; default 0 */
  int32_t check;     /**< 1: compare every step with the one-device interpreter */
  int32_t devices;   /**< ALPA_DEVICES_THREADS (default), ALPA_DEVICES_MPI or ALPA_DEVICES_NCCL */
  double rtol, atol; /**< the check's tolerance per element: |a - b| <= atol + rtol |b|; for f16
                          and bf16 tensors at least torch.testing's (1e-3 / 1e-5, 1.6e-2 / 1e-5) */
  /* Version 2. */
  int32_t backend;    /**< ALPA_BACKEND_CPU (default) or ALPA_BACKEND_CUDA */
  int32_t allow_tf32; /**< 1: f32 contractions on the GPU's tensor cores in TF32 (faster, 10-bit
                           mantissa: loosen the check's tolerance); default 0 */
} alpa_executor_config;
#define ALPA_EXECUTOR_CONFIG_INIT                                                                \
  {                                                                                              \
    sizeof(alpa_executor_config), 2, ALPA_SCHEDULE_1F1B, 0, 0, ALPA_DEVICES_THREADS, 1e-5, 4e-5, \
        ALPA_BACKEND_CPU, 0                                                                      \
  }
/** Writes the defaults above into the first min(size, sizeof(alpa_executor_config)) bytes of
 * *config (a version-1 caller's smaller struct gets version 1's fields, with version 1).
 * ALPA_ERR_INVALID_ARGUMENT for NULL or a size below version 1's. */
ALPA_API int32_t alpa_executor_config_init(alpa_executor_config* config, size_t size,
                                           alpa_error** err);

typedef struct alpa_executor alpa_executor;

/** Lowers `plan` and prepares its devices. config may be NULL (defaults). The one-device graph
 * of the whole batch (for cutting the data into microbatches and for the check) is rebuilt from
 * the plan's model spec; a plan of a graph (alpa_graph_plan) runs with one microbatch only.
 * Errors: ALPA_ERR_INVALID_ARGUMENT (NULLs, a bad config field naming it, a graph plan with
 * several microbatches), ALPA_ERR_UNSUPPORTED (what the executor cannot run yet, naming the op),
 * ALPA_ERR_INTERNAL (a plan whose layouts do not fit together, naming the op). Caller frees
 * *out with alpa_executor_destroy. */
ALPA_API int32_t alpa_executor_create(alpa_executor** out, const alpa_plan* plan,
                                      const alpa_executor_config* config, alpa_error** err);
ALPA_API void alpa_executor_destroy(alpa_executor* executor);
/** The devices the programs run on (the plan's largest device id + 1); -1 for NULL. */
ALPA_API int32_t alpa_executor_devices(const alpa_executor* executor);
/** This process's rank (ALPA_DEVICES_MPI or ALPA_DEVICES_NCCL; 0 with thread devices); -1 for
 * NULL. */
ALPA_API int32_t alpa_executor_rank(const alpa_executor* executor);
/** The GPU device `device`'s program runs on (config.backend ALPA_BACKEND_CUDA); -1 on the CPU
 * backend, for a device that runs nothing or is another process's (ALPA_DEVICES_MPI or _NCCL), for
 * a device out of range and for NULL. */
ALPA_API int32_t alpa_executor_gpu(const alpa_executor* executor, int32_t device);
/** Device `device`'s program, one instruction per line (what `alpa compile` prints); device -1:
 * every device's. Caller frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_executor_program_text(alpa_buffer** out, const alpa_executor* executor,
                                            int32_t device, alpa_error** err);
/** Replaces a parameter or optimizer state (by its op name, e.g. "fc0.w", "fc0.w.m") with
 * `count` values (the whole tensor, row-major; rounded to its dtype). ALPA_ERR_INVALID_ARGUMENT
 * naming the tensor for an unknown name or a count that is not its size. */
ALPA_API int32_t alpa_executor_set_parameter(alpa_executor* executor, const char* name,
                                             const double* values, int64_t count, alpa_error** err);
/** The next step's data for input `name` (the whole batch, row-major); inputs not set are
 * synthetic. Same errors as alpa_executor_set_parameter. */
ALPA_API int32_t alpa_executor_set_input(alpa_executor* executor, const char* name,
                                         const double* values, int64_t count, alpa_error** err);

typedef struct alpa_step_result {
  size_t struct_size;     /**< bytes the library wrote */
  int32_t version;        /**< 1 */
  int32_t passed;         /**< 1 unless the check found a difference above tolerance */
  int64_t step;           /**< 0, 1, ... */
  double loss;            /**< mean over the microbatches */
  double seconds;         /**< wall time of the slowest device */
  double reference_loss;  /**< with the check; else NaN */
  double loss_error;      /**< with the check: max |a - b| / (atol + rtol |b|); else NaN */
  double parameter_error; /**< the same over every parameter and optimizer state */
  int64_t peak_bytes;     /**< the largest measured peak over the devices */
  int64_t planned_bytes;  /**< the planner's memory for that device */
} alpa_step_result;
#define ALPA_STEP_RESULT_INIT \
  { sizeof(alpa_step_result), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
/** Runs one training step on every device. *out (element_size = sizeof(alpa_step_result); the
 * library writes the first min(element_size, its own size) bytes) may be NULL. A failing device
 * ends the step on every device with its message (the executor is then unusable:
 * ALPA_ERR_INTERNAL on later steps). A check above tolerance is not an error (passed = 0). */
ALPA_API int32_t alpa_executor_run_step(alpa_executor* executor, alpa_step_result* out,
                                        size_t element_size, alpa_error** err);
/** Count-then-fill: a parameter's or optimizer state's current values (whole tensor,
 * row-major), assembled from the devices. Negative status (-ALPA_ERR_INVALID_ARGUMENT) for an
 * unknown name; err gets the message. */
ALPA_API int64_t alpa_executor_get_parameter(const alpa_executor* executor, const char* name,
                                             double* out, int64_t capacity, alpa_error** err);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ALPA_H_ */
