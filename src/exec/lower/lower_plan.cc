// LowerPlan: per device, the step's tasks as instructions (lower_plan.h has the scheme).
#include "exec/lower/lower_plan.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cluster/cross_mesh.h"
#include "core/cluster/resharding.h"
#include "core/ir/recompute.h"
#include "core/util/parallel.h"
#include "core/util/wide_int.h"
#include "exec/lower/device_emitter.h"
#include "exec/lower/free_values.h"
#include "exec/lower/local_op.h"
#include "solvers/planner/gradient_sharding.h"
#include "solvers/planner/stage_costs.h"
#include "solvers/planner/weight_gradient_ops.h"

namespace alpa {
namespace {

constexpr int64_t kUpdate = -1;  // the microbatch index of once-per-iteration values
// Message tags fit MPI's guaranteed range (MPI_TAG_UB >= 32767; Open MPI's is 2^31 - 1): a
// transfer's tag is transfer * kTagsPerTransfer + microbatch (+ kOnceTag for one sent once per
// iteration), a refresh's kRefreshTagBase + its index, and the driver keeps tags from 2^30
// up for itself.
constexpr int64_t kTagsPerTransfer = int64_t{1} << 11;
constexpr int64_t kOnceTag = kTagsPerTransfer - 1;
constexpr int64_t kRefreshTagBase = int64_t{1} << 29;

// How an op takes part in gradient accumulation (ClassifyBatchSums).
enum class BatchSum : int8_t { kNone = 0, kRoot = 1, kDeferred = 2 };

// What of the backward a task runs: all of it (GPipe, 1F1B), or under a schedule that splits
// it (SplitsBackward) the input-gradient part (kBackward tasks) or the weight-gradient part
// (kWeightGradient tasks; weight_gradient_ops.h).
enum class BackwardPart : int8_t { kWhole = 0, kInputGradient = 1, kWeightGradient = 2 };

// Which refreshed copies a stage's lowering emits: all in the plan's order (a device of one
// stage), or, on a device of several stages, its sends (after each stage's update) apart from
// its receives and local copies (after every update of the device).
enum class RefreshPart : int8_t { kAll = 0, kSends = 1, kReceives = 2 };

Status Unsupported(std::string m) { return Status(StatusCode::kUnsupported, std::move(m)); }

// The stages per device group the lowering runs `plan` with under `schedule`: the plan's under
// interleaved 1F1B, else 1 (CheckScheduleFits refuses the other pairings).
int32_t VirtualStagesUnder(const PipelinePlan& plan, PipelineScheduleKind schedule) {
  return schedule == PipelineScheduleKind::kInterleavedOneFOneB ? plan.virtual_stages : 1;
}

// A plan with several stages per device group runs under interleaved 1F1B alone, and
// interleaved 1F1B runs only such a plan: its stages' devices say which stages share devices,
// and another schedule would run two stages of one device as if each had it to itself.
Status CheckScheduleFits(const PipelinePlan& plan, PipelineScheduleKind schedule) {
  const std::string name = PipelineScheduleName(schedule);
  const bool interleaved = schedule == PipelineScheduleKind::kInterleavedOneFOneB;
  if (plan.virtual_stages > 1 && !interleaved) {
    return InvalidArgument("the plan runs " + std::to_string(plan.virtual_stages) +
                           " stages on each device group (virtual_stages " +
                           std::to_string(plan.virtual_stages) +
                           "), which only the schedule interleaved-1f1b runs; not " + name);
  }
  if (interleaved && plan.virtual_stages < 2) {
    return InvalidArgument(
        "the schedule interleaved-1f1b runs a plan made for it (several stages per device group, "
        "virtual_stages >= 2); this plan has " +
        std::to_string(plan.virtual_stages) + " stage per device group (its schedule is " +
        PipelineScheduleName(plan.schedule) + ")");
  }
  const std::string problem =
      PipelineShapeProblem(schedule, static_cast<int32_t>(plan.stages.size()),
                           VirtualStagesUnder(plan, schedule), plan.microbatches);
  if (!problem.empty()) {
    return InvalidArgument("the plan cannot run under " + name + ": " + problem);
  }
  return Status::Ok();
}

bool Materialized(const OpSharding& s) { return !s.free && !s.fused; }

bool IsPersistentRole(TensorRole role) {
  return role == TensorRole::kParameter || role == TensorRole::kOptimizerState;
}

// What the lowering needs of one piece, shared by the devices of its stage.
struct PieceInfo {
  int32_t stage = 0, index = 0;  // index within the stage
  const Subgraph* sub = nullptr;
  const AutoShardResult* sharding = nullptr;
  std::vector<char> boundary;  // per local op
  std::map<std::pair<int32_t, int32_t>, std::vector<int32_t>> edge_collectives;
  std::map<int32_t, std::vector<int32_t>> shared_collectives;  // per tensor (reader layouts)
  std::map<int32_t, std::vector<int32_t>> inside_collectives;  // per op
  std::vector<int32_t> forward_ops, backward_ops, update_ops;  // materialized, schedule order
  std::vector<bool> rerun;  // per local op: run again before the backward (selective recompute)
  // Per local op, under a schedule that splits the backward: WeightGradientOps (1: the op runs
  // in the weight-gradient task). Empty otherwise.
  std::vector<char> weight_gradient;
  std::vector<int32_t> read_by_update;     // per-microbatch values an update op reads
  std::vector<int32_t> boundary_transfer;  // per local op: the transfer feeding it, or -1
  // Transfers sent or received once per iteration (MarkOncePerIteration): the transfers this
  // piece produces, and the boundary inputs (local ops) it receives that way.
  std::vector<int32_t> once_sends, once_receives;
  int32_t loss = -1;  // local id of the graph's loss, when here
  // ZeRO-2 (a stage with shard_gradients and several microbatches; gradient_sharding.h): per
  // chain, the value summed per microbatch under ZeRO-1 (`accumulated`, the root or a chain
  // value computed in the backward) and the chain's ops after it, which now run per
  // microbatch too; the shard of the chain's tensor is summed instead.
  struct Zero2Chain {
    GradientChain chain;
    int32_t accumulated = -1;
    std::vector<int32_t> per_microbatch;
  };
  std::vector<Zero2Chain> zero2;
  std::vector<char> zero2_moved;     // per local op: a chain op that runs per microbatch now
  std::vector<char> zero2_replaced;  // per local op: an accumulator a chain replaces
  // The (reader, operand) edges whose collectives run per microbatch (not at the update).
  std::set<std::pair<int32_t, int32_t>> zero2_edges;

