/*
 * alpa.h: the stable C ABI of libalpa, an automatic parallelization planner for deep learning.
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
 *   alpa_solution* s;  alpa_solve(&s, p, o, &err);       status, assignment, objective, bound
 *   alpa_solution_destroy(s); alpa_solve_options_destroy(o); alpa_problem_destroy(p);
 *
 * Or in one call over serialized bytes: alpa_solve_json (JSON request in, JSON result out).
 *
 * Conventions (see docs/error-handling.md and docs/threading.md):
 *   - Fallible functions return an int32_t status (ALPA_OK or an ALPA_ERR_* code) and take an
 *     optional trailing `alpa_error** err`: when non-NULL and the call fails, *err receives a
 *     message naming the offending element; the caller frees it with alpa_error_free. On
 *     success *err is left untouched (NULL if the caller set it so).
 *   - Out-params come first. Every create has a destroy that accepts NULL.
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

/* The library's version at run time, e.g. "0.1.0". Static storage; never NULL. */
ALPA_API const char* alpa_version_string(void);
/* ALPA_VERSION_NUMBER of the library actually loaded. */
ALPA_API int32_t alpa_version_number(void);

/* ---- Status codes (values are pinned and never reused) ------------------------------------- */
#define ALPA_OK 0
#define ALPA_ERR_INVALID_ARGUMENT 1 /* a NULL pointer, a bad length, an unknown option */
#define ALPA_ERR_INVALID_PROBLEM 2  /* inconsistent problem data; the message names the element */
#define ALPA_ERR_INFEASIBLE 3       /* no assignment meets the constraints */
#define ALPA_ERR_TIMEOUT 4
#define ALPA_ERR_CANCELLED 5
#define ALPA_ERR_UNSUPPORTED 6
#define ALPA_ERR_OUT_OF_MEMORY 7
#define ALPA_ERR_INTERNAL 8
#define ALPA_ERR_IO 9     /* a file could not be read or written */
#define ALPA_ERR_PARSE 10 /* bytes are not valid JSON or not the expected format */
#define ALPA_ERR_INVALID_GRAPH 11 /* inconsistent operator graph; the message names the op */

/* A short English name for a status code ("ok", "invalid argument", ...). Static storage. */
ALPA_API const char* alpa_status_string(int32_t status);

/* ---- Errors -------------------------------------------------------------------------------- */
typedef struct alpa_error alpa_error;
/* The status code of the failure. err may not be NULL. */
ALPA_API int32_t alpa_error_code(const alpa_error* err);
/* The UTF-8 message, valid until alpa_error_free. err may not be NULL. */
ALPA_API const char* alpa_error_message(const alpa_error* err);
/* Frees an error; NULL is allowed. */
ALPA_API void alpa_error_free(alpa_error* err);

/* ---- Buffers (serialized output) ----------------------------------------------------------- */
typedef struct alpa_buffer alpa_buffer;
/* The bytes, valid until alpa_buffer_free; NUL-terminated for convenience (not counted). */
ALPA_API const char* alpa_buffer_data(const alpa_buffer* buffer);
ALPA_API size_t alpa_buffer_size(const alpa_buffer* buffer);
ALPA_API void alpa_buffer_free(alpa_buffer* buffer);

/* ---- Cancellation -------------------------------------------------------------------------- */
typedef struct alpa_cancel_token alpa_cancel_token;
ALPA_API int32_t alpa_cancel_token_create(alpa_cancel_token** out, alpa_error** err);
/* Requests cancellation; safe to call from any thread, any number of times. */
ALPA_API void alpa_cancel_token_trigger(alpa_cancel_token* token);
ALPA_API void alpa_cancel_token_destroy(alpa_cancel_token* token);

/* ---- Sharding problems --------------------------------------------------------------------- */
#define ALPA_FORBIDDEN_COST 1e18

/* File / buffer formats. */
#define ALPA_FORMAT_AUTO 0   /* Alpa JSON if the object has "format": "alpa", else IOPDDL */
#define ALPA_FORMAT_IOPDDL 1 /* the IOPDDL contest JSON, plain or gzip */
#define ALPA_FORMAT_ALPA 2   /* Alpa's serialized solver arrays as JSON */

typedef struct alpa_problem alpa_problem;

/* An empty problem in the building state. Caller frees with alpa_problem_destroy. */
ALPA_API int32_t alpa_problem_create(alpa_problem** out, alpa_error** err);
ALPA_API void alpa_problem_destroy(alpa_problem* problem);

/* Appends `count` nodes. strategy_counts[count] gives each node's number of strategies k_i;
 * costs[sum k_i] their costs (compute + communication) node after node; usages[sum k_i] their
 * memory bytes, or NULL for all zero. New nodes are free (follow nobody) and never live until
 * intervals or live sets say otherwise. Node ids continue from the current node count. */
ALPA_API int32_t alpa_problem_add_nodes(alpa_problem* problem, int64_t count,
                                        const int32_t* strategy_counts, const double* costs,
                                        const int64_t* usages, alpa_error** err);

