// Graph -> sharding problem (see auto_sharding_problem.h and the rules in auto_sharding.h).
#include "solvers/auto_sharding/auto_sharding_problem.h"

#include <algorithm>

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

// Every layout a tensor's readers may read it in: each mesh dim of size > 1 splits one tensor
// dim (after the mesh dims before it on that dim) or is unused; splits must divide the dim. No
// partial sums: readers read a fully reduced value, so a partial sum is reduced once for all of
// them (all-reduce, or reduce-scatter onto a split they read). Reductions staged across mesh
// dims (reduce-scatter on one, all-reduce on the other, all-gather back) are not modelled, as in
// Alpa.
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
Result<std::vector<int32_t>> KeptStrategies(const Graph& g, int32_t id,
                                            const std::vector<OpStrategy>& all,
                                            const LogicalMesh& mesh,
                                            const AutoShardOptions& options) {
  const Op& op = g.op(id);
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
  if (input && !op.shape.empty() &&
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
    if (keep.empty()) {
      return InvalidArgument(DescribeOp(g, id) + " " + ShapeString(op.shape) +
                             ": its batch dim cannot be split over mesh dims " +
                             MeshShapeString(mesh.shape) + " as forced");
    }
    return keep;
  }
  if (op.role == TensorRole::kParameter && options.force_data_parallel) {
    keep_if([](const ShardingSpec& s) { return s.IsReplicated(); });
    return keep;
  }
  if (op.role == TensorRole::kOptimizerState && options.zero == ZeroMode::kForce) {
    int64_t best = INT64_MAX;
    for (const OpStrategy& s : all) best = std::min(best, ReplicationFactor(s.result, mesh.shape));
    keep_if([&](const ShardingSpec& s) { return ReplicationFactor(s, mesh.shape) == best; });
    return keep;
  }
  keep_if([](const ShardingSpec&) { return true; });
  return keep;
}

}  // namespace

bool ReadsLeaderLayout(const AutoShardModel& m, int32_t id) {
  const int32_t leader = m.leader[static_cast<size_t>(id)];
  return m.leader_operand[static_cast<size_t>(id)] >= 0 &&
         m.layout_node[static_cast<size_t>(leader)] >= 0;
}

const std::vector<int32_t>& LeaderSpecs(const AutoShardModel& m, int32_t id) {
  const size_t leader = static_cast<size_t>(m.leader[static_cast<size_t>(id)]);
  return ReadsLeaderLayout(m, id) ? m.layout_specs[leader] : m.result_spec[leader];
}

Result<OpStrategy> ModelStrategy(const AutoShardModel& m, int32_t id, int32_t s) {
  const Graph& g = *m.graph;
  const IterationSpace& space = m.spaces[static_cast<size_t>(id)];
  if (m.treatment[static_cast<size_t>(id)] == OpTreatment::kDecide) {
    return MakeOpStrategy(m.context, id, space,
                          m.decisions[static_cast<size_t>(id)][static_cast<size_t>(s)]);
  }
  const int32_t slot = m.leader_operand[static_cast<size_t>(id)];
  const ShardingSpec& lead = m.specs.spec(LeaderSpecs(m, id)[static_cast<size_t>(s)]);
  LoopAssignment a;
  if (slot < 0) {
    a = AssignmentFromSpec(space, space.result_dims, lead, m.mesh, false);
  } else {
    const OperandSource& src = m.sources[static_cast<size_t>(id)][static_cast<size_t>(slot)];
    const size_t rank = g.op(g.op(id).operands[static_cast<size_t>(slot)]).shape.size();
    const bool linear = space.linear_operand[static_cast<size_t>(slot)];
    a = AssignmentFromSpec(space, space.operand_dims[static_cast<size_t>(slot)],
                           SourceToOperand(lead, src, rank), m.mesh, linear);
    a.partial_operand = space.partial_all_operands ? -1 : slot;
  }
  // AssignmentFromSpec keeps only splits that divide their loops, so this cannot fail for a
  // valid leader spec.
  return MakeOpStrategy(m.context, id, space, a);
}

