// The C ABI's handle structs and the exception firewall. Only src/capi includes this.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "alpa.h"
#include "core/cluster/logical_mesh.h"
#include "core/ir/graph.h"
#include "core/problem/sharding_problem.h"
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
};

// A pipeline plan (src/capi/plan.cc): the plan (which owns its microbatch graph), a copy of the
// cluster and the model name (for the JSON form), and where each op of the graph is computed.
// Immutable once made.
struct alpa_plan {
  alpa::PipelinePlan plan;
  alpa::Cluster cluster;
  std::string model;
  std::vector<alpa::PlanOpSite> sites;  // PlanOpSites(plan)
  // The configuration of a plan made by alpa_plan_manual / alpa_plan_baseline
  // (src/capi/baseline.cc); none for alpa_plan_model / alpa_plan_graph.
  std::optional<alpa::ManualPlanSpec> manual_spec;
  // alpa_plan_baseline's search: counts, timing and the table (its `best` is moved into `plan`
  // and left empty here); none for other plans.
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
// A plan handle owning `plan`, with a copy of the cluster and the model name.
std::unique_ptr<alpa_plan> MakePlan(alpa::PipelinePlan plan, const alpa::Cluster& cluster,
                                    std::string model);
// alpa_plan_to_json's text: PipelinePlanJson plus, for a manual or baseline plan, its
// "baseline" object (src/capi/baseline.cc).
std::string PlanJson(const alpa_plan& plan, int32_t detail);

// Makes a buffer owning `bytes`; nullptr on allocation failure.
alpa_buffer* MakeBuffer(std::string bytes);

// Builds the SolveOptions for one solve: the caller's options plus the C callback adapters.
alpa::SolveOptions ToSolveOptions(const alpa_solve_options* options);

// The auto-sharding option keys (ALPA_OPT_COST_MODEL .. ALPA_OPT_MEMORY_BUDGET_BYTES) live in
// src/capi/shard.cc; solve.cc's setters hand them over. Whether `key` is one; the key of a name
// (-1 if none); setting one from an integer, a double (integral values only) or text ("alpa",
// "search", "16e9", ...).
bool IsAutoShardOption(int32_t key);
int32_t AutoShardOptionKey(const std::string& name);
int32_t SetAutoShardOption(alpa_solve_options* options, int32_t key, int64_t value,
                           alpa_error** err);
int32_t SetAutoShardOptionDouble(alpa_solve_options* options, int32_t key, double value,
                                 alpa_error** err);
int32_t SetAutoShardOptionText(alpa_solve_options* options, int32_t key, const std::string& text,
                               alpa_error** err);

}  // namespace alpa::capi