  const Op& op(int32_t l) const { return sub->graph.op(l); }
  const OpSharding& sh(int32_t l) const { return sharding->ops[static_cast<size_t>(l)]; }
  bool Zero2Replaced(int32_t l) const {
    return !zero2_replaced.empty() && zero2_replaced[static_cast<size_t>(l)] != 0;
  }
  bool Zero2Moved(int32_t l) const {
    return !zero2_moved.empty() && zero2_moved[static_cast<size_t>(l)] != 0;
  }
  bool WeightGradient(int32_t l) const {
    return !weight_gradient.empty() && weight_gradient[static_cast<size_t>(l)] != 0;
  }
  // Whether the backward op l runs in a task that runs `part` of the backward.
  bool InPart(int32_t l, BackwardPart part) const {
    return part == BackwardPart::kWhole ||
           WeightGradient(l) == (part == BackwardPart::kWeightGradient);
  }
};

// A parameter copy that another piece's update refreshes after the step.
struct Refresh {
  int32_t from_piece = 0, from_local = 0;  // the updating piece's parameter op
  int32_t to_piece = 0, to_local = 0;
};

struct PlanContext {
  const PipelinePlan& plan;
  const LowerOptions& options;
  std::vector<PieceInfo> pieces;                   // all stages, in order
  std::vector<std::vector<int32_t>> stage_pieces;  // per stage: indices into pieces
  std::vector<MeshView> meshes;                    // per stage
  std::vector<PlanOpSite> sites;
  std::vector<Refresh> refreshes;
  std::vector<BatchSum> batch_sums;  // per global op (ClassifyBatchSums)
  std::vector<char> once;            // per transfer: sent once per iteration
  int32_t PieceOf(int32_t stage, int32_t index) const {
    return stage_pieces[static_cast<size_t>(stage)][static_cast<size_t>(index)];
  }
};

// The ZeRO-2 chains of piece p (gradient_sharding.h) that the lowering runs per microbatch: from
// the last chain value computed per microbatch (`once`: the ops that run at the update), which
// the update reads (`read`), on; the chain's tensor read by update ops alone. Others keep the
// ZeRO-1 accumulation.
void FindZero2Chains(const std::vector<char>& once, const std::vector<char>& read, PieceInfo& p) {
  const Graph& g = p.sub->graph;
  p.zero2_moved.assign(g.ops.size(), 0);
  p.zero2_replaced.assign(g.ops.size(), 0);
  std::vector<char> read_per_microbatch(g.ops.size(), 0);  // by an op that is not `once`
  for (int32_t u = 0; u < g.size(); ++u) {
    if (once[static_cast<size_t>(u)]) continue;
    for (int32_t o : g.op(u).operands) read_per_microbatch[static_cast<size_t>(o)] = 1;
  }
  for (GradientChain& c : FindGradientChains(g, *p.sharding).chains) {
    std::vector<int32_t> seq{c.root};
    seq.insert(seq.end(), c.chain.begin(), c.chain.end());
    size_t first_once = 0;
    while (first_once < seq.size() && !once[static_cast<size_t>(seq[first_once])]) ++first_once;
    if (first_once == 0) continue;
    bool ok = read[static_cast<size_t>(seq[first_once - 1])] != 0;
    for (size_t i = first_once; i < seq.size(); ++i) ok = ok && once[static_cast<size_t>(seq[i])];
    if (!ok || read_per_microbatch[static_cast<size_t>(c.tensor)]) continue;
    PieceInfo::Zero2Chain z;
    z.accumulated = seq[first_once - 1];
    z.per_microbatch.assign(seq.begin() + static_cast<std::ptrdiff_t>(first_once), seq.end());
    p.zero2_replaced[static_cast<size_t>(z.accumulated)] = 1;
    for (int32_t v : z.per_microbatch) p.zero2_moved[static_cast<size_t>(v)] = 1;
    if (!c.reader_layout) p.zero2_edges.insert({c.consumer, c.operand});
    z.chain = std::move(c);
    p.zero2.push_back(std::move(z));
  }
}

Status BuildPieceInfo(const PipelinePlan& plan, const std::vector<BatchSum>& batch_sums,
                      PipelineScheduleKind schedule, PieceInfo& p) {
  const Graph& g = p.sub->graph;
  const AutoShardResult& r = *p.sharding;
  if (r.ops.size() != g.ops.size()) {
    return InternalError("stage " + std::to_string(p.stage) + " piece " + std::to_string(p.index) +
                         ": its sharding has " + std::to_string(r.ops.size()) + " ops, its graph " +
                         std::to_string(g.ops.size()));
  }
  p.boundary.assign(g.ops.size(), 0);
  for (int32_t l : p.sub->boundary_inputs) p.boundary[static_cast<size_t>(l)] = 1;
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const PlannedCollective& c = r.collectives[i];
    const int32_t idx = static_cast<int32_t>(i);
    if (c.inside_op) {
      p.inside_collectives[c.consumer].push_back(idx);
    } else if (c.consumer < 0) {
      p.shared_collectives[c.tensor].push_back(idx);
    } else {
      p.edge_collectives[{c.consumer, c.operand}].push_back(idx);
    }
  }
  if (plan.stages[static_cast<size_t>(p.stage)].remat == Recompute::kSelective) {
    p.rerun = SelectivelyRecomputedOps(g);
  }
  if (SplitsBackward(schedule)) p.weight_gradient = WeightGradientOps(g);
  std::vector<char> once(g.ops.size(), 0);  // computed once per iteration
  for (int32_t l : r.schedule) {
    const Op& op = g.op(l);
    if (op.kind == OpKind::kParameter || !Materialized(p.sh(l))) continue;
    const bool deferred = batch_sums[static_cast<size_t>(p.sub->origin[static_cast<size_t>(l)])] ==
                          BatchSum::kDeferred;
    if (op.phase == Phase::kUpdate || deferred) {
      p.update_ops.push_back(l);
      once[static_cast<size_t>(l)] = 1;
    } else if (op.phase == Phase::kForward) {
      p.forward_ops.push_back(l);
    } else {
      p.backward_ops.push_back(l);
    }
  }
  {
    std::vector<char> scheduled(g.ops.size(), 0);
    for (int32_t l : r.schedule) scheduled[static_cast<size_t>(l)] = 1;
    for (int32_t l = 0; l < g.size(); ++l) {
      if (g.op(l).kind != OpKind::kParameter && Materialized(p.sh(l)) &&
          !scheduled[static_cast<size_t>(l)]) {
        return InternalError("stage " + std::to_string(p.stage) + ": " + DescribeOp(g, l) +
                             " is computed but not in its piece's schedule (free " +
                             std::to_string(p.sh(l).free) + ")");
      }
    }
  }
  // Per-microbatch values read by the once-per-iteration ops (through fused broadcasts).
  std::vector<char> read(g.ops.size(), 0);
  for (int32_t u : p.update_ops) {
    for (int32_t src : g.op(u).operands) {
      while (p.sh(src).fused) src = g.op(src).operands[0];
      const Op& op = g.op(src);
      const bool per_microbatch = op.kind == OpKind::kParameter ? !IsPersistentRole(op.role)
                                                                : !once[static_cast<size_t>(src)];
      if (!p.sh(src).free && per_microbatch) read[static_cast<size_t>(src)] = 1;
    }
  }
  for (int32_t l = 0; l < g.size(); ++l) {
    if (read[static_cast<size_t>(l)]) p.read_by_update.push_back(l);
  }
  if (plan.stages[static_cast<size_t>(p.stage)].shard_gradients && plan.microbatches > 1) {
    FindZero2Chains(once, read, p);
  }
  p.boundary_transfer.assign(g.ops.size(), -1);
  if (!plan.graph.outputs.empty()) {
    for (int32_t l = 0; l < g.size(); ++l) {
      if (p.sub->origin[static_cast<size_t>(l)] == plan.graph.outputs[0] &&
          g.op(l).kind != OpKind::kParameter) {
        p.loss = l;
      }
    }
  }
  return Status::Ok();
}

// Gradient accumulation with several microbatches (per op of the microbatch graph, given the
// whole-batch graph). A backward op whose whole-batch version sums over the batch (a reduction,
// contraction or scatter with an operand that carries the batch dim, while its result does not)
// and whose readers are all once-per-iteration ops is an accumulation root: per microbatch it
// computes an addend of the whole-batch result, kept unrounded, summed over the microbatches,
// then scaled and rounded once. Backward ops that only combine such sums linearly (adds, layout
// ops, scaling) and are read only by update ops or other such ops are deferred: they run once,
// on the completed sums, as in the whole-batch step. Without the whole-batch graph, or with one
// microbatch, nothing is either.

std::vector<BatchSum> ClassifyBatchSums(const Graph& micro, const Graph* whole,
                                        int64_t microbatches) {
  const size_t n = static_cast<size_t>(micro.size());
  std::vector<BatchSum> kind(n, BatchSum::kNone);
  if (whole == nullptr || microbatches <= 1 || whole->size() != micro.size()) return kind;
  auto carries = [&](int32_t id) { return micro.op(id).shape != whole->op(id).shape; };
  for (int32_t id = 0; id < micro.size(); ++id) {
    const Op& op = micro.op(id);
    if (op.phase != Phase::kBackward || carries(id)) continue;
    bool any_carries = false, any_sum = false;
    for (int32_t o : op.operands) {
      any_carries = any_carries || carries(o);
      any_sum = any_sum || kind[static_cast<size_t>(o)] != BatchSum::kNone;
    }
    switch (op.kind) {
      case OpKind::kReduceSum:
      case OpKind::kDotGeneral:
      case OpKind::kConvolution:
      case OpKind::kScatterAdd:
        if (any_carries)
          kind[static_cast<size_t>(id)] = BatchSum::kRoot;
        else if (any_sum)
          kind[static_cast<size_t>(id)] = BatchSum::kDeferred;
        break;
      case OpKind::kAdd:
      case OpKind::kSub:
      case OpKind::kNeg:
      case OpKind::kMul:
      case OpKind::kDiv:
      case OpKind::kConvert:
      case OpKind::kConcatenate:
      case OpKind::kReshape:
      case OpKind::kTranspose:
      case OpKind::kSlice:
      case OpKind::kPad:
      case OpKind::kBroadcastInDim:
      case OpKind::kReverse:
        if (any_sum && !any_carries) kind[static_cast<size_t>(id)] = BatchSum::kDeferred;
        break;
      default:
        break;
    }
  }
  // Readers decide, last op first: a sum read per microbatch is neither.
  std::vector<std::vector<int32_t>> users(n);
  for (int32_t id = 0; id < micro.size(); ++id) {
    for (int32_t o : micro.op(id).operands) users[static_cast<size_t>(o)].push_back(id);
  }
  for (int32_t id = micro.size() - 1; id >= 0; --id) {
    if (kind[static_cast<size_t>(id)] == BatchSum::kNone) continue;
    for (int32_t u : users[static_cast<size_t>(id)]) {
      const bool once = micro.op(u).phase == Phase::kUpdate ||
                        kind[static_cast<size_t>(u)] == BatchSum::kDeferred;
      if (!once) kind[static_cast<size_t>(id)] = BatchSum::kNone;
    }
  }
  return kind;
}

// Pairs every cross-stage boundary input with its transfer, in the order the planner listed
// them (pieces in pipeline order, boundary inputs in order).
Status PairTransfers(PlanContext& ctx) {
  size_t next = 0;
  for (PieceInfo& p : ctx.pieces) {
    for (int32_t l : p.sub->boundary_inputs) {
      const int32_t g = p.sub->origin[static_cast<size_t>(l)];
      const PlanOpSite& site = ctx.sites[static_cast<size_t>(g)];
      if (site.stage < 0) {
        return Unsupported(DescribeOp(ctx.plan.graph, g) +
                           " crosses pieces but belongs to no stage");
      }
      if (site.stage == p.stage) continue;
      if (next >= ctx.plan.transfers.size() || ctx.plan.transfers[next].tensor != g ||
          ctx.plan.transfers[next].to_stage != p.stage) {
        return InternalError("the plan lists no transfer of " + DescribeOp(ctx.plan.graph, g) +
                             " into stage " + std::to_string(p.stage) + " where expected");
      }
      p.boundary_transfer[static_cast<size_t>(l)] = static_cast<int32_t>(next++);
    }
  }
  if (next != ctx.plan.transfers.size()) {
    return InternalError("the plan lists " + std::to_string(ctx.plan.transfers.size()) +
                         " transfers, its pieces read " + std::to_string(next));
  }
  return Status::Ok();
}

// The transfers the plan sends once per iteration (a tied weight's gradient contribution that
// the receiver adds into the weight's gradient) move once, at the update: the sender sums its
// microbatch addends (unrounded, as any gradient the update reads) and scales the sum by 1 / B,
// the receiver takes the completed value where it took the sum of the B messages before. That
// needs several microbatches (with one, each microbatch is the iteration), a receiver that
// reads the value only in once-per-iteration ops (ClassifyBatchSums's deferred ops) and a sender
// that holds the value in a layout of its own (not free or fused); otherwise the transfer moves
// per microbatch, as the plan's conformance check then reports.
void MarkOncePerIteration(PlanContext& ctx) {
  ctx.once.assign(ctx.plan.transfers.size(), 0);
  if (ctx.plan.microbatches <= 1) return;
  for (PieceInfo& p : ctx.pieces) {
    const Graph& g = p.sub->graph;
    for (int32_t l : p.sub->boundary_inputs) {
      const int32_t t = p.boundary_transfer[static_cast<size_t>(l)];
      if (t < 0 || !ctx.plan.transfers[static_cast<size_t>(t)].once_per_iteration) continue;
      bool read_once = true;
      for (int32_t reader = 0; reader < g.size(); ++reader) {
        const std::vector<int32_t>& operands = g.op(reader).operands;
        if (std::find(operands.begin(), operands.end(), l) != operands.end() &&
            std::find(p.update_ops.begin(), p.update_ops.end(), reader) == p.update_ops.end()) {
          read_once = false;
        }
      }
      const PlanOpSite& site = ctx.sites[static_cast<size_t>(ctx.plan.transfers[t].tensor)];
      PieceInfo& from = ctx.pieces[static_cast<size_t>(ctx.PieceOf(site.stage, site.piece))];
      if (!read_once || !Materialized(from.sh(site.local))) continue;
      ctx.once[static_cast<size_t>(t)] = 1;
      p.once_receives.push_back(l);
      p.read_by_update.erase(std::remove(p.read_by_update.begin(), p.read_by_update.end(), l),
                             p.read_by_update.end());
      from.once_sends.push_back(t);
      // A value computed per microbatch is summed over them like the gradients the sender's
      // own update reads; a deferred one is computed once, at the update.
      const bool per_microbatch = std::find(from.update_ops.begin(), from.update_ops.end(),
                                            site.local) == from.update_ops.end();
      if (per_microbatch && std::find(from.read_by_update.begin(), from.read_by_update.end(),
                                      site.local) == from.read_by_update.end()) {
        from.read_by_update.push_back(site.local);
      }
    }
  }
}

// Every parameter copy held by a piece that does not update it, with the piece that does.
void ListRefreshes(PlanContext& ctx) {
  std::map<int32_t, std::vector<std::pair<int32_t, int32_t>>> holders;  // global -> piece, local
  std::map<int32_t, std::vector<char>> updated;
  for (size_t pi = 0; pi < ctx.pieces.size(); ++pi) {
    const PieceInfo& p = ctx.pieces[pi];
    const Graph& g = p.sub->graph;
    std::vector<char> has_update(g.ops.size(), 0);
    for (const Op& op : g.ops) {
      if (op.alias_of >= 0) has_update[static_cast<size_t>(op.alias_of)] = 1;
    }
    for (int32_t l = 0; l < g.size(); ++l) {
      const Op& op = g.op(l);
      if (op.kind != OpKind::kParameter || p.boundary[static_cast<size_t>(l)] ||
          !IsPersistentRole(op.role)) {
        continue;
      }
      const int32_t global = p.sub->origin[static_cast<size_t>(l)];
      holders[global].push_back({static_cast<int32_t>(pi), l});
      updated[global].push_back(has_update[static_cast<size_t>(l)]);
    }
  }
  for (const auto& [global, list] : holders) {
    const std::vector<char>& up = updated[global];
    int32_t source = -1;
    for (size_t i = 0; i < list.size() && source < 0; ++i) {
      if (up[i]) source = static_cast<int32_t>(i);
    }
    if (source < 0) continue;
    for (size_t i = 0; i < list.size(); ++i) {
      if (up[i]) continue;
      ctx.refreshes.push_back({list[static_cast<size_t>(source)].first,
                               list[static_cast<size_t>(source)].second, list[i].first,
                               list[i].second});
    }
  }
}

struct OpMicrobatchHash {
  size_t operator()(const std::pair<int32_t, int64_t>& k) const {
    return std::hash<int64_t>()(k.second * 1000003 + k.first);
  }
};
// (local op, microbatch) -> value. Looked up once per operand of every op of every microbatch
// (millions of times for a real model), never iterated: hashed.
using OpMicrobatchValues = std::unordered_map<std::pair<int32_t, int64_t>, Value, OpMicrobatchHash>;

// The values one device holds for one piece.
struct PieceState {
  std::map<int32_t, Value> params;
  OpMicrobatchValues values;
  OpMicrobatchValues reader_values;  // in the reader layout
  std::map<int32_t, Value> accumulators;
};

class DeviceLowering {
 public:
  DeviceLowering(const PlanContext& ctx, DeviceProgram& program, int32_t stage, int64_t logical)
      : ctx_(ctx),
        stage_(stage),
        em_(program, ctx.meshes[static_cast<size_t>(stage)], logical, stage),
        state_(ctx.pieces.size()) {}

