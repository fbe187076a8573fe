// The pipeline plan as JSON (plan_json.h).
#include "solvers/planner/plan_json.h"

#include <nlohmann/json.hpp>

#include "core/cluster/cost_model.h"
#include "core/cluster/sharding_spec.h"
#include "core/ir/graph_json.h"
#include "solvers/pipeline/pipeline_schedule.h"

namespace alpa {
namespace {

using nlohmann::json;

json CollectiveCountsJson(const CollectiveCounts& c) {
  return {{"all_reduce", c.all_reduce},
          {"all_gather", c.all_gather},
          {"reduce_scatter", c.reduce_scatter},
          {"all_to_all", c.all_to_all}};
}

json StageOpsJson(const PipelinePlan& plan, const PlannedStage& stage, int32_t index,
                  const std::vector<PlanOpSite>& sites) {
  json ops = json::array();
  for (int32_t v = 0; v < plan.graph.size(); ++v) {
    const PlanOpSite& site = sites[static_cast<size_t>(v)];
    if (site.stage != index) continue;
    const OpSharding& o = stage.pieces[static_cast<size_t>(site.piece)]
                              .sharding->ops[static_cast<size_t>(site.local)];
    if (o.free || o.fused) continue;
    ops.push_back({{"op", v},
                   {"name", plan.graph.op(v).name},
                   {"strategy", o.strategy_name},
                   {"spec", ToString(o.result)}});
  }
  json collectives = json::array();
  for (const StagePiece& piece : stage.pieces) {
    for (const PlannedCollective& c : piece.sharding->collectives) {
      const int32_t tensor = piece.subgraph->origin[static_cast<size_t>(c.tensor)];
      collectives.push_back({{"kind", CollectiveName(c.kind)},
                             {"mesh_dims", c.mesh_dims},
                             {"bytes", c.bytes},
                             {"seconds", c.cost},
                             {"tensor", tensor},
                             {"gradient_sync", c.gradient_sync},
                             {"description", c.description}});
    }
  }
  return {{"ops", std::move(ops)}, {"collectives", std::move(collectives)}};
}

// Detail 2: what the executor needs of a piece beyond the summary (plan_json_read.h rebuilds
// the piece from it): the subgraph's op ids in the plan's graph and its boundary, and the
// auto-sharding result's per-op layouts, schedule and collectives, in the piece's own op ids.
json PieceExecutableJson(const StagePiece& piece) {
  const Subgraph& sub = *piece.subgraph;
  const AutoShardResult& r = *piece.sharding;
  json ops = json::array();
  for (const OpSharding& o : r.ops) {
    json operands = json::array();
    for (const ShardingSpec& spec : o.operands) operands.push_back(ToString(spec));
    json op = {{"free", o.free},
               {"fused", o.fused},
               {"strategy", o.strategy},
               {"strategy_name", o.strategy_name},
               {"spec", ToString(o.result)},
               {"operands", std::move(operands)}};
    if (o.on_chip) op["on_chip"] = true;
    if (o.reader_layout) op["reader_layout"] = ToString(*o.reader_layout);
    ops.push_back(std::move(op));
  }
  json collectives = json::array();
  for (const PlannedCollective& c : r.collectives) {
    collectives.push_back({{"kind", CollectiveName(c.kind)},
                           {"mesh_dims", c.mesh_dims},
                           {"bytes", c.bytes},
                           {"cost", c.cost},
                           {"tensor", c.tensor},
                           {"consumer", c.consumer},
                           {"operand", c.operand},
                           {"inside_op", c.inside_op},
                           {"gradient_sync", c.gradient_sync},
                           {"description", c.description}});
  }
  json sharding = {{"status", SolveStatusName(r.status)},
                   {"mesh_shape", r.mesh_shape},
                   {"ops", std::move(ops)},
                   {"schedule", r.schedule},
                   {"collectives", std::move(collectives)},
                   {"counts", CollectiveCountsJson(r.counts)}};
  return {{"origin", sub.origin},
          {"boundary_inputs", sub.boundary_inputs},
          {"boundary_outputs", sub.boundary_outputs},
          {"sharding", std::move(sharding)}};
}

// Detail 2: the planned graph and the clustering the pieces are cut by.
Status AddExecutableJson(const PipelinePlan& plan, json& j) {
  Result<std::string> graph = WriteGraphJson(plan.graph);
  if (!graph.ok()) {
    return Status(graph.status().code(), "the plan's graph: " + graph.status().message());
  }
  j["graph"] = json::parse(graph.value());
  // The rest of the clustering (num_layers, first_unit, flops, from_markers) is in "layers"
  // and "layers_from_markers".
  j["clustering"] = {{"op_layer", plan.clustering.op_layer}};
  return Status::Ok();
}

}  // namespace

json RecomputeJson(Recompute remat) {
  if (remat == Recompute::kSelective) return std::string(RecomputeName(remat));
  return remat == Recompute::kFull;
}

Result<std::string> PipelinePlanJson(const PipelinePlan& plan, const Cluster& cluster,
                                     const std::string& model, int32_t detail) {
  json j;
  j["format"] = "alpa-plan";
  j["version"] = 1;
  j["model"] = model;
  // The whole cluster (ClusterToJson: name, hosts, devices_per_host, device, links,
  // calibration), so that the plan can be simulated from its JSON alone, plus the device memory
  // at the top of it as before.
  j["cluster"] = ClusterToJson(cluster);
  j["cluster"]["device_memory_bytes"] = cluster.device.memory_bytes;
  j["microbatches"] = plan.microbatches;
  j["schedule"] = PipelineScheduleName(plan.schedule);
  if (plan.virtual_stages != 1) j["virtual_stages"] = plan.virtual_stages;
  j["iteration_seconds"] = plan.iteration_seconds;
  j["period_seconds"] = plan.period_seconds;
  j["schedule_seconds"] = plan.schedule_seconds;
  j["max_stage_latency_seconds"] = plan.max_stage_latency;
  j["compile_seconds"] = plan.stats.total_seconds;
  j["peak_memory_bytes"] = plan.peak_memory_bytes;
  j["flops_per_iteration"] = static_cast<double>(plan.flops_per_iteration);
  j["tflops_per_device"] = plan.tflops_per_device;

  json layers = json::array();
  for (int32_t g = 0; g < plan.clustering.num_layers; ++g) {
    layers.push_back(
        {{"first_unit", plan.clustering.first_unit[static_cast<size_t>(g)]},
         {"forward_flops", static_cast<double>(plan.clustering.flops[static_cast<size_t>(g)])}});
  }
  j["layers"] = std::move(layers);
  j["layers_from_markers"] = plan.clustering.from_markers;

  const std::vector<PlanOpSite> sites = detail > 0 ? PlanOpSites(plan) : std::vector<PlanOpSite>();
  json stages = json::array();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlannedStage& st = plan.stages[s];
    json pieces = json::array();
    CollectiveCounts counts;
    for (const StagePiece& p : st.pieces) {
      json piece = {{"layer_marker", p.piece},
                    {"ops", p.subgraph->graph.size()},
                    {"solve_status", SolveStatusName(p.sharding->status)}};
      if (detail >= kPlanJsonExecutable) piece["executable"] = PieceExecutableJson(p);
      pieces.push_back(std::move(piece));
      counts.all_reduce += p.sharding->counts.all_reduce;
      counts.all_gather += p.sharding->counts.all_gather;
      counts.reduce_scatter += p.sharding->counts.reduce_scatter;
      counts.all_to_all += p.sharding->counts.all_to_all;
    }
    json stage = {{"layers", {st.first_layer, st.last_layer}},
                  {"submesh", {st.submesh.hosts, st.submesh.devices_per_host}},
                  {"logical_mesh", st.logical_mesh},
                  {"devices", st.devices},
                  {"data_parallel", st.data_parallel},
                  {"tensor_parallel", st.tensor_parallel},
                  {"zero", st.zero},
                  {"shard_gradients", st.shard_gradients},
                  {"shard_parameters", st.shard_parameters},
                  {"remat", RecomputeJson(st.remat)},
                  {"memory_level", st.memory_level},
                  {"latency_seconds", st.latency},
                  {"forward_latency_seconds", st.forward_latency},
                  {"weight_gradient_latency_seconds", st.weight_gradient_latency},
                  {"iteration_overhead_seconds", st.iteration_overhead},
                  {"memory_bytes", st.memory_bytes},
                  {"activation_bytes", st.activation_bytes},
                  {"in_flight", st.in_flight},
                  {"collectives", CollectiveCountsJson(counts)},
                  {"pieces", std::move(pieces)}};
    if (detail > 0) stage["sharding"] = StageOpsJson(plan, st, static_cast<int32_t>(s), sites);
    stages.push_back(std::move(stage));
  }
  j["stages"] = std::move(stages);

