// A plan JSON as the simulator's input, and a simulation as JSON (plan_simulation.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/util/json_document.h"
#include "core/util/json_util.h"
#include "core/util/number_text.h"
#include "exec/sim/plan_simulation.h"

namespace alpa {
namespace {

using nlohmann::json;

constexpr const char* kWhere = "plan JSON: ";
constexpr int kMaxDepth = 64;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

Status Malformed(const std::string& path, const std::string& what) {
  return ParseError(kWhere + path + ": " + what);
}
Status OutOfRange(const std::string& path, const std::string& what) {
  return InvalidArgument(kWhere + path + ": " + what);
}

std::string Join(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path + "." + key;
}

// The field `key` of the object `obj` at `path`; a missing one is a kParse error.
Status Field(const json& obj, const std::string& path, const char* key, const json** out) {
  const auto it = obj.find(key);
  if (it == obj.end()) return Malformed(Join(path, key), "missing");
  *out = &*it;
  return Status::Ok();
}

Status Object(const json& j, const std::string& path) {
  return j.is_object() ? Status::Ok()
                       : Malformed(path.empty() ? "top" : path, "expected an object");
}

Status Array(const json& obj, const std::string& path, const char* key, const json** out) {
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, out));
  return (*out)->is_array() ? Status::Ok() : Malformed(Join(path, key), "expected an array");
}

Status Double(const json& obj, const std::string& path, const char* key, double* out) {
  const json* j = nullptr;
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, &j));
  const json_util::Conversion c = json_util::ToDouble(*j, out);
  if (c != json_util::Conversion::kOk) {
    return Malformed(Join(path, key), json_util::ConversionMessage(c));
  }
  return Status::Ok();
}

// A non-negative number of seconds.
Status Seconds(const json& obj, const std::string& path, const char* key, double* out) {
  ALPA_RETURN_IF_ERROR(Double(obj, path, key, out));
  if (*out < 0) {
    return OutOfRange(Join(path, key), "must be >= 0 (got " + ExactDoubleText(*out) + ")");
  }
  return Status::Ok();
}

// An integer in [lo, hi]: kParse when not an integer, kInvalidArgument when out of range.
Status IntValue(const json& j, const std::string& path, int64_t lo, int64_t hi, int64_t* out) {
  const json_util::Conversion c = json_util::ToInt64(j, lo, hi, out);
  if (c == json_util::Conversion::kOutOfRange) {
    return OutOfRange(path, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                " (got " + j.dump() + ")");
  }
  if (c != json_util::Conversion::kOk) return Malformed(path, json_util::ConversionMessage(c));
  return Status::Ok();
}

Status Int(const json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
           int64_t* out) {
  const json* j = nullptr;
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, &j));
  return IntValue(*j, Join(path, key), lo, hi, out);
}

// "cluster": ClusterToJson's object plus "device_memory_bytes" (plan_json.cc).
Result<Cluster> ReadCluster(const json& root) {
  const json* j = nullptr;
  ALPA_RETURN_IF_ERROR(Field(root, "", "cluster", &j));
  ALPA_RETURN_IF_ERROR(Object(*j, "cluster"));
  if (!j->contains("pools") &&
      (!j->contains("intra_host_link") || !j->contains("inter_host_link"))) {
    return Malformed("cluster",
                     "has no links (a plan written before plans carried the whole cluster; "
                     "plan it again)");
  }
  json cluster = *j;
  cluster.erase("device_memory_bytes");
  Result<Cluster> c = ClusterFromJson(cluster);
  if (!c.ok()) {
    // Not JSON-shape errors are the cluster's values (ValidateCluster): out of range.
    return Status(c.status().code(), kWhere + c.status().message());
  }
  return c;
}

