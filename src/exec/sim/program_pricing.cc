// Instructions priced by the cost model (program_pricing.h has the table).
#include "exec/sim/program_pricing.h"

#include <algorithm>
#include <string>

#include "core/cluster/cost_model.h"
#include "core/ir/graph_stats.h"
#include "solvers/auto_sharding/op_strategies.h"

namespace alpa {

namespace {

std::string Where(const DeviceProgram& program, const Instruction& in) {
  return "device " + std::to_string(program.device) + ": " + InstructionText(program, in);
}

// Bytes of a local buffer (its shape and dtype); 0 when it does not fit in int64.
double BufferBytes(const DeviceProgram& program, int32_t buffer) {
  if (buffer < 0 || static_cast<size_t>(buffer) >= program.buffers.size()) return 0;
  const Buffer& b = program.buffers[static_cast<size_t>(buffer)];
  Result<int64_t> bytes = TensorBytes(b.shape, b.dtype);
  return bytes.ok() ? static_cast<double>(bytes.value()) : 0.0;
}

}  // namespace

Result<ProgramPricer> ProgramPricer::Create(const PipelinePlan& plan, const Cluster& cluster) {
  ProgramPricer pricer;
  pricer.plan_ = &plan;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlannedStage& stage = plan.stages[s];
    StagePricing st;
    st.cluster = DevicesCluster(cluster, stage.devices);
    Result<LogicalMesh> mesh = DeriveLogicalMesh(st.cluster, stage.submesh, stage.logical_mesh);
    if (!mesh.ok()) {
      return InvalidArgument("stage " + std::to_string(s) + ": " + mesh.status().message());
    }
    st.mesh = std::move(mesh).value();
    for (size_t k = 0; k < stage.devices.size(); ++k) {
      const int64_t d = stage.devices[k];
      if (d < 0 || d >= cluster.num_devices()) {
        return InvalidArgument("stage " + std::to_string(s) + ": device " + std::to_string(d) +
                               " is outside the cluster");
      }
      if (st.logical_of_device.size() <= static_cast<size_t>(d)) {
        st.logical_of_device.resize(static_cast<size_t>(d) + 1, -1);
      }
      st.logical_of_device[static_cast<size_t>(d)] = static_cast<int64_t>(k);
    }
    for (size_t p = 0; p < stage.pieces.size(); ++p) {
      const Subgraph* sub = stage.pieces[p].subgraph.get();
      if (sub == nullptr) {
        return InvalidArgument("stage " + std::to_string(s) + " piece " + std::to_string(p) +
                               " has no subgraph");
      }
      PricedTraffic traffic = TrafficPricedBy(sub->graph, st.cluster.calibration);
      st.materialized.push_back(std::move(traffic.materialized));
      st.charged.push_back(std::move(traffic.charged_reads));
      st.attention_work.push_back(std::move(traffic.attention_work));
    }
    pricer.stages_.push_back(std::move(st));
  }
  return pricer;
}

Result<InstructionPrice> ProgramPricer::PriceRun(const StagePricing& st,
                                                 const DeviceProgram& program,
                                                 const Instruction& in) const {
  const PlannedStage& stage = plan_->stages[static_cast<size_t>(program.stage)];
  if (in.piece < 0 || static_cast<size_t>(in.piece) >= stage.pieces.size() || in.piece_op < 0 ||
      in.piece_op >= stage.pieces[static_cast<size_t>(in.piece)].subgraph->graph.size()) {
    return InternalError(Where(program, in) + ": piece " + std::to_string(in.piece) + " op " +
                         std::to_string(in.piece_op) + " is not an op of stage " +
                         std::to_string(program.stage));
  }
  const size_t p = static_cast<size_t>(in.piece);
  const size_t l = static_cast<size_t>(in.piece_op);
  const Graph& piece_graph = stage.pieces[p].subgraph->graph;
  const Op& piece_op = piece_graph.op(static_cast<int32_t>(l));
  const AutoShardResult* sharding = stage.pieces[p].sharding.get();
  if (sharding != nullptr && l < sharding->ops.size() &&
      (sharding->ops[l].free || sharding->ops[l].fused)) {
    return InstructionPrice{};  // made inside its readers' kernels (as the solve prices it)
  }
  const std::vector<bool>& materialized = st.materialized[p];
  auto in_memory = [&materialized](int32_t x) {
    return materialized.empty() || materialized[static_cast<size_t>(x)];
  };
  const Graph& local = program.local_ops[static_cast<size_t>(in.local_op)];
  const int32_t id = local.size() - 1;
  const Op& op = local.op(id);
  double bytes = in_memory(static_cast<int32_t>(l)) ? static_cast<double>(TensorBytes(op)) : 0.0;
  const std::vector<bool>* charged =
      st.charged.empty() || st.charged[p].empty() ? nullptr : &st.charged[p][l];
  for (size_t k = 0; k < op.operands.size() && k < piece_op.operands.size(); ++k) {
    if (!in_memory(piece_op.operands[k]) || (charged != nullptr && !(*charged)[k])) continue;
    bytes += static_cast<double>(TensorBytes(local.op(op.operands[k])));
  }
  const PricedFlops priced = FlopsPricedFor(local, id, AttentionWorkOf(st.attention_work[p], l));
  InstructionPrice price;
  price.seconds = OpComputeSeconds(priced.flops, bytes, op.dtype, priced.cls, st.cluster);
  price.part = PricedPart::kCompute;
  return price;
}

