// Auto-sharding through the C ABI: the auto-sharding option keys of alpa_solve_options,
// alpa_graph_auto_shard and the sharding plan's getters.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
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

// Name and accepted values of each option, for set_by_name and for messages.
struct OptionName {
  int32_t key;
  const char* name;
  const char* allowed;
};
constexpr OptionName kOptionNames[] = {
    {ALPA_OPT_COST_MODEL, "cost_model",
     "ALPA_COST_MODE_ALPA (0, \"alpa\") or ALPA_COST_MODE_REAL_UNITS (1, \"real\")"},
    {ALPA_OPT_ZERO, "zero", "a ZeRO mode: 0 \"off\", 1 \"search\" or 2 \"force\""},
    {ALPA_OPT_FORCE_DATA_PARALLEL, "force_data_parallel", "0 or 1"},
    {ALPA_OPT_BATCH_MESH_DIM, "batch_mesh_dim",
     "-2 (\"free\"), -1 (\"all\" mesh dims) or a mesh dim 0..9"},
    {ALPA_OPT_ALLOW_ALL_GATHER, "allow_all_gather", "0 or 1"},
    {ALPA_OPT_ALLOW_ALL_TO_ALL, "allow_all_to_all", "0 or 1"},
    {ALPA_OPT_MEMORY_BUDGET_BYTES, "memory_budget_bytes",
     "an integer byte count (negative or \"none\": no budget)"},
};

const OptionName& Option(int32_t key) {
  for (const OptionName& o : kOptionNames) {
    if (o.key == key) return o;
  }
  return kOptionNames[0];  // unreachable: callers pass auto-sharding keys only
}

int32_t BadValue(alpa_error** err, int32_t key, const std::string& value) {
  const OptionName& o = Option(key);
  return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
              std::string("option \"") + o.name + "\": " + value + " is not " + o.allowed);
}

int32_t SetFlag(bool* flag, int32_t key, int64_t value, alpa_error** err) {
  if (value != 0 && value != 1) return BadValue(err, key, std::to_string(value));
  *flag = value == 1;
  return ALPA_OK;
}

// The exact integer a text spells: an int64 literal, or a number in any strtod form ("1e9")
// whose value is integral and fits int64.
bool ParseInteger(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long exact = std::strtoll(text.c_str(), &end, 10);
  if (errno == 0 && end != nullptr && *end == '\0') {
    *out = static_cast<int64_t>(exact);
    return true;
  }
  end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == nullptr || *end != '\0' || number != std::floor(number) ||
      !(number >= -9.2233720368547758e18 && number < 9.2233720368547758e18)) {
    return false;
  }
  *out = static_cast<int64_t>(number);
  return true;
}

// Symbolic values accepted by name ("alpa", "search", "free", "none", "true", ...).
bool SymbolicValue(int32_t key, const std::string& text, int64_t* out) {
  struct Symbol {
    int32_t key;
    const char* text;
    int64_t value;
  };
  static constexpr Symbol kSymbols[] = {
      {ALPA_OPT_COST_MODEL, "alpa", ALPA_COST_MODE_ALPA},
      {ALPA_OPT_COST_MODEL, "real", ALPA_COST_MODE_REAL_UNITS},
      {ALPA_OPT_ZERO, "off", ALPA_ZERO_OFF},
      {ALPA_OPT_ZERO, "search", ALPA_ZERO_SEARCH},
      {ALPA_OPT_ZERO, "force", ALPA_ZERO_FORCE},
      {ALPA_OPT_BATCH_MESH_DIM, "free", ALPA_BATCH_MESH_DIM_FREE},
      {ALPA_OPT_BATCH_MESH_DIM, "all", ALPA_BATCH_MESH_DIM_ALL},
      {ALPA_OPT_MEMORY_BUDGET_BYTES, "none", -1},
      {ALPA_OPT_FORCE_DATA_PARALLEL, "true", 1},
      {ALPA_OPT_FORCE_DATA_PARALLEL, "false", 0},
      {ALPA_OPT_ALLOW_ALL_GATHER, "true", 1},
      {ALPA_OPT_ALLOW_ALL_GATHER, "false", 0},
      {ALPA_OPT_ALLOW_ALL_TO_ALL, "true", 1},
      {ALPA_OPT_ALLOW_ALL_TO_ALL, "false", 0},
  };
  for (const Symbol& s : kSymbols) {
    if (s.key == key && text == s.text) {
      *out = s.value;
      return true;
    }
  }
  return false;
}

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