  // The step's phases, each closing its program tasks: the set-up (bound parameters, zeroed
  // accumulators), one task of the schedule, the update (with the refreshed copies `refresh`
  // selects; kSends / kReceives leave the update task open for the caller to close).
  Status Setup();
  Status RunTask(PipelineTaskKind kind, int64_t microbatch);
  Status Finish(RefreshPart refresh);
  // The refreshed copies of `part` (kReceives: after Finish(kSends) on every stage of the
  // device).
  Status RefreshCopies(RefreshPart part);
  // Closes the program's current task: the instructions emitted since the last one.
  void EndTask(ProgramTaskKind kind, int64_t microbatch);

 private:
  const PieceInfo& piece(int32_t pi) const { return ctx_.pieces[static_cast<size_t>(pi)]; }
  const std::vector<int32_t>& my_pieces() const {
    return ctx_.stage_pieces[static_cast<size_t>(stage_)];
  }
  std::string ValueName(const PieceInfo& p, int32_t l, int64_t mb) const;
  Result<Dims> LocalShapeOf(const PieceInfo& p, int32_t l, const ShardingSpec& spec) const {
    return em_.LocalShape(CanonicalSpec(spec, em_.mesh().shape), p.op(l).shape);
  }

  Status BindParameters();
  Status ZeroAccumulators();
  Status ForwardTask(int64_t mb);
  // `part` of microbatch mb's backward, pieces in reverse order: the input-gradient part
  // reruns the rematerialized forward ops, receives the output gradients, runs its ops and
  // sends the input gradients; the weight-gradient part runs the rest and accumulates the
  // gradients (with ZeRO-2's per-microbatch chain ops). Its values stay in the pieces' state
  // between the two tasks (keyed by op and microbatch).
  Status BackwardTask(int64_t mb, BackwardPart part);
  Status Update();
  // Per update position (the stage's update ops, piece by piece): the (piece, update op) whose
  // result replaces its parameter right after it.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> WriteBackPoints() const;
  Status WriteBack(int32_t pi, int32_t u);

  Status FeedInputs(int32_t pi, int64_t mb);
  // A backward boundary value moves with the part of the backward that computes it (its
  // producer's WeightGradient): an accumulated gradient term that another piece reads per
  // microbatch leaves in the weight-gradient task.
  bool FromWeightGradient(int32_t global) const;
  Status ReceiveInputs(int32_t pi, int64_t mb, Phase phase,
                       BackwardPart part = BackwardPart::kWhole);
  Status SendOutputs(int32_t pi, int64_t mb, Phase phase, BackwardPart part = BackwardPart::kWhole);
  Status SendOnce(int32_t pi, bool computed_at_update);
  Status ReceiveOnce(int32_t pi);
  Status ReportLoss(int32_t pi, int64_t mb);
  Status Accumulate(int32_t pi, int64_t mb);
  // A ZeRO-2 chain's tensor of microbatch mb laid out as it is summed (its collectives run).
  Result<Value> Zero2Addend(int32_t pi, const GradientChain& c, int64_t mb);
  // `v`, the value of `src` (operand k of `consumer`, or the operand of the fused broadcasts
  // between), through the plan's collectives on that edge towards `want`.
  Result<Value> EdgeCollectives(const PieceInfo& p, int32_t consumer, int32_t k, int32_t src,
                                Value v, const ShardingSpec& want, int64_t mb);
  Status RunOp(int32_t pi, int32_t l, int64_t mb);

  Result<Value> SourceValue(int32_t pi, int32_t l, int64_t mb);
  Result<Value> ReaderValue(int32_t pi, int32_t l, int64_t mb);
  Result<Value> EdgeValue(int32_t pi, int32_t consumer, int32_t k, int64_t mb);
  // A free op's value in layout `want`, where FreeValueTiles allows it (else whole).
  Result<Value> FreeValue(int32_t pi, int32_t l, int64_t mb, const ShardingSpec& want);
  Result<Value> ExportValue(int32_t pi, int32_t l, int64_t mb);
  // The index in local_ops of op l of piece p on operands and a result of these local shapes:
  // built once, shared by every microbatch's instruction.
  Result<int32_t> LocalOpIndex(const PieceInfo& p, int32_t l, std::vector<Dims> operand_shapes,
                               const Dims& result_shape);
  Result<Value> RunLocal(const PieceInfo& p, int32_t l, const std::vector<Value>& operands,
                         const ShardingSpec& result_spec, const EmitTag& tag, int64_t mb);
  Result<Value> Reshard(const Value& value, const Dims& shape, DType dtype,
                        const ShardingSpec& want, const EmitTag& tag, const std::string& name);
  Result<Value> ReceiveTransfer(int32_t transfer, int64_t mb, int64_t tag);
  Status SendTransfer(const Value& value, int32_t transfer, int64_t tag, const EmitTag& etag);

  struct LocalOpKey {
    const Graph* graph;
    int32_t op;
    std::vector<Dims> operand_shapes;
    Dims result_shape;
    bool operator<(const LocalOpKey& o) const {
      return std::tie(graph, op, operand_shapes, result_shape) <
             std::tie(o.graph, o.op, o.operand_shapes, o.result_shape);
    }
  };

