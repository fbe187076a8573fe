// Auto-sharding through the C ABI: alpa_graph_auto_shard and the sharding plan's getters.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "capi/handles.h"
#include "core/cluster/sharding_spec.h"

// The ALPA_* constants are the C++ enum values.
static_assert(ALPA_COLLECTIVE_ALL_GATHER == static_cast<int32_t>(alpa::CollectiveKind::kAllGather));
static_assert(ALPA_COLLECTIVE_ALL_REDUCE == static_cast<int32_t>(alpa::CollectiveKind::kAllReduce));
static_assert(ALPA_COLLECTIVE_REDUCE_SCATTER ==
              static_cast<int32_t>(alpa::CollectiveKind::kReduceScatter));
static_assert(ALPA_COLLECTIVE_ALL_TO_ALL == static_cast<int32_t>(alpa::CollectiveKind::kAllToAll));
static_assert(ALPA_COST_MODE_ALPA == static_cast<int32_t>(alpa::CostMode::kAlpaCompatible));
static_assert(ALPA_COST_MODE_REAL_UNITS == static_cast<int32_t>(alpa::CostMode::kRealUnits));
static_assert(ALPA_ZERO_OFF == static_cast<int32_t>(alpa::ZeroMode::kOff));
static_assert(ALPA_ZERO_SEARCH == static_cast<int32_t>(alpa::ZeroMode::kSearch));
static_assert(ALPA_ZERO_FORCE == static_cast<int32_t>(alpa::ZeroMode::kForce));
static_assert(ALPA_BATCH_MESH_DIM_FREE == alpa::kBatchDimFree);
static_assert(ALPA_BATCH_MESH_DIM_ALL == alpa::kBatchDimAllMeshDims);
static_assert(static_cast<int32_t>(alpa::SolveStatus::kCancelled) == ALPA_SOLVE_CANCELLED);

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

// Whether the result carries strategies: AutoShard fills the ops' problem nodes exactly when
// the solver returned an assignment (optimal, feasible, or cancelled after finding one).
bool HasAssignment(const alpa::AutoShardResult& r) {
  return std::any_of(r.ops.begin(), r.ops.end(),
                     [](const alpa::OpSharding& o) { return o.node >= 0; });
}

const alpa::CollectiveCounts* Counts(const alpa_sharding_plan* plan, int32_t combined) {
  return combined != 0 ? &plan->result.counts : &plan->result.counts_uncombined;
}

uint32_t MeshDimBits(const std::vector<int32_t>& dims) {
  uint32_t bits = 0;
  for (int32_t d : dims) {
    if (d >= 0 && d < 32) bits |= uint32_t{1} << d;
  }
  return bits;
}

alpa_collective ToCollective(const alpa::PlannedCollective& c) {
  alpa_collective out;
  std::memset(&out, 0, sizeof(out));
  out.struct_size = sizeof(alpa_collective);
  out.version = 1;
  out.kind = static_cast<int32_t>(c.kind);
  out.mesh_dims = MeshDimBits(c.mesh_dims);
  out.flags = (c.inside_op ? ALPA_COLLECTIVE_FLAG_INSIDE_OP : 0u) |
              (c.gradient_sync ? ALPA_COLLECTIVE_FLAG_GRADIENT_SYNC : 0u);
  out.bytes = c.bytes;
  out.cost = c.cost;
  out.tensor = c.tensor;
  out.consumer = c.consumer;
  out.operand = c.operand;
  return out;
}

// The end of version 1's last field: the smallest element a caller may pass. Later versions
// append fields after `reserved`.
constexpr size_t kCollectiveV1Size = offsetof(alpa_collective, reserved) + sizeof(int32_t);

}  // namespace

extern "C" {

ALPA_API int32_t alpa_graph_auto_shard(alpa_sharding_plan** out, const alpa_graph* graph,
                                       const alpa_mesh* mesh, const alpa_cluster* cluster,
                                       const alpa_solve_options* options, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (graph == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "graph is NULL");
    if (!graph->finalized) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "graph is not finalized: call alpa_graph_finalize first");
    }
    if (mesh == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "mesh is NULL");
    alpa::AutoShardOptions shard =
        options != nullptr ? options->auto_shard : alpa::AutoShardOptions();
    if (shard.cost_mode == alpa::CostMode::kRealUnits && cluster == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "cluster is NULL: the real cost model (ALPA_OPT_COST_MODEL = "
                  "ALPA_COST_MODE_REAL_UNITS, the default) needs a cluster for compute times; "
                  "pass one or choose ALPA_COST_MODE_ALPA");
    }
    if (cluster != nullptr && cluster->cluster.mixed()) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "cluster " + cluster->cluster.name +
                      " mixes GPU types: auto-shard on one of its pools (one device type per "
                      "mesh), or plan the mixed cluster with alpa_model_plan");
    }
    if (shard.batch_mesh_dim >= mesh->mesh.ndim()) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "option \"batch_mesh_dim\": mesh dim " + std::to_string(shard.batch_mesh_dim) +
                      " does not exist on a mesh of rank " + std::to_string(mesh->mesh.ndim()));
    }
    shard.solve = alpa::capi::ToSolveOptions(options);
    alpa::Result<alpa::AutoShardResult> result = alpa::AutoShard(
        graph->graph, mesh->mesh, cluster != nullptr ? &cluster->cluster : nullptr, shard);
    if (!result.ok()) return Fail(err, result.status());
    if (int32_t rc = alpa::capi::FailWithoutAnswer(
            err, result.value().status, HasAssignment(result.value()), result.value().message)) {
      *out = nullptr;
      return rc;
    }
    auto plan = std::make_unique<alpa_sharding_plan>();
    plan->graph = graph->graph;
    plan->result = std::move(result).value();
    *out = plan.release();
    return ALPA_OK;
  });
}

