// Reading an executable plan JSON (plan_json_read.h). One function per part of the plan, in
// the order each needs the previous: cluster, graph, clustering, stages (with their pieces cut
// from the graph), transfers, prediction.
#include "solvers/planner/plan_json_read.h"

#include <algorithm>
#include <memory>
#include <new>
#include <set>
#include <utility>
#include <vector>

#include "core/ir/graph_json.h"
#include "core/util/json_util.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/plan_json_fields.h"
#include "solvers/planner/plan_json_read_piece.h"
#include "solvers/planner/stage_costs.h"

namespace alpa {
namespace {

using namespace plan_json_fields;  // NOLINT(google-build-using-namespace): the reader's vocabulary

constexpr int kMaxDepth = 64;
constexpr const char* kFormat = "alpa-plan";
constexpr int64_t kVersion = 1;

Status CheckFormat(const Json& root) {
  if (!root.is_object()) return Malformed("", "expected an object");
  std::string format;
  ALPA_RETURN_IF_ERROR(String(root, "", "format", &format));
  if (format != kFormat) {
    return Malformed("format",
                     "expected \"" + std::string(kFormat) + "\" (got \"" + format + "\")");
  }
  const Json* version = nullptr;
  ALPA_RETURN_IF_ERROR(Field(root, "", "version", &version));
  if (*version != kVersion) {
    return Malformed("version", version->dump() + " is not supported (this library reads " +
                                    std::to_string(kVersion) + ")");
  }
  if (!root.contains("graph")) {
    return Malformed("graph",
                     "missing: not an executable plan (detail 0 or 1); write it at "
                     "detail 2, as `alpa plan -o` does");
  }
  return Status::Ok();
}

// "cluster": ClusterToJson's object plus "device_memory_bytes" (plan_json.cc).
Result<Cluster> ReadCluster(const Json& root) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(ObjectField(root, "", "cluster", &j));
  Json cluster = *j;
  cluster.erase("device_memory_bytes");
  Result<Cluster> c = ClusterFromJson(cluster);
  if (!c.ok()) return Status(c.status().code(), "plan JSON: cluster: " + c.status().message());
  return c;
}

Result<Graph> ReadGraph(const Json& root) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(ObjectField(root, "", "graph", &j));
  Result<Graph> graph = GraphFromJson(*j);
  if (!graph.ok()) {
    return Status(graph.status().code(), "plan JSON: graph: " + graph.status().message());
  }
  return graph;
}

// "layers", "layers_from_markers" and "clustering".
Status ReadClustering(const Json& root, const Graph& graph, LayerClustering* out) {
  const Json* layers = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(root, "", "layers", &layers));
  if (layers->empty()) return Invalid("layers", "is empty");
  if (layers->size() > static_cast<size_t>(kInt32Max)) return Invalid("layers", "too many");
  out->num_layers = static_cast<int32_t>(layers->size());
  for (size_t g = 0; g < layers->size(); ++g) {
    int32_t first = 0;
    double flops = 0;
    ALPA_RETURN_IF_ERROR(Int32(layers->at(g), At("layers", g), "first_unit", 0, kInt32Max, &first));
    ALPA_RETURN_IF_ERROR(Double(layers->at(g), At("layers", g), "forward_flops", &flops));
    out->first_unit.push_back(first);
    out->flops.push_back(flops);
  }
  ALPA_RETURN_IF_ERROR(Bool(root, "", "layers_from_markers", &out->from_markers));
  const Json* clustering = nullptr;
  ALPA_RETURN_IF_ERROR(ObjectField(root, "", "clustering", &clustering));
  ALPA_RETURN_IF_ERROR(
      Int32List(*clustering, "clustering", "op_layer", -1, out->num_layers - 1, &out->op_layer));
  if (out->op_layer.size() != static_cast<size_t>(graph.size())) {
    return Invalid("clustering.op_layer", "has " + std::to_string(out->op_layer.size()) +
                                              " entries, the graph " +
                                              std::to_string(graph.size()) + " ops");
  }
  if (out->from_markers) {
    for (int32_t v = 0; v < graph.size(); ++v) {
      if (out->op_layer[static_cast<size_t>(v)] >= 0 && graph.op(v).layer < 0) {
        return Invalid(At("clustering.op_layer", static_cast<size_t>(v)),
                       "op '" + graph.op(v).name +
                           "' has no layer marker, but the layers come from the markers");
      }
    }
  }
  return Status::Ok();
}