Result<InstructionPrice> ProgramPricer::PriceCollective(const StagePricing& st,
                                                        const DeviceProgram& program,
                                                        const Instruction& in) const {
  const LogicalMesh& mesh = st.mesh;
  // The mesh dims along which the group's members differ (row-major logical coordinates).
  std::vector<bool> spans(mesh.shape.size(), false);
  std::vector<int64_t> first;
  for (int32_t d : in.group) {
    const int64_t k = d >= 0 && static_cast<size_t>(d) < st.logical_of_device.size()
                          ? st.logical_of_device[static_cast<size_t>(d)]
                          : -1;
    if (k < 0) {
      return InternalError(Where(program, in) + ": device " + std::to_string(d) +
                           " of its group is not in stage " + std::to_string(program.stage));
    }
    std::vector<int64_t> coords(mesh.shape.size());
    int64_t rest = k;
    for (size_t m = mesh.shape.size(); m-- > 0;) {
      coords[m] = rest % mesh.shape[m];
      rest /= mesh.shape[m];
    }
    if (first.empty()) first = coords;
    for (size_t m = 0; m < coords.size(); ++m) spans[m] = spans[m] || coords[m] != first[m];
  }
  int32_t dim = kFlattenedMeshDim, count = 0;
  for (size_t m = 0; m < spans.size(); ++m) {
    if (!spans[m]) continue;
    dim = static_cast<int32_t>(m);
    ++count;
  }
  InstructionPrice price;
  price.part = PricedPart::kCollective;
  if (count == 0) return price;  // a group of one moves nothing
  if (count > 1) dim = kFlattenedMeshDim;
  const CollectiveKind kind = CollectiveKindOf(in.kind).value_or(CollectiveKind::kAllReduce);
  const double n = static_cast<double>(in.group.size());
  const bool times_n = kind == CollectiveKind::kAllGather || kind == CollectiveKind::kAllToAll;
  const double b = static_cast<double>(in.bytes) * (times_n ? n : 1.0);
  Result<double> seconds = MeshCollectiveCost(mesh, kind, dim, b, CostMode::kRealUnits);
  if (!seconds.ok()) return InternalError(Where(program, in) + ": " + seconds.status().message());
  price.seconds = seconds.value();
  return price;
}

InstructionPrice ProgramPricer::PriceBookkeeping(const StagePricing& st,
                                                 const DeviceProgram& program,
                                                 const Instruction& in) const {
  const double out = BufferBytes(program, in.out);
  double bytes = 0;
  DType dtype = in.out >= 0 && static_cast<size_t>(in.out) < program.buffers.size()
                    ? program.buffers[static_cast<size_t>(in.out)].dtype
                    : DType::kF32;
  switch (in.kind) {
    case InstructionKind::kSlice: {
      double box = static_cast<double>(DTypeBytes(dtype));
      for (int64_t s : in.sizes) box *= static_cast<double>(s);
      bytes = 2 * box;  // read the box, write it
      break;
    }
    case InstructionKind::kAccumulate:
      bytes = 3 * out;  // read both addends, write the sum
      break;
    case InstructionKind::kCopy:
    case InstructionKind::kScale:
      bytes = 2 * out;
      break;
    default:  // kZero, kFeed: written once
      bytes = out;
      break;
  }
  InstructionPrice price;
  price.part = PricedPart::kBookkeeping;
  price.seconds = OpComputeSeconds(0, bytes, dtype, ComputeClass::kElementwise, st.cluster);
  return price;
}

