// One piece of an executable plan JSON (plan_json_read_piece.h).
#include "solvers/planner/plan_json_read_piece.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "core/cluster/cost_model.h"

namespace alpa::plan_json_fields {
namespace {

Status CheckIdList(const Json& obj, const std::string& path, const char* key,
                   const std::vector<int32_t>& expected) {
  std::vector<int32_t> stored;
  ALPA_RETURN_IF_ERROR(Int32List(obj, path, key, -1, kInt32Max, &stored));
  if (stored != expected) {
    return Invalid(Join(path, key),
                   "differs from the piece cut from the plan's graph by its clustering (" +
                       std::to_string(stored.size()) + " entries stored, " +
                       std::to_string(expected.size()) + " cut)");
  }
  return Status::Ok();
}

Status ReadSolveStatus(const Json& obj, const std::string& path, const char* key,
                       SolveStatus* out) {
  std::string name;
  ALPA_RETURN_IF_ERROR(String(obj, path, key, &name));
  for (SolveStatus s :
       {SolveStatus::kOptimal, SolveStatus::kFeasible, SolveStatus::kInfeasible,
        SolveStatus::kInvalidInput, SolveStatus::kCancelled, SolveStatus::kNoSolution}) {
    if (name == SolveStatusName(s)) {
      *out = s;
      return Status::Ok();
    }
  }
  return Malformed(Join(path, key), "unknown solve status \"" + name + "\"");
}

Status ReadCounts(const Json& obj, const std::string& path, const char* key,
                  CollectiveCounts* out) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(ObjectField(obj, path, key, &j));
  const std::string where = Join(path, key);
  ALPA_RETURN_IF_ERROR(Int(*j, where, "all_reduce", 0, kInt64Max, &out->all_reduce));
  ALPA_RETURN_IF_ERROR(Int(*j, where, "all_gather", 0, kInt64Max, &out->all_gather));
  ALPA_RETURN_IF_ERROR(Int(*j, where, "reduce_scatter", 0, kInt64Max, &out->reduce_scatter));
  return Int(*j, where, "all_to_all", 0, kInt64Max, &out->all_to_all);
}

// A spec that must lay out a tensor of `shape` on the mesh.
Status CheckSpecFits(const ShardingSpec& spec, const std::string& path,
                     const std::vector<int64_t>& shape, const std::vector<int64_t>& mesh_shape) {
  const Status s = ValidateShardingSpec(spec, shape, mesh_shape);
  if (!s.ok()) return Invalid(path, "\"" + ToString(spec) + "\": " + s.message());
  return Status::Ok();
}

Status CheckSpecOnMesh(const ShardingSpec& spec, const std::string& path,
                       const std::vector<int64_t>& mesh_shape) {
  const Status s = ValidateShardingSpecForMesh(spec, static_cast<int32_t>(mesh_shape.size()));
  if (!s.ok()) return Invalid(path, "\"" + ToString(spec) + "\": " + s.message());
  return Status::Ok();
}

Status ReadOpSharding(const Json& j, const std::string& path, const Op& op,
                      const std::vector<int64_t>& mesh_shape, OpSharding* out) {
  ALPA_RETURN_IF_ERROR(Bool(j, path, "free", &out->free));
  ALPA_RETURN_IF_ERROR(Bool(j, path, "fused", &out->fused));
  if (j.contains("on_chip")) ALPA_RETURN_IF_ERROR(Bool(j, path, "on_chip", &out->on_chip));
  ALPA_RETURN_IF_ERROR(Int32(j, path, "strategy", -1, kInt32Max, &out->strategy));
  ALPA_RETURN_IF_ERROR(String(j, path, "strategy_name", &out->strategy_name));
  ALPA_RETURN_IF_ERROR(Spec(j, path, "spec", &out->result));
  // Free and fused ops have no layout of their own: their result spec is a placeholder.
  const bool materialized = !out->free && !out->fused;
  if (materialized) {
    ALPA_RETURN_IF_ERROR(CheckSpecFits(out->result, Join(path, "spec"), op.shape, mesh_shape));
  }
  const Json* operands = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(j, path, "operands", &operands));
  const std::string where = Join(path, "operands");
  out->operands.reserve(operands->size());
  for (size_t i = 0; i < operands->size(); ++i) {
    ShardingSpec spec;
    ALPA_RETURN_IF_ERROR(SpecValue((*operands)[i], At(where, i), &spec));
    ALPA_RETURN_IF_ERROR(CheckSpecOnMesh(spec, At(where, i), mesh_shape));
    out->operands.push_back(std::move(spec));
  }
  if (j.contains("reader_layout")) {
    ShardingSpec spec;
    ALPA_RETURN_IF_ERROR(Spec(j, path, "reader_layout", &spec));
    ALPA_RETURN_IF_ERROR(CheckSpecFits(spec, Join(path, "reader_layout"), op.shape, mesh_shape));
    out->reader_layout = std::move(spec);
  }
  return Status::Ok();
}

Status ReadCollectiveKind(const Json& obj, const std::string& path, CollectiveKind* out) {
  std::string name;
  ALPA_RETURN_IF_ERROR(String(obj, path, "kind", &name));
  for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                           CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
    if (name == CollectiveName(k)) {
      *out = k;
      return Status::Ok();
    }
  }
  return Malformed(Join(path, "kind"), "unknown collective \"" + name + "\"");
}