Status ReadStage(const json& j, const std::string& path, int64_t microbatches, int64_t devices,
                 PipelineSimStage* out, int32_t* first_layer, int32_t* last_layer) {
  ALPA_RETURN_IF_ERROR(Object(j, path));
  const json* ids = nullptr;
  ALPA_RETURN_IF_ERROR(Array(j, path, "devices", &ids));
  if (ids->empty()) return OutOfRange(Join(path, "devices"), "is empty");
  std::vector<int64_t> device_ids;
  for (size_t k = 0; k < ids->size(); ++k) {
    int64_t d = 0;
    ALPA_RETURN_IF_ERROR(IntValue((*ids)[k], Join(path, "devices") + "[" + std::to_string(k) + "]",
                                  0, devices - 1, &d));
    device_ids.push_back(d);
  }
  double latency = 0, forward = 0, overhead = 0;
  ALPA_RETURN_IF_ERROR(Seconds(j, path, "latency_seconds", &latency));
  ALPA_RETURN_IF_ERROR(Seconds(j, path, "forward_latency_seconds", &forward));
  ALPA_RETURN_IF_ERROR(Seconds(j, path, "iteration_overhead_seconds", &overhead));
  if (forward > latency) {
    return OutOfRange(Join(path, "forward_latency_seconds"), "exceeds latency_seconds (" +
                                                                 ExactDoubleText(forward) + " > " +
                                                                 ExactDoubleText(latency) + ")");
  }
  // Optional: plans written before ZB-H1 lack it (0: the input-gradient task runs the whole
  // backward).
  double weight_gradient = 0;
  if (j.contains("weight_gradient_latency_seconds")) {
    ALPA_RETURN_IF_ERROR(Seconds(j, path, "weight_gradient_latency_seconds", &weight_gradient));
    if (weight_gradient > latency - forward) {
      return OutOfRange(Join(path, "weight_gradient_latency_seconds"),
                        "exceeds the backward, latency_seconds - forward_latency_seconds (" +
                            ExactDoubleText(weight_gradient) + " > " +
                            ExactDoubleText(latency - forward) + ")");
    }
  }
  int64_t memory = 0, in_flight = 0, activation = 0;
  ALPA_RETURN_IF_ERROR(Int(j, path, "memory_bytes", 0, kInt64Max, &memory));
  ALPA_RETURN_IF_ERROR(Int(j, path, "in_flight", 0, microbatches, &in_flight));
  ALPA_RETURN_IF_ERROR(Int(j, path, "activation_bytes", 0, kInt64Max, &activation));
  if (in_flight > 0 && activation > memory / in_flight) {
    return OutOfRange(path, "in_flight x activation_bytes (" + std::to_string(in_flight) + " x " +
                                std::to_string(activation) + ") exceeds memory_bytes (" +
                                std::to_string(memory) + ")");
  }
  const json* layers = nullptr;
  ALPA_RETURN_IF_ERROR(Array(j, path, "layers", &layers));
  if (layers->size() != 2) return Malformed(Join(path, "layers"), "expected [first, last]");
  int64_t first = 0, last = 0;
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  ALPA_RETURN_IF_ERROR(IntValue((*layers)[0], Join(path, "layers") + "[0]", 0, kInt32Max, &first));
  ALPA_RETURN_IF_ERROR(IntValue((*layers)[1], Join(path, "layers") + "[1]", 0, kInt32Max, &last));
  *first_layer = static_cast<int32_t>(first);
  *last_layer = static_cast<int32_t>(last);
  *out = SimStageFromPlanned(std::move(device_ids), latency, forward, weight_gradient, overhead,
                             memory, in_flight, activation);
  return Status::Ok();
}