// "remat": false (none), true (full) or "selective"; also the words "off" and "on".
Status ReadRecompute(const Json& obj, const std::string& path, Recompute* out) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(Field(obj, path, "remat", &j));
  if (j->is_boolean()) {
    *out = j->get<bool>() ? Recompute::kFull : Recompute::kNone;
    return Status::Ok();
  }
  const std::optional<Recompute> r =
      j->is_string() ? ParseRecompute(j->get<std::string>()) : std::nullopt;
  if (!r) return Malformed(Join(path, "remat"), "expected true, false or \"selective\"");
  *out = *r;
  return Status::Ok();
}

Status ReadStageFields(const Json& j, const std::string& path, PlannedStage* st) {
  std::vector<int32_t> layers;
  ALPA_RETURN_IF_ERROR(Int32List(j, path, "layers", 0, kInt32Max, &layers));
  if (layers.size() != 2) return Invalid(Join(path, "layers"), "expected [first, last]");
  st->first_layer = layers[0];
  st->last_layer = layers[1];
  std::vector<int64_t> submesh;
  ALPA_RETURN_IF_ERROR(Int64List(j, path, "submesh", 1, kInt64Max, &submesh));
  if (submesh.size() != 2) return Invalid(Join(path, "submesh"), "expected [hosts, per host]");
  st->submesh = SubmeshShape{submesh[0], submesh[1]};
  ALPA_RETURN_IF_ERROR(Int64List(j, path, "logical_mesh", 1, kInt64Max, &st->logical_mesh));
  if (st->logical_mesh.empty() || st->logical_mesh.size() > 10) {
    return Invalid(Join(path, "logical_mesh"), "must have 1 to 10 dims");
  }
  ALPA_RETURN_IF_ERROR(Int64List(j, path, "devices", 0, kInt64Max, &st->devices));
  ALPA_RETURN_IF_ERROR(Int(j, path, "data_parallel", 1, kInt64Max, &st->data_parallel));
  ALPA_RETURN_IF_ERROR(Int(j, path, "tensor_parallel", 1, kInt64Max, &st->tensor_parallel));
  ALPA_RETURN_IF_ERROR(Bool(j, path, "zero", &st->zero));
  // Plans written before ZeRO-2 have no "shard_gradients": ZeRO-1 at most.
  if (j.contains("shard_gradients")) {
    ALPA_RETURN_IF_ERROR(Bool(j, path, "shard_gradients", &st->shard_gradients));
  }
  // Nor "shard_parameters" (ZeRO-3), which the layouts of such a plan's weights show.
  if (j.contains("shard_parameters")) {
    ALPA_RETURN_IF_ERROR(Bool(j, path, "shard_parameters", &st->shard_parameters));
  }
  ALPA_RETURN_IF_ERROR(ReadRecompute(j, path, &st->remat));
  ALPA_RETURN_IF_ERROR(Int32(j, path, "memory_level", 0, kInt32Max, &st->memory_level));
  ALPA_RETURN_IF_ERROR(Double(j, path, "latency_seconds", &st->latency));
  ALPA_RETURN_IF_ERROR(Double(j, path, "forward_latency_seconds", &st->forward_latency));
  // Plans written before ZB-H1 have no weight-gradient part: their backward is one task.
  if (j.contains("weight_gradient_latency_seconds")) {
    ALPA_RETURN_IF_ERROR(
        Double(j, path, "weight_gradient_latency_seconds", &st->weight_gradient_latency));
    if (st->weight_gradient_latency < 0 ||
        st->weight_gradient_latency > st->latency - st->forward_latency) {
      return Invalid(Join(path, "weight_gradient_latency_seconds"),
                     "must be >= 0 and at most latency_seconds - forward_latency_seconds");
    }
  }
  ALPA_RETURN_IF_ERROR(Double(j, path, "iteration_overhead_seconds", &st->iteration_overhead));
  ALPA_RETURN_IF_ERROR(Int(j, path, "memory_bytes", 0, kInt64Max, &st->memory_bytes));
  ALPA_RETURN_IF_ERROR(Int(j, path, "activation_bytes", 0, kInt64Max, &st->activation_bytes));
  return Int(j, path, "in_flight", 0, kInt64Max, &st->in_flight);
}