  const PlanContext& ctx_;
  int32_t stage_;
  DeviceEmitter em_;
  std::vector<PieceState> state_;
  std::map<LocalOpKey, int32_t> local_op_index_;
};

std::string DeviceLowering::ValueName(const PieceInfo& p, int32_t l, int64_t mb) const {
  const Op& op = p.op(l);
  std::string name =
      op.name.empty() ? "op " + std::to_string(p.sub->origin[static_cast<size_t>(l)]) : op.name;
  if (mb >= 0) name += "@mb" + std::to_string(mb);
  return name;
}

Status DeviceLowering::BindParameters() {
  for (int32_t pi : my_pieces()) {
    const PieceInfo& p = piece(pi);
    for (int32_t l = 0; l < p.sub->graph.size(); ++l) {
      const Op& op = p.op(l);
      if (op.kind != OpKind::kParameter || p.boundary[static_cast<size_t>(l)] ||
          !IsPersistentRole(op.role)) {
        continue;
      }
      const ShardingSpec spec = CanonicalSpec(p.sh(l).result, em_.mesh().shape);
      Result<Dims> local = em_.LocalShape(spec, op.shape);
      if (!local.ok()) return local.status();
      const int32_t global = p.sub->origin[static_cast<size_t>(l)];
      Value v{em_.NewBuffer(ValueName(p, l, -1), local.value(), op.dtype, global, true), spec};
      ParameterBinding binding;
      binding.buffer = v.buffer;
      binding.tensor = global;
      em_.TileBox(spec, op.shape, binding.offsets, binding.sizes);
      for (int32_t m : spec.partial) binding.owner = binding.owner && em_.coord(m) == 0;
      binding.stage = stage_;
      em_.program().parameters.push_back(std::move(binding));
      state_[static_cast<size_t>(pi)].params[l] = v;
    }
  }
  return Status::Ok();
}

Status DeviceLowering::ZeroAccumulators() {
  if (ctx_.plan.microbatches <= 1) return Status::Ok();
  for (int32_t pi : my_pieces()) {
    const PieceInfo& p = piece(pi);
    std::vector<std::pair<int32_t, ShardingSpec>> sums;  // value, the layout it is summed in
    for (int32_t l : p.read_by_update) {
      if (!p.Zero2Replaced(l)) sums.push_back({l, p.sh(l).result});
    }
    for (const PieceInfo::Zero2Chain& z : p.zero2) {
      sums.push_back({z.chain.tensor, z.chain.accumulate_spec});
    }
    for (const auto& [l, layout] : sums) {
      const Op& op = p.op(l);
      const ShardingSpec spec = CanonicalSpec(layout, em_.mesh().shape);
      Result<Dims> local = em_.LocalShape(spec, op.shape);
      if (!local.ok()) return local.status();
      const int32_t global = p.sub->origin[static_cast<size_t>(l)];
      Value acc{em_.NewBuffer(ValueName(p, l, -1) + ".sum", local.value(), op.dtype, global, false),
                spec};
      Instruction in;
      in.kind = InstructionKind::kZero;
      in.out = acc.buffer;
      em_.Emit(std::move(in), EmitTag{global, kUpdate, InstructionOrigin::kPlan, -1});
      state_[static_cast<size_t>(pi)].accumulators[l] = acc;
    }
  }
  return Status::Ok();
}

Result<int32_t> DeviceLowering::LocalOpIndex(const PieceInfo& p, int32_t l,
                                             std::vector<Dims> operand_shapes,
                                             const Dims& result_shape) {
  LocalOpKey key{&p.sub->graph, l, std::move(operand_shapes), result_shape};
  auto found = local_op_index_.find(key);
  if (found != local_op_index_.end()) return found->second;
  Result<Graph> local_op = BuildLocalOp(p.sub->graph, l, key.operand_shapes, result_shape);
  if (!local_op.ok()) return local_op.status();
  std::vector<Graph>& ops = em_.program().local_ops;
  ops.push_back(std::move(local_op).value());
  const int32_t index = static_cast<int32_t>(ops.size() - 1);
  local_op_index_.emplace(std::move(key), index);
  return index;
}

Result<Value> DeviceLowering::RunLocal(const PieceInfo& p, int32_t l,
                                       const std::vector<Value>& operands,
                                       const ShardingSpec& result_spec, const EmitTag& tag,
                                       int64_t mb) {
  const Op& op = p.op(l);
  std::vector<Dims> shapes;
  Instruction in;
  in.kind = InstructionKind::kRun;
  in.piece = p.index;
  in.piece_op = l;
  for (const Value& v : operands) {
    shapes.push_back(em_.program().buffers[static_cast<size_t>(v.buffer)].shape);
    in.in.push_back(v.buffer);
  }
  const ShardingSpec spec = CanonicalSpec(result_spec, em_.mesh().shape);
  Result<Dims> local = em_.LocalShape(spec, op.shape);
  if (!local.ok()) return local.status();
  Result<int32_t> local_op = LocalOpIndex(p, l, std::move(shapes), local.value());
  if (!local_op.ok()) return local_op.status();
  // Gather / scatter-add over a split table axis: only the indices inside this device's rows.
  if ((op.kind == OpKind::kGather || op.kind == OpKind::kScatterAdd) && !operands.empty()) {
    const size_t axis = static_cast<size_t>(op.attrs.axis);
    const Dims& table = p.op(op.operands[0]).shape;
    std::vector<int64_t> offsets, sizes;
    em_.TileBox(operands[0].spec, table, offsets, sizes);
    if (sizes[axis] != table[axis]) {
      in.axis_offset = offsets[axis];
      in.axis_size = table[axis];
    }
  }
  in.round = spec.partial.empty() && !tag.exact;
  in.local_op = local_op.value();
  const int32_t global = p.sub->origin[static_cast<size_t>(l)];
  Value out{em_.NewBuffer(ValueName(p, l, mb), local.value(), op.dtype, global, false), spec};
  in.out = out.buffer;
  em_.Emit(std::move(in), tag);
  return out;
}

Result<Value> DeviceLowering::FreeValue(int32_t pi, int32_t l, int64_t mb,
                                        const ShardingSpec& want) {
  // Computed from constants alone (cheap), at each use: in the reader's layout where each
  // device can make its tile alone (free_values.h), else whole on every device.
  const PieceInfo& p = piece(pi);
  const Op& op = p.op(l);
  const ShardingSpec layout = FreeValueTiles(p.sub->graph, l, want)
                                  ? CanonicalSpec(want, em_.mesh().shape)
                                  : ShardingSpec::Replicated(op.shape.size());
  std::vector<Value> operands;
  for (int32_t src : op.operands) {
    const ShardingSpec operand_layout =
        op.kind == OpKind::kBroadcastInDim
            ? BroadcastOperandLayout(op, p.op(src).shape, layout)
            : (layout.IsReplicated() ? ShardingSpec::Replicated(p.op(src).shape.size()) : layout);
    Result<Value> v = FreeValue(pi, src, mb, operand_layout);
    if (!v.ok()) return v.status();
    operands.push_back(v.value());
  }
  const EmitTag tag{p.sub->origin[static_cast<size_t>(l)], mb, InstructionOrigin::kPlan, -1};
  return RunLocal(p, l, operands, layout, tag, mb);
}

// The value another piece reads: in the reader layout (or result layout); a free op or a fused
// broadcast has no layout of its own, so its stage holds it whole on every device (as the
// planner's transfers assume): a fused broadcast's operand is gathered first (collectives the
// plan does not list).
Result<Value> DeviceLowering::ExportValue(int32_t pi, int32_t l, int64_t mb) {
  const PieceInfo& p = piece(pi);
  if (p.sh(l).free) return FreeValue(pi, l, mb, ShardingSpec::Replicated(p.op(l).shape.size()));
  if (!p.sh(l).fused) return ReaderValue(pi, l, mb);
  const Op& b = p.op(l);
  const int32_t src = b.operands[0];
  const Op& x = p.op(src);
  Result<Value> in = ExportValue(pi, src, mb);
  if (!in.ok()) return in.status();
  const EmitTag tag{p.sub->origin[static_cast<size_t>(l)], mb, InstructionOrigin::kExtra, -1};
  Result<Value> whole =
      Reshard(in.value(), x.shape, x.dtype, ShardingSpec::Replicated(x.shape.size()), tag,
              ValueName(p, src, mb));
  if (!whole.ok()) return whole.status();
  return RunLocal(p, l, {whole.value()}, ShardingSpec::Replicated(b.shape.size()), tag, mb);
}

Result<Value> DeviceLowering::SourceValue(int32_t pi, int32_t l, int64_t mb) {
  PieceState& st = state_[static_cast<size_t>(pi)];
  auto param = st.params.find(l);
  if (param != st.params.end()) return param->second;
  auto it = st.values.find({l, mb});
  if (it != st.values.end()) return it->second;
  if (mb == kUpdate && ctx_.plan.microbatches <= 1) {
    it = st.values.find({l, 0});
    if (it != st.values.end()) return it->second;
  }
  const PieceInfo& p = piece(pi);
  return InternalError(
      "stage " + std::to_string(p.stage) + ": " + DescribeOp(p.sub->graph, l) + " (" +
      PhaseName(p.op(l).phase) + ") has no value for " +
      (mb == kUpdate ? std::string("the update") : "microbatch " + std::to_string(mb)) +
      " where it is read");
}

Result<Value> DeviceLowering::ReaderValue(int32_t pi, int32_t l, int64_t mb) {
  const PieceInfo& p = piece(pi);
  Result<Value> src = SourceValue(pi, l, mb);
  if (!src.ok() || !p.sh(l).reader_layout) return src;
  PieceState& st = state_[static_cast<size_t>(pi)];
  auto cached = st.reader_values.find({l, mb});
  if (cached != st.reader_values.end()) return cached->second;
  const Op& op = p.op(l);
  const ShardingSpec& layout = *p.sh(l).reader_layout;
  Value v = src.value();
  auto shared = p.shared_collectives.find(l);
  if (shared != p.shared_collectives.end()) {
    for (int32_t ci : shared->second) {
      const PlannedCollective& c = p.sharding->collectives[static_cast<size_t>(ci)];
      const EmitTag tag{p.sub->origin[static_cast<size_t>(l)], mb, InstructionOrigin::kPlan, ci};
      Result<Value> next = em_.ApplyCollective(v, op.shape, op.dtype, c.kind, c.mesh_dims, layout,
                                               CollectiveReduce::kSum, tag, ValueName(p, l, mb));
      if (!next.ok()) return next.status();
      v = next.value();
    }
  }
  const EmitTag tag{p.sub->origin[static_cast<size_t>(l)], mb, InstructionOrigin::kPlan, -1};
  Result<Value> laid = em_.LocalTo(v, op.shape, op.dtype, layout, tag, ValueName(p, l, mb));
  if (!laid.ok()) return laid.status();
  st.reader_values[{l, mb}] = laid.value();
  return laid;
}

Result<Value> DeviceLowering::EdgeValue(int32_t pi, int32_t consumer, int32_t k, int64_t mb) {
  const PieceInfo& p = piece(pi);
  const Graph& g = p.sub->graph;
  const std::vector<int64_t>& mesh = em_.mesh().shape;
  int32_t src = g.op(consumer).operands[static_cast<size_t>(k)];
  ShardingSpec want = CanonicalSpec(p.sh(consumer).operands[static_cast<size_t>(k)], mesh);
  // Through fused broadcasts: the wanted layout maps back onto the broadcast's operand.
  std::vector<std::pair<int32_t, ShardingSpec>> chain;  // broadcast op, its wanted result
  while (p.sh(src).fused) {
    const Op& b = g.op(src);
    ShardingSpec back = BroadcastOperandLayout(b, g.op(b.operands[0]).shape, want);
    chain.push_back({src, want});
    want = std::move(back);
    src = b.operands[0];
  }
  const Op& src_op = g.op(src);
  const std::string name = ValueName(p, src, mb);
  const int32_t global = p.sub->origin[static_cast<size_t>(src)];
  Value v;
  if (p.sh(src).free) {
    Result<Value> full = FreeValue(pi, src, mb, want);
    if (!full.ok()) return full.status();
    v = full.value();
  } else {
    Result<Value> start = ReaderValue(pi, src, mb);
    if (!start.ok()) return start.status();
    v = start.value();
    // A ZeRO-2 chain's edge ran its collectives per microbatch, before the sum.
    if (!(mb == kUpdate && p.zero2_edges.count({consumer, k}) > 0)) {
      Result<Value> moved = EdgeCollectives(p, consumer, k, src, v, want, mb);
      if (!moved.ok()) return moved.status();
      v = moved.value();
    }
  }
  const EmitTag tag{global, mb, InstructionOrigin::kPlan, -1};
  Result<Value> laid = em_.LocalTo(v, src_op.shape, src_op.dtype, want, tag, name);
  if (!laid.ok()) {
    return Status(laid.status().code(), "operand " + std::to_string(k) + " of " +
                                            DescribeOp(g, consumer) + ": " +
                                            laid.status().message());
  }
  v = laid.value();
  for (size_t i = chain.size(); i-- > 0;) {
    const auto& [b, b_want] = chain[i];
    const EmitTag btag{p.sub->origin[static_cast<size_t>(b)], mb, InstructionOrigin::kPlan, -1};
    Result<Value> out = RunLocal(p, b, {v}, b_want, btag, mb);
    if (!out.ok()) return out.status();
    v = out.value();
  }
  return v;
}

Status DeviceLowering::RunOp(int32_t pi, int32_t l, int64_t mb) {
  const PieceInfo& p = piece(pi);
  const Op& op = p.op(l);
  std::vector<Value> operands;
  for (size_t k = 0; k < op.operands.size(); ++k) {
    Result<Value> v = EdgeValue(pi, l, static_cast<int32_t>(k), mb);
    if (!v.ok()) return v.status();
    operands.push_back(v.value());
  }
  const int32_t global = p.sub->origin[static_cast<size_t>(l)];
  const bool exact =
      mb != kUpdate && ctx_.batch_sums[static_cast<size_t>(global)] == BatchSum::kRoot;
  const EmitTag tag{global, mb, InstructionOrigin::kPlan, -1, exact};
  Result<Value> out = RunLocal(p, l, operands, p.sh(l).result, tag, mb);
  if (!out.ok()) return out.status();
  Value v = out.value();
  auto inside = p.inside_collectives.find(l);
  if (inside != p.inside_collectives.end()) {
    for (int32_t ci : inside->second) {
      const PlannedCollective& c = p.sharding->collectives[static_cast<size_t>(ci)];
      const CollectiveReduce reduce =
          op.kind == OpKind::kReduceMax ? CollectiveReduce::kMax : CollectiveReduce::kSum;
      Result<Value> next = em_.ApplyCollective(
          v, op.shape, op.dtype, c.kind, c.mesh_dims, p.sh(l).result, reduce,
          EmitTag{global, mb, InstructionOrigin::kPlan, ci, exact}, ValueName(p, l, mb));
      if (!next.ok()) return next.status();
      v = next.value();
    }
  }
  v.spec = CanonicalSpec(p.sh(l).result, em_.mesh().shape);
  PieceState& st = state_[static_cast<size_t>(pi)];
  st.values[{l, mb}] = v;
  st.reader_values.erase({l, mb});
  return Status::Ok();
}

Result<Value> DeviceLowering::Reshard(const Value& value, const Dims& shape, DType dtype,
                                      const ShardingSpec& want, const EmitTag& tag,
                                      const std::string& name) {
  const std::vector<int64_t>& mesh = em_.mesh().shape;
  const ShardingSpec dst = CanonicalSpec(want, mesh);
  if (value.spec == dst) return value;
  LogicalMesh logical;
  logical.shape = mesh;
  logical.alpha.assign(mesh.size(), 0.0);
  logical.beta.assign(mesh.size(), 0.0);
  logical.crosses_hosts.assign(mesh.size(), false);
  ReshardOptions ro;
  ro.cost_mode = CostMode::kRealUnits;
  ro.alpa_compatible = false;
  Result<ReshardPlan> plan = PlanReshard(value.spec, dst, shape, DTypeBytes(dtype), logical, ro);
  if (!plan.ok()) return plan.status();
  Value v = value;
  for (const ReshardStep& step : plan.value().steps) {
    Result<Value> next = step.is_collective
                             ? em_.ApplyCollective(v, shape, dtype, step.collective, step.mesh_dims,
                                                   step.after, CollectiveReduce::kSum, tag, name)
                             : em_.LocalTo(v, shape, dtype, step.after, tag, name);
    if (!next.ok()) return next.status();
    v = next.value();
  }
  return em_.LocalTo(v, shape, dtype, dst, tag, name);
}

Status DeviceLowering::FeedInputs(int32_t pi, int64_t mb) {
  const PieceInfo& p = piece(pi);
  for (int32_t l = 0; l < p.sub->graph.size(); ++l) {
    const Op& op = p.op(l);
    if (op.kind != OpKind::kParameter || p.boundary[static_cast<size_t>(l)] ||
        IsPersistentRole(op.role)) {
      continue;
    }
    const ShardingSpec spec = CanonicalSpec(p.sh(l).result, em_.mesh().shape);
    Result<Dims> local = em_.LocalShape(spec, op.shape);
    if (!local.ok()) return local.status();
    const int32_t global = p.sub->origin[static_cast<size_t>(l)];
    Instruction in;
    in.kind = InstructionKind::kFeed;
    in.tensor = global;
    em_.TileBox(spec, op.shape, in.offsets, in.sizes);
    in.out = em_.NewBuffer(ValueName(p, l, mb), local.value(), op.dtype, global, false);
    Value v{in.out, spec};
    em_.Emit(std::move(in), EmitTag{global, mb, InstructionOrigin::kPlan, -1});
    if (!spec.partial.empty()) {
      bool keep = true;
      for (int32_t m : spec.partial) keep = keep && em_.coord(m) == 0;
      if (!keep) {
        Instruction z;
        z.kind = InstructionKind::kZero;
        z.out = em_.NewBuffer(ValueName(p, l, mb), local.value(), op.dtype, global, false);
        em_.Emit(z, EmitTag{global, mb, InstructionOrigin::kPlan, -1});
        v.buffer = z.out;
      }
    }
    state_[static_cast<size_t>(pi)].values[{l, mb}] = v;
  }
  return Status::Ok();
}

Result<Value> DeviceLowering::ReceiveTransfer(int32_t transfer, int64_t mb, int64_t tag) {
  const CrossStageTransfer& tr = ctx_.plan.transfers[static_cast<size_t>(transfer)];
  const Op& op = ctx_.plan.graph.op(tr.tensor);
  const ShardingSpec want = CanonicalSpec(
      tr.to_spec.rank() == op.shape.size() ? tr.to_spec : ShardingSpec::Replicated(op.shape.size()),
      em_.mesh().shape);
  // With a local all-gather the moves deliver the landing layout, gathered into `want` below.
  const ShardingSpec to =
      tr.landing_spec ? CanonicalSpec(*tr.landing_spec, em_.mesh().shape) : want;
  Result<Dims> local = em_.LocalShape(to, op.shape);
  if (!local.ok()) return local.status();
  std::vector<int64_t> my_off, my_size;
  em_.TileBox(to, op.shape, my_off, my_size);
  const std::string name = (op.name.empty() ? "op " + std::to_string(tr.tensor) : op.name) +
                           (mb == kUpdate ? std::string(".sum") : "@mb" + std::to_string(mb));
  Value v{em_.NewBuffer(name, local.value(), op.dtype, tr.tensor, false), to};
  const EmitTag etag{tr.tensor, mb, InstructionOrigin::kPlan, -1};
  Instruction zero;
  zero.kind = InstructionKind::kZero;
  zero.out = v.buffer;
  em_.Emit(zero, etag);
  for (const SliceMove& m : tr.moves) {
    if (m.dst_device != em_.device()) continue;
    if (m.src_device == m.dst_device) {
      return InternalError("transfer of " + DescribeOp(ctx_.plan.graph, tr.tensor) +
                           " moves a slice from device " + std::to_string(m.src_device) +
                           " to itself between two stages");
    }
    Instruction in;
    in.kind = InstructionKind::kRecv;
    in.out = v.buffer;
    in.peer = static_cast<int32_t>(m.src_device);
    in.tag = tag;
    in.sizes = m.sizes;
    for (size_t d = 0; d < m.offsets.size(); ++d) in.offsets.push_back(m.offsets[d] - my_off[d]);
    em_.Emit(std::move(in), etag);
  }
  if (!tr.landing_spec) return v;
  Result<std::vector<int32_t>> dims = LandingGatherDims(to, want);
  if (!dims.ok()) {
    return InternalError("transfer of " + DescribeOp(ctx_.plan.graph, tr.tensor) + ": " +
                         dims.status().message());
  }
  EmitTag gather = etag;
  gather.origin = InstructionOrigin::kTransferGather;
  return em_.ApplyCollective(v, op.shape, op.dtype, CollectiveKind::kAllGather, dims.value(), want,
                             CollectiveReduce::kSum, gather, name);
}

Status DeviceLowering::SendTransfer(const Value& value, int32_t transfer, int64_t tag,
                                    const EmitTag& etag) {
  const CrossStageTransfer& tr = ctx_.plan.transfers[static_cast<size_t>(transfer)];
  const Op& op = ctx_.plan.graph.op(tr.tensor);
  Value v = value;
  if (!v.spec.partial.empty()) {
    // The transfer needs the reduced value (cross_mesh.h): an all-reduce the plan leaves out.
    EmitTag extra = etag;
    extra.origin = InstructionOrigin::kExtra;
    Result<Value> reduced =
        em_.ApplyCollective(v, op.shape, op.dtype, CollectiveKind::kAllReduce, v.spec.partial,
                            v.spec, CollectiveReduce::kSum, extra, "transfer");
    if (!reduced.ok()) return reduced.status();
    v = reduced.value();
  }
  std::vector<int64_t> my_off, my_size;
  em_.TileBox(v.spec, op.shape, my_off, my_size);
  for (const SliceMove& m : tr.moves) {
    if (m.src_device != em_.device()) continue;
    Instruction in;
    in.kind = InstructionKind::kSend;
    in.in = {v.buffer};
    in.peer = static_cast<int32_t>(m.dst_device);
    in.tag = tag;
    in.sizes = m.sizes;
    for (size_t d = 0; d < m.offsets.size(); ++d) in.offsets.push_back(m.offsets[d] - my_off[d]);
    em_.Emit(std::move(in), etag);
  }
  return Status::Ok();
}

bool DeviceLowering::FromWeightGradient(int32_t global) const {
  const PlanOpSite& site = ctx_.sites[static_cast<size_t>(global)];
  if (site.stage < 0) return false;
  return piece(ctx_.PieceOf(site.stage, site.piece)).WeightGradient(site.local);
}

Status DeviceLowering::ReceiveInputs(int32_t pi, int64_t mb, Phase phase, BackwardPart part) {
  const PieceInfo& p = piece(pi);
  for (int32_t l : p.sub->boundary_inputs) {
    const Op& op = p.op(l);
    if ((op.phase == Phase::kForward) != (phase == Phase::kForward)) continue;
    if (op.phase == Phase::kUpdate) {
      return Unsupported("stage " + std::to_string(p.stage) + " reads " +
                         DescribeOp(p.sub->graph, l) +
                         ", an update-phase value of another piece: not executable yet");
    }
    const int32_t global = p.sub->origin[static_cast<size_t>(l)];
    if (part != BackwardPart::kWhole &&
        FromWeightGradient(global) != (part == BackwardPart::kWeightGradient)) {
      continue;
    }
    const EmitTag tag{global, mb, InstructionOrigin::kPlan, -1};
    const int32_t transfer = p.boundary_transfer[static_cast<size_t>(l)];
    if (transfer >= 0 && ctx_.once[static_cast<size_t>(transfer)]) continue;  // at the update
    Value v;
    if (transfer >= 0) {
      Result<Value> got = ReceiveTransfer(transfer, mb, transfer * kTagsPerTransfer + mb);
      if (!got.ok()) return got.status();
      Result<Value> laid =
          em_.LocalTo(got.value(), op.shape, op.dtype, p.sh(l).result, tag, ValueName(p, l, mb));
      if (!laid.ok()) return laid.status();
      v = laid.value();
    } else {
      const PlanOpSite& site = ctx_.sites[static_cast<size_t>(global)];
      const int32_t from = ctx_.PieceOf(site.stage, site.piece);
      Result<Value> src = ExportValue(from, site.local, mb);
      if (!src.ok()) return src.status();
      EmitTag edge = tag;
      edge.origin = InstructionOrigin::kPieceEdge;
      edge.exact = ctx_.batch_sums[static_cast<size_t>(global)] == BatchSum::kRoot;
      Result<Value> laid =
          Reshard(src.value(), op.shape, op.dtype, p.sh(l).result, edge, ValueName(p, l, mb));
      if (!laid.ok()) return laid.status();
      v = laid.value();
    }
    state_[static_cast<size_t>(pi)].values[{l, mb}] = v;
  }
  return Status::Ok();
}

Status DeviceLowering::SendOutputs(int32_t pi, int64_t mb, Phase phase, BackwardPart part) {
  for (size_t t = 0; t < ctx_.plan.transfers.size(); ++t) {
    const CrossStageTransfer& tr = ctx_.plan.transfers[t];
    if (tr.from_stage != stage_ || ctx_.once[t]) continue;  // once: at the update
    const PlanOpSite& site = ctx_.sites[static_cast<size_t>(tr.tensor)];
    if (site.stage != stage_ || ctx_.PieceOf(site.stage, site.piece) != pi) continue;
    const Op& op = ctx_.plan.graph.op(tr.tensor);
    if ((op.phase == Phase::kForward) != (phase == Phase::kForward)) continue;
    if (part != BackwardPart::kWhole &&
        piece(pi).WeightGradient(site.local) != (part == BackwardPart::kWeightGradient)) {
      continue;
    }
    Result<Value> v = ExportValue(pi, site.local, mb);
    if (!v.ok()) return v.status();
    EmitTag tag{tr.tensor, mb, InstructionOrigin::kPlan, -1};
    tag.exact = ctx_.batch_sums[static_cast<size_t>(tr.tensor)] == BatchSum::kRoot;
    ALPA_RETURN_IF_ERROR(SendTransfer(v.value(), static_cast<int32_t>(t),
                                      static_cast<int64_t>(t) * kTagsPerTransfer + mb, tag));
  }
  return Status::Ok();
}

// The piece's once-per-iteration transfers whose value is complete: summed over the microbatches
// (before the update ops) or computed by them (after). The sum is complete, so the reduction
// that completes a partial value rounds, as the one-device op does.
Status DeviceLowering::SendOnce(int32_t pi, bool computed_at_update) {
  const PieceInfo& p = piece(pi);
  for (int32_t t : p.once_sends) {
    const CrossStageTransfer& tr = ctx_.plan.transfers[static_cast<size_t>(t)];
    const PlanOpSite& site = ctx_.sites[static_cast<size_t>(tr.tensor)];
    const bool at_update =
        std::find(p.update_ops.begin(), p.update_ops.end(), site.local) != p.update_ops.end();
    if (at_update != computed_at_update) continue;
    Result<Value> v = ExportValue(pi, site.local, kUpdate);
    if (!v.ok()) return v.status();
    const EmitTag tag{tr.tensor, kUpdate, InstructionOrigin::kPlan, -1};
    ALPA_RETURN_IF_ERROR(SendTransfer(v.value(), t, t * kTagsPerTransfer + kOnceTag, tag));
  }
  return Status::Ok();
}

// The once-per-iteration transfers into the piece: their values for the update ops.
Status DeviceLowering::ReceiveOnce(int32_t pi) {
  const PieceInfo& p = piece(pi);
  for (int32_t l : p.once_receives) {
    const int32_t t = p.boundary_transfer[static_cast<size_t>(l)];
    const Op& op = p.op(l);
    const EmitTag tag{p.sub->origin[static_cast<size_t>(l)], kUpdate, InstructionOrigin::kPlan, -1};
    Result<Value> got = ReceiveTransfer(t, kUpdate, t * kTagsPerTransfer + kOnceTag);
    if (!got.ok()) return got.status();
    Result<Value> laid =
        em_.LocalTo(got.value(), op.shape, op.dtype, p.sh(l).result, tag, ValueName(p, l, kUpdate));
    if (!laid.ok()) return laid.status();
    state_[static_cast<size_t>(pi)].values[{l, kUpdate}] = laid.value();
  }
  return Status::Ok();
}

Status DeviceLowering::ReportLoss(int32_t pi, int64_t mb) {
  const PieceInfo& p = piece(pi);
  if (p.loss < 0) return Status::Ok();
  Result<Value> v = SourceValue(pi, p.loss, mb);
  if (!v.ok()) return v.status();
  Value loss = v.value();
  const Op& op = p.op(p.loss);
  const EmitTag tag{p.sub->origin[static_cast<size_t>(p.loss)], mb, InstructionOrigin::kExtra, -1};
  if (!loss.spec.partial.empty()) {
    Result<Value> reduced =
        em_.ApplyCollective(loss, op.shape, op.dtype, CollectiveKind::kAllReduce, loss.spec.partial,
                            loss.spec, CollectiveReduce::kSum, tag, "loss");
    if (!reduced.ok()) return reduced.status();
    loss = reduced.value();
  }
  if (!op.shape.empty()) {
    return Unsupported("the loss " + DescribeOp(p.sub->graph, p.loss) + " is not a scalar");
  }
  Instruction in;
  in.kind = InstructionKind::kReportLoss;
  in.in = {loss.buffer};
  em_.Emit(std::move(in), tag);
  return Status::Ok();
}

Status DeviceLowering::Accumulate(int32_t pi, int64_t mb) {
  if (ctx_.plan.microbatches <= 1) return Status::Ok();
  const PieceInfo& p = piece(pi);
  PieceState& st = state_[static_cast<size_t>(pi)];
  std::vector<std::pair<int32_t, Value>> addends;
  for (int32_t l : p.read_by_update) {
    if (p.Zero2Replaced(l)) continue;
    Result<Value> v = SourceValue(pi, l, mb);
    if (!v.ok()) return v.status();
    addends.push_back({l, v.value()});
  }
  for (const PieceInfo::Zero2Chain& z : p.zero2) {
    for (int32_t l : z.per_microbatch) ALPA_RETURN_IF_ERROR(RunOp(pi, l, mb));
    Result<Value> v = Zero2Addend(pi, z.chain, mb);
    if (!v.ok()) return v.status();
    addends.push_back({z.chain.tensor, v.value()});
  }
  for (const auto& [l, v] : addends) {
    const Value& acc = st.accumulators.at(l);
    const EmitTag tag{p.sub->origin[static_cast<size_t>(l)], mb, InstructionOrigin::kPlan, -1};
    Result<Value> laid =
        em_.LocalTo(v, p.op(l).shape, p.op(l).dtype, acc.spec, tag, ValueName(p, l, mb));
    if (!laid.ok()) return laid.status();
    Instruction in;
    in.kind = InstructionKind::kAccumulate;
    in.round = false;
    in.in = {laid.value().buffer};
    in.out = acc.buffer;
    em_.Emit(std::move(in), tag);
  }
  return Status::Ok();
}

Result<Value> DeviceLowering::Zero2Addend(int32_t pi, const GradientChain& c, int64_t mb) {
  if (c.reader_layout) return ReaderValue(pi, c.tensor, mb);
  const PieceInfo& p = piece(pi);
  const Op& op = p.op(c.tensor);
  Result<Value> start = ReaderValue(pi, c.tensor, mb);
  if (!start.ok()) return start.status();
  const ShardingSpec want = CanonicalSpec(c.accumulate_spec, em_.mesh().shape);
  Result<Value> moved =
      EdgeCollectives(p, c.consumer, c.operand, c.tensor, start.value(), want, mb);
  if (!moved.ok()) return moved.status();
  return em_.LocalTo(
      moved.value(), op.shape, op.dtype, want,
      EmitTag{p.sub->origin[static_cast<size_t>(c.tensor)], mb, InstructionOrigin::kPlan, -1},
      ValueName(p, c.tensor, mb));
}

Result<Value> DeviceLowering::EdgeCollectives(const PieceInfo& p, int32_t consumer, int32_t k,
                                              int32_t src, Value v, const ShardingSpec& want,
                                              int64_t mb) {
  auto it = p.edge_collectives.find({consumer, k});
  if (it == p.edge_collectives.end()) return v;
  const Op& op = p.op(src);
  const int32_t global = p.sub->origin[static_cast<size_t>(src)];
  for (int32_t ci : it->second) {
    const PlannedCollective& c = p.sharding->collectives[static_cast<size_t>(ci)];
    Result<Value> next = em_.ApplyCollective(
        v, op.shape, op.dtype, c.kind, c.mesh_dims, want, CollectiveReduce::kSum,
        EmitTag{global, mb, InstructionOrigin::kPlan, ci}, ValueName(p, src, mb));
    if (!next.ok()) return next.status();
    v = next.value();
  }
  return v;
}

Status DeviceLowering::ForwardTask(int64_t mb) {
  for (int32_t pi : my_pieces()) {
    ALPA_RETURN_IF_ERROR(FeedInputs(pi, mb));
    ALPA_RETURN_IF_ERROR(ReceiveInputs(pi, mb, Phase::kForward));
    for (int32_t l : piece(pi).forward_ops) ALPA_RETURN_IF_ERROR(RunOp(pi, l, mb));
    ALPA_RETURN_IF_ERROR(ReportLoss(pi, mb));
    ALPA_RETURN_IF_ERROR(SendOutputs(pi, mb, Phase::kForward));
  }
  return Status::Ok();
}

Status DeviceLowering::BackwardTask(int64_t mb, BackwardPart part) {
  const Recompute remat = ctx_.plan.stages[static_cast<size_t>(stage_)].remat;
  const std::vector<int32_t>& pieces = my_pieces();
  for (size_t i = pieces.size(); i-- > 0;) {
    const int32_t pi = pieces[i];
    const PieceInfo& p = piece(pi);
    if (part != BackwardPart::kWeightGradient) {
      for (int32_t l : p.forward_ops) {
        const bool again = remat == Recompute::kFull ||
                           (remat == Recompute::kSelective && p.rerun[static_cast<size_t>(l)]);
        if (again) ALPA_RETURN_IF_ERROR(RunOp(pi, l, mb));
      }
    }
    ALPA_RETURN_IF_ERROR(ReceiveInputs(pi, mb, Phase::kBackward, part));
    for (int32_t l : p.backward_ops) {
      if (p.InPart(l, part)) ALPA_RETURN_IF_ERROR(RunOp(pi, l, mb));
    }
    ALPA_RETURN_IF_ERROR(SendOutputs(pi, mb, Phase::kBackward, part));
    if (part != BackwardPart::kInputGradient) ALPA_RETURN_IF_ERROR(Accumulate(pi, mb));
  }
  return Status::Ok();
}

std::vector<std::vector<std::pair<int32_t, int32_t>>> DeviceLowering::WriteBackPoints() const {
  // Positions over the stage's update ops, piece by piece.
  std::vector<std::pair<int32_t, size_t>> order;
  for (int32_t pi : my_pieces()) {
    for (size_t i = 0; i < piece(pi).update_ops.size(); ++i) order.push_back({pi, i});
  }
  std::map<int32_t, size_t> last_read;  // parameter buffer -> last update position reading it
  for (size_t at = 0; at < order.size(); ++at) {
    const PieceInfo& p = piece(order[at].first);
    const PieceState& st = state_[static_cast<size_t>(order[at].first)];
    for (int32_t src : p.op(p.update_ops[order[at].second]).operands) {
      while (p.sh(src).fused) src = p.op(src).operands[0];
      auto param = st.params.find(src);
      if (param != st.params.end()) last_read[param->second.buffer] = at;
    }
  }
  std::vector<std::vector<std::pair<int32_t, int32_t>>> after(order.size());
  for (size_t at = 0; at < order.size(); ++at) {
    const PieceInfo& p = piece(order[at].first);
    const int32_t u = p.update_ops[order[at].second];
    const int32_t target = p.op(u).alias_of;
    if (target < 0) continue;
    size_t when = at;
    auto param = state_[static_cast<size_t>(order[at].first)].params.find(target);
    if (param != state_[static_cast<size_t>(order[at].first)].params.end()) {
      auto last = last_read.find(param->second.buffer);
      if (last != last_read.end()) when = std::max(when, last->second);
    }
    after[when].push_back({order[at].first, u});
  }
  return after;
}

Status DeviceLowering::WriteBack(int32_t pi, int32_t u) {
  const PieceInfo& p = piece(pi);
  PieceState& st = state_[static_cast<size_t>(pi)];
  const int32_t target = p.op(u).alias_of;
  auto param = st.params.find(target);
  if (param == st.params.end()) {
    return InternalError(DescribeOp(p.sub->graph, u) + " replaces " +
                         DescribeOp(p.sub->graph, target) + ", which holds no buffer");
  }
  Result<Value> v = SourceValue(pi, u, kUpdate);
  if (!v.ok()) return v.status();
  const EmitTag tag{p.sub->origin[static_cast<size_t>(target)], kUpdate, InstructionOrigin::kPlan,
                    -1};
  Result<Value> laid = Reshard(v.value(), p.op(target).shape, p.op(target).dtype,
                               param->second.spec, tag, ValueName(p, u, kUpdate));
  if (!laid.ok()) return laid.status();
  Instruction in;
  in.kind = InstructionKind::kCopy;
  in.in = {laid.value().buffer};
  in.out = param->second.buffer;
  em_.Emit(std::move(in), tag);
  // Later readers of the new value read it where it now lives, so that its temporary is freed
  // here, as an update written in place (which the planner models) holds no second copy.
  auto value = st.values.find({u, kUpdate});
  if (laid.value().buffer == v.value().buffer && value != st.values.end()) {
    value->second = param->second;
  }
  return Status::Ok();
}

Status DeviceLowering::Update() {
  const int64_t b = ctx_.plan.microbatches;
  // Each new parameter or optimizer state replaces the old one as soon as no update op reads
  // the old one any more (the planner's schedule runs an in-place update after every other
  // reader of its parameter), not after the whole update.
  const std::vector<std::vector<std::pair<int32_t, int32_t>>> write_back = WriteBackPoints();
  size_t at = 0;
  for (int32_t pi : my_pieces()) {
    const PieceInfo& p = piece(pi);
    PieceState& st = state_[static_cast<size_t>(pi)];
    if (b > 1) {
      std::vector<int32_t> summed;
      for (int32_t l : p.read_by_update) {
        if (!p.Zero2Replaced(l)) summed.push_back(l);
      }
      for (const PieceInfo::Zero2Chain& z : p.zero2) summed.push_back(z.chain.tensor);
      for (int32_t l : summed) {
        const Value& acc = st.accumulators.at(l);
        const Buffer& buf = em_.program().buffers[static_cast<size_t>(acc.buffer)];
        const Dims shape = buf.shape;
        const DType dtype = buf.dtype;
        Instruction in;
        in.kind = InstructionKind::kScale;
        in.in = {acc.buffer};
        in.value = 1.0 / static_cast<double>(b);
        in.round = acc.spec.partial.empty();
        in.out = em_.NewBuffer(ValueName(p, l, -1) + ".mean", shape, dtype, buf.tensor, false);
        Value mean{in.out, acc.spec};
        em_.Emit(std::move(in), EmitTag{p.sub->origin[static_cast<size_t>(l)], kUpdate,
                                        InstructionOrigin::kPlan, -1});
        st.values[{l, kUpdate}] = mean;
      }
      // A ZeRO-2 chain's sum is laid out already: its readers read it as it is.
      for (const PieceInfo::Zero2Chain& z : p.zero2) {
        if (z.chain.reader_layout) {
          st.reader_values[{z.chain.tensor, kUpdate}] = st.values.at({z.chain.tensor, kUpdate});
        }
      }
    }
    ALPA_RETURN_IF_ERROR(SendOnce(pi, false));
    ALPA_RETURN_IF_ERROR(ReceiveOnce(pi));
    for (int32_t l : p.update_ops) {
      if (!p.Zero2Moved(l)) ALPA_RETURN_IF_ERROR(RunOp(pi, l, kUpdate));  // else per microbatch
      for (const auto& [wpi, u] : write_back[at]) ALPA_RETURN_IF_ERROR(WriteBack(wpi, u));
      ++at;
    }
    ALPA_RETURN_IF_ERROR(SendOnce(pi, true));
  }
  return Status::Ok();
}

Status DeviceLowering::RefreshCopies(RefreshPart part) {
  for (size_t r = 0; r < ctx_.refreshes.size(); ++r) {
    const Refresh& rf = ctx_.refreshes[r];
    const PieceInfo& from = piece(rf.from_piece);
    const PieceInfo& to = piece(rf.to_piece);
    const int32_t global = from.sub->origin[static_cast<size_t>(rf.from_local)];
    const Op& op = ctx_.plan.graph.op(global);
    const EmitTag tag{global, kUpdate, InstructionOrigin::kExtra, -1};
    const bool sender = from.stage == stage_, receiver = to.stage == stage_;
    if (!sender && !receiver) continue;
    const bool sends = sender && !receiver;
    if ((part == RefreshPart::kSends && !sends) || (part == RefreshPart::kReceives && sends)) {
      continue;
    }
    if (sender && receiver) {
      const Value& src = state_[static_cast<size_t>(rf.from_piece)].params.at(rf.from_local);
      const Value& dst = state_[static_cast<size_t>(rf.to_piece)].params.at(rf.to_local);
      Result<Value> laid = Reshard(src, op.shape, op.dtype, dst.spec, tag, "refresh");
      if (!laid.ok()) return laid.status();
      Instruction in;
      in.kind = InstructionKind::kCopy;
      in.in = {laid.value().buffer};
      in.out = dst.buffer;
      em_.Emit(std::move(in), tag);
      continue;
    }
    const MeshView& fm = ctx_.meshes[static_cast<size_t>(from.stage)];
    const MeshView& tm = ctx_.meshes[static_cast<size_t>(to.stage)];
    const ShardingSpec from_spec = CanonicalSpec(from.sh(rf.from_local).result, fm.shape);
    const ShardingSpec to_spec = CanonicalSpec(to.sh(rf.to_local).result, tm.shape);
    Result<std::vector<SliceMove>> moves =
        PlanCrossMeshTransfer(op.shape, DTypeBytes(op.dtype), from_spec, fm.shape, fm.devices,
                              to_spec, tm.shape, tm.devices);
    if (!moves.ok()) return moves.status();
    const int64_t msg_tag = kRefreshTagBase + static_cast<int64_t>(r);
    if (sender) {
      const Value& src = state_[static_cast<size_t>(rf.from_piece)].params.at(rf.from_local);
      std::vector<int64_t> off, size;
      em_.TileBox(src.spec, op.shape, off, size);
      for (const SliceMove& m : moves.value()) {
        if (m.src_device != em_.device()) continue;
        Instruction in;
        in.kind = InstructionKind::kSend;
        in.in = {src.buffer};
        in.peer = static_cast<int32_t>(m.dst_device);
        in.tag = msg_tag;
        in.sizes = m.sizes;
        for (size_t d = 0; d < m.offsets.size(); ++d) in.offsets.push_back(m.offsets[d] - off[d]);
        em_.Emit(std::move(in), tag);
      }
    } else {
      const Value& dst = state_[static_cast<size_t>(rf.to_piece)].params.at(rf.to_local);
      std::vector<int64_t> off, size;
      em_.TileBox(dst.spec, op.shape, off, size);
      const Buffer& buf = em_.program().buffers[static_cast<size_t>(dst.buffer)];
      const int32_t tmp = em_.NewBuffer(buf.name + ".refresh", buf.shape, buf.dtype, global, false);
      Instruction zero;
      zero.kind = InstructionKind::kZero;
      zero.out = tmp;
      em_.Emit(zero, tag);
      for (const SliceMove& m : moves.value()) {
        if (m.dst_device != em_.device()) continue;
        Instruction in;
        in.kind = InstructionKind::kRecv;
        in.out = tmp;
        in.peer = static_cast<int32_t>(m.src_device);
        in.tag = msg_tag;
        in.sizes = m.sizes;
        for (size_t d = 0; d < m.offsets.size(); ++d) in.offsets.push_back(m.offsets[d] - off[d]);
        em_.Emit(std::move(in), tag);
      }
      Instruction copy;
      copy.kind = InstructionKind::kCopy;
      copy.in = {tmp};
      copy.out = dst.buffer;
      em_.Emit(std::move(copy), tag);
    }
  }
  return Status::Ok();
}

void DeviceLowering::EndTask(ProgramTaskKind kind, int64_t microbatch) {
  std::vector<ProgramTask>& tasks = em_.program().tasks;
  ProgramTask task;
  task.kind = kind;
  task.microbatch = microbatch;
  task.stage = stage_;
  task.begin = tasks.empty() ? 0 : tasks.back().end;
  task.end = static_cast<int64_t>(em_.program().code.size());
  tasks.push_back(task);
}

Status DeviceLowering::Setup() {
  ALPA_RETURN_IF_ERROR(BindParameters());
  ALPA_RETURN_IF_ERROR(ZeroAccumulators());
  EndTask(ProgramTaskKind::kSetup, -1);
  return Status::Ok();
}

Status DeviceLowering::RunTask(PipelineTaskKind kind, int64_t microbatch) {
  switch (kind) {
    case PipelineTaskKind::kForward:
      ALPA_RETURN_IF_ERROR(ForwardTask(microbatch));
      EndTask(ProgramTaskKind::kForward, microbatch);
      return Status::Ok();
    case PipelineTaskKind::kBackward:
      ALPA_RETURN_IF_ERROR(BackwardTask(microbatch, SplitsBackward(ctx_.options.schedule)
                                                        ? BackwardPart::kInputGradient
                                                        : BackwardPart::kWhole));
      EndTask(ProgramTaskKind::kBackward, microbatch);
      return Status::Ok();
    case PipelineTaskKind::kWeightGradient:
      ALPA_RETURN_IF_ERROR(BackwardTask(microbatch, BackwardPart::kWeightGradient));
      EndTask(ProgramTaskKind::kWeightGradient, microbatch);
      return Status::Ok();
  }
  return InternalError("unknown pipeline task kind");
}

Status DeviceLowering::Finish(RefreshPart refresh) {
  ALPA_RETURN_IF_ERROR(Update());
  ALPA_RETURN_IF_ERROR(RefreshCopies(refresh));
  if (refresh == RefreshPart::kAll) EndTask(ProgramTaskKind::kUpdate, -1);
  return Status::Ok();
}

// The plan's memory for `stage` with the microbatches `schedule` keeps in flight: the plan
// states it for its own schedule (in_flight of them); for another count, the planner's model of
// the stage when the pieces carry their solves' bytes (it then gives the plan's figure at
// in_flight). A plan read from JSON does not: each further microbatch then adds
// activation_bytes, which is exact unless the update's peak is the larger (then it
// overestimates). A schedule that splits the backward adds activation_bytes per weight gradient
// it keeps pending (WeightGradientsPending: the bound on the output gradients those hold), as
// the planner charges it; the plan's figure holds that term for the plan's own schedule.
// Under interleaved 1F1B the counts are those of the plan's virtual stages (LowerPlan checks
// that the two go together).
Result<int64_t> PlannedMemoryUnder(const PipelinePlan& plan, int32_t stage,
                                   PipelineScheduleKind schedule) {
  const PlannedStage& st = plan.stages[static_cast<size_t>(stage)];
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (st.memory_bytes == kMax) return kMax;  // saturated: nothing to take apart
  const int32_t stages = static_cast<int32_t>(plan.stages.size());
  const int32_t virtual_stages = VirtualStagesUnder(plan, schedule);
  const int64_t in_flight =
      MicrobatchesInFlight(schedule, stages, stage, plan.microbatches, virtual_stages);
  const Int128 pending =
      Int128{WeightGradientsPending(schedule, stages, stage, plan.microbatches, virtual_stages)} *
      st.activation_bytes;
  // The plan's figure without its own schedule's pending weight gradients.
  const Int128 stated = Int128{st.memory_bytes} -
                        Int128{WeightGradientsPending(plan.schedule, stages, stage,
                                                      plan.microbatches, plan.virtual_stages)} *
                            st.activation_bytes;
  Int128 bytes = stated + Int128{in_flight - st.in_flight} * st.activation_bytes;
  if (in_flight == st.in_flight) {
    bytes = stated;
  } else {
    Result<StageMemory> model = PlannedStageMemoryModel(st);
    if (model.ok() && Int128{model.value().With(st.in_flight)} == stated) {
      bytes = model.value().With(in_flight);
    }
  }
  bytes += pending;
  return ClampToInt64(bytes);
}

// The planned memory of a device running `stages`: the sum of theirs.
Result<int64_t> PlannedDeviceMemory(const PipelinePlan& plan, const std::vector<int32_t>& stages,
                                    PipelineScheduleKind schedule) {
  Int128 sum = 0;
  for (int32_t s : stages) {
    Result<int64_t> bytes = PlannedMemoryUnder(plan, s, schedule);
    if (!bytes.ok()) return bytes.status();
    sum += bytes.value();
  }
  return ClampToInt64(sum);
}

// Inserts kFree after the last instruction touching each non-persistent buffer.
void InsertFrees(DeviceProgram& program) {
  std::vector<int64_t> last(program.buffers.size(), -1);
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Instruction& in = program.code[i];
    for (int32_t b : in.in) last[static_cast<size_t>(b)] = static_cast<int64_t>(i);
    if (in.out >= 0) last[static_cast<size_t>(in.out)] = static_cast<int64_t>(i);
  }
  std::vector<std::vector<int32_t>> frees(program.code.size());
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    if (program.buffers[b].persistent || last[b] < 0) continue;
    frees[static_cast<size_t>(last[b])].push_back(static_cast<int32_t>(b));
  }
  std::vector<Instruction> code;
  code.reserve(program.code.size() * 2);
  // Each free joins the task of the instruction it follows.
  size_t task = 0;
  for (size_t i = 0; i < program.code.size(); ++i) {
    while (task < program.tasks.size() && program.tasks[task].end <= static_cast<int64_t>(i)) {
      program.tasks[task].end = static_cast<int64_t>(code.size());
      if (++task < program.tasks.size())
        program.tasks[task].begin = static_cast<int64_t>(code.size());
    }
    code.push_back(std::move(program.code[i]));
    for (int32_t b : frees[i]) {
      Instruction f;
      f.kind = InstructionKind::kFree;
      f.in = {b};
      f.stage = code.back().stage;
      f.tensor = program.buffers[static_cast<size_t>(b)].tensor;
      f.microbatch = code.back().microbatch;
      f.origin = code.back().origin;
      code.push_back(std::move(f));
    }
  }
  for (; task < program.tasks.size(); ++task) {
    program.tasks[task].end = static_cast<int64_t>(code.size());
    if (task + 1 < program.tasks.size()) {
      program.tasks[task + 1].begin = static_cast<int64_t>(code.size());
    }
  }
  program.code = std::move(code);
}

