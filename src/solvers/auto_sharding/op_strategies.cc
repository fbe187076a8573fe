// Strategies from loop assignments (see op_strategies.h).
#include "solvers/auto_sharding/op_strategies.h"

#include <algorithm>

#include "core/ir/attention_core.h"
#include "core/ir/fusion.h"
#include "core/ir/graph_stats.h"

namespace alpa {
namespace {

ShardingSpec SpecOf(const std::vector<int32_t>& dims_to_loops, const LoopAssignment& a) {
  ShardingSpec spec = ShardingSpec::Replicated(dims_to_loops.size());
  for (size_t d = 0; d < dims_to_loops.size(); ++d) {
    if (dims_to_loops[d] >= 0)
      spec.dims[d] = a.loop_mesh_dims[static_cast<size_t>(dims_to_loops[d])];
  }
  return spec;
}

void AddPartial(ShardingSpec& spec, const std::vector<int32_t>& dims) {
  for (int32_t m : dims) {
    if (std::find(spec.partial.begin(), spec.partial.end(), m) == spec.partial.end()) {
      spec.partial.push_back(m);
    }
  }
  std::sort(spec.partial.begin(), spec.partial.end());
}

int64_t ShardBytes(const Op& op, const ShardingSpec& spec, const std::vector<int64_t>& mesh) {
  return TensorBytes(op) / ShardCount(spec, mesh);
}

}  // namespace

Result<OpStrategy> MakeOpStrategy(const StrategyContext& ctx, int32_t id,
                                  const IterationSpace& space, const LoopAssignment& assignment) {
  const Graph& graph = *ctx.graph;
  const LogicalMesh& mesh = *ctx.mesh;
  const Op& op = graph.op(id);
  if (assignment.loop_mesh_dims.size() != static_cast<size_t>(space.num_loops())) {
    return InvalidArgument(DescribeOp(graph, id) + ": loop assignment has " +
                           std::to_string(assignment.loop_mesh_dims.size()) + " loops, the op " +
                           std::to_string(space.num_loops()));
  }
  std::vector<bool> used(static_cast<size_t>(mesh.ndim()), false);
  auto use = [&](int32_t m) -> Status {
    if (m < 0 || m >= mesh.ndim() || used[static_cast<size_t>(m)]) {
      return InvalidArgument(DescribeOp(graph, id) + ": mesh dim " + std::to_string(m) +
                             " out of range or used twice");
    }
    used[static_cast<size_t>(m)] = true;
    return Status::Ok();
  };
  OpStrategy strategy;
  strategy.assignment = assignment;
  std::vector<int32_t> reduced_dims, max_dims;
  for (int32_t loop = 0; loop < space.num_loops(); ++loop) {
    const auto& dims = assignment.loop_mesh_dims[static_cast<size_t>(loop)];
    int64_t pieces = 1;
    for (int32_t m : dims) {
      ALPA_RETURN_IF_ERROR(use(m));
      pieces *= mesh.shape[static_cast<size_t>(m)];
    }
    if (!space.Divides(loop, pieces)) {
      return InvalidArgument(DescribeOp(graph, id) + ": loop " + std::to_string(loop) +
                             " cannot be split into " + std::to_string(pieces));
    }
    strategy.work_split *= pieces;
    const LoopKind kind = space.kinds[static_cast<size_t>(loop)];
    for (int32_t m : dims) {
      if (kind == LoopKind::kSumReduced) reduced_dims.push_back(m);
      if (kind == LoopKind::kMaxReduced) max_dims.push_back(m);
    }
  }
  for (int32_t m : assignment.pass_partial) {
    ALPA_RETURN_IF_ERROR(use(m));
    strategy.work_split *= mesh.shape[static_cast<size_t>(m)];
  }

  strategy.result = SpecOf(space.result_dims, assignment);
  AddPartial(strategy.result, reduced_dims);
  AddPartial(strategy.result, assignment.pass_partial);
  for (size_t k = 0; k < op.operands.size(); ++k) {
    ShardingSpec spec = SpecOf(space.operand_dims[k], assignment);
    const bool passes = assignment.partial_operand < 0
                            ? space.linear_operand[k]
                            : static_cast<size_t>(assignment.partial_operand) == k;
    if (!assignment.pass_partial.empty() && passes) AddPartial(spec, assignment.pass_partial);
    if (space.partial_with_reduced[k]) AddPartial(spec, reduced_dims);
    strategy.operands.push_back(std::move(spec));
  }

  const CollectiveCostModel comm(mesh, ctx.cost_mode);
  const int64_t result_shard = ShardBytes(op, strategy.result, mesh.shape);
  strategy.memory_bytes = result_shard;
  for (int32_t m : max_dims) {  // partial maxima: all-reduce (max) inside the op
    OpCollective c;
    c.kind = CollectiveKind::kAllReduce;
    c.mesh_dim = m;
    c.bytes = static_cast<double>(result_shard);
    c.cost = comm.AllReduce(m, c.bytes);
    strategy.communication_cost += c.cost;
    strategy.collectives.push_back(c);
  }

  const bool heavy = op.kind == OpKind::kDotGeneral || op.kind == OpKind::kConvolution;
  if (ctx.cost_mode == CostMode::kAlpaCompatible || ctx.cluster == nullptr) {
    // Alpa's recompute penalty: a heavy op left redundant on a mesh dim pays an all-reduce of
    // its operands there (XLA auto-sharding's DotCost).
    if (heavy) {
      double operand_bytes = 0;
      for (int32_t x : op.operands) operand_bytes += static_cast<double>(TensorBytes(graph.op(x)));
      for (int32_t m = 0; m < mesh.ndim(); ++m) {
        if (!used[static_cast<size_t>(m)] && mesh.shape[static_cast<size_t>(m)] > 1) {
          strategy.compute_cost += comm.AllReduce(m, operand_bytes);
        }
      }
    }
  } else {
    // Memory traffic: the materialised results among the operands and the result.
    auto in_memory = [&ctx](int32_t x) {
      return ctx.materialized.empty() || ctx.materialized[static_cast<size_t>(x)];
    };
    double bytes = in_memory(id) ? static_cast<double>(result_shard) : 0.0;
    const std::vector<bool>* charged =
        ctx.charged_reads.empty() ? nullptr : &ctx.charged_reads[static_cast<size_t>(id)];
    for (size_t k = 0; k < op.operands.size(); ++k) {
      if (!in_memory(op.operands[k]) || (charged != nullptr && !(*charged)[k])) continue;
      bytes += static_cast<double>(
          ShardBytes(graph.op(op.operands[k]), strategy.operands[k], mesh.shape));
    }
    const PricedFlops priced =
        FlopsPricedFor(graph, id, AttentionWorkOf(ctx.attention_work, static_cast<size_t>(id)));
    const double flops =
        priced.flops / static_cast<double>(std::max<int64_t>(1, strategy.work_split));
    strategy.compute_cost = OpComputeSeconds(flops, bytes, op.dtype, priced.cls, *ctx.cluster);
  }
  return strategy;
}

PricedTraffic TrafficPricedBy(const Graph& graph, const Calibration& calibration) {
  ElementwiseFusion fusion = ElementwiseFusion::kNone;
  if (calibration.fuse_elementwise) {
    fusion = calibration.single_reader_fusion ? ElementwiseFusion::kSingleReader
                                              : ElementwiseFusion::kXla;
  }
  PricedTraffic traffic;
  std::vector<int32_t> kernel_of;
  traffic.materialized = PricedResults(graph, fusion, calibration.fuse_attention, &kernel_of);
  if (!kernel_of.empty()) {
    traffic.charged_reads = ChargedReads(graph, traffic.materialized, kernel_of);
  } else if (!traffic.materialized.empty()) {
    traffic.charged_reads = ChargedReads(graph, traffic.materialized);
  }
  if (calibration.fuse_attention && calibration.attention_efficiency > 0)
    traffic.attention_work = AttentionProductWork(graph);
  return traffic;
}

ComputeClass ComputeClassOf(OpKind kind) {
  if (kind == OpKind::kDotGeneral) return ComputeClass::kMatmul;
  if (kind == OpKind::kConvolution) return ComputeClass::kConvolution;
  if (IsElementwise(kind)) return ComputeClass::kElementwise;
  return ComputeClass::kOther;
}

PricedFlops FlopsPricedFor(const Graph& graph, int32_t id, double attention_work) {
  PricedFlops p;
  p.flops = static_cast<double>(OpFlops(graph, id));
  p.cls = ComputeClassOf(graph.op(id).kind);
  if (attention_work > 0) {
    p.flops *= attention_work;
    p.cls = ComputeClass::kAttention;
  }
  return p;
}

double AttentionWorkOf(const std::vector<double>& attention_work, size_t id) {
  return id < attention_work.size() ? attention_work[id] : 0.0;
}

Result<std::vector<OpStrategy>> EnumerateOpStrategies(const StrategyContext& ctx, int32_t id,
                                                      const IterationSpace& space) {
  const LogicalMesh& mesh = *ctx.mesh;
  std::vector<int32_t> split_dims;  // mesh dims of size > 1
  for (int32_t m = 0; m < mesh.ndim(); ++m) {
    if (mesh.shape[static_cast<size_t>(m)] > 1) split_dims.push_back(m);
  }
  const int32_t loops = space.num_loops();
  std::vector<int32_t> choice(split_dims.size(), -1);  // per split mesh dim: loop or -1
  std::vector<OpStrategy> out;
  while (true) {
    LoopAssignment a;
    a.loop_mesh_dims.assign(static_cast<size_t>(loops), {});
    for (size_t i = 0; i < split_dims.size(); ++i) {
      if (choice[i] >= 0) a.loop_mesh_dims[static_cast<size_t>(choice[i])].push_back(split_dims[i]);
    }
    bool fits = true;
    for (int32_t loop = 0; loop < loops && fits; ++loop) {
      int64_t pieces = 1;
      for (int32_t m : a.loop_mesh_dims[static_cast<size_t>(loop)]) {
        pieces *= mesh.shape[static_cast<size_t>(m)];
      }
      fits = pieces == 1 || space.Divides(loop, pieces);
    }
    if (fits) {
      Result<OpStrategy> s = MakeOpStrategy(ctx, id, space, a);
      if (!s.ok()) return s.status();
      out.push_back(std::move(s).value());
    }
    // Next assignment (odometer over -1 .. loops - 1 per split mesh dim).
    size_t i = 0;
    for (; i < choice.size(); ++i) {
      if (++choice[i] < loops) break;
      choice[i] = -1;
    }
    if (i == choice.size()) break;
  }
  return out;
}

LoopAssignment AssignmentFromSpec(const IterationSpace& space,
                                  const std::vector<int32_t>& dims_to_loops,
                                  const ShardingSpec& spec, const LogicalMesh& mesh,
                                  PartialSums partial_sums) {
  LoopAssignment a;
  a.loop_mesh_dims.assign(static_cast<size_t>(space.num_loops()), {});
  for (size_t d = 0; d < dims_to_loops.size() && d < spec.dims.size(); ++d) {
    const int32_t loop = dims_to_loops[d];
    if (loop < 0) continue;
    int64_t pieces = 1;
    for (int32_t m : spec.dims[d]) {  // the longest prefix that divides the loop
      const int64_t next = pieces * mesh.shape[static_cast<size_t>(m)];
      if (!space.Divides(loop, next)) break;
      pieces = next;
      a.loop_mesh_dims[static_cast<size_t>(loop)].push_back(m);
    }
  }
  if (partial_sums == PartialSums::kPass) a.pass_partial = spec.partial;
  return a;
}

std::string StrategyName(const Graph& graph, int32_t id, const OpStrategy& strategy) {
  std::string name = ToString(strategy.result);
  const Op& op = graph.op(id);
  if (op.operands.size() >= 2 || op.kind == OpKind::kDotGeneral) {
    name += " =";
    for (size_t k = 0; k < strategy.operands.size(); ++k) {
      name += (k == 0 ? " " : " x ") + ToString(strategy.operands[k]);
    }
  }
  for (const OpCollective& c : strategy.collectives) {
    name += std::string(" @") + CollectiveName(c.kind) + "(" + std::to_string(c.mesh_dim) + ")";
  }
  return name;
}

}  // namespace alpa
