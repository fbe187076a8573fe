// Cross-stage transfers and the iteration prediction of a plan (plan_transfers.h).
#include "solvers/planner/plan_transfers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster/cost_model.h"
#include "core/cluster/cross_mesh.h"
#include "core/cluster/logical_mesh.h"
#include "core/cluster/nvlink_graph.h"
#include "core/cluster/sharding_spec.h"
#include "solvers/pipeline/pipeline_estimate.h"

namespace alpa {

double TransferSeconds(const std::vector<SliceMove>& moves, const Cluster& cluster) {
  // Per server: a device's intra-host link out and in (its moves' seconds, each at its pair's
  // bandwidth), a host's NIC group out and in (bytes; Cluster::nics_per_host, one group per host
  // by default); a move from or to a device far from its NICs (cluster.h) adds its seconds at the
  // far bandwidth. Each server's link is its host's (HostCluster: in a mixed cluster, its
  // pool's).
  std::map<std::pair<int64_t, int>, double> device_seconds;
  std::map<std::pair<int64_t, int>, int64_t> nic_bytes;
  std::map<std::pair<int64_t, int>, double> nic_far_seconds;
  // Per host type: the bandwidths of moves between its devices (empty: its intra-host link).
  std::map<const Cluster*, std::vector<double>> pair_bandwidths;
  auto move_bandwidth = [&](const Cluster& host, int64_t src, int64_t dst) {
    auto it = pair_bandwidths.find(&host);
    if (it == pair_bandwidths.end())
      it = pair_bandwidths.emplace(&host, MovePairBandwidths(host)).first;
    if (it->second.empty()) return host.intra_host_link.bandwidth;
    const int64_t n = host.devices_per_host;
    return it->second[static_cast<size_t>((src % n) * n + dst % n)];
  };
  auto host_of = [&](int64_t device) { return device / cluster.devices_per_host; };
  auto nic = [&](int64_t device) {
    return host_of(device) * kMaxDevicesPerHost +
           NicGroupOf(HostCluster(cluster, host_of(device)), device);
  };
  double latency = 0;
  for (const SliceMove& mv : moves) {
    const int64_t src_host = host_of(mv.src_device);
    const int64_t dst_host = host_of(mv.dst_device);
    const Cluster& src = HostCluster(cluster, src_host);
    const Cluster& dst = HostCluster(cluster, dst_host);
    if (src_host == dst_host) {
      latency = std::max(latency, src.intra_host_link.latency);
      const double seconds =
          static_cast<double>(mv.bytes) / move_bandwidth(src, mv.src_device, mv.dst_device);
      device_seconds[{mv.src_device, 0}] += seconds;
      device_seconds[{mv.dst_device, 1}] += seconds;
      continue;
    }
    latency = std::max({latency, src.inter_host_link.latency, dst.inter_host_link.latency});
    if (NearNic(cluster, mv.src_device) && NearNic(cluster, mv.dst_device)) {
      nic_bytes[{nic(mv.src_device), 0}] += mv.bytes;
      nic_bytes[{nic(mv.dst_device), 1}] += mv.bytes;
    } else {
      const double seconds = static_cast<double>(mv.bytes) /
                             InterHostMoveBandwidth(cluster, mv.src_device, mv.dst_device);
      nic_far_seconds[{nic(mv.src_device), 0}] += seconds;
      nic_far_seconds[{nic(mv.dst_device), 1}] += seconds;
    }
  }
  double busiest = 0;
  for (const auto& [server, seconds] : device_seconds) busiest = std::max(busiest, seconds);
  for (const auto& [server, bytes] : nic_bytes) {
    const auto far = nic_far_seconds.find(server);
    const double far_seconds = far == nic_far_seconds.end() ? 0.0 : far->second;
    const double bandwidth =
        NicGroupBandwidth(HostCluster(cluster, server.first / kMaxDevicesPerHost));
    busiest = std::max(busiest, static_cast<double>(bytes) / bandwidth + far_seconds);
  }
  for (const auto& [server, seconds] : nic_far_seconds) busiest = std::max(busiest, seconds);
  return latency + busiest;
}

namespace {

// The all-gather of a local all-gather on the receiving stage's mesh: over the one mesh dim, or
// the flattened mesh when the dims are all of its dims of size > 1, else one dim after another;
// `tile_bytes` is the receiving tile (the cost model's b of an all-gather).
Result<double> GatherSeconds(const PlannedStage& to, const Cluster& cluster,
                             const std::vector<int32_t>& mesh_dims, double tile_bytes) {
  // The receiving stage's own devices price it (in a mixed cluster, its pool's).
  Result<LogicalMesh> mesh =
      DeriveLogicalMesh(DevicesCluster(cluster, to.devices), to.submesh, to.logical_mesh);
  if (!mesh.ok()) return mesh.status();
  size_t wide = 0;
  for (int64_t d : to.logical_mesh) wide += d > 1 ? 1 : 0;
  if (mesh_dims.size() > 1 && mesh_dims.size() == wide) {
    return MeshCollectiveCost(mesh.value(), CollectiveKind::kAllGather, kFlattenedMeshDim,
                              tile_bytes, CostMode::kRealUnits);
  }
  double seconds = 0;
  for (int32_t m : mesh_dims) {
    Result<double> one = MeshCollectiveCost(mesh.value(), CollectiveKind::kAllGather, m, tile_bytes,
                                            CostMode::kRealUnits);
    if (!one.ok()) return one.status();
    seconds += one.value();
  }
  return seconds;
}

// Plans `tr`'s moves from `from_layout` to `to_layout` and, for a per-microbatch transfer into
// a replicated layout, the local all-gather instead where it is predicted faster.
Status PlanTransferMoves(const Op& tensor_op, const ShardingSpec& from_layout,
                         const ShardingSpec& to_layout, const PlannedStage& from,
                         const PlannedStage& to, const Cluster& cluster, CrossStageTransfer& tr) {
  const int64_t element_bytes = DTypeBytes(tensor_op.dtype);
  Result<std::vector<SliceMove>> moves =
      PlanCrossMeshTransfer(tensor_op.shape, element_bytes, from_layout, from.logical_mesh,
                            from.devices, to_layout, to.logical_mesh, to.devices);
  if (!moves.ok()) return moves.status();
  tr.moves = std::move(moves).value();
  tr.seconds = TransferSeconds(tr.moves, cluster);
  if (tr.once_per_iteration) return Status::Ok();
  const std::optional<LocalAllGather> local =
      PlanLocalAllGather(to_layout, tensor_op.shape, to.logical_mesh);
  if (!local) return Status::Ok();
  Result<std::vector<SliceMove>> landing_moves =
      PlanCrossMeshTransfer(tensor_op.shape, element_bytes, from_layout, from.logical_mesh,
                            from.devices, local->landing, to.logical_mesh, to.devices);
  if (!landing_moves.ok()) return landing_moves.status();
  Result<std::vector<int64_t>> tile = ShardShape(to_layout, tensor_op.shape, to.logical_mesh);
  if (!tile.ok()) return tile.status();
  Result<int64_t> tile_bytes = TensorBytes(tile.value(), tensor_op.dtype);
  if (!tile_bytes.ok()) return tile_bytes.status();
  Result<double> gather =
      GatherSeconds(to, cluster, local->mesh_dims, static_cast<double>(tile_bytes.value()));
  if (!gather.ok()) return gather.status();
  const double seconds = TransferSeconds(landing_moves.value(), cluster) + gather.value();
  if (!(seconds < tr.seconds)) return Status::Ok();
  tr.moves = std::move(landing_moves).value();
  tr.landing_spec = local->landing;
  tr.gather_seconds = gather.value();
  tr.seconds = seconds;
  return Status::Ok();
}

}  // namespace

Result<std::vector<CrossStageTransfer>> ListCrossStageTransfers(
    const Graph& graph, const std::vector<std::shared_ptr<const Subgraph>>& piece_graph,
    const std::vector<int32_t>& op_piece, const std::vector<int32_t>& group_first_piece,
    const std::vector<int32_t>& stage_of_piece, const std::vector<PlannedStage>& stages,
    const Cluster& cluster) {
  std::vector<CrossStageTransfer> transfers;
  for (int32_t b = 0; b < static_cast<int32_t>(piece_graph.size()); ++b) {
    const Subgraph& sub = *piece_graph[static_cast<size_t>(b)];
    const int32_t sb = stage_of_piece[static_cast<size_t>(b)];
    for (int32_t l : sub.boundary_inputs) {
      const int32_t u = sub.origin[static_cast<size_t>(l)];
      const int32_t a = op_piece[static_cast<size_t>(u)];
      if (a < 0 || stage_of_piece[static_cast<size_t>(a)] == sb) continue;
      const int32_t sa = stage_of_piece[static_cast<size_t>(a)];
      const PlannedStage& from = stages[static_cast<size_t>(sa)];
      const PlannedStage& to = stages[static_cast<size_t>(sb)];
      const Op& tensor_op = graph.op(u);
      CrossStageTransfer tr;
      tr.from_stage = sa;
      tr.to_stage = sb;
      tr.tensor = u;
      tr.bytes = TensorBytes(tensor_op);
      tr.once_per_iteration = tensor_op.role == TensorRole::kGradient;
      for (const Op& reader : sub.graph.ops) {
        // An addition into a weight's gradient of the tensor's own shape: accumulation.
        if (reader.kind == OpKind::kAdd && reader.role == TensorRole::kGradient &&
            reader.shape == tensor_op.shape &&
            std::find(reader.operands.begin(), reader.operands.end(), l) != reader.operands.end()) {
          tr.once_per_iteration = true;
        }
      }
      const StagePiece& producer = from.pieces[static_cast<size_t>(
          a - group_first_piece[static_cast<size_t>(from.first_layer)])];
      for (int32_t pl = 0; pl < producer.subgraph->graph.size(); ++pl) {
        const OpSharding& o = producer.sharding->ops[static_cast<size_t>(pl)];
        if (producer.subgraph->origin[static_cast<size_t>(pl)] == u && !o.free && !o.fused) {
          tr.from_spec = o.reader_layout ? *o.reader_layout : o.result;
        }
      }
      const StagePiece& reader = to.pieces[static_cast<size_t>(
          b - group_first_piece[static_cast<size_t>(to.first_layer)])];
      tr.to_spec = reader.sharding->ops[static_cast<size_t>(l)].result;
      // A free or fused producer has no layout (a default spec of rank 0): its stage holds the
      // whole tensor on every device.
      const size_t rank = tensor_op.shape.size();
      const ShardingSpec from_layout =
          tr.from_spec.rank() == rank ? tr.from_spec : ShardingSpec::Replicated(rank);
      const ShardingSpec to_layout =
          tr.to_spec.rank() == rank ? tr.to_spec : ShardingSpec::Replicated(rank);
      const Status planned =
          PlanTransferMoves(tensor_op, from_layout, to_layout, from, to, cluster, tr);
      if (!planned.ok()) {
        return InternalError("cross-mesh transfer of " + DescribeOp(graph, u) + " from stage " +
                             std::to_string(sa) + " to stage " + std::to_string(sb) + ": " +
                             planned.message());
      }
      transfers.push_back(std::move(tr));
    }
  }
  return transfers;
}

void PredictPlanIteration(PipelinePlan& plan) {
  const size_t n = plan.stages.size();
  for (const CrossStageTransfer& tr : plan.transfers) {
    const size_t from = static_cast<size_t>(tr.from_stage), to = static_cast<size_t>(tr.to_stage);
    if (from >= n || to >= n || from == to) continue;
    if (tr.once_per_iteration) plan.stages[to].iteration_overhead += tr.seconds;
  }
  EstimatePlanIteration(plan);
}

std::vector<PipelineEstimateStage> PlanEstimateStages(const PipelinePlan& plan) {
  const size_t n = plan.stages.size();
  std::vector<PipelineEstimateStage> est(n);
  for (const CrossStageTransfer& tr : plan.transfers) {
    const size_t from = static_cast<size_t>(tr.from_stage), to = static_cast<size_t>(tr.to_stage);
    if (from >= n || to >= n || from == to || tr.once_per_iteration) continue;
    if (to > from) {
      est[to - 1].to_next += tr.seconds;
    } else {
      est[to].from_next += tr.seconds;
    }
  }
  for (size_t s = 0; s < n; ++s) {
    const PlannedStage& st = plan.stages[s];
    est[s].forward = st.forward_latency;
    est[s].backward = st.latency - st.forward_latency;
    est[s].weight = std::min(st.weight_gradient_latency, est[s].backward);
    est[s].iteration_overhead = st.iteration_overhead;
  }
  return est;
}

void EstimatePlanIteration(PipelinePlan& plan) {
  double sum = 0;
  plan.max_stage_latency = 0;
  for (const PlannedStage& st : plan.stages) {
    sum += st.latency + st.iteration_overhead;
    plan.max_stage_latency = std::max(plan.max_stage_latency, st.latency);
  }
  plan.schedule_seconds = sum + static_cast<double>(plan.microbatches - 1) * plan.max_stage_latency;
  const PipelineEstimate e = EstimatePipeline(plan.schedule, PlanEstimateStages(plan),
                                              plan.microbatches, plan.virtual_stages);
  plan.iteration_seconds = e.iteration_seconds;
  plan.period_seconds = e.period_seconds;
}

}  // namespace alpa
