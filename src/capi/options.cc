// The option table of the C ABI and the one setter path over it (src/capi/options.h).
#include "capi/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "capi/handles.h"
#include "core/util/json_util.h"

namespace alpa::capi {
namespace {

enum class Family { kSolve, kShard, kPlan };
enum class Type { kInt, kDouble };

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();

// One row of the table. Integer options accept [int_lo, int_hi]; double options accept values
// between lo and hi (excluded when *_open; NaN never). `symbols` lists the text values
// set_by_name accepts besides numbers, as "text=value" pairs separated by commas.
struct Option {
  int32_t key;
  const char* name;
  const char* macro;
  Family family;
  Type type;
  int64_t int_lo, int_hi;
  double lo, hi;
  bool lo_open, hi_open;
  const char* requirement;  // completes "must be ..."
  const char* symbols;
  void (*set_int)(const OptionFields&, int64_t);
  void (*set_double)(const OptionFields&, double);
};

// Row builders: an integer option and a double option.
constexpr Option IntOption(int32_t key, const char* name, const char* macro, Family family,
                           int64_t lo, int64_t hi, const char* requirement, const char* symbols,
                           void (*set)(const OptionFields&, int64_t)) {
  return Option{key, name,  macro, family,      Type::kInt, lo,  hi,     0.0,
                0.0, false, false, requirement, symbols,    set, nullptr};
}
constexpr Option DoubleOption(int32_t key, const char* name, const char* macro, Family family,
                              double lo, bool lo_open, double hi, bool hi_open,
                              const char* requirement, void (*set)(const OptionFields&, double)) {
  return Option{key,     name,    macro,       family, Type::kDouble, 0,  0, lo, hi,
                lo_open, hi_open, requirement, "",     nullptr,       set};
}

constexpr const char* kFlag = "true=1,false=0";

const Option kOptions[] = {
    // Solve family: alpa_problem_solve and the solve inside alpa_graph_auto_shard.
    DoubleOption(
        ALPA_OPT_TIME_LIMIT_SECONDS, "time_limit_seconds", "ALPA_OPT_TIME_LIMIT_SECONDS",
        Family::kSolve, 0.0, false, kInf, false, "a number of seconds >= 0 (0 or inf: no limit)",
        [](const OptionFields& f, double v) { f.solve->time_limit_seconds = v > 0 ? v : kInf; }),
    IntOption(ALPA_OPT_DETERMINISTIC, "deterministic", "ALPA_OPT_DETERMINISTIC", Family::kSolve, 0,
              1, "0 or 1", kFlag,
              [](const OptionFields& f, int64_t v) { f.solve->deterministic = v == 1; }),
    IntOption(ALPA_OPT_THREADS, "threads", "ALPA_OPT_THREADS", Family::kSolve, 0, 4096,
              "an integer in 0..4096", "",
              [](const OptionFields& f, int64_t v) { f.solve->threads = static_cast<int32_t>(v); }),
    DoubleOption(ALPA_OPT_RELATIVE_GAP, "relative_gap", "ALPA_OPT_RELATIVE_GAP", Family::kSolve,
                 0.0, false, 1.0, true, "in [0, 1)",
                 [](const OptionFields& f, double v) { f.solve->relative_gap = v; }),
    IntOption(
        ALPA_OPT_MAX_INPUT_BYTES, "max_input_bytes", "ALPA_OPT_MAX_INPUT_BYTES", Family::kSolve, 1,
        kInt64Max, "an integer byte count >= 1", "",
        [](const OptionFields& f, int64_t v) { *f.max_input_bytes = static_cast<uint64_t>(v); }),
    // Shard family: alpa_graph_auto_shard only.
    IntOption(
        ALPA_OPT_COST_MODEL, "cost_model", "ALPA_OPT_COST_MODEL", Family::kShard, 0, 1,
        "ALPA_COST_MODE_ALPA (0, \"alpa\") or ALPA_COST_MODE_REAL_UNITS (1, \"real\")",
        "alpa=0,real=1",
        [](const OptionFields& f, int64_t v) { f.shard->cost_mode = static_cast<CostMode>(v); }),
    IntOption(ALPA_OPT_ZERO, "zero", "ALPA_OPT_ZERO", Family::kShard, 0, 2,
              "a ZeRO mode: 0 \"off\", 1 \"search\" or 2 \"force\"", "off=0,search=1,force=2",
              [](const OptionFields& f, int64_t v) { f.shard->zero = static_cast<ZeroMode>(v); }),
    IntOption(ALPA_OPT_FORCE_DATA_PARALLEL, "force_data_parallel", "ALPA_OPT_FORCE_DATA_PARALLEL",
              Family::kShard, 0, 1, "0 or 1", kFlag,
              [](const OptionFields& f, int64_t v) { f.shard->force_data_parallel = v == 1; }),
    // Mesh dims are single digits in the spec notation; the mesh's rank is checked per call.
    IntOption(ALPA_OPT_BATCH_MESH_DIM, "batch_mesh_dim", "ALPA_OPT_BATCH_MESH_DIM", Family::kShard,
              ALPA_BATCH_MESH_DIM_FREE, 9,
              "-2 (\"free\"), -1 (\"all\" mesh dims) or a mesh dim 0..9", "free=-2,all=-1",
              [](const OptionFields& f, int64_t v) {
                f.shard->batch_mesh_dim = static_cast<int32_t>(v);
              }),
    IntOption(ALPA_OPT_ALLOW_ALL_GATHER, "allow_all_gather", "ALPA_OPT_ALLOW_ALL_GATHER",
              Family::kShard, 0, 1, "0 or 1", kFlag,
              [](const OptionFields& f, int64_t v) { f.shard->allow_all_gather = v == 1; }),
    IntOption(ALPA_OPT_ALLOW_ALL_TO_ALL, "allow_all_to_all", "ALPA_OPT_ALLOW_ALL_TO_ALL",
              Family::kShard, 0, 1, "0 or 1", kFlag,
              [](const OptionFields& f, int64_t v) { f.shard->allow_all_to_all = v == 1; }),
    IntOption(ALPA_OPT_MEMORY_BUDGET_BYTES, "memory_budget_bytes", "ALPA_OPT_MEMORY_BUDGET_BYTES",
              Family::kShard, kInt64Min, kInt64Max,
              "an integer byte count (negative or \"none\": no budget)", "none=-1",
              [](const OptionFields& f, int64_t v) {
                if (v < 0) {
                  f.shard->memory_budget_bytes.reset();
                } else {
                  f.shard->memory_budget_bytes = v;
                }
              }),
    // Plan family: alpa_model_plan, alpa_graph_plan and the manual / baseline plans.
    IntOption(
        ALPA_PLAN_OPT_NUM_LAYERS, "num_layers", "ALPA_PLAN_OPT_NUM_LAYERS", Family::kPlan, 0,
        kInt32Max, "an integer >= 0", "",
        [](const OptionFields& f, int64_t v) { f.plan->num_layers = static_cast<int32_t>(v); }),
    IntOption(ALPA_PLAN_OPT_MICROBATCHES, "microbatches", "ALPA_PLAN_OPT_MICROBATCHES",
              Family::kPlan, 0, kInt64Max, "an integer >= 0", "",
              [](const OptionFields& f, int64_t v) { f.plan->microbatches = v; }),
    IntOption(ALPA_PLAN_OPT_MAX_MICROBATCHES, "max_microbatches", "ALPA_PLAN_OPT_MAX_MICROBATCHES",
              Family::kPlan, 1, kInt64Max, "an integer >= 1", "",
              [](const OptionFields& f, int64_t v) { f.plan->max_microbatches = v; }),
    IntOption(ALPA_PLAN_OPT_THREADS, "threads", "ALPA_PLAN_OPT_THREADS", Family::kPlan, 0, 4096,
              "an integer in 0..4096", "",
              [](const OptionFields& f, int64_t v) { f.plan->threads = static_cast<int32_t>(v); }),
    DoubleOption(ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT, "intra_op_time_limit_seconds",
                 "ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT", Family::kPlan, 0.0, true, kInf, false,
                 "> 0 seconds",
                 [](const OptionFields& f, double v) { f.plan->intra_op_time_limit_seconds = v; }),
    DoubleOption(ALPA_PLAN_OPT_INTRA_OP_GAP, "intra_op_gap", "ALPA_PLAN_OPT_INTRA_OP_GAP",
                 Family::kPlan, 0.0, false, kInf, true, "finite and >= 0",
                 [](const OptionFields& f, double v) { f.plan->intra_op_relative_gap = v; }),
    IntOption(
        ALPA_PLAN_OPT_MEMORY_LEVELS, "memory_levels", "ALPA_PLAN_OPT_MEMORY_LEVELS", Family::kPlan,
        0, kInt32Max, "an integer >= 0", "",
        [](const OptionFields& f, int64_t v) { f.plan->memory_levels = static_cast<int32_t>(v); }),
    IntOption(ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, "device_memory_bytes",
              "ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES", Family::kPlan, 0, kInt64Max,
              "an integer >= 0 (0: the cluster's device memory)", "",
              [](const OptionFields& f, int64_t v) {
                if (v == 0) {
                  f.plan->device_memory_bytes.reset();
                } else {
                  f.plan->device_memory_bytes = v;
                }
              }),
    DoubleOption(ALPA_PLAN_OPT_CLUSTERING_DELTA, "clustering_delta",
                 "ALPA_PLAN_OPT_CLUSTERING_DELTA", Family::kPlan, 0.0, false, kInf, true,
                 "finite and >= 0",
                 [](const OptionFields& f, double v) { f.plan->clustering_delta = v; }),
    IntOption(ALPA_PLAN_OPT_REMAT, "remat", "ALPA_PLAN_OPT_REMAT", Family::kPlan, 0, 3,
              "ALPA_REMAT_SEARCH (0, \"search\"), ALPA_REMAT_OFF (1, \"off\"), ALPA_REMAT_ON "
              "(2, \"on\") or ALPA_REMAT_SELECTIVE (3, \"selective\")",
              "search=0,off=1,on=2,selective=3",
              [](const OptionFields& f, int64_t v) { f.plan->remat = static_cast<RematMode>(v); }),
    IntOption(ALPA_PLAN_OPT_INTRA_OP_EXACT, "intra_op_exact", "ALPA_PLAN_OPT_INTRA_OP_EXACT",
              Family::kPlan, 0, 1, "0 or 1", kFlag,
              [](const OptionFields& f, int64_t v) { f.plan->intra_op_exact = v == 1; }),
    DoubleOption(ALPA_PLAN_OPT_TIME_LIMIT_SECONDS, "time_limit_seconds",
                 "ALPA_PLAN_OPT_TIME_LIMIT_SECONDS", Family::kPlan, 0.0, false, kInf, false,
                 "a number of seconds >= 0 (0 or inf: no limit)",
                 [](const OptionFields& f, double v) { f.plan->time_limit_seconds = v; }),
    IntOption(ALPA_PLAN_OPT_MAX_HOSTS, "max_hosts", "ALPA_PLAN_OPT_MAX_HOSTS", Family::kPlan, 0,
              kInt64Max, "an integer >= 0 (0: no limit)", "none=0",
              [](const OptionFields& f, int64_t v) { f.plan->limits.max_hosts = v; }),
    IntOption(ALPA_PLAN_OPT_MAX_DEVICES, "max_devices", "ALPA_PLAN_OPT_MAX_DEVICES", Family::kPlan,
              0, kInt64Max, "an integer >= 0 (0: no limit)", "none=0",
              [](const OptionFields& f, int64_t v) { f.plan->limits.max_devices = v; }),
    IntOption(ALPA_PLAN_OPT_MAX_GRAPH_OPS, "max_graph_ops", "ALPA_PLAN_OPT_MAX_GRAPH_OPS",
              Family::kPlan, 0, kInt64Max, "an integer >= 0 (0: no limit)", "none=0",
              [](const OptionFields& f, int64_t v) { f.plan->limits.max_graph_ops = v; }),
    IntOption(ALPA_PLAN_OPT_MAX_LAYERS, "max_layers", "ALPA_PLAN_OPT_MAX_LAYERS", Family::kPlan, 0,
              kInt64Max, "an integer >= 0 (0: no limit)", "none=0",
              [](const OptionFields& f, int64_t v) { f.plan->limits.max_layers = v; }),
    IntOption(ALPA_PLAN_OPT_MAX_INTRA_OP_SOLVES, "max_intra_op_solves",
              "ALPA_PLAN_OPT_MAX_INTRA_OP_SOLVES", Family::kPlan, 0, kInt64Max,
              "an integer >= 0 (0: no limit)", "none=0",
              [](const OptionFields& f, int64_t v) { f.plan->limits.max_intra_op_solves = v; }),
    IntOption(ALPA_PLAN_OPT_PIPELINE_STAGES, "pipeline_stages", "ALPA_PLAN_OPT_PIPELINE_STAGES",
              Family::kPlan, 0, kInt32Max, "an integer >= 0 (0: searched)", "search=0",
              [](const OptionFields& f, int64_t v) {
                f.plan->pipeline_stages = static_cast<int32_t>(v);
              }),
    IntOption(ALPA_PLAN_OPT_MAX_TENSOR_PARALLEL, "max_tensor_parallel",
              "ALPA_PLAN_OPT_MAX_TENSOR_PARALLEL", Family::kPlan, 0, kInt64Max,
              "an integer >= 0 (0: no limit)", "none=0",
              [](const OptionFields& f, int64_t v) { f.plan->max_tensor_parallel = v; }),
    IntOption(
        ALPA_PLAN_OPT_TENSOR_PARALLEL_INSIDE_HOST, "tensor_parallel_inside_host",
        "ALPA_PLAN_OPT_TENSOR_PARALLEL_INSIDE_HOST", Family::kPlan, 0, 1, "0 or 1", kFlag,
        [](const OptionFields& f, int64_t v) { f.plan->tensor_parallel_inside_host = v == 1; }),
    DoubleOption(
        ALPA_PLAN_OPT_TENSOR_PARALLEL_ACROSS_HOSTS_MARGIN, "tensor_parallel_across_hosts_margin",
        "ALPA_PLAN_OPT_TENSOR_PARALLEL_ACROSS_HOSTS_MARGIN", Family::kPlan, 0.0, false, kInf, false,
        ">= 0 (infinity: inside hosts wherever a plan fits)",
        [](const OptionFields& f, double v) { f.plan->tensor_parallel_across_hosts_margin = v; }),
    IntOption(ALPA_PLAN_OPT_ZERO2, "zero2", "ALPA_PLAN_OPT_ZERO2", Family::kPlan, 0, 1,
              "0 (\"off\") or 1 (\"search\")", "off=0,search=1",
              [](const OptionFields& f, int64_t v) { f.plan->search_zero2 = v == 1; }),
    IntOption(ALPA_PLAN_OPT_ZERO3, "zero3", "ALPA_PLAN_OPT_ZERO3", Family::kPlan, 0, 1,
              "0 (\"off\") or 1 (\"search\")", "off=0,search=1",
              [](const OptionFields& f, int64_t v) { f.plan->search_zero3 = v == 1; }),
    IntOption(ALPA_PLAN_OPT_ZERO_BUBBLE, "zero_bubble", "ALPA_PLAN_OPT_ZERO_BUBBLE", Family::kPlan,
              0, 1, "0 (\"off\") or 1 (\"search\")", "off=0,search=1",
              [](const OptionFields& f, int64_t v) { f.plan->search_zero_bubble = v == 1; }),
    IntOption(ALPA_PLAN_OPT_INTERLEAVE, "interleave", "ALPA_PLAN_OPT_INTERLEAVE", Family::kPlan, 0,
              1, "0 (\"off\") or 1 (\"search\")", "off=0,search=1",
              [](const OptionFields& f, int64_t v) { f.plan->search_interleaving = v == 1; }),
    IntOption(ALPA_PLAN_OPT_NIC_PLACEMENT, "nic_placement", "ALPA_PLAN_OPT_NIC_PLACEMENT",
              Family::kPlan, 0, 1, "0 (\"off\") or 1 (\"search\")", "off=0,search=1",
              [](const OptionFields& f, int64_t v) { f.plan->place_near_nics = v == 1; }),
    IntOption(
        ALPA_PLAN_OPT_GRAPH_BATCH_DIM, "graph_batch_dim", "ALPA_PLAN_OPT_GRAPH_BATCH_DIM",
        Family::kPlan, -1, kInt32Max - 1, "an integer >= -1 (-1: the graph is one microbatch)",
        "none=-1",
        [](const OptionFields& f, int64_t v) { *f.graph_batch_dim = static_cast<int32_t>(v); }),
};

const char* FamilyName(Family family) {
  switch (family) {
    case Family::kSolve:
      return "solve";
    case Family::kShard:
      return "shard";
    case Family::kPlan:
      return "plan";
  }
  return "?";
}

const char* HolderName(OptionHolder holder) {
  return holder == OptionHolder::kSolveOptions ? "alpa_solve_options" : "alpa_plan_options";
}

bool Holds(OptionHolder holder, Family family) {
  return holder == OptionHolder::kSolveOptions ? family != Family::kPlan : family == Family::kPlan;
}

const Option* FindKey(int32_t key) {
  for (const Option& o : kOptions) {
    if (o.key == key) return &o;
  }
  return nullptr;
}

// The option called `name` in the holder's families first (names repeat across holders:
// "threads"), else in any family; nullptr when no family has it.
const Option* FindName(OptionHolder holder, const std::string& name) {
  const Option* foreign = nullptr;
  for (const Option& o : kOptions) {
    if (name != o.name) continue;
    if (Holds(holder, o.family)) return &o;
    foreign = &o;
  }
  return foreign;
}

std::string DoubleText(double value) {
  std::string text;
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  json_util::AppendNumber(value, &text);
  return text;
}

int32_t Reject(alpa_error** err, const Option& o, const std::string& got) {
  return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
              std::string(FamilyName(o.family)) + " option \"" + o.name + "\": must be " +
                  o.requirement + " (got " + got + ")");
}

// A key or name that exists, but in a family this handle does not hold.
int32_t RejectForeign(alpa_error** err, OptionHolder holder, const Option& o) {
  return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
              std::string(HolderName(holder)) + ": " + o.macro + " (" + std::to_string(o.key) +
                  ", \"" + o.name + "\") is a " + FamilyName(o.family) + " option; set it on " +
                  HolderName(holder == OptionHolder::kSolveOptions ? OptionHolder::kPlanOptions
                                                                   : OptionHolder::kSolveOptions));
}