Status ReadTransfer(const json& j, const std::string& path, const PipelineSimInput& in,
                    const std::vector<std::vector<int64_t>>& sorted_devices,
                    PipelineSimTransfer* out, bool* once_per_iteration) {
  ALPA_RETURN_IF_ERROR(Object(j, path));
  *once_per_iteration = false;
  const int64_t stages = static_cast<int64_t>(in.stages.size());
  int64_t from = 0, to = 0, bytes = 0;
  ALPA_RETURN_IF_ERROR(Int(j, path, "from_stage", 0, stages - 1, &from));
  ALPA_RETURN_IF_ERROR(Int(j, path, "to_stage", 0, stages - 1, &to));
  ALPA_RETURN_IF_ERROR(Int(j, path, "bytes", 0, kInt64Max, &bytes));
  const json* direction = nullptr;
  ALPA_RETURN_IF_ERROR(Field(j, path, "direction", &direction));
  if (!direction->is_string()) return Malformed(Join(path, "direction"), "expected a string");
  const std::string dir = direction->get<std::string>();
  if (dir != "forward" && dir != "backward") {
    return OutOfRange(Join(path, "direction"),
                      "must be \"forward\" or \"backward\" (got \"" + dir + "\")");
  }
  out->from_stage = static_cast<int32_t>(from);
  out->to_stage = static_cast<int32_t>(to);
  out->bytes = bytes;
  out->direction =
      dir == "forward" ? SimTransferDirection::kForward : SimTransferDirection::kBackward;
  if ((dir == "forward") != (to > from)) {
    return OutOfRange(Join(path, "direction"),
                      "\"" + dir + "\" contradicts its stages (from " + std::to_string(from) +
                          " to " + std::to_string(to) + "): activations go to a later stage, " +
                          "gradients to an earlier one");
  }
  const auto once = j.find("once_per_iteration");
  if (once != j.end()) {
    if (!once->is_boolean())
      return Malformed(Join(path, "once_per_iteration"), "expected a boolean");
    *once_per_iteration = once->get<bool>();
  }
  // A local all-gather's all-gather on the receiving stage (planner.h), when there is one.
  if (j.contains("gather_seconds")) {
    ALPA_RETURN_IF_ERROR(Seconds(j, path, "gather_seconds", &out->gather_seconds));
  }
  const auto moves = j.find("moves");  // detail 1 only
  if (moves == j.end()) return Status::Ok();
  if (!moves->is_array()) return Malformed(Join(path, "moves"), "expected an array");
  const std::vector<int64_t>& src_ids = sorted_devices[static_cast<size_t>(from)];
  const std::vector<int64_t>& dst_ids = sorted_devices[static_cast<size_t>(to)];
  for (size_t k = 0; k < moves->size(); ++k) {
    const json& m = (*moves)[k];
    const std::string mpath = Join(path, "moves") + "[" + std::to_string(k) + "]";
    ALPA_RETURN_IF_ERROR(Object(m, mpath));
    SimSliceMove move;
    ALPA_RETURN_IF_ERROR(Int(m, mpath, "src", 0, kInt64Max, &move.src_device));
    ALPA_RETURN_IF_ERROR(Int(m, mpath, "dst", 0, kInt64Max, &move.dst_device));
    ALPA_RETURN_IF_ERROR(Int(m, mpath, "bytes", 0, kInt64Max, &move.bytes));
    if (!std::binary_search(src_ids.begin(), src_ids.end(), move.src_device)) {
      return OutOfRange(
          Join(mpath, "src"),
          std::to_string(move.src_device) + " is not a device of stage " + std::to_string(from));
    }
    if (!std::binary_search(dst_ids.begin(), dst_ids.end(), move.dst_device)) {
      return OutOfRange(Join(mpath, "dst"), std::to_string(move.dst_device) +
                                                " is not a device of stage " + std::to_string(to));
    }
    out->slices.push_back(move);
  }
  return Status::Ok();
}

