// Graph -> sharding problem (see auto_sharding_problem.h and the rules in auto_sharding.h).
#include "solvers/auto_sharding/auto_sharding_problem.h"

#include <algorithm>

#include "core/ir/fusion.h"
#include "solvers/auto_sharding/schedule.h"

namespace alpa {
namespace {

bool Decides(OpKind kind) {
  return kind == OpKind::kParameter || kind == OpKind::kDotGeneral ||
         kind == OpKind::kConvolution || kind == OpKind::kGather || kind == OpKind::kScatterAdd;
}

// For each op: the weight (a parameter with role kParameter) whose optimizer update it belongs
// to, or -1. Walks back from every update that replaces a weight through update-phase ops and
// optimizer-state parameters.
std::vector<int32_t> WeightOfUpdateOps(const Graph& g) {
  std::vector<int32_t> weight(static_cast<size_t>(g.size()), -1);
  for (int32_t v = 0; v < g.size(); ++v) {
    const Op& op = g.op(v);
    if (op.alias_of < 0 || g.op(op.alias_of).role != TensorRole::kParameter) continue;
    std::vector<int32_t> stack = {v};
    while (!stack.empty()) {
      const int32_t u = stack.back();
      stack.pop_back();
      if (weight[static_cast<size_t>(u)] >= 0) continue;
      weight[static_cast<size_t>(u)] = op.alias_of;
      for (int32_t x : g.op(u).operands) {
        const Op& xo = g.op(x);
        if (xo.phase == Phase::kUpdate ||
            (xo.kind == OpKind::kParameter && xo.role == TensorRole::kOptimizerState)) {
          stack.push_back(x);
        }
      }
    }
  }
  return weight;
}

std::vector<bool> GradientLike(const Graph& g) {
  const size_t n = static_cast<size_t>(g.size());
  std::vector<int32_t> users(n, 0), only_user(n, -1);
  for (int32_t v = 0; v < g.size(); ++v) {
    for (int32_t x : g.op(v).operands) {
      ++users[static_cast<size_t>(x)];
      only_user[static_cast<size_t>(x)] = v;
    }
  }
  std::vector<bool> like(n, false);
  for (int32_t v = g.size() - 1; v >= 0; --v) {
    const Op& op = g.op(v);
    if (op.role == TensorRole::kGradient) {
      like[static_cast<size_t>(v)] = true;
      continue;
    }
    const int32_t u = only_user[static_cast<size_t>(v)];
    if (op.phase != Phase::kBackward || users[static_cast<size_t>(v)] != 1 ||
        !like[static_cast<size_t>(u)]) {
      continue;
    }
    const OpKind k = g.op(u).kind;
    like[static_cast<size_t>(v)] = k == OpKind::kTranspose || k == OpKind::kReshape ||
                                   k == OpKind::kConvert || k == OpKind::kAdd ||
                                   k == OpKind::kNeg || k == OpKind::kMul;
  }
  return like;
}

// A spec on a source's result as the operand dims see it (source dim i -> operand dim map[i]).
ShardingSpec SourceToOperand(const ShardingSpec& spec, const OperandSource& src, size_t rank) {
  if (!src.through_broadcast) return spec;
  ShardingSpec out = ShardingSpec::Replicated(rank);
  for (size_t i = 0; i < src.dim_map.size(); ++i) {
    if (src.dim_map[i] >= 0) out.dims[static_cast<size_t>(src.dim_map[i])] = spec.dims[i];
  }
  out.partial = spec.partial;
  return out;
}

// The operand layout `spec` as a layout of the source's result (dims that do not exist there
// dropped: slicing a replicated value is free).
ShardingSpec OperandToSource(const ShardingSpec& spec, const OperandSource& src) {
  if (!src.through_broadcast) return spec;
  ShardingSpec out = ShardingSpec::Replicated(src.dim_map.size());
  for (size_t i = 0; i < src.dim_map.size(); ++i) {
    if (src.dim_map[i] >= 0) out.dims[i] = spec.dims[static_cast<size_t>(src.dim_map[i])];
  }
  out.partial = spec.partial;
  return out;
}

// Keeps the decider strategies that satisfy the options; kInvalidArgument when none does.
Result<std::vector<int32_t>> KeptStrategies(const Graph& graph, int32_t id,
                                            const std::vector<OpStrategy>& all,
                                            const LogicalMesh& mesh,
                                            const AutoShardOptions& options) {
  const Op& op = graph.op(id);
  std::vector<int32_t> keep;
  std::vector<int32_t> split_dims;
  for (int32_t m = 0; m < mesh.ndim(); ++m) {
    if (mesh.shape[static_cast<size_t>(m)] > 1) split_dims.push_back(m);
  }
  auto keep_if = [&](auto pred) {
    for (size_t s = 0; s < all.size(); ++s) {
      if (pred(all[s].result)) keep.push_back(static_cast<int32_t>(s));
    }
  };
  if (op.kind != OpKind::kParameter) {
    keep_if([](const ShardingSpec&) { return true; });
    return keep;
  }
  const bool input = op.role == TensorRole::kInput;
  const bool batch_sized = options.batch_size <= 0 || op.shape.empty() ||
                           op.shape[0] == options.batch_size || options.force_data_parallel;
  if (input && !op.shape.empty() && batch_sized &&
      (options.force_data_parallel || options.batch_mesh_dim != kBatchDimFree)) {
    std::vector<int32_t> want = split_dims;
    if (!options.force_data_parallel && options.batch_mesh_dim >= 0) {
      want = {options.batch_mesh_dim};
    }
    keep_if([&](const ShardingSpec& s) {
      if (s.dims[0] != want) return false;
      for (size_t d = 1; d < s.dims.size(); ++d) {
        if (!s.dims[d].empty()) return false;
      }
      return true;
    });
    if (keep.empty() && !options.force_data_parallel && options.replicate_indivisible_inputs) {
      // Replicated over the batch mesh dims; the other mesh dims stay the solver's choice.
      keep_if([&](const ShardingSpec& s) {
        for (const std::vector<int32_t>& dims : s.dims) {
          for (int32_t m : dims) {
            if (std::find(want.begin(), want.end(), m) != want.end()) return false;
          }
        }
        return true;
      });
    }
    if (keep.empty()) {
      return InvalidArgument(DescribeOp(graph, id) + " " + ShapeString(op.shape) +
                             ": its batch dim cannot be split over mesh dims " +
                             MeshShapeString(mesh.shape) + " as forced");
    }
    return keep;
  }
  if (op.role == TensorRole::kParameter && options.force_data_parallel) {
    keep_if([](const ShardingSpec& s) { return s.IsReplicated(); });
    return keep;
  }
  const bool fewest_copies = options.zero == ZeroMode::kForce &&
                             (op.role == TensorRole::kOptimizerState ||
                              (op.role == TensorRole::kParameter && options.zero_parameters));
  if (fewest_copies) {
    int64_t best = INT64_MAX;
    for (const OpStrategy& s : all) best = std::min(best, ReplicationFactor(s.result, mesh.shape));
    keep_if([&](const ShardingSpec& s) { return ReplicationFactor(s, mesh.shape) == best; });
    return keep;
  }
  keep_if([](const ShardingSpec&) { return true; });
  return keep;
}

}  // namespace

std::vector<ShardingSpec> TensorLayouts(const Dims& shape, const LogicalMesh& mesh) {
  std::vector<int32_t> split_dims;
  for (int32_t d = 0; d < mesh.ndim(); ++d) {
    if (mesh.shape[static_cast<size_t>(d)] > 1) split_dims.push_back(d);
  }
  const int32_t rank = static_cast<int32_t>(shape.size());
  std::vector<int32_t> choice(split_dims.size(), -1);  // per split mesh dim: tensor dim or -1
  std::vector<ShardingSpec> out;
  while (true) {
    ShardingSpec spec = ShardingSpec::Replicated(shape.size());
    for (size_t i = 0; i < split_dims.size(); ++i) {
      if (choice[i] >= 0) spec.dims[static_cast<size_t>(choice[i])].push_back(split_dims[i]);
    }
    if (ValidateShardingSpec(spec, shape, mesh.shape).ok()) out.push_back(std::move(spec));
    size_t i = 0;
    for (; i < choice.size(); ++i) {
      if (++choice[i] < rank) break;
      choice[i] = -1;
    }
    if (i == choice.size()) break;
  }
  return out;
}

bool ReadsLeaderLayout(const AutoShardModel& model, int32_t id) {
  const int32_t leader = model.leader[static_cast<size_t>(id)];
  return model.leader_operand[static_cast<size_t>(id)] >= 0 &&
         model.layout_node[static_cast<size_t>(leader)] >= 0;
}

const std::vector<int32_t>& LeaderSpecs(const AutoShardModel& model, int32_t id) {
  const size_t leader = static_cast<size_t>(model.leader[static_cast<size_t>(id)]);
  return ReadsLeaderLayout(model, id) ? model.layout_specs[leader] : model.result_spec[leader];
}

Result<OpStrategy> ModelStrategy(const AutoShardModel& model, int32_t id, int32_t s) {
  const Graph& graph = *model.graph;
  const IterationSpace& space = model.spaces[static_cast<size_t>(id)];
  if (model.treatment[static_cast<size_t>(id)] == OpTreatment::kDecide) {
    return MakeOpStrategy(model.context, id, space,
                          model.decisions[static_cast<size_t>(id)][static_cast<size_t>(s)]);
  }
  const int32_t slot = model.leader_operand[static_cast<size_t>(id)];
  const ShardingSpec& lead = model.specs.spec(LeaderSpecs(model, id)[static_cast<size_t>(s)]);
  LoopAssignment assignment;
  if (slot < 0) {
    assignment = AssignmentFromSpec(space, space.result_dims, lead, model.mesh, PartialSums::kDrop);
  } else {
    const OperandSource& src = model.sources[static_cast<size_t>(id)][static_cast<size_t>(slot)];
    const size_t rank = graph.op(graph.op(id).operands[static_cast<size_t>(slot)]).shape.size();
    const bool linear = space.linear_operand[static_cast<size_t>(slot)];
    assignment = AssignmentFromSpec(space, space.operand_dims[static_cast<size_t>(slot)],
                                    SourceToOperand(lead, src, rank), model.mesh,
                                    linear ? PartialSums::kPass : PartialSums::kDrop);
    assignment.partial_operand = space.partial_all_operands ? -1 : slot;
  }
  // AssignmentFromSpec keeps only splits that divide their loops, so this cannot fail for a
  // valid leader spec.
  return MakeOpStrategy(model.context, id, space, assignment);
}

std::vector<bool> ReadByUpdate(const AutoShardModel& model) {
  const Graph& graph = *model.graph;
  std::vector<bool> read_by_update(static_cast<size_t>(graph.size()), false);
  for (int32_t v = 0; v < graph.size(); ++v) {
    if (graph.op(v).phase != Phase::kUpdate || model.node[static_cast<size_t>(v)] < 0) continue;
    for (const OperandSource& src : model.sources[static_cast<size_t>(v)]) {
      if (src.op >= 0) read_by_update[static_cast<size_t>(src.op)] = true;
    }
  }
  return read_by_update;
}

namespace {

// The model's strategy context, reshard cache and per-op tables, sized for the graph.
void InitModel(AutoShardModel& model, const Graph& graph, const LogicalMesh& mesh,
               const Cluster* cluster, const AutoShardOptions& options) {
  model.graph = &graph;
  model.mesh = mesh;
  model.context.graph = &graph;
  model.context.mesh = &model.mesh;
  model.context.cluster = cluster;
  model.context.cost_mode = options.cost_mode;
  if (cluster != nullptr) {
    PricedTraffic traffic = TrafficPricedBy(graph, cluster->calibration);
    model.context.materialized = std::move(traffic.materialized);
    model.context.charged_reads = std::move(traffic.charged_reads);
    model.context.attention_work = std::move(traffic.attention_work);
  }
  ReshardPolicy policy;
  policy.options.cost_mode = options.cost_mode;
  policy.options.alpa_compatible = options.cost_mode == CostMode::kAlpaCompatible;
  policy.allow_all_gather = options.allow_all_gather;
  policy.allow_all_to_all = options.allow_all_to_all;
  SharedReshardTable* shared =
      options.shared_reshard_costs != nullptr
          ? options.shared_reshard_costs->TableFor(mesh, ReshardPolicyKey(policy))
          : nullptr;
  model.reshard = std::make_unique<ReshardCostCache>(model.specs, model.mesh, policy, shared);

  const size_t op_count = static_cast<size_t>(graph.size());
  model.treatment.assign(op_count, OpTreatment::kFollow);
  model.node.assign(op_count, -1);
  model.leader.assign(op_count, -1);
  model.leader_operand.assign(op_count, -1);
  model.sources.assign(op_count, {});
  model.spaces.assign(op_count, {});
  model.decisions.assign(op_count, {});
  model.result_spec.assign(op_count, {});
  model.wanted_spec.assign(op_count, {});
  model.tensor_type.assign(op_count, -1);
  model.gradient_like = GradientLike(graph);
}

// The source of an operand that reads fused broadcast `fused`: the broadcast's own source, with
// each of its dims mapped through the broadcast (dims broadcast from size 1 map to -1).
OperandSource SourceThroughBroadcast(const AutoShardModel& model, int32_t fused) {
  const Graph& graph = *model.graph;
  const OperandSource& inner = model.sources[static_cast<size_t>(fused)][0];
  const Op& broadcast = graph.op(fused);
  const Op& broadcast_operand = graph.op(broadcast.operands[0]);
  OperandSource source;
  source.op = inner.op;
  source.through_broadcast = true;
  const size_t src_rank = graph.op(inner.op).shape.size();
  source.dim_map.assign(src_rank, -1);
  for (size_t j = 0; j < src_rank; ++j) {
    const int32_t ydim = inner.through_broadcast ? inner.dim_map[j] : static_cast<int32_t>(j);
    if (ydim < 0) continue;
    const size_t to = static_cast<size_t>(broadcast.attrs.dims[static_cast<size_t>(ydim)]);
    if (broadcast_operand.shape[static_cast<size_t>(ydim)] == broadcast.shape[to]) {
      source.dim_map[j] = static_cast<int32_t>(to);
    }
  }
  return source;
}

// The treatment an op's kind and operands give it, before any follow-by-position rule.
OpTreatment TreatmentOfKind(const Op& op, bool all_operands_free) {
  if (op.kind == OpKind::kConstant || op.kind == OpKind::kIota) return OpTreatment::kFree;
  if (op.kind != OpKind::kParameter && all_operands_free) return OpTreatment::kFree;
  if (op.kind == OpKind::kBroadcastInDim) return OpTreatment::kFused;
  if (Decides(op.kind)) return OpTreatment::kDecide;
  return OpTreatment::kFollow;
}

// Phase 1: each op's treatment, operand sources and leader, in graph (topological) order.
void AssignTreatments(AutoShardModel& model, const AutoShardOptions& options) {
  const Graph& graph = *model.graph;
  const std::vector<int32_t> weight_of =
      options.zero == ZeroMode::kOff ? WeightOfUpdateOps(graph)
                                     : std::vector<int32_t>(static_cast<size_t>(graph.size()), -1);
  for (int32_t v = 0; v < graph.size(); ++v) {
    const Op& op = graph.op(v);
    auto& srcs = model.sources[static_cast<size_t>(v)];
    bool all_free = !op.operands.empty();
    for (int32_t x : op.operands) {
      OperandSource source;
      const OpTreatment operand_treatment = model.treatment[static_cast<size_t>(x)];
      if (operand_treatment == OpTreatment::kFused) {
        source = SourceThroughBroadcast(model, x);
      } else if (operand_treatment != OpTreatment::kFree) {
        source.op = x;
      }
      all_free = all_free && source.op < 0;
      srcs.push_back(std::move(source));
    }
    OpTreatment treatment = TreatmentOfKind(op, all_free);
    // Followers by position rather than by operand.
    const int32_t weight = weight_of[static_cast<size_t>(v)];
    const bool zero_off_follow = weight >= 0 && weight != v && graph.op(weight).shape == op.shape &&
                                 op.kind != OpKind::kBroadcastInDim &&
                                 (op.phase == Phase::kUpdate || op.kind == OpKind::kParameter);
    if (treatment != OpTreatment::kFree && zero_off_follow) {
      treatment = OpTreatment::kFollow;
      model.leader[static_cast<size_t>(v)] = weight;
    } else if (treatment != OpTreatment::kFree && options.zero != ZeroMode::kOff &&
               op.alias_of >= 0) {
      treatment = OpTreatment::kFollow;  // an updated value keeps its parameter's layout
      model.leader[static_cast<size_t>(v)] = op.alias_of;
    } else if (treatment == OpTreatment::kFollow) {
      int32_t slot = -1;
      for (size_t k = 0; k < srcs.size() && slot < 0; ++k) {
        if (srcs[k].op >= 0 && !srcs[k].through_broadcast) slot = static_cast<int32_t>(k);
      }
      for (size_t k = 0; k < srcs.size() && slot < 0; ++k) {
        if (srcs[k].op >= 0) slot = static_cast<int32_t>(k);
      }
      model.leader_operand[static_cast<size_t>(v)] = slot;
      model.leader[static_cast<size_t>(v)] = srcs[static_cast<size_t>(slot)].op;
    }
    model.treatment[static_cast<size_t>(v)] = treatment;
  }
}

bool IsNodeTreatment(OpTreatment treatment) {
  return treatment != OpTreatment::kFree && treatment != OpTreatment::kFused;
}

void CountReaders(AutoShardModel& model) {
  const int32_t op_count = model.graph->size();
  model.readers.assign(static_cast<size_t>(op_count), 0);
  for (int32_t v = 0; v < op_count; ++v) {
    if (!IsNodeTreatment(model.treatment[static_cast<size_t>(v)])) continue;
    for (const OperandSource& s : model.sources[static_cast<size_t>(v)]) {
      if (s.op >= 0) ++model.readers[static_cast<size_t>(s.op)];
    }
  }
}

// Per op: whether it makes a graph output: the output's op, or for an output that is a fused
// broadcast, made by its readers from its operand (through any chain of fused broadcasts), that
// operand's producer.
std::vector<bool> OutputProducers(const AutoShardModel& model) {
  const Graph& graph = *model.graph;
  std::vector<bool> output(static_cast<size_t>(graph.size()), false);
  for (int32_t out : graph.outputs) {
    int32_t v = out;
    while (model.treatment[static_cast<size_t>(v)] == OpTreatment::kFused &&
           !graph.op(v).operands.empty()) {
      v = graph.op(v).operands[0];
    }
    output[static_cast<size_t>(v)] = true;
  }
  return output;
}

// Phase 1b: the node ops whose results stay on chip: under a calibration of libalpa's CUDA
// runner (`single_reader_fusion`), those whose memory traffic it does not price (the context's
// `materialized`), but for parameters, updates and outputs (through fused broadcasts).
void MarkOnChip(AutoShardModel& model, const Cluster* cluster) {
  const Graph& graph = *model.graph;
  const size_t op_count = static_cast<size_t>(graph.size());
  model.on_chip.assign(op_count, false);
  const std::vector<bool>& materialized = model.context.materialized;
  if (cluster == nullptr || !cluster->calibration.single_reader_fusion || materialized.empty()) {
    return;
  }
  const std::vector<bool> output = OutputProducers(model);
  for (int32_t v = 0; v < graph.size(); ++v) {
    const Op& op = graph.op(v);
    const size_t i = static_cast<size_t>(v);
    model.on_chip[i] = IsNodeTreatment(model.treatment[i]) && !materialized[i] &&
                       op.kind != OpKind::kParameter && op.alias_of < 0 && !output[i];
  }
}

// The strategies of node op `v`: a decider's enumerated ones that the options keep (their loop
// assignments recorded in `decisions`), or a follower's, one per spec of its leader.
Result<std::vector<OpStrategy>> NodeStrategies(AutoShardModel& model, int32_t v,
                                               const AutoShardOptions& options) {
  std::vector<OpStrategy> strategies;
  if (model.treatment[static_cast<size_t>(v)] == OpTreatment::kDecide) {
    Result<std::vector<OpStrategy>> all =
        EnumerateOpStrategies(model.context, v, model.spaces[static_cast<size_t>(v)]);
    if (!all.ok()) return all.status();
    Result<std::vector<int32_t>> kept =
        KeptStrategies(*model.graph, v, all.value(), model.mesh, options);
    if (!kept.ok()) return kept.status();
    for (int32_t s : kept.value()) {
      strategies.push_back(all.value()[static_cast<size_t>(s)]);
      model.decisions[static_cast<size_t>(v)].push_back(strategies.back().assignment);
    }
    return strategies;
  }
  const size_t count = LeaderSpecs(model, v).size();
  for (size_t s = 0; s < count; ++s) {
    Result<OpStrategy> strategy = ModelStrategy(model, v, static_cast<int32_t>(s));
    if (!strategy.ok()) return strategy.status();
    strategies.push_back(std::move(strategy).value());
  }
  return strategies;
}

// The problem node of op `v` over `strategies` (costs, usages, follow link); interns each
// strategy's result spec and the operand layouts it wants.
ShardingNode StrategyNode(AutoShardModel& model, int32_t v,
                          const std::vector<OpStrategy>& strategies,
                          const AutoShardOptions& options) {
  const Op& op = model.graph->op(v);
  const double once = options.iteration_weight;  // see AutoShardOptions::iteration_weight
  ShardingNode node;
  auto& results = model.result_spec[static_cast<size_t>(v)];
  auto& wanted = model.wanted_spec[static_cast<size_t>(v)];
  const auto& srcs = model.sources[static_cast<size_t>(v)];
  const bool donated = op.alias_of >= 0;  // the update writes into its parameter's buffer
  for (const OpStrategy& s : strategies) {
    results.push_back(model.specs.Intern(s.result));
    for (size_t k = 0; k < srcs.size(); ++k) {
      wanted.push_back(
          srcs[k].op < 0 ? -1 : model.specs.Intern(OperandToSource(s.operands[k], srcs[k])));
    }
    const bool update = op.phase == Phase::kUpdate;
    node.costs.push_back(s.compute_cost * (update ? once : 1.0) +
                         s.communication_cost *
                             (update || model.gradient_like[static_cast<size_t>(v)] ? once : 1.0));
    node.usages.push_back(donated || model.on_chip[static_cast<size_t>(v)] ? 0 : s.memory_bytes);
  }
  if (model.treatment[static_cast<size_t>(v)] == OpTreatment::kFollow) {
    const int32_t leader = model.leader[static_cast<size_t>(v)];
    node.follows = ReadsLeaderLayout(model, v) ? model.layout_node[static_cast<size_t>(leader)]
                                               : model.node[static_cast<size_t>(leader)];
  }
  return node;
}

// The reader layout node of op `v`: one choice per layout its readers may read it in.
void AddReaderLayoutNode(AutoShardModel& model, int32_t v) {
  auto& specs = model.layout_specs[static_cast<size_t>(v)];
  for (const ShardingSpec& spec : TensorLayouts(model.graph->op(v).shape, model.mesh)) {
    specs.push_back(model.specs.Intern(spec));
  }
  model.layout_node[static_cast<size_t>(v)] = static_cast<int32_t>(model.problem.nodes.size());
  ShardingNode layout;
  layout.costs.assign(specs.size(), 0.0);  // no usage: resharded values are transient
  model.problem.nodes.push_back(std::move(layout));
}

// Phase 2: strategies of node ops, each followed by its reader layout node when several operand
// slots read it: the tensor is resharded once, into that layout, and every reader reads it
// (reshards on separate edges would each be paid, although a runtime moves the data once).
// Followers that read a tensor follow its reader layout.
Status AddStrategyNodes(AutoShardModel& model, const AutoShardOptions& options) {
  const Graph& graph = *model.graph;
  const size_t op_count = static_cast<size_t>(graph.size());
  model.layout_node.assign(op_count, -1);
  model.layout_specs.assign(op_count, {});
  model.node_count_of_ops = 0;
  for (int32_t v = 0; v < graph.size(); ++v) {
    if (!IsNodeTreatment(model.treatment[static_cast<size_t>(v)])) continue;
    const Op& op = graph.op(v);
    Result<IterationSpace> space = OpIterationSpace(graph, v);
    if (!space.ok()) return space.status();
    model.spaces[static_cast<size_t>(v)] = std::move(space).value();
    model.node[static_cast<size_t>(v)] = static_cast<int32_t>(model.problem.nodes.size());
    ++model.node_count_of_ops;
    model.tensor_type[static_cast<size_t>(v)] =
        model.reshard->TensorType(op.shape, DTypeBytes(op.dtype));

    Result<std::vector<OpStrategy>> strategies = NodeStrategies(model, v, options);
    if (!strategies.ok()) return strategies.status();
    model.problem.nodes.push_back(StrategyNode(model, v, strategies.value(), options));

    // Not for parameters: a weight gathered for several readers would be kept gathered between
    // them at no memory cost; a runtime gathers it per use (as FSDP does), which is what
    // per-edge resharding charges.
    if (model.readers[static_cast<size_t>(v)] >= 2 && op.kind != OpKind::kParameter) {
      AddReaderLayoutNode(model, v);
    }
  }
  return Status::Ok();
}

// Phase 3a: the memory-aware schedule of the ops and each op's position in it.
void ScheduleOps(AutoShardModel& model) {
  const Graph& graph = *model.graph;
  const size_t op_count = static_cast<size_t>(graph.size());
  std::vector<int64_t> bytes(op_count, 0);
  for (int32_t v = 0; v < graph.size(); ++v) {
    if (model.node[static_cast<size_t>(v)] >= 0 && graph.op(v).alias_of < 0 &&
        !model.on_chip[static_cast<size_t>(v)])
      bytes[static_cast<size_t>(v)] = TensorBytes(graph.op(v));
  }
  model.schedule = MemoryAwareSchedule(graph, bytes);
  model.position.assign(op_count, 0);
  for (size_t p = 0; p < model.schedule.size(); ++p) {
    model.position[static_cast<size_t>(model.schedule[p])] = static_cast<int32_t>(p);
  }
}

// Per op: the node ops whose results its reads keep alive: its sources, and for a source on
// chip what that one's reads keep alive (sources precede their readers in graph order).
std::vector<std::vector<int32_t>> KeptAliveByReads(const AutoShardModel& model) {
  const Graph& graph = *model.graph;
  std::vector<std::vector<int32_t>> kept(static_cast<size_t>(graph.size()));
  for (int32_t v = 0; v < graph.size(); ++v) {
    if (model.node[static_cast<size_t>(v)] < 0) continue;
    std::vector<int32_t>& out = kept[static_cast<size_t>(v)];
    for (const OperandSource& s : model.sources[static_cast<size_t>(v)]) {
      if (s.op < 0) continue;
      if (model.on_chip[static_cast<size_t>(s.op)]) {
        const std::vector<int32_t>& inner = kept[static_cast<size_t>(s.op)];
        out.insert(out.end(), inner.begin(), inner.end());
      } else {
        out.push_back(s.op);
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return kept;
}

// Phase 3b: each node's live interval in the schedule (parameters and outputs live to the end)
// and the memory budget.
void SetUsageIntervals(AutoShardModel& model, const AutoShardOptions& options) {
  const Graph& graph = *model.graph;
  const size_t op_count = static_cast<size_t>(graph.size());
  const int64_t end = static_cast<int64_t>(model.schedule.size());
  std::vector<int64_t> last(op_count, -1);
  const std::vector<std::vector<int32_t>> kept = KeptAliveByReads(model);
  for (int32_t v = 0; v < graph.size(); ++v) {
    for (int32_t u : kept[static_cast<size_t>(v)]) {
      last[static_cast<size_t>(u)] =
          std::max<int64_t>(last[static_cast<size_t>(u)], model.position[static_cast<size_t>(v)]);
    }
  }
  // Outputs live to the end (an output that is a fused broadcast: its operand's producer).
  const std::vector<bool> persistent = OutputProducers(model);
  for (int32_t v = 0; v < graph.size(); ++v) {
    const int32_t nd = model.node[static_cast<size_t>(v)];
    if (nd < 0) continue;
    UsageInterval& iv = model.problem.nodes[static_cast<size_t>(nd)].interval;
    const bool param = graph.op(v).kind == OpKind::kParameter;
    iv.lo = param ? 0 : model.position[static_cast<size_t>(v)];
    iv.hi = (param || persistent[static_cast<size_t>(v)])
                ? end
                : std::max<int64_t>(iv.lo + 1, last[static_cast<size_t>(v)] + 1);
  }
  if (options.memory_budget_bytes) model.problem.usage_limit = *options.memory_budget_bytes;
}

}  // namespace

Result<std::unique_ptr<AutoShardModel>> BuildAutoShardModel(const Graph& graph,
                                                            const LogicalMesh& mesh,
                                                            const Cluster* cluster,
                                                            const AutoShardOptions& options) {
  auto model = std::make_unique<AutoShardModel>();
  InitModel(*model, graph, mesh, cluster, options);
  AssignTreatments(*model, options);
  CountReaders(*model);
  MarkOnChip(*model, cluster);
  ALPA_RETURN_IF_ERROR(AddStrategyNodes(*model, options));
  ScheduleOps(*model);
  SetUsageIntervals(*model, options);
  // Resharding edges: producer -> reader layout -> readers, or producer -> reader.
  ALPA_RETURN_IF_ERROR(AddReaderLayoutEdges(*model, options));
  ALPA_RETURN_IF_ERROR(AddOperandEdges(*model, options));
  ALPA_RETURN_IF_ERROR(AddHandoffCosts(*model, options));
  return model;
}

}  // namespace alpa