// The row of `key` if this handle holds it; otherwise the error is reported.
const Option* Lookup(OptionHolder holder, int32_t key, alpa_error** err) {
  const Option* o = FindKey(key);
  if (o == nullptr) {
    Fail(err, ALPA_ERR_INVALID_ARGUMENT,
         std::string(HolderName(holder)) + ": unknown option key " + std::to_string(key));
    return nullptr;
  }
  if (!Holds(holder, o->family)) {
    RejectForeign(err, holder, *o);
    return nullptr;
  }
  return o;
}

bool InDoubleRange(const Option& o, double v) {
  const bool above = o.lo_open ? v > o.lo : v >= o.lo;
  const bool below = o.hi_open ? v < o.hi : v <= o.hi;
  return above && below;  // false for NaN
}

int32_t ApplyInt(const OptionFields& fields, const Option& o, int64_t value, alpa_error** err) {
  if (value < o.int_lo || value > o.int_hi) return Reject(err, o, std::to_string(value));
  o.set_int(fields, value);
  return ALPA_OK;
}

int32_t ApplyDouble(const OptionFields& fields, const Option& o, double value, alpa_error** err) {
  if (o.type == Type::kInt) {
    // An integral value in int64 (2^63 itself is out of range).
    if (!(value == std::floor(value) && value >= -9.2233720368547758e18 &&
          value < 9.2233720368547758e18)) {
      return Reject(err, o, DoubleText(value));
    }
    return ApplyInt(fields, o, static_cast<int64_t>(value), err);
  }
  if (!InDoubleRange(o, value)) return Reject(err, o, DoubleText(value));
  o.set_double(fields, value);
  return ALPA_OK;
}