Result<std::unique_ptr<AutoShardModel>> BuildAutoShardModel(const Graph& g, const LogicalMesh& mesh,
                                                            const Cluster* cluster,
                                                            const AutoShardOptions& options) {
  auto model = std::make_unique<AutoShardModel>();
  AutoShardModel& m = *model;
  m.graph = &g;
  m.mesh = mesh;
  m.context.graph = &g;
  m.context.mesh = &m.mesh;
  m.context.cluster = cluster;
  m.context.cost_mode = options.cost_mode;
  ReshardPolicy policy;
  policy.options.cost_mode = options.cost_mode;
  policy.options.alpa_compatible = options.cost_mode == CostMode::kAlpaCompatible;
  policy.allow_all_gather = options.allow_all_gather;
  policy.allow_all_to_all = options.allow_all_to_all;
  m.reshard = std::make_unique<ReshardCostCache>(m.specs, m.mesh, policy);

  const int32_t n = g.size();
  const size_t un = static_cast<size_t>(n);
  m.treatment.assign(un, OpTreatment::kFollow);
  m.node.assign(un, -1);
  m.leader.assign(un, -1);
  m.leader_operand.assign(un, -1);
  m.sources.assign(un, {});
  m.spaces.assign(un, {});
  m.decisions.assign(un, {});
  m.result_spec.assign(un, {});
  m.wanted_spec.assign(un, {});
  m.tensor_type.assign(un, -1);
  const std::vector<int32_t> weight_of =
      options.zero == ZeroMode::kOff ? WeightOfUpdateOps(g) : std::vector<int32_t>(un, -1);

  m.gradient_like = GradientLike(g);
  const double once = options.iteration_weight;  // see AutoShardOptions::iteration_weight

  // 1. Treatment and operand sources, in graph (topological) order.
  for (int32_t v = 0; v < n; ++v) {
    const Op& op = g.op(v);
    auto& srcs = m.sources[static_cast<size_t>(v)];
    bool all_free = !op.operands.empty();
    for (int32_t x : op.operands) {
      OperandSource s;
      const OpTreatment t = m.treatment[static_cast<size_t>(x)];
      if (t == OpTreatment::kFused) {
        const OperandSource& inner = m.sources[static_cast<size_t>(x)][0];
        const Op& b = g.op(x);
        const Op& y = g.op(b.operands[0]);
        s.op = inner.op;
        s.through_broadcast = true;
        const size_t src_rank = g.op(inner.op).shape.size();
        s.dim_map.assign(src_rank, -1);
        for (size_t j = 0; j < src_rank; ++j) {
          const int32_t ydim = inner.through_broadcast ? inner.dim_map[j] : static_cast<int32_t>(j);
          if (ydim < 0) continue;
          const size_t to = static_cast<size_t>(b.attrs.dims[static_cast<size_t>(ydim)]);
          if (y.shape[static_cast<size_t>(ydim)] == b.shape[to]) {
            s.dim_map[j] = static_cast<int32_t>(to);
          }
        }
      } else if (t != OpTreatment::kFree) {
        s.op = x;
      }
      all_free = all_free && s.op < 0;
      srcs.push_back(std::move(s));
    }
    OpTreatment t;
    if (op.kind == OpKind::kConstant || op.kind == OpKind::kIota) {
      t = OpTreatment::kFree;
    } else if (op.kind != OpKind::kParameter && all_free) {
      t = OpTreatment::kFree;
    } else if (op.kind == OpKind::kBroadcastInDim) {
      t = OpTreatment::kFused;
    } else if (Decides(op.kind)) {
      t = OpTreatment::kDecide;
    } else {
      t = OpTreatment::kFollow;
    }
    // Followers by position rather than by operand.
    const int32_t w = weight_of[static_cast<size_t>(v)];
    const bool zero_off_follow = w >= 0 && w != v && g.op(w).shape == op.shape &&
                                 op.kind != OpKind::kBroadcastInDim &&
                                 (op.phase == Phase::kUpdate || op.kind == OpKind::kParameter);
    if (t != OpTreatment::kFree && zero_off_follow) {
      t = OpTreatment::kFollow;
      m.leader[static_cast<size_t>(v)] = w;
    } else if (t != OpTreatment::kFree && options.zero != ZeroMode::kOff && op.alias_of >= 0) {
      t = OpTreatment::kFollow;  // an updated value keeps its parameter's layout
      m.leader[static_cast<size_t>(v)] = op.alias_of;
    } else if (t == OpTreatment::kFollow) {
      int32_t slot = -1;
      for (size_t k = 0; k < srcs.size() && slot < 0; ++k) {
        if (srcs[k].op >= 0 && !srcs[k].through_broadcast) slot = static_cast<int32_t>(k);
      }
      for (size_t k = 0; k < srcs.size() && slot < 0; ++k) {
        if (srcs[k].op >= 0) slot = static_cast<int32_t>(k);
      }
      m.leader_operand[static_cast<size_t>(v)] = slot;
      m.leader[static_cast<size_t>(v)] = srcs[static_cast<size_t>(slot)].op;
    }
    m.treatment[static_cast<size_t>(v)] = t;
  }

  m.readers.assign(un, 0);
  for (int32_t v = 0; v < n; ++v) {
    const OpTreatment t = m.treatment[static_cast<size_t>(v)];
    if (t == OpTreatment::kFree || t == OpTreatment::kFused) continue;
    for (const OperandSource& s : m.sources[static_cast<size_t>(v)]) {
      if (s.op >= 0) ++m.readers[static_cast<size_t>(s.op)];
    }
  }

  // 2. Strategies of node ops, each followed by its reader layout node when several operand
  // slots read it: the tensor is resharded once, into that layout, and every reader reads it
  // (reshards on separate edges would each be paid, although a runtime moves the data once).
  // Followers that read a tensor follow its reader layout.
  m.layout_node.assign(un, -1);
  m.layout_specs.assign(un, {});
  m.node_count_of_ops = 0;
  for (int32_t v = 0; v < n; ++v) {
    const OpTreatment t = m.treatment[static_cast<size_t>(v)];
    if (t == OpTreatment::kFree || t == OpTreatment::kFused) continue;
    const Op& op = g.op(v);
    Result<IterationSpace> space = OpIterationSpace(g, v);
    if (!space.ok()) return space.status();
    m.spaces[static_cast<size_t>(v)] = std::move(space).value();
    m.node[static_cast<size_t>(v)] = static_cast<int32_t>(m.problem.nodes.size());
    ++m.node_count_of_ops;
    m.tensor_type[static_cast<size_t>(v)] = m.reshard->TensorType(op.shape, DTypeBytes(op.dtype));

    std::vector<OpStrategy> strategies;
    if (t == OpTreatment::kDecide) {
      Result<std::vector<OpStrategy>> all =
          EnumerateOpStrategies(m.context, v, m.spaces[static_cast<size_t>(v)]);
      if (!all.ok()) return all.status();
      Result<std::vector<int32_t>> kept = KeptStrategies(g, v, all.value(), mesh, options);
      if (!kept.ok()) return kept.status();
      for (int32_t s : kept.value()) {
        strategies.push_back(all.value()[static_cast<size_t>(s)]);
        m.decisions[static_cast<size_t>(v)].push_back(strategies.back().assignment);
      }
    } else {
      const size_t count = LeaderSpecs(m, v).size();
      for (size_t s = 0; s < count; ++s) {
        Result<OpStrategy> st = ModelStrategy(m, v, static_cast<int32_t>(s));
        if (!st.ok()) return st.status();
        strategies.push_back(std::move(st).value());
      }
    }
    ShardingNode node;
    auto& results = m.result_spec[static_cast<size_t>(v)];
    auto& wanted = m.wanted_spec[static_cast<size_t>(v)];
    const auto& srcs = m.sources[static_cast<size_t>(v)];
    const bool donated = op.alias_of >= 0;  // the update writes into its parameter's buffer
    for (const OpStrategy& s : strategies) {
      results.push_back(m.specs.Intern(s.result));
      for (size_t k = 0; k < srcs.size(); ++k) {
        wanted.push_back(srcs[k].op < 0 ? -1
                                        : m.specs.Intern(OperandToSource(s.operands[k], srcs[k])));
      }
      const bool update = op.phase == Phase::kUpdate;
      node.costs.push_back(s.compute_cost * (update ? once : 1.0) +
                           s.communication_cost *
                               (update || m.gradient_like[static_cast<size_t>(v)] ? once : 1.0));
      node.usages.push_back(donated ? 0 : s.memory_bytes);
    }
    if (t == OpTreatment::kFollow) {
      const int32_t leader = m.leader[static_cast<size_t>(v)];
      node.follows = ReadsLeaderLayout(m, v) ? m.layout_node[static_cast<size_t>(leader)]
                                             : m.node[static_cast<size_t>(leader)];
    }
    m.problem.nodes.push_back(std::move(node));

    // Not for parameters: a weight gathered for several readers would be kept gathered between
    // them at no memory cost; a runtime gathers it per use (as FSDP does), which is what
    // per-edge resharding charges.
    if (m.readers[static_cast<size_t>(v)] >= 2 && op.kind != OpKind::kParameter) {
      auto& specs = m.layout_specs[static_cast<size_t>(v)];
      for (const ShardingSpec& spec : TensorLayouts(op.shape, mesh)) {
        specs.push_back(m.specs.Intern(spec));
      }
      m.layout_node[static_cast<size_t>(v)] = static_cast<int32_t>(m.problem.nodes.size());
      ShardingNode layout;
      layout.costs.assign(specs.size(), 0.0);  // no usage: resharded values are transient
      m.problem.nodes.push_back(std::move(layout));
    }
  }

  // 3. Schedule and liveness.
  std::vector<int64_t> bytes(un, 0);
  for (int32_t v = 0; v < n; ++v) {
    if (m.node[static_cast<size_t>(v)] >= 0 && g.op(v).alias_of < 0)
      bytes[static_cast<size_t>(v)] = TensorBytes(g.op(v));
  }
  m.schedule = MemoryAwareSchedule(g, bytes);
  m.position.assign(un, 0);
  for (size_t p = 0; p < m.schedule.size(); ++p) {
    m.position[static_cast<size_t>(m.schedule[p])] = static_cast<int32_t>(p);
  }
  const int64_t end = static_cast<int64_t>(m.schedule.size());
  std::vector<int64_t> last(un, -1);
  for (int32_t v = 0; v < n; ++v) {
    if (m.node[static_cast<size_t>(v)] < 0) continue;
    for (const OperandSource& s : m.sources[static_cast<size_t>(v)]) {
      if (s.op >= 0) {
        last[static_cast<size_t>(s.op)] =
            std::max<int64_t>(last[static_cast<size_t>(s.op)], m.position[static_cast<size_t>(v)]);
      }
    }
  }
  std::vector<bool> persistent(un, false);
  for (int32_t out : g.outputs) persistent[static_cast<size_t>(out)] = true;
  for (int32_t v = 0; v < n; ++v) {
    const int32_t nd = m.node[static_cast<size_t>(v)];
    if (nd < 0) continue;
    UsageInterval& iv = m.problem.nodes[static_cast<size_t>(nd)].interval;
    const bool param = g.op(v).kind == OpKind::kParameter;
    iv.lo = param ? 0 : m.position[static_cast<size_t>(v)];
    iv.hi = (param || persistent[static_cast<size_t>(v)])
                ? end
                : std::max<int64_t>(iv.lo + 1, last[static_cast<size_t>(v)] + 1);
  }
  if (options.memory_budget_bytes) m.problem.usage_limit = *options.memory_budget_bytes;

  // 4. Resharding edges: producer -> reader layout -> readers, or producer -> reader.
  // Without ZeRO, a weight is read in the layout it is stored in (gathering it per use is
  // ZeRO-3 / FSDP), and gradients are all-reduced (reduce-scattering them is the ZeRO rewrite).
  using Restriction = ReshardCostCache::Restriction;
  auto restriction = [&](int32_t u) {
    if (options.zero != ZeroMode::kOff) return Restriction::kNone;
    const Op& op = g.op(u);
    if (op.kind == OpKind::kParameter && op.role == TensorRole::kParameter) {
      return Restriction::kLocalOnly;
    }
    return m.gradient_like[static_cast<size_t>(u)] ? Restriction::kNoReduceScatter
                                                   : Restriction::kNone;
  };
  auto add_edge = [&](int32_t nu, const std::vector<int32_t>& from, int32_t type, int32_t nv,
                      size_t kv, auto wanted, Restriction limit, double weight) -> Status {
    const size_t ku = from.size();
    ShardingEdge e;
    e.u = nu;
    e.v = nv;
    e.costs.assign(ku * kv, 0.0);
    const bool same_root = FollowRoot(m.problem, nu) == FollowRoot(m.problem, nv);
    bool any = false;
    for (size_t i = 0; i < ku; ++i) {
      for (size_t j = 0; j < kv; ++j) {
        if (same_root && i != j) continue;  // only the diagonal can apply
        Result<double> c = m.reshard->Cost(type, from[i], wanted(j), limit);
        if (!c.ok()) return c.status();
        e.costs[i * kv + j] = c.value() * weight;
        any = any || c.value() != 0.0;
      }
    }
    if (any) m.problem.edges.push_back(std::move(e));
    return Status::Ok();
  };
  // A shared resharding counts once per iteration when it moves a gradient or feeds an update.
  std::vector<bool> read_by_update(un, false);
  for (int32_t v = 0; v < n; ++v) {
    if (g.op(v).phase != Phase::kUpdate || m.node[static_cast<size_t>(v)] < 0) continue;
    for (const OperandSource& src : m.sources[static_cast<size_t>(v)]) {
      if (src.op >= 0) read_by_update[static_cast<size_t>(src.op)] = true;
    }
  }
  for (int32_t u = 0; u < n; ++u) {
    const int32_t nl = m.layout_node[static_cast<size_t>(u)];
    if (nl < 0) continue;
    const auto& layouts = m.layout_specs[static_cast<size_t>(u)];
    Status st = add_edge(
        m.node[static_cast<size_t>(u)], m.result_spec[static_cast<size_t>(u)],
        m.tensor_type[static_cast<size_t>(u)], nl, layouts.size(),
        [&](size_t j) { return layouts[j]; }, restriction(u),
        m.gradient_like[static_cast<size_t>(u)] || read_by_update[static_cast<size_t>(u)] ? once
                                                                                          : 1.0);
    if (!st.ok()) return InternalError(DescribeOp(g, u) + " reader layout: " + st.message());
  }
  for (int32_t v = 0; v < n; ++v) {
    const int32_t nv = m.node[static_cast<size_t>(v)];
    if (nv < 0) continue;
    const auto& srcs = m.sources[static_cast<size_t>(v)];
    const auto& wanted = m.wanted_spec[static_cast<size_t>(v)];
    for (size_t k = 0; k < srcs.size(); ++k) {
      const int32_t u = srcs[k].op;
      if (u < 0) continue;
      const int32_t nl = m.layout_node[static_cast<size_t>(u)];
      const bool via_layout = nl >= 0;
      Status st = add_edge(
          via_layout ? nl : m.node[static_cast<size_t>(u)],
          via_layout ? m.layout_specs[static_cast<size_t>(u)]
                     : m.result_spec[static_cast<size_t>(u)],
          m.tensor_type[static_cast<size_t>(u)], nv, m.result_spec[static_cast<size_t>(v)].size(),
          [&](size_t j) { return wanted[j * srcs.size() + k]; }, restriction(u),
          (m.gradient_like[static_cast<size_t>(u)] || g.op(v).phase == Phase::kUpdate) ? once
                                                                                       : 1.0);
      if (!st.ok()) {
        return InternalError(DescribeOp(g, v) + " operand " + std::to_string(k) + ": " +
                             st.message());
      }
    }
  }
  return model;
}

}  // namespace alpa