  json transfers = json::array();
  for (const CrossStageTransfer& t : plan.transfers) {
    json transfer = {{"from_stage", t.from_stage},
                     {"to_stage", t.to_stage},
                     // Activations go to a later stage, gradients to an earlier one.
                     {"direction", t.to_stage > t.from_stage ? "forward" : "backward"},
                     {"once_per_iteration", t.once_per_iteration},
                     {"tensor", t.tensor},
                     {"name", plan.graph.op(t.tensor).name},
                     {"bytes", t.bytes},
                     {"from_spec", ToString(t.from_spec)},
                     {"to_spec", ToString(t.to_spec)},
                     {"seconds", t.seconds},
                     {"move_count", t.moves.size()}};
    if (t.landing_spec) {
      transfer["landing_spec"] = ToString(*t.landing_spec);
      transfer["gather_seconds"] = t.gather_seconds;
    }
    if (detail > 0) {
      json moves = json::array();
      for (const SliceMove& m : t.moves) {
        moves.push_back({{"src", m.src_device},
                         {"dst", m.dst_device},
                         {"offsets", m.offsets},
                         {"sizes", m.sizes},
                         {"bytes", m.bytes}});
      }
      transfer["moves"] = std::move(moves);
    }
    transfers.push_back(std::move(transfer));
  }
  j["transfers"] = std::move(transfers);

  const PlannerStats& st = plan.stats;
  j["compile"] = {{"clustering_seconds", st.clustering_seconds},
                  {"intra_op_seconds", st.intra_op_seconds},
                  {"dp_seconds", st.dp_seconds},
                  {"total_seconds", st.total_seconds},
                  {"pieces", st.pieces},
                  {"distinct_pieces", st.distinct_pieces},
                  {"intra_op_solves", st.intra_op_solves},
                  {"intra_op_proven", st.intra_op_proven},
                  {"stage_candidates", st.candidates},
                  {"pruned_candidates", st.pruned_candidates},
                  {"microbatches_tried", st.microbatches_tried},
                  {"microbatches_full", st.microbatches_full}};
  // Only a plan cut short says so: every other plan's JSON stays as it was.
  if (st.time_limit_reached) j["compile"]["time_limit_reached"] = true;
  if (detail >= kPlanJsonExecutable) ALPA_RETURN_IF_ERROR(AddExecutableJson(plan, j));
  return j.dump();
}

}  // namespace alpa