// The value of `text` among the option's symbols ("true=1,false=0").
bool SymbolValue(const Option& o, const std::string& text, int64_t* out) {
  const std::string symbols = o.symbols;
  size_t start = 0;
  while (start < symbols.size()) {
    size_t end = symbols.find(',', start);
    if (end == std::string::npos) end = symbols.size();
    const std::string pair = symbols.substr(start, end - start);
    const size_t eq = pair.find('=');
    if (pair.compare(0, eq, text) == 0 && eq == text.size()) {
      *out = std::strtoll(pair.c_str() + eq + 1, nullptr, 10);
      return true;
    }
    start = end + 1;
  }
  return false;
}

// The number a whole text spells (strtod forms, "16e9"); false for anything else.
bool ParseDouble(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == nullptr || *end != '\0') return false;
  *out = number;
  return true;
}

// An int64 literal, read exactly (strtod would round above 2^53).
bool ParseExactInteger(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long exact = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0') return false;
  *out = static_cast<int64_t>(exact);
  return true;
}

}  // namespace

int32_t SetOptionInt(OptionHolder holder, const OptionFields& fields, int32_t key, int64_t value,
                     alpa_error** err) {
  const Option* o = Lookup(holder, key, err);
  if (o == nullptr) return ALPA_ERR_INVALID_ARGUMENT;
  if (o->type == Type::kDouble) return ApplyDouble(fields, *o, static_cast<double>(value), err);
  return ApplyInt(fields, *o, value, err);
}