Result<PipelineSimInput> ReadPlan(const json& root, PipelineScheduleKind schedule,
                                  PlanSimulationContext* context) {
  ALPA_RETURN_IF_ERROR(Object(root, ""));
  const json* format = nullptr;
  ALPA_RETURN_IF_ERROR(Field(root, "", "format", &format));
  if (!format->is_string() || format->get<std::string>() != "alpa-plan") {
    return Malformed("format", "expected \"alpa-plan\" (got " + format->dump() + ")");
  }
  int64_t version = 0;
  ALPA_RETURN_IF_ERROR(Int(root, "", "version", 0, kInt64Max, &version));
  if (version != 1) {
    return Malformed("version", "unsupported version " + std::to_string(version) +
                                    " (this library reads version 1)");
  }
  Result<Cluster> parsed_cluster = ReadCluster(root);
  if (!parsed_cluster.ok()) return parsed_cluster.status();
  const Cluster& cluster = parsed_cluster.value();
  if (cluster.hosts > std::numeric_limits<int32_t>::max() ||
      cluster.devices_per_host > std::numeric_limits<int32_t>::max()) {
    return OutOfRange("cluster", "too many hosts or devices per host for the simulator");
  }
  PipelineSimInput in;
  SetSimCluster(cluster, in);
  in.schedule = schedule;
  ALPA_RETURN_IF_ERROR(Int(root, "", "microbatches", 1, kMaxSimMicrobatches, &in.microbatches));
  // Stages per device group: written only for interleaved 1F1B plans (plan_json.cc).
  if (root.contains("virtual_stages")) {
    int64_t virtual_stages = 1;
    ALPA_RETURN_IF_ERROR(
        Int(root, "", "virtual_stages", 1, std::numeric_limits<int32_t>::max(), &virtual_stages));
    in.virtual_stages = static_cast<int32_t>(virtual_stages);
  }
  const Status fits = CheckPlanSchedule(in.virtual_stages, schedule);
  if (!fits.ok()) return Status(fits.code(), kWhere + fits.message());

  PlanSimulationContext ctx;
  ctx.cluster = cluster.name;
  ctx.device_memory_bytes = cluster.device.memory_bytes;
  ALPA_RETURN_IF_ERROR(Seconds(root, "", "iteration_seconds", &ctx.planner_iteration_seconds));
  const auto model = root.find("model");
  if (model != root.end()) {
    if (!model->is_string()) return Malformed("model", "expected a string");
    ctx.model = model->get<std::string>();
  }

  const json* stages = nullptr;
  ALPA_RETURN_IF_ERROR(Array(root, "", "stages", &stages));
  if (stages->empty()) return OutOfRange("stages", "is empty");
  if (stages->size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return OutOfRange("stages", "too many stages");
  }
  std::vector<std::vector<int64_t>> sorted_devices;
  for (size_t s = 0; s < stages->size(); ++s) {
    PipelineSimStage stage;
    int32_t first = 0, last = 0;
    ALPA_RETURN_IF_ERROR(ReadStage((*stages)[s], "stages[" + std::to_string(s) + "]",
                                   in.microbatches, cluster.num_devices(), &stage, &first, &last));
    std::vector<int64_t> ids = stage.devices;
    if (cluster.mixed())
      ctx.stage_device_memory_bytes.push_back(DevicesCluster(cluster, ids).device.memory_bytes);
    std::sort(ids.begin(), ids.end());
    sorted_devices.push_back(std::move(ids));
    in.stages.push_back(std::move(stage));
    ctx.first_layer.push_back(first);
    ctx.last_layer.push_back(last);
  }
  const json* transfers = nullptr;
  ALPA_RETURN_IF_ERROR(Array(root, "", "transfers", &transfers));
  for (size_t t = 0; t < transfers->size(); ++t) {
    PipelineSimTransfer tr;
    bool once = false;
    const std::string path = "transfers[" + std::to_string(t) + "]";
    ALPA_RETURN_IF_ERROR(ReadTransfer((*transfers)[t], path, in, sorted_devices, &tr, &once));
    // Accumulated and sent once before the receiver's sync: the planner already charges it in
    // the receiver's iteration_overhead_seconds.
    if (once) continue;
    in.transfers.push_back(std::move(tr));
  }
  const Status valid = ValidatePipelineSimInput(in);
  if (!valid.ok()) return Status(valid.code(), kWhere + valid.message());
  if (context != nullptr) *context = std::move(ctx);
  return in;
}

// A number, or null when not finite (JSON has no NaN).
json NumberOrNull(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

}  // namespace

Result<PipelineSimInput> SimInputFromPlanJson(std::string_view plan_json,
                                              PipelineScheduleKind schedule,
                                              PlanSimulationContext* context) {
  ALPA_RETURN_IF_ERROR(CheckJsonNesting(plan_json, kMaxDepth, "plan JSON"));
  Result<JsonDocument> root = ParseJsonDocument(plan_json, JsonRoot::kObjectOnly);
  if (!root.ok()) {
    if (root.status().code() == StatusCode::kOutOfMemory) {
      return Status(StatusCode::kOutOfMemory, "out of memory while reading the plan JSON");
    }
    return ParseError("plan JSON: invalid JSON: " + root.status().message());
  }
  try {
    return ReadPlan(root.value().root(), schedule, context);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while reading the plan JSON");
  } catch (const std::exception& e) {
    return ParseError(std::string("plan JSON: invalid JSON: ") + JsonErrorMessage(e.what()));
  }
}

namespace {

json PricedJson(const PricedSeconds& priced, int32_t device) {
  json j = {{"seconds", priced.simulated()},
            {"device", device},
            {"not_in_plan", priced.not_in_plan},
            {"deferred_backward", priced.deferred_backward},
            {"transfer_gather", priced.transfer_gather}};
  for (int32_t p = 0; p < kPricedParts; ++p) {
    j[PricedPartName(static_cast<PricedPart>(p))] = priced.part[p];
  }
  return j;
}

json ProgramPriceJson(const ProgramStagePrice& price) {
  return {{"forward", PricedJson(price.forward, price.forward_device)},
          {"backward", PricedJson(price.backward, price.backward_device)},
          {"update", PricedJson(price.update, price.update_device)},
          {"instructions", price.instructions},
          {"planned_forward_seconds", price.planned_forward},
          {"planned_backward_seconds", price.planned_backward},
          {"planned_overhead_seconds", price.planned_overhead},
          {"planned_parameter_seconds",
           {price.parameter_forward, price.parameter_backward, price.parameter_update}}};
}

}  // namespace