Result<InstructionPrice> ProgramPricer::Price(const DeviceProgram& program,
                                              const Instruction& in) const {
  if (program.stage < 0 || static_cast<size_t>(program.stage) >= stages_.size()) {
    return InternalError("device " + std::to_string(program.device) + " runs stage " +
                         std::to_string(program.stage) + ", which the plan does not have");
  }
  const StagePricing& st = stages_[static_cast<size_t>(program.stage)];
  switch (in.kind) {
    case InstructionKind::kRun:
      return PriceRun(st, program, in);
    case InstructionKind::kAllReduce:
    case InstructionKind::kAllGather:
    case InstructionKind::kReduceScatter:
    case InstructionKind::kAllToAll:
      return PriceCollective(st, program, in);
    case InstructionKind::kSend:
    case InstructionKind::kRecv: {
      InstructionPrice price;
      price.part = PricedPart::kTransfer;
      return price;
    }
    case InstructionKind::kFree:
    case InstructionKind::kReportLoss:
      return InstructionPrice{};
    default:
      return PriceBookkeeping(st, program, in);
  }
}

std::array<double, 3> ProgramPricer::ParameterCharges(int32_t stage) const {
  std::array<double, 3> charges = {0, 0, 0};
  if (stage < 0 || static_cast<size_t>(stage) >= stages_.size()) return charges;
  const StagePricing& st = stages_[static_cast<size_t>(stage)];
  const PlannedStage& planned = plan_->stages[static_cast<size_t>(stage)];
  for (size_t p = 0; p < planned.pieces.size(); ++p) {
    const Graph& graph = planned.pieces[p].subgraph->graph;
    const AutoShardResult* sharding = planned.pieces[p].sharding.get();
    if (sharding == nullptr) continue;
    const std::vector<bool>& materialized = st.materialized[p];
    for (int32_t v = 0; v < graph.size(); ++v) {
      const Op& op = graph.op(v);
      if (op.kind != OpKind::kParameter || static_cast<size_t>(v) >= sharding->ops.size()) {
        continue;
      }
      const OpSharding& o = sharding->ops[static_cast<size_t>(v)];
      if (o.free || o.fused) continue;
      double bytes = 0;
      if (materialized.empty() || materialized[static_cast<size_t>(v)]) {
        bytes = static_cast<double>(TensorBytes(op)) /
                static_cast<double>(std::max<int64_t>(1, ShardCount(o.result, st.mesh.shape)));
      }
      charges[static_cast<size_t>(op.phase)] +=
          OpComputeSeconds(0, bytes, op.dtype, ComputeClassOf(op.kind), st.cluster);
    }
  }
  return charges;
}

Result<PricedSeconds> ProgramPricer::PriceTask(const DeviceProgram& program,
                                               const ProgramTask& task) const {
  PricedSeconds sum;
  for (int64_t i = task.begin; i < task.end; ++i) {
    const Instruction& in = program.code[static_cast<size_t>(i)];
    Result<InstructionPrice> p = Price(program, in);
    if (!p.ok()) return p.status();
    sum.Add(p.value());
    if (p.value().part == PricedPart::kBookkeeping) continue;
    if (in.origin == InstructionOrigin::kExtra) sum.not_in_plan += p.value().seconds;
    if (in.origin == InstructionOrigin::kTransferGather) sum.transfer_gather += p.value().seconds;
    if (task.kind == ProgramTaskKind::kUpdate && in.kind == InstructionKind::kRun &&
        in.tensor >= 0 && in.tensor < plan_->graph.size() &&
        plan_->graph.op(in.tensor).phase == Phase::kBackward) {
      sum.deferred_backward += p.value().seconds;
    }
  }
  return sum;
}

}  // namespace alpa
