// The auto-sharding result as JSON (docs/auto-sharding.md).
#include <cmath>

#include <nlohmann/json.hpp>

#include "solvers/auto_sharding/auto_sharding.h"

namespace alpa {
namespace {

nlohmann::json Number(long double v) {
  if (std::isfinite(static_cast<double>(v))) return static_cast<double>(v);
  return v > 0 ? "inf" : (v < 0 ? "-inf" : "nan");
}

nlohmann::json Counts(const CollectiveCounts& c) {
  return {{"all_reduce", c.all_reduce},
          {"all_gather", c.all_gather},
          {"reduce_scatter", c.reduce_scatter},
          {"all_to_all", c.all_to_all},
          {"total", c.total()}};
}

const char* CollectiveKey(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kSendRecv:
      return "send_recv";
  }
  return "?";
}

std::string OpName(const Graph& g, int32_t id) {
  const std::string& n = g.op(id).name;
  return n.empty() ? "op" + std::to_string(id) : n;
}

}  // namespace

std::string AutoShardResultJson(const Graph& graph, const AutoShardResult& result) {
  nlohmann::json j;
  j["status"] = SolveStatusName(result.status);
  j["message"] = result.message;
  j["mesh_shape"] = result.mesh_shape;
  j["objective"] = Number(result.objective);
  j["lower_bound"] = Number(result.lower_bound);
  j["cost"] = {{"compute", Number(result.compute_cost)},
               {"communication", Number(result.communication_cost)},
               {"resharding", Number(result.resharding_cost)}};
  nlohmann::json collectives = Counts(result.counts);
  collectives["uncombined"] = Counts(result.counts_uncombined);
  nlohmann::json list = nlohmann::json::array();
  for (const PlannedCollective& c : result.collectives) {
    list.push_back({{"kind", CollectiveKey(c.kind)},
                    {"mesh_dims", c.mesh_dims},
                    {"bytes", c.bytes},
                    {"cost", c.cost},
                    {"tensor", OpName(graph, c.tensor)},
                    {"tensor_op", c.tensor},
                    {"consumer_op", c.consumer},
                    {"operand", c.operand},
                    {"inside_op", c.inside_op},
                    {"gradient_sync", c.gradient_sync}});
  }
  collectives["list"] = std::move(list);
  j["collectives"] = std::move(collectives);
  j["peak_memory_bytes"] = result.peak_memory_bytes;
  nlohmann::json tensors = nlohmann::json::array();
  nlohmann::json ops = nlohmann::json::array();
  for (int32_t v = 0; v < graph.size() && static_cast<size_t>(v) < result.ops.size(); ++v) {
    const Op& op = graph.op(v);
    const OpSharding& op_sharding = result.ops[static_cast<size_t>(v)];
    if (op_sharding.node < 0) continue;
    if (op.kind == OpKind::kParameter || op.role == TensorRole::kGradient || op.alias_of >= 0) {
      nlohmann::json t = {{"name", OpName(graph, v)},
                          {"op", v},
                          {"role", TensorRoleName(op.role)},
                          {"shape", op.shape},
                          {"spec", ToString(op_sharding.result)}};
      if (op_sharding.reader_layout) t["reader_layout"] = ToString(*op_sharding.reader_layout);
      tensors.push_back(std::move(t));
    }
    if (op.kind != OpKind::kParameter && op_sharding.follows < 0) {
      ops.push_back({{"name", OpName(graph, v)},
                     {"op", v},
                     {"kind", OpKindName(op.kind)},
                     {"strategy", op_sharding.strategy_name}});
    }
  }
  j["tensors"] = std::move(tensors);
  j["ops"] = std::move(ops);
  j["stats"] = {{"ops", result.stats.ops},
                {"free_ops", result.stats.free_ops},
                {"fused_ops", result.stats.fused_ops},
                {"follower_ops", result.stats.follower_ops},
                {"deciding_ops", result.stats.deciding_ops},
                {"on_chip_ops", result.stats.on_chip_ops},
                {"strategies", result.stats.strategies},
                {"edges", result.stats.edges},
                {"problem_nodes", result.stats.solver.nodes},
                {"problem_edges", result.stats.solver.edges},
                {"normalized_nodes", result.stats.solver.work_nodes},
                {"normalized_edges", result.stats.solver.work_edges},
                {"core_nodes", result.stats.solver.core_nodes},
                {"core_edges", result.stats.solver.core_edges},
                {"elimination_solved", result.stats.solver.elimination_solved},
                {"elimination_blocks", result.stats.solver.elimination_blocks},
                {"elimination_distinct_blocks", result.stats.solver.elimination_distinct_blocks},
                {"build_seconds", result.stats.build_seconds},
                {"solve_seconds", result.stats.solve_seconds}};
  return j.dump();
}

}  // namespace alpa