/* Sets the liveness of the first `count` nodes as half-open intervals: lo_hi[2*count] holds
 * lo, hi of node 0, then node 1, ...; usage counts at times lo..hi-1. */
ALPA_API int32_t alpa_problem_set_intervals(alpa_problem* problem, int64_t count,
                                            const int64_t* lo_hi, alpa_error** err);

/* Sets liveness as explicit live sets (replacing intervals): step_sizes[num_steps] gives the
 * number of live nodes at each time step; node_ids[sum step_sizes] lists them step after step. */
ALPA_API int32_t alpa_problem_set_live_sets(alpa_problem* problem, int64_t num_steps,
                                            const int64_t* step_sizes, const int32_t* node_ids,
                                            alpa_error** err);

/* Appends `count` edges. endpoints[2*count] holds (u, v) pairs; costs[sum k_u*k_v] each edge's
 * matrix row-major (rows = u's strategies). Several edges on one pair add up. */
ALPA_API int32_t alpa_problem_add_edges(alpa_problem* problem, int64_t count,
                                        const int32_t* endpoints, const double* costs,
                                        alpa_error** err);

/* Sets followers for the first `count` nodes: follows[i] = -1 (free) or the node whose choice
 * node i shares (it must have the same number of strategies). */
ALPA_API int32_t alpa_problem_set_followers(alpa_problem* problem, int64_t count,
                                            const int32_t* follows, alpa_error** err);

/* Appends `count` alias pairs. pairs[2*count] holds (u, v); forbidden[sum k_u*k_v] row-major,
 * non-zero where u taking i and v taking j together is not allowed. */
ALPA_API int32_t alpa_problem_add_aliases(alpa_problem* problem, int64_t count,
                                          const int32_t* pairs, const uint8_t* forbidden,
                                          alpa_error** err);

/* The memory limit in bytes; a negative value removes it (the default is no limit). */
ALPA_API int32_t alpa_problem_set_memory_limit(alpa_problem* problem, int64_t limit,
                                               alpa_error** err);

/* Validates and freezes the problem. On failure (ALPA_ERR_INVALID_PROBLEM, the message names
 * the node, edge, alias or time step) the problem stays in the building state. Idempotent. */
ALPA_API int32_t alpa_problem_finalize(alpa_problem* problem, alpa_error** err);

/* Reads a problem (finalized) from a file (.json or .json.gz) or from bytes. */
ALPA_API int32_t alpa_problem_read_file(alpa_problem** out, const char* path, int32_t format,
                                        alpa_error** err);
ALPA_API int32_t alpa_problem_read_buffer(alpa_problem** out, const char* data, size_t size,
                                          int32_t format, alpa_error** err);
/* Serializes a finalized problem (ALPA_FORMAT_IOPDDL or ALPA_FORMAT_ALPA). Caller frees *out with
 * alpa_buffer_free. ALPA_ERR_UNSUPPORTED when the format cannot express the problem. */
ALPA_API int32_t alpa_problem_write(alpa_buffer** out, const alpa_problem* problem, int32_t format,
                                    alpa_error** err);

/* Counts (0 for NULL). */
ALPA_API int64_t alpa_problem_node_count(const alpa_problem* problem);
ALPA_API int64_t alpa_problem_edge_count(const alpa_problem* problem);
/* Strategies of one node, or -1 if the node does not exist. */
ALPA_API int32_t alpa_problem_strategy_count(const alpa_problem* problem, int64_t node);

/* Evaluates an assignment (assignment[count], count = node count) of a finalized problem with
 * the independent evaluator. ALPA_OK: *out_cost is the total cost. ALPA_ERR_INFEASIBLE: the
 * message names the violated constraint (forbidden choice, follower, alias, memory at time t).
 * ALPA_ERR_INVALID_ARGUMENT: wrong length or a strategy out of range. */
ALPA_API int32_t alpa_problem_evaluate(double* out_cost, const alpa_problem* problem, int64_t count,
                                       const int32_t* assignment, alpa_error** err);

/* ---- Solve options ------------------------------------------------------------------------- */
typedef struct alpa_solve_options alpa_solve_options;

/* Option keys (pinned values). */
#define ALPA_OPT_TIME_LIMIT_SECONDS 1 /* double, default: none (<= 0 or inf: none) */
#define ALPA_OPT_DETERMINISTIC 2      /* int 0/1, default 0: identical answers run to run */
#define ALPA_OPT_THREADS 3            /* int, default 0 = all hardware threads */
#define ALPA_OPT_RELATIVE_GAP 4       /* double in [0, 1), default 0: stop within this gap */

/* Defaults as above. Caller frees with alpa_solve_options_destroy. */
ALPA_API int32_t alpa_solve_options_create(alpa_solve_options** out, alpa_error** err);
ALPA_API void alpa_solve_options_destroy(alpa_solve_options* options);
ALPA_API int32_t alpa_solve_options_set_double(alpa_solve_options* options, int32_t key,
                                               double value, alpa_error** err);
ALPA_API int32_t alpa_solve_options_set_int(alpa_solve_options* options, int32_t key, int64_t value,
                                            alpa_error** err);