// The stage's devices: as many as its logical mesh and its submesh hold, each a device of the
// cluster that no earlier stage uses.
Status CheckStageDevices(const PlannedStage& st, const std::string& path, const Cluster& cluster,
                         std::set<int64_t>& used) {
  const int64_t count = static_cast<int64_t>(st.devices.size());
  int64_t mesh_devices = 1;
  for (int64_t d : st.logical_mesh) {
    if (__builtin_mul_overflow(mesh_devices, d, &mesh_devices)) {
      return Invalid(Join(path, "logical_mesh"), "too many devices");
    }
  }
  if (mesh_devices != count) {
    return Invalid(Join(path, "logical_mesh"), "has " + std::to_string(mesh_devices) +
                                                   " devices, its device list " +
                                                   std::to_string(count));
  }
  int64_t submesh_devices = 0;
  if (__builtin_mul_overflow(st.submesh.hosts, st.submesh.devices_per_host, &submesh_devices) ||
      submesh_devices != count) {
    return Invalid(Join(path, "submesh"),
                   "does not hold the stage's " + std::to_string(count) + " devices");
  }
  for (size_t k = 0; k < st.devices.size(); ++k) {
    const int64_t d = st.devices[k];
    if (d >= cluster.num_devices()) {
      return Invalid(At(Join(path, "devices"), k), "device " + std::to_string(d) +
                                                       " is not in the cluster's " +
                                                       std::to_string(cluster.num_devices()));
    }
    if (!used.insert(d).second) {
      return Invalid(
          At(Join(path, "devices"), k),
          "device " + std::to_string(d) + " is listed twice (in this or an earlier stage)");
    }
  }
  return Status::Ok();
}

// The stage's pieces: the pieces of its layer groups, each cut from the graph.
Status ReadStagePieces(const Json& j, const std::string& path, const Graph& graph,
                       const StagePieces& assignment, PlannedStage* st) {
  const Json* pieces = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(j, path, "pieces", &pieces));
  const int32_t p0 = assignment.group_first_piece[static_cast<size_t>(st->first_layer)];
  const int32_t p1 = assignment.group_first_piece[static_cast<size_t>(st->last_layer) + 1];
  if (pieces->size() != static_cast<size_t>(p1 - p0)) {
    return Invalid(Join(path, "pieces"), "has " + std::to_string(pieces->size()) +
                                             " pieces, its layers " + std::to_string(p1 - p0));
  }
  for (int32_t p = p0; p < p1; ++p) {
    const std::string where = At(Join(path, "pieces"), static_cast<size_t>(p - p0));
    const Json& piece = (*pieces)[static_cast<size_t>(p - p0)];
    int32_t marker = 0;
    ALPA_RETURN_IF_ERROR(Int32(piece, where, "layer_marker", -1, kInt32Max, &marker));
    if (marker != assignment.piece_marker[static_cast<size_t>(p)]) {
      return Invalid(Join(where, "layer_marker"),
                     std::to_string(marker) + ", but the clustering gives piece " +
                         std::to_string(p) + " layer marker " +
                         std::to_string(assignment.piece_marker[static_cast<size_t>(p)]));
    }
    Result<Subgraph> sub = ExtractSubgraph(graph, assignment.op_piece, p, p);
    if (!sub.ok()) return Invalid(where, sub.status().message());
    Result<AutoShardResult> sharding =
        ReadPieceSharding(piece, where, sub.value(), st->logical_mesh);
    if (!sharding.ok()) return sharding.status();
    st->pieces.push_back({marker, std::make_shared<const Subgraph>(std::move(sub).value()),
                          std::make_shared<const AutoShardResult>(std::move(sharding).value())});
  }
  return Status::Ok();
}