// Marks, per global parameter, the one copy to read back: the first piece that updates it (or
// holds it), on the devices holding the first replica of each tile.
void MarkFetchCopies(const PlanContext& ctx, ProgramSet& set) {
  std::map<int32_t, int32_t> chosen_stage;
  for (const Refresh& r : ctx.refreshes) {
    chosen_stage[ctx.pieces[static_cast<size_t>(r.from_piece)]
                     .sub->origin[static_cast<size_t>(r.from_local)]] =
        ctx.pieces[static_cast<size_t>(r.from_piece)].stage;
  }
  std::map<int32_t, std::vector<std::vector<int64_t>>> seen;  // global -> tile offsets taken
  for (DeviceProgram& prog : set.programs) {
    for (ParameterBinding& b : prog.parameters) {
      b.fetch = false;
      auto cs = chosen_stage.find(b.tensor);
      if (cs != chosen_stage.end() && cs->second != b.stage) continue;
      if (!b.owner) continue;
      std::vector<std::vector<int64_t>>& taken = seen[b.tensor];
      if (std::find(taken.begin(), taken.end(), b.offsets) != taken.end()) continue;
      taken.push_back(b.offsets);
      b.fetch = true;
    }
  }
}

// Per device group, its stages (ascending): a group per stage, or under interleaved 1F1B stage s
// in group s % groups, whose stages must share their device list (the same devices in the same
// order: logical index li is the same device in each). A value that moves between two stages of
// one group (a transfer or a refreshed copy) would move from a device to itself, which the
// lowering does not emit: kUnsupported (the zoo's plans have none: consecutive stages are on
// different groups, and a tied embedding's last stage on the last group).
Result<std::vector<std::vector<int32_t>>> DeviceGroupStages(const PlanContext& ctx) {
  const PipelinePlan& plan = ctx.plan;
  const int32_t stages = static_cast<int32_t>(plan.stages.size());
  const int32_t virtual_stages = VirtualStagesUnder(plan, ctx.options.schedule);
  const int32_t count = PipelineGroups(stages, virtual_stages);
  std::vector<std::vector<int32_t>> groups(static_cast<size_t>(count));
  for (int32_t s = 0; s < stages; ++s) {
    const int32_t g = StageGroup(stages, virtual_stages, s);
    const PlannedStage& first = plan.stages[static_cast<size_t>(g)];
    if (plan.stages[static_cast<size_t>(s)].devices != first.devices) {
      return InvalidArgument("stage " + std::to_string(s) + " runs on other devices than stage " +
                             std::to_string(g) + "; under interleaved-1f1b stage s runs on the " +
                             "devices of stage s % " + std::to_string(count) +
                             " (the same devices in the same order)");
    }
    groups[static_cast<size_t>(g)].push_back(s);
  }
  if (virtual_stages == 1) return groups;
  auto same_group = [&](int32_t a, int32_t b) {
    return StageGroup(stages, virtual_stages, a) == StageGroup(stages, virtual_stages, b);
  };
  for (const CrossStageTransfer& t : plan.transfers) {
    if (same_group(t.from_stage, t.to_stage)) {
      return Unsupported("the transfer of " + DescribeOp(plan.graph, t.tensor) + " from stage " +
                         std::to_string(t.from_stage) + " to stage " + std::to_string(t.to_stage) +
                         " stays on the devices of one device group: the executor does not move "
                         "values between two stages of one device yet");
    }
  }
  for (const Refresh& r : ctx.refreshes) {
    const int32_t from = ctx.pieces[static_cast<size_t>(r.from_piece)].stage;
    const int32_t to = ctx.pieces[static_cast<size_t>(r.to_piece)].stage;
    if (from != to && same_group(from, to)) {
      const PieceInfo& p = ctx.pieces[static_cast<size_t>(r.from_piece)];
      return Unsupported("the copy of " +
                         DescribeOp(plan.graph, p.sub->origin[static_cast<size_t>(r.from_local)]) +
                         " that stage " + std::to_string(to) + " holds is refreshed from stage " +
                         std::to_string(from) +
                         " on the same devices: the executor does not move values between two "
                         "stages of one device yet");
    }
  }
  return groups;
}