/* By name, for CLIs and config files: "time_limit_seconds", "deterministic", "threads",
 * "relative_gap"; value is parsed as a number ("true"/"false" accepted for deterministic). */
ALPA_API int32_t alpa_solve_options_set_by_name(alpa_solve_options* options, const char* name,
                                                const char* value, alpa_error** err);
/* A starting assignment (assignment[count], one strategy per node); count 0 clears it. Invalid
 * or infeasible warm starts are ignored by the solver, never an error at solve time. */
ALPA_API int32_t alpa_solve_options_set_warm_start(alpa_solve_options* options, int64_t count,
                                                   const int32_t* assignment, alpa_error** err);
/* Cancel token (may be NULL to remove). The token must outlive every solve using it. */
ALPA_API int32_t alpa_solve_options_set_cancel_token(alpa_solve_options* options,
                                                     alpa_cancel_token* token, alpa_error** err);

/* Progress reports, passed to the progress callback. */
typedef struct alpa_progress {
  size_t struct_size; /* sizeof(alpa_progress) of the library that filled it */
  int32_t version;    /* 1 */
  double seconds;     /* since the solve started */
  double objective;   /* best feasible objective so far, +inf if none */
  double lower_bound; /* best proven lower bound, -inf if none */
  const char* phase;  /* "normalize", "reduce", "heuristic", "ilp", ... (static storage) */
} alpa_progress;
/* Runs on the thread that called alpa_solve. Return non-zero to cancel the solve. */
typedef int32_t (*alpa_progress_fn)(void* user_data, const alpa_progress* progress);
ALPA_API int32_t alpa_solve_options_set_progress(alpa_solve_options* options,
                                                 alpa_progress_fn callback, void* user_data,
                                                 alpa_error** err);

/* ---- Solving ------------------------------------------------------------------------------- */
/* Solution status (pinned values). */
#define ALPA_SOLVE_OPTIMAL 1       /* proven optimal (within the relative gap) */
#define ALPA_SOLVE_FEASIBLE 2      /* time limit hit; the best feasible assignment found */
#define ALPA_SOLVE_INFEASIBLE 3    /* proven infeasible */
#define ALPA_SOLVE_INVALID_INPUT 4 /* only in JSON results: the problem failed validation */
#define ALPA_SOLVE_CANCELLED 5     /* cancelled; the best assignment found so far, if any */
#define ALPA_SOLVE_NO_SOLUTION 6   /* time limit hit before any feasible assignment */

typedef struct alpa_solution alpa_solution;

/* Solves a finalized problem. options may be NULL (defaults). Returns ALPA_OK whenever a
 * solution object is produced, whatever its status (infeasible and time limits included);
 * ALPA_ERR_INVALID_ARGUMENT for a NULL or unfinalized problem. Caller frees *out with
 * alpa_solution_destroy. Thread-safe for distinct options objects. */
ALPA_API int32_t alpa_solve(alpa_solution** out, const alpa_problem* problem,
                            const alpa_solve_options* options, alpa_error** err);
ALPA_API void alpa_solution_destroy(alpa_solution* solution);

/* ALPA_SOLVE_* */
ALPA_API int32_t alpa_solution_status(const alpa_solution* solution);
/* The objective of the assignment (+inf if none) and the best proven lower bound (-inf if
 * none). Both are rounded to double; the JSON form prints them exactly. */
ALPA_API double alpa_solution_objective(const alpa_solution* solution);
ALPA_API double alpa_solution_lower_bound(const alpa_solution* solution);
ALPA_API double alpa_solution_seconds(const alpa_solution* solution);
/* Count-then-fill: returns the number of nodes in the assignment (0 if none was found) and
 * copies min(count, capacity) entries to out (out may be NULL when capacity is 0). */
ALPA_API int64_t alpa_solution_assignment(const alpa_solution* solution, int32_t* out,
                                          int64_t capacity);
/* A message for infeasible / no-solution results ("" otherwise). Valid while solution lives. */
ALPA_API const char* alpa_solution_message(const alpa_solution* solution);
/* The solution as one JSON object: status, objective, lower_bound, seconds, assignment, stats.
 * Caller frees *out with alpa_buffer_free. */
ALPA_API int32_t alpa_solution_to_json(alpa_buffer** out, const alpa_solution* solution,
                                       alpa_error** err);

/* One-shot solve over JSON: request = {"problem": <IOPDDL problem object or Alpa object>,
 * "options": {"time_limit_seconds": 10, "deterministic": true, "threads": 1,
 * "relative_gap": 0, "warm_start": [...]}} ("options" optional). On ALPA_OK *out holds the
 * result JSON of alpa_solution_to_json; a problem that fails validation gives ALPA_OK with
 * "status": "invalid_input" and "message". Malformed requests give ALPA_ERR_PARSE. */
ALPA_API int32_t alpa_solve_json(alpa_buffer** out, const char* request, size_t size,
                                 alpa_error** err);

/* ---- Operator graphs ----------------------------------------------------------------------- */

/* ---- Model zoo ----------------------------------------------------------------------------- */

/* ---- Clusters and the cost model ----------------------------------------------------------- */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ALPA_H_ */