Status ReadStages(const Json& root, const Cluster& cluster, PipelinePlan* plan) {
  StagePieces assignment;
  AssignStagePieces(plan->graph, plan->clustering, assignment);
  for (size_t g = 0; g + 1 < assignment.group_first_piece.size(); ++g) {
    if (assignment.group_first_piece[g] > assignment.group_first_piece[g + 1]) {
      return Invalid(At("layers", g + 1), "first_unit comes before layer " + std::to_string(g) +
                                              "'s (layers must be in graph order)");
    }
  }
  const Json* stages = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(root, "", "stages", &stages));
  if (stages->empty()) return Invalid("stages", "is empty");
  if (stages->size() > static_cast<size_t>(kInt32Max)) return Invalid("stages", "too many");
  const int32_t count = static_cast<int32_t>(stages->size());
  const std::string problem =
      PipelineShapeProblem(plan->schedule, count, plan->virtual_stages, plan->microbatches);
  if (!problem.empty()) return Invalid("virtual_stages", problem);
  // The stages of the first device group place the devices; the later ones repeat them
  // (CheckDeviceGroups).
  const size_t groups = static_cast<size_t>(PipelineGroups(count, plan->virtual_stages));
  std::set<int64_t> used;
  int32_t next_layer = 0;
  for (size_t s = 0; s < stages->size(); ++s) {
    const std::string path = At("stages", s);
    PlannedStage st;
    ALPA_RETURN_IF_ERROR(ReadStageFields((*stages)[s], path, &st));
    if (st.first_layer != next_layer || st.last_layer < st.first_layer ||
        st.last_layer >= plan->clustering.num_layers) {
      return Invalid(Join(path, "layers"), "must start at layer " + std::to_string(next_layer) +
                                               " and end at or after it, before " +
                                               std::to_string(plan->clustering.num_layers));
    }
    next_layer = st.last_layer + 1;
    std::set<int64_t> repeated;
    ALPA_RETURN_IF_ERROR(CheckStageDevices(st, path, cluster, s < groups ? used : repeated));
    ALPA_RETURN_IF_ERROR(ReadStagePieces((*stages)[s], path, plan->graph, assignment, &st));
    plan->stages.push_back(std::move(st));
  }
  if (next_layer != plan->clustering.num_layers) {
    return Invalid("stages", "cover layers 0.." + std::to_string(next_layer - 1) + " of " +
                                 std::to_string(plan->clustering.num_layers));
  }
  return Status::Ok();
}

// Per stage: its devices, sorted (a move's devices are looked up in them).
using SortedDevices = std::vector<std::vector<int64_t>>;

bool Holds(const std::vector<int64_t>& sorted, int64_t device) {
  return std::binary_search(sorted.begin(), sorted.end(), device);
}

Status ReadMove(const Json& j, const std::string& path, const std::vector<int64_t>& from,
                const std::vector<int64_t>& to, const std::vector<int64_t>& shape, SliceMove* m) {
  ALPA_RETURN_IF_ERROR(Int(j, path, "src", 0, kInt64Max, &m->src_device));
  if (!Holds(from, m->src_device)) return Invalid(Join(path, "src"), "not a device of from_stage");
  ALPA_RETURN_IF_ERROR(Int(j, path, "dst", 0, kInt64Max, &m->dst_device));
  if (!Holds(to, m->dst_device)) return Invalid(Join(path, "dst"), "not a device of to_stage");
  ALPA_RETURN_IF_ERROR(Int64List(j, path, "offsets", 0, kInt64Max, &m->offsets));
  ALPA_RETURN_IF_ERROR(Int64List(j, path, "sizes", 0, kInt64Max, &m->sizes));
  if (m->offsets.size() != shape.size() || m->sizes.size() != shape.size()) {
    return Invalid(path,
                   "offsets and sizes must have the tensor's rank " + std::to_string(shape.size()));
  }
  for (size_t k = 0; k < shape.size(); ++k) {
    if (m->offsets[k] > shape[k] || m->sizes[k] > shape[k] - m->offsets[k]) {
      return Invalid(path, "slice dim " + std::to_string(k) + " leaves the tensor's " +
                               std::to_string(shape[k]));
    }
  }
  return Int(j, path, "bytes", 0, kInt64Max, &m->bytes);
}

