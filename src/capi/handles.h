// The C ABI's handle structs and the exception firewall. Only src/capi includes this.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "alpa.h"
#include "alpa_experimental.h"
#include "core/cluster/logical_mesh.h"
#include "core/ir/graph.h"
#include "core/problem/sharding_problem.h"
#include "core/util/bounded_input.h"
#include "core/util/status.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/planner/baseline_search.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/planner.h"
#include "solvers/sharding/sharding_solver.h"

// Clusters and logical meshes (src/capi/cluster.cc); immutable once created.
struct alpa_cluster {
  alpa::Cluster cluster;
};
struct alpa_mesh {
  alpa::LogicalMesh mesh;
};

// Operator graphs (src/capi/graph.cc): built op batch by op batch, immutable once finalized.
struct alpa_graph {
  alpa::Graph graph;
  bool finalized = false;
};

struct alpa_error {
  int32_t code = ALPA_ERR_INTERNAL;
  std::string message;
};

struct alpa_buffer {
  std::string bytes;
};

struct alpa_cancel_token {
  std::atomic<bool> triggered{false};
};

struct alpa_problem {
  alpa::ShardingProblem problem;
  bool finalized = false;
};

struct alpa_solve_options {
  alpa::SolveOptions options;
  // The auto-sharding keys (ALPA_OPT_COST_MODEL ...). Its `solve` member stays default: the
  // solve part comes from `options` plus the C callbacks (ToSolveOptions) at each call.
  alpa::AutoShardOptions auto_shard;
  // ALPA_OPT_MAX_INPUT_BYTES: the readers' limit on decoded input.
  uint64_t max_input_bytes = alpa::kDefaultMaxInputBytes;
  alpa_cancel_token* cancel = nullptr;
  alpa_progress_fn progress = nullptr;
  void* progress_user_data = nullptr;
};

struct alpa_solution {
  alpa::SolveResult result;
};

// An auto-sharding plan (src/capi/shard.cc): the result and a copy of the graph it describes
// (for names in the JSON form; the library keeps no caller pointer). Immutable once made.
struct alpa_sharding_plan {
  alpa::Graph graph;
  alpa::AutoShardResult result;
};

// Pipeline-planner options (src/capi/plan.cc). `options` never holds callbacks: on_progress and
// cancel are built from the C callback and token at each call.
struct alpa_plan_options {
  alpa::PlannerOptions options;
  alpa_cancel_token* cancel = nullptr;
  alpa_plan_progress_fn progress = nullptr;
  void* progress_user_data = nullptr;
  // ALPA_PLAN_OPT_GRAPH_BATCH_DIM: read by the alpa_graph_plan* calls, not the planner.
  int32_t graph_batch_dim = -1;
};

// A pipeline plan (src/capi/plan.cc): the plan (which owns its microbatch graph), a copy of the
// cluster and the model name (for the JSON form), and where each op of the graph is computed.
// Immutable once made.
struct alpa_plan {
  alpa::PipelinePlan plan;
  alpa::Cluster cluster;
  std::string model;
  std::vector<alpa::PlanOpSite> sites;  // PlanOpSites(plan)
  // The configuration of a plan made by alpa_model_plan_manual / alpa_model_plan_baseline
  // (src/capi/baseline.cc); none for alpa_model_plan / alpa_graph_plan.
  std::optional<alpa::ManualPlanSpec> manual_spec;
  // alpa_model_plan_baseline's search: counts, timing and the table (its `best` is moved into
  // `plan` and left empty here); none for other plans.
  std::optional<alpa::BaselineSearchResult> baseline;
};