namespace alpa::capi {

bool IsAutoShardOption(int32_t key) {
  return key >= ALPA_OPT_COST_MODEL && key <= ALPA_OPT_MEMORY_BUDGET_BYTES;
}

int32_t AutoShardOptionKey(const std::string& name) {
  for (const OptionName& o : kOptionNames) {
    if (name == o.name) return o.key;
  }
  return -1;
}

int32_t SetAutoShardOption(alpa_solve_options* options, int32_t key, int64_t value,
                           alpa_error** err) {
  AutoShardOptions& o = options->auto_shard;
  switch (key) {
    case ALPA_OPT_COST_MODEL:
      if (value != ALPA_COST_MODE_ALPA && value != ALPA_COST_MODE_REAL_UNITS) {
        return BadValue(err, key, std::to_string(value));
      }
      o.cost_mode = static_cast<CostMode>(value);
      return ALPA_OK;
    case ALPA_OPT_ZERO:
      if (value < ALPA_ZERO_OFF || value > ALPA_ZERO_FORCE) {
        return BadValue(err, key, std::to_string(value));
      }
      o.zero = static_cast<ZeroMode>(value);
      return ALPA_OK;
    case ALPA_OPT_FORCE_DATA_PARALLEL:
      return SetFlag(&o.force_data_parallel, key, value, err);
    case ALPA_OPT_BATCH_MESH_DIM:
      // Mesh dims are single digits in the spec notation; the mesh's rank is checked per call.
      if (value < ALPA_BATCH_MESH_DIM_FREE || value > 9) {
        return BadValue(err, key, std::to_string(value));
      }
      o.batch_mesh_dim = static_cast<int32_t>(value);
      return ALPA_OK;
    case ALPA_OPT_ALLOW_ALL_GATHER:
      return SetFlag(&o.allow_all_gather, key, value, err);
    case ALPA_OPT_ALLOW_ALL_TO_ALL:
      return SetFlag(&o.allow_all_to_all, key, value, err);
    case ALPA_OPT_MEMORY_BUDGET_BYTES:
      if (value < 0) {
        o.memory_budget_bytes.reset();
      } else {
        o.memory_budget_bytes = value;
      }
      return ALPA_OK;
    default:
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "unknown option key " + std::to_string(key));
  }
}

int32_t SetAutoShardOptionDouble(alpa_solve_options* options, int32_t key, double value,
                                 alpa_error** err) {
  // 2^63 itself is out of range.
  if (!(value == std::floor(value) && value >= -9.2233720368547758e18 &&
        value < 9.2233720368547758e18)) {
    return BadValue(err, key, std::to_string(value));
  }
  return SetAutoShardOption(options, key, static_cast<int64_t>(value), err);
}

int32_t SetAutoShardOptionText(alpa_solve_options* options, int32_t key, const std::string& text,
                               alpa_error** err) {
  int64_t value = 0;
  if (!SymbolicValue(key, text, &value) && !ParseInteger(text, &value)) {
    return BadValue(err, key, "\"" + text + "\"");
  }
  return SetAutoShardOption(options, key, value, err);
}

}  // namespace alpa::capi

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
    if (shard.batch_mesh_dim >= mesh->mesh.ndim()) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "option \"batch_mesh_dim\": mesh dim " + std::to_string(shard.batch_mesh_dim) +
                      " does not exist on a mesh of rank " + std::to_string(mesh->mesh.ndim()));
    }
    shard.solve = alpa::capi::ToSolveOptions(options);
    alpa::Result<alpa::AutoShardResult> result = alpa::AutoShard(
        graph->graph, mesh->mesh, cluster != nullptr ? &cluster->cluster : nullptr, shard);
    if (!result.ok()) return Fail(err, result.status());
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
  if (plan == nullptr) return std::numeric_limits<double>::quiet_NaN();
  if (!HasAssignment(plan->result)) return std::numeric_limits<double>::infinity();
  return static_cast<double>(plan->result.objective);
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
  return plan == nullptr || !HasAssignment(plan->result) ? 0 : plan->result.peak_memory_bytes;
}

ALPA_API const char* alpa_sharding_plan_message(const alpa_sharding_plan* plan) {
  return plan == nullptr ? "" : plan->result.message.c_str();
}

ALPA_API int32_t alpa_sharding_plan_collective_counts(const alpa_sharding_plan* plan,
                                                      int32_t combined, int64_t* out) {
  if (plan == nullptr || out == nullptr) return ALPA_ERR_INVALID_ARGUMENT;
  const alpa::CollectiveCounts& c = *Counts(plan, combined);
  out[ALPA_COLLECTIVE_ALL_GATHER] = c.all_gather;
  out[ALPA_COLLECTIVE_ALL_REDUCE] = c.all_reduce;
  out[ALPA_COLLECTIVE_REDUCE_SCATTER] = c.reduce_scatter;
  out[ALPA_COLLECTIVE_ALL_TO_ALL] = c.all_to_all;
  return ALPA_OK;
}

ALPA_API int64_t alpa_sharding_plan_op_strategies(const alpa_sharding_plan* plan, int32_t* out,
                                                  int64_t capacity) {
  if (plan == nullptr || !HasAssignment(plan->result)) return 0;
  const std::vector<alpa::OpSharding>& ops = plan->result.ops;
  const int64_t n = static_cast<int64_t>(ops.size());
  if (out != nullptr && capacity > 0) {
    const int64_t copy = std::min(capacity, n);
    for (int64_t i = 0; i < copy; ++i) out[i] = ops[static_cast<size_t>(i)].strategy;
  }
  return n;
}

ALPA_API int64_t alpa_sharding_plan_collectives(const alpa_sharding_plan* plan,
                                                alpa_collective* out, int64_t capacity,
                                                size_t element_size) {
  if (plan == nullptr || !HasAssignment(plan->result)) return 0;
  const std::vector<alpa::PlannedCollective>& list = plan->result.collectives;
  const int64_t n = static_cast<int64_t>(list.size());
  if (capacity <= 0) return n;
  if (out == nullptr || element_size < kCollectiveV1Size) return -1;
  const int64_t copy = std::min(capacity, n);
  const size_t written = std::min(element_size, sizeof(alpa_collective));
  unsigned char* base = reinterpret_cast<unsigned char*>(out);
  for (int64_t i = 0; i < copy; ++i) {
    alpa_collective c = ToCollective(list[static_cast<size_t>(i)]);
    c.struct_size = written;
    std::memcpy(base + static_cast<size_t>(i) * element_size, &c, written);
  }
  return n;
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
    if (HasAssignment(plan->result) && static_cast<size_t>(op) < plan->result.ops.size()) {
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