Status ReadTransfer(const Json& j, const std::string& path, const PipelinePlan& plan,
                    const SortedDevices& devices, CrossStageTransfer* t) {
  const int64_t last_stage = static_cast<int64_t>(plan.stages.size()) - 1;
  ALPA_RETURN_IF_ERROR(Int32(j, path, "from_stage", 0, last_stage, &t->from_stage));
  ALPA_RETURN_IF_ERROR(Int32(j, path, "to_stage", 0, last_stage, &t->to_stage));
  if (t->from_stage == t->to_stage) return Invalid(path, "from_stage equals to_stage");
  ALPA_RETURN_IF_ERROR(Int32(j, path, "tensor", 0, plan.graph.size() - 1, &t->tensor));
  const Op& op = plan.graph.op(t->tensor);
  std::string name;
  ALPA_RETURN_IF_ERROR(String(j, path, "name", &name));
  if (name != op.name) {
    return Invalid(Join(path, "name"), "\"" + name + "\" is not the name of op " +
                                           std::to_string(t->tensor) + " ('" + op.name + "')");
  }
  ALPA_RETURN_IF_ERROR(Int(j, path, "bytes", 0, kInt64Max, &t->bytes));
  ALPA_RETURN_IF_ERROR(Bool(j, path, "once_per_iteration", &t->once_per_iteration));
  ALPA_RETURN_IF_ERROR(Double(j, path, "seconds", &t->seconds));
  const PlannedStage& from = plan.stages[static_cast<size_t>(t->from_stage)];
  const PlannedStage& to = plan.stages[static_cast<size_t>(t->to_stage)];
  ALPA_RETURN_IF_ERROR(Spec(j, path, "from_spec", &t->from_spec));
  // A free or fused producer has no layout of its own: the default spec (planner.h).
  if (t->from_spec != ShardingSpec()) {
    const Status s = ValidateShardingSpec(t->from_spec, op.shape, from.logical_mesh);
    if (!s.ok()) return Invalid(Join(path, "from_spec"), s.message());
  }
  ALPA_RETURN_IF_ERROR(Spec(j, path, "to_spec", &t->to_spec));
  const Status s = ValidateShardingSpec(t->to_spec, op.shape, to.logical_mesh);
  if (!s.ok()) return Invalid(Join(path, "to_spec"), s.message());
  // A local all-gather (planner.h): optional, a layout to_spec's all-gather starts from.
  if (j.contains("landing_spec")) {
    ShardingSpec landing;
    ALPA_RETURN_IF_ERROR(Spec(j, path, "landing_spec", &landing));
    const Status valid = ValidateShardingSpec(landing, op.shape, to.logical_mesh);
    if (!valid.ok()) return Invalid(Join(path, "landing_spec"), valid.message());
    Result<std::vector<int32_t>> gather = LandingGatherDims(landing, t->to_spec);
    if (!gather.ok()) return Invalid(Join(path, "landing_spec"), gather.status().message());
    if (t->once_per_iteration) {
      return Invalid(Join(path, "landing_spec"),
                     "a transfer sent once per iteration has no local all-gather");
    }
    t->landing_spec = landing;
    ALPA_RETURN_IF_ERROR(Double(j, path, "gather_seconds", &t->gather_seconds));
    if (!(t->gather_seconds >= 0)) return Invalid(Join(path, "gather_seconds"), "must be >= 0");
  }
  const Json* moves = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(j, path, "moves", &moves));
  int64_t move_count = 0;
  ALPA_RETURN_IF_ERROR(Int(j, path, "move_count", 0, kInt64Max, &move_count));
  if (static_cast<size_t>(move_count) != moves->size()) {
    return Invalid(Join(path, "move_count"), "differs from the moves listed");
  }
  t->moves.resize(moves->size());
  for (size_t k = 0; k < moves->size(); ++k) {
    ALPA_RETURN_IF_ERROR(ReadMove(
        (*moves)[k], At(Join(path, "moves"), k), devices[static_cast<size_t>(t->from_stage)],
        devices[static_cast<size_t>(t->to_stage)], op.shape, &t->moves[k]));
  }
  return Status::Ok();
}