std::string SimulationJson(const PipelineSimInput& input, const PipelineSimResult& result,
                           const PlanSimulationContext& context) {
  json j;
  j["format"] = "alpa-simulation";
  j["version"] = 1;
  j["model"] = context.model;
  j["cluster"] = {{"name", context.cluster},
                  {"hosts", input.hosts},
                  {"devices_per_host", input.devices_per_host}};
  j["schedule"] = PipelineScheduleName(input.schedule);
  const auto num_stages = static_cast<int32_t>(input.stages.size());
  const int32_t groups = PipelineGroups(num_stages, input.virtual_stages);
  if (input.virtual_stages > 1) j["virtual_stages"] = input.virtual_stages;
  j["microbatches"] = input.microbatches;
  j["iteration_seconds"] = result.iteration_seconds;
  j["closed_form_seconds"] = result.closed_form_seconds;
  j["planner_iteration_seconds"] = NumberOrNull(context.planner_iteration_seconds);
  j["relative_error"] = NumberOrNull(PlanPredictionError(result, context));
  j["priced_from"] = context.program_prices.empty() ? "plan" : "programs";
  if (!context.program_prices.empty()) j["lowered_microbatches"] = context.lowered_microbatches;
  json stages = json::array();
  bool memory_exceeded = false;
  for (size_t s = 0; s < input.stages.size(); ++s) {
    const PipelineSimStage& st = input.stages[s];
    const SimStageStats& r = result.stages[s];
    json stage = {{"devices", st.devices},
                  {"forward_seconds", st.forward_seconds},
                  {"backward_seconds", st.backward_seconds},
                  {"weight_gradient_seconds", st.weight_gradient_seconds},
                  {"gradient_sync_seconds", st.gradient_sync_seconds},
                  {"update_seconds", st.update_seconds},
                  {"busy_seconds", r.busy_seconds},
                  {"communication_wait_seconds", r.communication_wait_seconds},
                  {"idle_seconds", r.idle_seconds},
                  {"bubble_fraction", r.bubble_fraction},
                  {"finish_seconds", r.finish_seconds},
                  {"peak_in_flight", r.peak_in_flight},
                  {"peak_memory_bytes", r.peak_memory_bytes}};
    const int64_t memory = s < context.stage_device_memory_bytes.size()
                               ? context.stage_device_memory_bytes[s]
                               : context.device_memory_bytes;
    if (memory > 0) {
      const bool exceeds = r.peak_memory_bytes > memory;
      stage["exceeds_device_memory"] = exceeds;
      memory_exceeded = memory_exceeded || exceeds;
    }
    // Under interleaving the statistics and the memory are the device group's.
    if (input.virtual_stages > 1 && groups > 0) {
      stage["group"] = StageGroup(num_stages, input.virtual_stages, static_cast<int32_t>(s));
    }
    if (s < context.first_layer.size() && s < context.last_layer.size()) {
      stage["layers"] = {context.first_layer[s], context.last_layer[s]};
    }
    if (s < context.program_prices.size())
      stage["programs"] = ProgramPriceJson(context.program_prices[s]);
    stages.push_back(std::move(stage));
  }
  j["stages"] = std::move(stages);
  if (context.device_memory_bytes > 0) {
    j["device_memory_bytes"] = context.device_memory_bytes;
    j["memory_exceeded"] = memory_exceeded;  // some stage's peak exceeds the device memory
  }
  int64_t forward = 0, backward = 0, moves = 0;
  long double bytes = 0;  // moved per microbatch, over all transfers
  for (const PipelineSimTransfer& t : input.transfers) {
    (t.direction == SimTransferDirection::kForward ? forward : backward) += 1;
    if (t.slices.empty()) {
      bytes += static_cast<long double>(t.bytes);
      const size_t from = input.stages[static_cast<size_t>(t.from_stage)].devices.size();
      const size_t to = input.stages[static_cast<size_t>(t.to_stage)].devices.size();
      moves += static_cast<int64_t>(std::min(from, to));
    } else {
      for (const SimSliceMove& m : t.slices) bytes += static_cast<long double>(m.bytes);
      moves += static_cast<int64_t>(t.slices.size());
    }
  }
  j["transfers"] = {{"forward", forward},
                    {"backward", backward},
                    {"moves_per_microbatch", moves},
                    {"bytes_per_microbatch", static_cast<double>(bytes)}};
  return j.dump();
}

}  // namespace alpa