ALPA_API void alpa_sharding_plan_destroy(alpa_sharding_plan* plan) { delete plan; }

ALPA_API int32_t alpa_sharding_plan_status(const alpa_sharding_plan* plan) {
  return plan == nullptr ? 0 : static_cast<int32_t>(plan->result.status);
}

ALPA_API double alpa_sharding_plan_objective(const alpa_sharding_plan* plan) {
  return plan == nullptr ? std::numeric_limits<double>::quiet_NaN()
                         : static_cast<double>(plan->result.objective);
}

ALPA_API double alpa_sharding_plan_lower_bound(const alpa_sharding_plan* plan) {
  return plan == nullptr ? std::numeric_limits<double>::quiet_NaN()
                         : static_cast<double>(plan->result.lower_bound);
}

ALPA_API double alpa_sharding_plan_cost(const alpa_sharding_plan* plan, int32_t which) {
  if (plan == nullptr) return std::numeric_limits<double>::quiet_NaN();
  switch (which) {
    case ALPA_PLAN_COST_COMPUTE:
      return static_cast<double>(plan->result.compute_cost);
    case ALPA_PLAN_COST_COMMUNICATION:
      return static_cast<double>(plan->result.communication_cost);
    case ALPA_PLAN_COST_RESHARDING:
      return static_cast<double>(plan->result.resharding_cost);
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

ALPA_API int64_t alpa_sharding_plan_peak_memory_bytes(const alpa_sharding_plan* plan) {
  return plan == nullptr ? 0 : plan->result.peak_memory_bytes;
}

ALPA_API const char* alpa_sharding_plan_message(const alpa_sharding_plan* plan) {
  return plan == nullptr ? "" : plan->result.message.c_str();
}

ALPA_API int64_t alpa_sharding_plan_collective_counts(const alpa_sharding_plan* plan,
                                                      int32_t combined, int64_t* out,
                                                      int64_t capacity) {
  if (plan == nullptr) return alpa::capi::kFillMisuse;
  const alpa::CollectiveCounts& c = *Counts(plan, combined);
  // Indexed by ALPA_COLLECTIVE_*: all-gather, all-reduce, reduce-scatter, all-to-all.
  const int64_t counts[] = {c.all_gather, c.all_reduce, c.reduce_scatter, c.all_to_all};
  return alpa::capi::FillArray(out, capacity, 4, [&counts](int64_t i) { return counts[i]; });
}

ALPA_API int64_t alpa_sharding_plan_op_strategies(const alpa_sharding_plan* plan, int32_t* out,
                                                  int64_t capacity) {
  if (plan == nullptr) return alpa::capi::kFillMisuse;
  const std::vector<alpa::OpSharding>& ops = plan->result.ops;
  return alpa::capi::FillArray(out, capacity, static_cast<int64_t>(ops.size()),
                               [&ops](int64_t i) { return ops[static_cast<size_t>(i)].strategy; });
}

ALPA_API int64_t alpa_sharding_plan_collectives(const alpa_sharding_plan* plan,
                                                alpa_collective* out, int64_t capacity,
                                                size_t element_size) {
  if (plan == nullptr) return alpa::capi::kFillMisuse;
  const std::vector<alpa::PlannedCollective>& list = plan->result.collectives;
  return alpa::capi::FillStructs<alpa_collective>(
      out, capacity, element_size, kCollectiveV1Size, static_cast<int64_t>(list.size()),
      [&list](int64_t i) { return ToCollective(list[static_cast<size_t>(i)]); });
}

ALPA_API int32_t alpa_sharding_plan_op_spec(alpa_buffer** out, const alpa_sharding_plan* plan,
                                            int32_t op, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    if (op < 0 || op >= plan->graph.size()) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "op " + std::to_string(op) + " is out of range (the graph has " +
                      std::to_string(plan->graph.size()) + " ops)");
    }
    std::string text;
    if (static_cast<size_t>(op) < plan->result.ops.size()) {
      const alpa::OpSharding& s = plan->result.ops[static_cast<size_t>(op)];
      if (!s.free && !s.fused) text = alpa::ToString(s.result);
    }
    alpa_buffer* buffer = alpa::capi::MakeBuffer(std::move(text));
    if (buffer == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    *out = buffer;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_sharding_plan_to_json(alpa_buffer** out, const alpa_sharding_plan* plan,
                                            alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    alpa_buffer* buffer =
        alpa::capi::MakeBuffer(alpa::AutoShardResultJson(plan->graph, plan->result));
    if (buffer == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    *out = buffer;
    return ALPA_OK;
  });
}

}  // extern "C"