Status ReadTransfers(const Json& root, PipelinePlan* plan) {
  const Json* transfers = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(root, "", "transfers", &transfers));
  SortedDevices devices;
  for (const PlannedStage& st : plan->stages) {
    devices.push_back(st.devices);
    std::sort(devices.back().begin(), devices.back().end());
  }
  plan->transfers.resize(transfers->size());
  for (size_t k = 0; k < transfers->size(); ++k) {
    ALPA_RETURN_IF_ERROR(
        ReadTransfer((*transfers)[k], At("transfers", k), *plan, devices, &plan->transfers[k]));
  }
  return Status::Ok();
}

// The prediction and the compile statistics, as the planner reported them.
// "schedule": "1f1b", "zb-h1" or "interleaved-1f1b" (the schedules the planner makes plans
// for); absent in plans written before ZB-H1: 1F1B. "virtual_stages" (only with
// interleaved-1f1b, where it is required): the stages per device group.
Status ReadSchedule(const Json& root, PipelineScheduleKind* out, int32_t* virtual_stages) {
  *out = PipelineScheduleKind::kOneFOneB;
  *virtual_stages = 1;
  if (root.contains("schedule")) {
    std::string name;
    ALPA_RETURN_IF_ERROR(String(root, "", "schedule", &name));
    bool known = false;
    for (PipelineScheduleKind kind :
         {PipelineScheduleKind::kOneFOneB, PipelineScheduleKind::kZeroBubbleH1,
          PipelineScheduleKind::kInterleavedOneFOneB}) {
      if (name == PipelineScheduleName(kind)) {
        *out = kind;
        known = true;
      }
    }
    if (!known) {
      return Invalid("schedule",
                     "is \"" + name + "\"; expected \"1f1b\", \"zb-h1\" or \"interleaved-1f1b\"");
    }
  }
  if (*out != PipelineScheduleKind::kInterleavedOneFOneB) {
    if (root.contains("virtual_stages")) {
      return Invalid("virtual_stages", "is only for the schedule \"interleaved-1f1b\"");
    }
    return Status::Ok();
  }
  int64_t v = 0;
  ALPA_RETURN_IF_ERROR(Int(root, "", "virtual_stages", 2, 1 << 20, &v));
  *virtual_stages = static_cast<int32_t>(v);
  return Status::Ok();
}

// The stages of one device group run on the same devices (pipeline_schedule.h); ReadStages has
// checked that the schedule fits the stage and microbatch counts.
Status CheckDeviceGroups(const PipelinePlan& plan) {
  const int32_t stages = static_cast<int32_t>(plan.stages.size());
  const int32_t groups = PipelineGroups(stages, plan.virtual_stages);
  for (int32_t s = groups; s < stages; ++s) {
    if (plan.stages[static_cast<size_t>(s)].devices !=
        plan.stages[static_cast<size_t>(s % groups)].devices) {
      return Invalid(At("stages", s) + ".devices",
                     "differ from stages[" + std::to_string(s % groups) +
                         "]'s; under interleaved-1f1b stage s runs on the devices of stage s % " +
                         std::to_string(groups));
    }
  }
  return Status::Ok();
}