// The program of the device at logical index `logical` of device group `group`, which runs
// `stages`: one lowering per stage, sharing the program (its buffers, local ops and code; every
// message tag names its transfer or refresh, so tags stay unique per device). Each stage's
// set-up, then the group's tasks in schedule order (GroupSchedule), each lowered by its stage;
// then the updates. With one stage: its update, then its refreshed copies in the plan's order.
// With several: the updates from the last stage to the first, each followed by the refreshed
// copies it sends, then every copy the device receives. A once-per-iteration transfer carries
// a gradient contribution to an earlier stage, so no update waits for a later update of its own
// device, and no update waits behind a receive; sends never wait.
Status LowerDevice(const PlanContext& ctx, DeviceProgram& prog, int32_t group,
                   const std::vector<int32_t>& stages, int64_t logical) {
  std::vector<std::unique_ptr<DeviceLowering>> lowerings;
  std::map<int32_t, DeviceLowering*> of_stage;
  for (int32_t s : stages) {
    lowerings.push_back(std::make_unique<DeviceLowering>(ctx, prog, s, logical));
    of_stage[s] = lowerings.back().get();
  }
  for (const auto& lowering : lowerings) ALPA_RETURN_IF_ERROR(lowering->Setup());
  const PipelinePlan& plan = ctx.plan;
  for (const GroupTask& task :
       GroupSchedule(ctx.options.schedule, static_cast<int32_t>(plan.stages.size()),
                     VirtualStagesUnder(plan, ctx.options.schedule), group, plan.microbatches)) {
    ALPA_RETURN_IF_ERROR(of_stage.at(task.stage)->RunTask(task.kind, task.microbatch));
  }
  if (lowerings.size() == 1) return lowerings.front()->Finish(RefreshPart::kAll);
  for (size_t i = lowerings.size(); i-- > 0;) {
    ALPA_RETURN_IF_ERROR(lowerings[i]->Finish(RefreshPart::kSends));
    if (i > 0) lowerings[i]->EndTask(ProgramTaskKind::kUpdate, -1);
  }
  for (const auto& lowering : lowerings) {
    ALPA_RETURN_IF_ERROR(lowering->RefreshCopies(RefreshPart::kReceives));
  }
  lowerings.front()->EndTask(ProgramTaskKind::kUpdate, -1);
  return Status::Ok();
}