Status ReadCollective(const Json& j, const std::string& path, const Graph& g,
                      const std::vector<int64_t>& mesh_shape, PlannedCollective* out) {
  ALPA_RETURN_IF_ERROR(ReadCollectiveKind(j, path, &out->kind));
  ALPA_RETURN_IF_ERROR(Int32List(j, path, "mesh_dims", 0,
                                 static_cast<int64_t>(mesh_shape.size()) - 1, &out->mesh_dims));
  ALPA_RETURN_IF_ERROR(Double(j, path, "bytes", &out->bytes));
  ALPA_RETURN_IF_ERROR(Double(j, path, "cost", &out->cost));
  const int64_t last = static_cast<int64_t>(g.size()) - 1;
  ALPA_RETURN_IF_ERROR(Int32(j, path, "tensor", 0, last, &out->tensor));
  ALPA_RETURN_IF_ERROR(Int32(j, path, "consumer", -1, last, &out->consumer));
  const int64_t operands =
      out->consumer < 0 ? 0 : static_cast<int64_t>(g.op(out->consumer).operands.size());
  ALPA_RETURN_IF_ERROR(Int32(j, path, "operand", -1, operands - 1, &out->operand));
  ALPA_RETURN_IF_ERROR(Bool(j, path, "inside_op", &out->inside_op));
  ALPA_RETURN_IF_ERROR(Bool(j, path, "gradient_sync", &out->gradient_sync));
  return String(j, path, "description", &out->description);
}

Status ReadSharding(const Json& j, const std::string& path, const Graph& g,
                    const std::vector<int64_t>& mesh_shape, AutoShardResult* out) {
  ALPA_RETURN_IF_ERROR(ReadSolveStatus(j, path, "status", &out->status));
  std::vector<int32_t> solved_on;
  ALPA_RETURN_IF_ERROR(Int32List(j, path, "mesh_shape", 1, kInt32Max, &solved_on));
  if (!std::equal(solved_on.begin(), solved_on.end(), mesh_shape.begin(), mesh_shape.end())) {
    return Invalid(Join(path, "mesh_shape"), "differs from its stage's logical_mesh");
  }
  out->mesh_shape = std::move(solved_on);

  const Json* ops = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(j, path, "ops", &ops));
  if (ops->size() != static_cast<size_t>(g.size())) {
    return Invalid(Join(path, "ops"), "has " + std::to_string(ops->size()) +
                                          " entries, the piece's subgraph " +
                                          std::to_string(g.size()) + " ops");
  }
  out->ops.resize(ops->size());
  for (int32_t l = 0; l < g.size(); ++l) {
    const size_t i = static_cast<size_t>(l);
    ALPA_RETURN_IF_ERROR(
        ReadOpSharding((*ops)[i], At(Join(path, "ops"), i), g.op(l), mesh_shape, &out->ops[i]));
  }
  ALPA_RETURN_IF_ERROR(Int32List(j, path, "schedule", 0, g.size() - 1, &out->schedule));

  const Json* collectives = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(j, path, "collectives", &collectives));
  out->collectives.resize(collectives->size());
  for (size_t i = 0; i < collectives->size(); ++i) {
    ALPA_RETURN_IF_ERROR(ReadCollective((*collectives)[i], At(Join(path, "collectives"), i), g,
                                        mesh_shape, &out->collectives[i]));
  }
  return ReadCounts(j, path, "counts", &out->counts);
}

}  // namespace

Result<AutoShardResult> ReadPieceSharding(const Json& piece, const std::string& path,
                                          const Subgraph& sub,
                                          const std::vector<int64_t>& mesh_shape) {
  int64_t ops = 0;
  ALPA_RETURN_IF_ERROR(Int(piece, path, "ops", 0, kInt64Max, &ops));
  if (ops != sub.graph.size()) {
    return Invalid(Join(path, "ops"), std::to_string(ops) + " ops, but the piece cut from the " +
                                          "plan's graph has " + std::to_string(sub.graph.size()));
  }
  const Json* exec = nullptr;
  ALPA_RETURN_IF_ERROR(ObjectField(piece, path, "executable", &exec));
  const std::string where = Join(path, "executable");
  ALPA_RETURN_IF_ERROR(CheckIdList(*exec, where, "origin", sub.origin));
  ALPA_RETURN_IF_ERROR(CheckIdList(*exec, where, "boundary_inputs", sub.boundary_inputs));
  ALPA_RETURN_IF_ERROR(CheckIdList(*exec, where, "boundary_outputs", sub.boundary_outputs));

  AutoShardResult result;
  const Json* sharding = nullptr;
  ALPA_RETURN_IF_ERROR(ObjectField(*exec, where, "sharding", &sharding));
  ALPA_RETURN_IF_ERROR(
      ReadSharding(*sharding, Join(where, "sharding"), sub.graph, mesh_shape, &result));
  SolveStatus summary_status = SolveStatus::kNoSolution;
  ALPA_RETURN_IF_ERROR(ReadSolveStatus(piece, path, "solve_status", &summary_status));
  if (summary_status != result.status) {
    return Invalid(Join(path, "solve_status"), "differs from executable.sharding.status");
  }
  return result;
}

}  // namespace alpa::plan_json_fields