int32_t SetOptionDouble(OptionHolder holder, const OptionFields& fields, int32_t key, double value,
                        alpa_error** err) {
  const Option* o = Lookup(holder, key, err);
  if (o == nullptr) return ALPA_ERR_INVALID_ARGUMENT;
  return ApplyDouble(fields, *o, value, err);
}

int32_t SetOptionByName(OptionHolder holder, const OptionFields& fields, const std::string& name,
                        const std::string& text, alpa_error** err) {
  const Option* o = FindName(holder, name);
  if (o == nullptr) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                std::string(HolderName(holder)) + ": unknown option \"" + name + "\"");
  }
  if (!Holds(holder, o->family)) return RejectForeign(err, holder, *o);
  int64_t integer = 0;
  if (o->type == Type::kInt &&
      (SymbolValue(*o, text, &integer) || ParseExactInteger(text, &integer))) {
    return ApplyInt(fields, *o, integer, err);
  }
  double number = 0;
  if (!ParseDouble(text, &number)) return Reject(err, *o, "\"" + text + "\"");
  return ApplyDouble(fields, *o, number, err);
}

int32_t OptionKeyOfName(OptionHolder holder, const std::string& name) {
  const Option* o = FindName(holder, name);
  return o != nullptr && Holds(holder, o->family) ? o->key : -1;
}

}  // namespace alpa::capi