namespace alpa::capi {

// Stores an error for the caller (when err is non-NULL) and returns its code.
int32_t Fail(alpa_error** err, int32_t code, std::string message);
// Translates an internal Status (non-ok) into the caller's error.
int32_t Fail(alpa_error** err, const Status& status);
int32_t ToCode(StatusCode code);

// Runs body, turning any escaping exception into ALPA_ERR_OUT_OF_MEMORY / ALPA_ERR_INTERNAL.
template <typename Body>
int32_t Guard(alpa_error** err, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return Fail(err, ALPA_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return Fail(err, ALPA_ERR_INTERNAL, "internal error: unknown exception");
  }
}

// Pipeline plans (src/capi/plan.cc), shared with src/capi/baseline.cc.
// The planner's options for one call: the caller's (defaults for NULL) plus adapters of the C
// cancel token and progress callback.
alpa::PlannerOptions ToPlannerOptions(const alpa_plan_options* options);
// The zoo model of `spec` (non-NULL); on failure the error names the spec.
int32_t PlannerModelOf(const char* spec, alpa::PlannerModel* out, alpa_error** err);
// The model of a graph (NULL or not finalized: ALPA_ERR_INVALID_ARGUMENT): one microbatch, or
// the global batch rebatched per microbatch count when options set ALPA_PLAN_OPT_GRAPH_BATCH_DIM.
int32_t PlannerModelOfGraph(const alpa_graph* graph, const alpa_plan_options* options,
                            alpa::PlannerModel* out, alpa_error** err);
// A plan handle owning `plan`, with a copy of the cluster and the model name.
std::unique_ptr<alpa_plan> MakePlan(alpa::PipelinePlan plan, const alpa::Cluster& cluster,
                                    std::string model);
// The plan's model for the whole batch (one microbatch): rebuilt from its model spec; a plan of
// one microbatch without a spec is its own graph; kInvalidArgument otherwise (saying so).
alpa::Result<alpa::Graph> WholeBatchGraph(const alpa_plan& plan);
// alpa_plan_to_json's text: PipelinePlanJson plus, for a manual or baseline plan, its
// "baseline" object (src/capi/baseline.cc).
alpa::Result<std::string> PlanJson(const alpa_plan& plan, int32_t detail);

// The "no answer" convention (docs/error-handling.md): a solve that ends without an assignment
// is a failure status, not a result: ALPA_ERR_INFEASIBLE (proven none), ALPA_ERR_TIMEOUT (time
// limit before the first one), ALPA_ERR_CANCELLED (cancelled before the first one). Stores the
// error (with `message`, or a default naming the outcome) and returns its code; ALPA_OK when
// there is an answer.
int32_t FailWithoutAnswer(alpa_error** err, SolveStatus status, bool has_assignment,
                          const std::string& message);

// Count-then-fill (docs/error-handling.md): every array getter returns the full count and copies
// min(count, capacity) entries; misuse returns a negative status, -ALPA_ERR_INVALID_ARGUMENT,
// never a count.
constexpr int64_t kFillMisuse = -ALPA_ERR_INVALID_ARGUMENT;

// Whether out / capacity are unusable: a negative capacity, or a positive one with out NULL.
inline bool BadFillTarget(const void* out, int64_t capacity) {
  return capacity < 0 || (capacity > 0 && out == nullptr);
}

// Copies value_at(i) for i < min(count, capacity) to out[i]; returns count (or kFillMisuse).
template <typename T, typename ValueAt>
int64_t FillArray(T* out, int64_t capacity, int64_t count, ValueAt value_at) {
  if (BadFillTarget(out, capacity)) return kFillMisuse;
  const int64_t copy = std::min(capacity, count);
  for (int64_t i = 0; i < copy; ++i) out[i] = value_at(i);
  return count;
}

// Writes the first min(element_size, sizeof(T)) bytes of `value` to element `index` of `out`,
// with struct_size set to that count (versioned output structs, old and new callers alike).
template <typename T>
void WriteElement(void* out, size_t element_size, int64_t index, T value) {
  const size_t written = std::min(element_size, sizeof(T));
  value.struct_size = written;
  std::memcpy(static_cast<unsigned char*>(out) + static_cast<size_t>(index) * element_size, &value,
              written);
}

// The versioned-struct form: element i is written as the first min(element_size, sizeof(T))
// bytes of make(i), struct_size set to that number; element_size below min_size (the end of
// version 1) is misuse.
template <typename T, typename Make>
int64_t FillStructs(void* out, int64_t capacity, size_t element_size, size_t min_size,
                    int64_t count, Make make) {
  if (BadFillTarget(out, capacity)) return kFillMisuse;
  if (capacity > 0 && element_size < min_size) return kFillMisuse;
  const int64_t copy = std::min(capacity, count);
  for (int64_t i = 0; i < copy; ++i) WriteElement(out, element_size, i, make(i));
  return count;
}

// Makes a buffer owning `bytes`; nullptr on allocation failure.
alpa_buffer* MakeBuffer(std::string bytes);

// Builds the SolveOptions for one solve: the caller's options plus the C callback adapters.
alpa::SolveOptions ToSolveOptions(const alpa_solve_options* options);

}  // namespace alpa::capi