// LowerPlan, or LowerPlanEach when `take` is set.
Result<ProgramSet> LowerPlanWith(const PipelinePlan& plan, const LowerOptions& options,
                                 const std::function<Status(DeviceProgram&)>* take) {
  if (plan.stages.empty()) return InvalidArgument("the plan has no stages");
  if (plan.microbatches < 1) return InvalidArgument("the plan has no microbatches");
  ALPA_RETURN_IF_ERROR(CheckScheduleFits(plan, options.schedule));
  PlanContext ctx{plan, options,
                  {},   {},
                  {},   PlanOpSites(plan),
                  {},   ClassifyBatchSums(plan.graph, options.whole_batch, plan.microbatches),
                  {}};
  int64_t world = 0;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlannedStage& stage = plan.stages[s];
    if (stage.pieces.empty()) {
      return InvalidArgument("stage " + std::to_string(s) + " of the plan has no pieces");
    }
    MeshView mesh{stage.logical_mesh, stage.devices};
    int64_t count = 1;
    for (int64_t d : mesh.shape) count *= d;
    if (count != static_cast<int64_t>(mesh.devices.size())) {
      return InvalidArgument("stage " + std::to_string(s) + ": logical mesh of " +
                             std::to_string(count) + " devices over " +
                             std::to_string(mesh.devices.size()) + " devices");
    }
    for (int64_t d : mesh.devices) world = std::max(world, d + 1);
    ctx.meshes.push_back(std::move(mesh));
    std::vector<int32_t> indices;
    for (size_t p = 0; p < stage.pieces.size(); ++p) {
      PieceInfo info;
      info.stage = static_cast<int32_t>(s);
      info.index = static_cast<int32_t>(p);
      info.sub = stage.pieces[p].subgraph.get();
      info.sharding = stage.pieces[p].sharding.get();
      if (info.sub == nullptr || info.sharding == nullptr) {
        return InvalidArgument("stage " + std::to_string(s) + " piece " + std::to_string(p) +
                               " has no subgraph or sharding");
      }
      ALPA_RETURN_IF_ERROR(BuildPieceInfo(plan, ctx.batch_sums, options.schedule, info));
      indices.push_back(static_cast<int32_t>(ctx.pieces.size()));
      ctx.pieces.push_back(std::move(info));
    }
    ctx.stage_pieces.push_back(std::move(indices));
  }
  ALPA_RETURN_IF_ERROR(PairTransfers(ctx));
  MarkOncePerIteration(ctx);
  if (plan.microbatches >= kOnceTag ||
      static_cast<int64_t>(plan.transfers.size()) * kTagsPerTransfer >= kRefreshTagBase) {
    return Unsupported("the plan has " + std::to_string(plan.microbatches) + " microbatches and " +
                       std::to_string(plan.transfers.size()) +
                       " transfers; the executor numbers their messages for at most " +
                       std::to_string(kOnceTag - 1) + " microbatches and " +
                       std::to_string(kRefreshTagBase / kTagsPerTransfer) + " transfers");
  }
  ListRefreshes(ctx);

  Result<std::vector<std::vector<int32_t>>> groups = DeviceGroupStages(ctx);
  if (!groups.ok()) return groups.status();
  ProgramSet set;
  set.devices = static_cast<int32_t>(world);
  set.microbatches = plan.microbatches;
  set.graph = plan.graph;
  set.programs.resize(static_cast<size_t>(world));
  for (int32_t d = 0; d < set.devices; ++d) set.programs[static_cast<size_t>(d)].device = d;
  // Each device's program on its own (in parallel): (device group, logical index) per device.
  std::vector<std::pair<int32_t, int64_t>> jobs;
  for (size_t g = 0; g < groups.value().size(); ++g) {
    const std::vector<int32_t>& stages = groups.value()[g];
    const MeshView& mesh = ctx.meshes[static_cast<size_t>(stages.front())];
    Result<int64_t> planned = PlannedDeviceMemory(plan, stages, options.schedule);
    if (!planned.ok()) return planned.status();
    for (size_t li = 0; li < mesh.devices.size(); ++li) {
      DeviceProgram& prog = set.programs[static_cast<size_t>(mesh.devices[li])];
      if (prog.stage >= 0) {
        return InvalidArgument(
            "device " + std::to_string(mesh.devices[li]) + " belongs to two stages (" +
            std::to_string(prog.stage) + " and " + std::to_string(stages.front()) + ")" +
            (VirtualStagesUnder(plan, options.schedule) > 1 ? " of different device groups" : ""));
      }
      prog.stage = stages.front();
      prog.stages = stages;
      prog.planned_memory_bytes = planned.value();
      jobs.emplace_back(static_cast<int32_t>(g), static_cast<int64_t>(li));
    }
  }
  std::mutex taking;
  auto lower_one = [&](int64_t j) -> Status {
    const auto [g, li] = jobs[static_cast<size_t>(j)];
    const std::vector<int32_t>& stages = groups.value()[static_cast<size_t>(g)];
    DeviceProgram& kept = set.programs[static_cast<size_t>(
        ctx.meshes[static_cast<size_t>(stages.front())].devices[static_cast<size_t>(li)])];
    DeviceProgram handed;
    DeviceProgram& prog = take == nullptr ? kept : handed;
    if (take != nullptr) {
      prog.device = kept.device;
      prog.stage = kept.stage;
      prog.stages = kept.stages;
      prog.planned_memory_bytes = kept.planned_memory_bytes;
    }
    ALPA_RETURN_IF_ERROR(LowerDevice(ctx, prog, g, stages, li));
    InsertFrees(prog);
    if (take == nullptr) return Status::Ok();
    const std::lock_guard<std::mutex> lock(taking);
    return (*take)(prog);
  };
  ALPA_RETURN_IF_ERROR(RunParallel(static_cast<int64_t>(jobs.size()),
                                   ResolveThreadCount(options.threads), lower_one));
  if (take == nullptr) MarkFetchCopies(ctx, set);
  return set;
}

}  // namespace

Result<ProgramSet> LowerPlan(const PipelinePlan& plan, const LowerOptions& options) {
  return LowerPlanWith(plan, options, nullptr);
}

Result<ProgramSet> LowerPlanEach(const PipelinePlan& plan, const LowerOptions& options,
                                 const std::function<Status(DeviceProgram&)>& take) {
  return LowerPlanWith(plan, options, &take);
}

}  // namespace alpa