Status ReadPrediction(const Json& root, PipelinePlan* plan) {
  ALPA_RETURN_IF_ERROR(Double(root, "", "iteration_seconds", &plan->iteration_seconds));
  ALPA_RETURN_IF_ERROR(Double(root, "", "period_seconds", &plan->period_seconds));
  ALPA_RETURN_IF_ERROR(Double(root, "", "schedule_seconds", &plan->schedule_seconds));
  ALPA_RETURN_IF_ERROR(Double(root, "", "max_stage_latency_seconds", &plan->max_stage_latency));
  ALPA_RETURN_IF_ERROR(Int(root, "", "peak_memory_bytes", 0, kInt64Max, &plan->peak_memory_bytes));
  double flops = 0;
  ALPA_RETURN_IF_ERROR(Double(root, "", "flops_per_iteration", &flops));
  plan->flops_per_iteration = flops;
  ALPA_RETURN_IF_ERROR(Double(root, "", "tflops_per_device", &plan->tflops_per_device));
  const Json* c = nullptr;
  ALPA_RETURN_IF_ERROR(ObjectField(root, "", "compile", &c));
  PlannerStats& st = plan->stats;
  // The clock readings are left out of deterministic output (`alpa plan --deterministic`):
  // absent, they read as 0.
  const std::pair<const char*, double*> clock_readings[] = {
      {"clustering_seconds", &st.clustering_seconds},
      {"intra_op_seconds", &st.intra_op_seconds},
      {"dp_seconds", &st.dp_seconds},
      {"total_seconds", &st.total_seconds}};
  for (const auto& [key, out] : clock_readings) {
    if (c->contains(key)) ALPA_RETURN_IF_ERROR(Double(*c, "compile", key, out));
  }
  ALPA_RETURN_IF_ERROR(Int(*c, "compile", "pieces", 0, kInt64Max, &st.pieces));
  ALPA_RETURN_IF_ERROR(Int(*c, "compile", "distinct_pieces", 0, kInt64Max, &st.distinct_pieces));
  ALPA_RETURN_IF_ERROR(Int(*c, "compile", "intra_op_solves", 0, kInt64Max, &st.intra_op_solves));
  ALPA_RETURN_IF_ERROR(Int(*c, "compile", "intra_op_proven", 0, kInt64Max, &st.intra_op_proven));
  ALPA_RETURN_IF_ERROR(Int(*c, "compile", "stage_candidates", 0, kInt64Max, &st.candidates));
  ALPA_RETURN_IF_ERROR(
      Int(*c, "compile", "pruned_candidates", 0, kInt64Max, &st.pruned_candidates));
  ALPA_RETURN_IF_ERROR(
      Int64List(*c, "compile", "microbatches_tried", 1, kInt64Max, &st.microbatches_tried));
  // Absent from plans written before the search screened counts.
  if (!c->contains("microbatches_full")) return Status::Ok();
  return Int64List(*c, "compile", "microbatches_full", 1, kInt64Max, &st.microbatches_full);
}

Result<PipelinePlan> ReadPlan(const Json& root, Cluster* cluster_out, std::string* model_out) {
  ALPA_RETURN_IF_ERROR(CheckFormat(root));
  std::string model;
  ALPA_RETURN_IF_ERROR(String(root, "", "model", &model));
  Result<Cluster> cluster = ReadCluster(root);
  if (!cluster.ok()) return cluster.status();
  PipelinePlan plan;
  ALPA_RETURN_IF_ERROR(Int(root, "", "microbatches", 1, kInt64Max, &plan.microbatches));
  ALPA_RETURN_IF_ERROR(ReadSchedule(root, &plan.schedule, &plan.virtual_stages));
  Result<Graph> graph = ReadGraph(root);
  if (!graph.ok()) return graph.status();
  plan.graph = std::move(graph).value();
  ALPA_RETURN_IF_ERROR(ReadClustering(root, plan.graph, &plan.clustering));
  ALPA_RETURN_IF_ERROR(ReadStages(root, cluster.value(), &plan));
  ALPA_RETURN_IF_ERROR(CheckDeviceGroups(plan));
  ALPA_RETURN_IF_ERROR(ReadTransfers(root, &plan));
  ALPA_RETURN_IF_ERROR(ReadPrediction(root, &plan));
  if (cluster_out != nullptr) *cluster_out = std::move(cluster).value();
  if (model_out != nullptr) *model_out = std::move(model);
  return plan;
}

}  // namespace

Result<PipelinePlan> ReadPipelinePlanJson(std::string_view text, Cluster* cluster_out,
                                          std::string* model_out) {
  try {
    ALPA_RETURN_IF_ERROR(CheckJsonNesting(text, kMaxDepth, "plan JSON"));
    const Json root = Json::parse(text.begin(), text.end());
    return ReadPlan(root, cluster_out, model_out);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "plan JSON: out of memory while reading the plan");
  } catch (const Json::exception& e) {
    return ParseError("plan JSON: " + JsonErrorMessage(e.what()));
  }
}

}  // namespace alpa
