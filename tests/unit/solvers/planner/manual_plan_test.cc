// Manual (Megatron-style) plans and the baseline grid search on a small GPT: the stated
// degrees become stages, meshes and constraints; the predicted time follows the planner's
// formula; bad specs name their field; the planner is never slower than the best baseline.
#include "solvers/planner/manual_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/auto_sharding/plan_check.h"
#include "solvers/planner/baseline_search.h"
#include "solvers/planner/plan_json.h"
#include "support/clusters.h"
#include "support/pipeline_prediction.h"

namespace alpa {
namespace {

constexpr const char* kSmallGpt = "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=16";

using testing::P3;

PlannerModel SmallGpt() {
  Result<PlannerModel> model = PlannerModelFromSpec(kSmallGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : PlannerModel{};
}

PlannerOptions Options() {
  PlannerOptions options;
  options.threads = 2;
  return options;
}

ManualPlanSpec Spec(int64_t dp, int64_t tp, int64_t pp, int64_t microbatches, int32_t zero = 0) {
  ManualPlanSpec spec;
  spec.data_parallel = dp;
  spec.tensor_parallel = tp;
  spec.pipeline_parallel = pp;
  spec.microbatches = microbatches;
  spec.zero_stage = zero;
  return spec;
}

PipelinePlan EvaluateOrDie(const ManualPlanSpec& spec, const Cluster& cluster,
                           const PlannerOptions& options = Options()) {
  Result<PipelinePlan> plan = EvaluateManualPlan(SmallGpt(), cluster, spec, options);
  EXPECT_TRUE(plan.ok()) << ManualPlanSpecString(spec) << ": " << plan.status().message();
  return plan.ok() ? std::move(plan).value() : PipelinePlan{};
}

// Stages in order over every layer group, devices tiling the cluster in order, the planner's
// iteration-time formula and in-flight counts, and every piece passing the plan checker.
void ExpectConsistent(const PipelinePlan& plan, const Cluster& cluster,
                      const ManualPlanSpec& spec) {
  ASSERT_EQ(static_cast<int64_t>(plan.stages.size()), spec.pipeline_parallel);
  EXPECT_EQ(plan.microbatches, spec.microbatches);
  int32_t next_layer = 0;
  int64_t next_device = 0;
  double sum = 0, max_latency = 0;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlannedStage& st = plan.stages[s];
    EXPECT_EQ(st.first_layer, next_layer);
    next_layer = st.last_layer + 1;
    ASSERT_EQ(static_cast<int64_t>(st.devices.size()), st.submesh.num_devices());
    for (int64_t d : st.devices) EXPECT_EQ(d, next_device++);
    EXPECT_EQ(st.submesh.num_devices(), spec.data_parallel * spec.tensor_parallel);
    EXPECT_EQ(st.logical_mesh,
              spec.tensor_inside_host
                  ? (std::vector<int64_t>{spec.data_parallel, spec.tensor_parallel})
                  : (std::vector<int64_t>{spec.tensor_parallel, spec.data_parallel}));
    EXPECT_EQ(st.in_flight,
              std::min<int64_t>(spec.microbatches, static_cast<int64_t>(plan.stages.size() - s)));
    EXPECT_EQ(st.remat, spec.remat);
    EXPECT_EQ(st.data_parallel * st.tensor_parallel, st.submesh.num_devices());
    EXPECT_LE(st.memory_bytes, cluster.device.memory_bytes);
    EXPECT_LE(st.memory_bytes, plan.peak_memory_bytes);
    EXPECT_GT(st.latency, 0);
    sum += st.latency + st.iteration_overhead;
    max_latency = std::max(max_latency, st.latency);
    for (const StagePiece& p : st.pieces) {
      Status check =
          CheckShardingPlan(p.subgraph->graph, st.logical_mesh, *p.sharding, std::nullopt);
      EXPECT_TRUE(check.ok()) << "stage " << s << " piece " << p.piece << ": " << check.message();
    }
  }
  EXPECT_EQ(next_layer, plan.clustering.num_layers);
  EXPECT_EQ(next_device, cluster.num_devices());
  const double formula = sum + static_cast<double>(spec.microbatches - 1) * max_latency;
  EXPECT_NEAR(plan.schedule_seconds, formula, 1e-9 * formula);
  // The prediction with the transfers, recomputed independently.
  double period = 0;
  const double predicted = alpa::testing::PredictPlanByBisection(plan, &period);
  EXPECT_NEAR(plan.iteration_seconds, predicted, 1e-9 * predicted);
  EXPECT_NEAR(plan.period_seconds, period, 1e-9 * period);
  // Transfers only add to the DP's formula, and the stages' overheads overlap (each runs after
  // its own stage's last backward): at least stage 0's counts, at most all of them.
  double overheads = 0;
  for (const PlannedStage& st : plan.stages) overheads += st.iteration_overhead;
  const double floor = plan.schedule_seconds - overheads + plan.stages.front().iteration_overhead;
  EXPECT_GE(plan.iteration_seconds, floor * (1 - 1e-12));
  EXPECT_DOUBLE_EQ(plan.max_stage_latency, max_latency);
  EXPECT_GT(plan.tflops_per_device, 0);
}

// The mesh dims the first batched forward input of a piece splits its batch over.
std::vector<int32_t> BatchDims(const StagePiece& piece) {
  const Graph& g = piece.subgraph->graph;
  for (int32_t v = 0; v < g.size(); ++v) {
    const Op& op = g.op(v);
    if (op.kind == OpKind::kParameter && op.role == TensorRole::kInput && !op.shape.empty() &&
        op.phase == Phase::kForward) {
      return piece.sharding->ops[static_cast<size_t>(v)].result.dims[0];
    }
  }
  return {};
}

TEST(ManualPlan, PureDataParallel) {
  const Cluster cluster = P3(1);
  const ManualPlanSpec spec = Spec(8, 1, 1, 2);
  const PipelinePlan plan = EvaluateOrDie(spec, cluster);
  ExpectConsistent(plan, cluster, spec);
  ASSERT_EQ(plan.stages.size(), 1u);
  const PlannedStage& st = plan.stages[0];
  EXPECT_EQ(st.data_parallel, 8);
  EXPECT_EQ(st.tensor_parallel, 1);
  EXPECT_FALSE(st.zero);
  EXPECT_EQ(st.submesh.hosts, 1);
  EXPECT_EQ(st.submesh.devices_per_host, 8);
  EXPECT_EQ(st.pieces.size(), 6u);  // embedding, 4 blocks, head
  for (const StagePiece& p : st.pieces) EXPECT_EQ(BatchDims(p), std::vector<int32_t>{0});
  // One stage: T = t + o + (B - 1) t.
  EXPECT_NEAR(plan.iteration_seconds, 2 * st.latency + st.iteration_overhead,
              1e-9 * plan.iteration_seconds);
  EXPECT_TRUE(plan.transfers.empty());
}

TEST(ManualPlan, PureTensorParallel) {
  const Cluster cluster = P3(1);
  const ManualPlanSpec spec = Spec(1, 8, 1, 16);  // microbatches of one sequence
  const PipelinePlan plan = EvaluateOrDie(spec, cluster);
  ExpectConsistent(plan, cluster, spec);
  ASSERT_EQ(plan.stages.size(), 1u);
  EXPECT_EQ(plan.stages[0].tensor_parallel, 8);
  EXPECT_EQ(plan.stages[0].data_parallel, 1);
  EXPECT_EQ(plan.stages[0].logical_mesh, (std::vector<int64_t>{1, 8}));
  for (const StagePiece& p : plan.stages[0].pieces) EXPECT_TRUE(BatchDims(p).empty());

  // With dp = 1 the batch is not constrained: where the solver splits it over the
  // tensor-parallel dim anyway (8 sequences per microbatch on this small model), the stage
  // reports the degrees it realised.
  const ManualPlanSpec wide = Spec(1, 8, 1, 2);
  const PipelinePlan split = EvaluateOrDie(wide, cluster);
  ExpectConsistent(split, cluster, wide);
  const int64_t realised = BatchDims(split.stages[0].pieces[1]).empty() ? 1 : 8;
  EXPECT_EQ(split.stages[0].data_parallel, realised);
}

TEST(ManualPlan, ThreeDimensional) {
  const Cluster cluster = P3(1);
  ManualPlanSpec spec = Spec(2, 2, 2, 4, /*zero=*/1);
  const PipelinePlan plan = EvaluateOrDie(spec, cluster);
  ExpectConsistent(plan, cluster, spec);
  ASSERT_EQ(plan.stages.size(), 2u);
  // Markers 0 (embedding) .. 5 (head): two blocks per stage.
  EXPECT_EQ(plan.stages[0].first_layer, 0);
  EXPECT_EQ(plan.stages[0].last_layer, 2);
  EXPECT_EQ(plan.stages[1].first_layer, 3);
  EXPECT_EQ(plan.stages[1].last_layer, 5);
  for (const PlannedStage& st : plan.stages) {
    EXPECT_EQ(st.devices.size(), 4u);
    EXPECT_EQ(st.data_parallel, 2);
    EXPECT_EQ(st.tensor_parallel, 2);
    EXPECT_TRUE(st.zero);
    for (const StagePiece& p : st.pieces) EXPECT_EQ(BatchDims(p), std::vector<int32_t>{0});
  }
  EXPECT_EQ(plan.stages[0].devices, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(plan.stages[1].devices, (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_FALSE(plan.transfers.empty());  // activations forward, gradients backward
  for (const CrossStageTransfer& t : plan.transfers) EXPECT_NE(t.from_stage, t.to_stage);
  // Every op of a layer is computed on the stage of its layer.
  const std::vector<PlanOpSite> sites = PlanOpSites(plan);
  for (int32_t v = 0; v < plan.graph.size(); ++v) {
    const int32_t group = plan.clustering.op_layer[static_cast<size_t>(v)];
    if (group < 0) continue;
    EXPECT_EQ(sites[static_cast<size_t>(v)].stage, group <= 2 ? 0 : 1) << v;
  }
  const std::string json = PipelinePlanJson(plan, cluster, kSmallGpt, 1).value();
  EXPECT_NE(json.find("\"stages\""), std::string::npos);

  // The other orientation: (tp, dp) with the batch on dim 1.
  spec.tensor_inside_host = false;
  const PipelinePlan flipped = EvaluateOrDie(spec, cluster);
  ExpectConsistent(flipped, cluster, spec);
  for (const PlannedStage& st : flipped.stages) {
    for (const StagePiece& p : st.pieces) EXPECT_EQ(BatchDims(p), std::vector<int32_t>{1});
  }

  // Rematerialization: less activation memory, a longer stage.
  spec.tensor_inside_host = true;
  spec.remat = Recompute::kFull;
  const PipelinePlan remat = EvaluateOrDie(spec, cluster);
  ExpectConsistent(remat, cluster, spec);
  EXPECT_GT(remat.stages[0].latency, plan.stages[0].latency);
  EXPECT_LT(remat.stages[0].activation_bytes, plan.stages[0].activation_bytes);
}

// ZeRO-3 shards the weights over the data-parallel devices: less persistent memory than ZeRO-1,
// paid for by gathering them in every microbatch; so it fits where ZeRO-1 does not, and is
// slower where both fit.
TEST(ManualPlan, ZeroThreeShardsTheWeightsAndFitsWhereZeroOneDoesNot) {
  const Cluster cluster = P3(1, 4);
  const PipelinePlan one = EvaluateOrDie(Spec(4, 1, 1, 2, 1), cluster);
  const PipelinePlan three = EvaluateOrDie(Spec(4, 1, 1, 2, 3), cluster);
  ASSERT_EQ(one.stages.size(), 1u);
  ASSERT_EQ(three.stages.size(), 1u);
  ExpectConsistent(three, cluster, Spec(4, 1, 1, 2, 3));
  EXPECT_TRUE(three.stages[0].zero);
  // Every weight has one copy over the four devices.
  int weights = 0;
  for (const StagePiece& piece : three.stages[0].pieces) {
    for (int32_t v = 0; v < piece.subgraph->graph.size(); ++v) {
      const Op& op = piece.subgraph->graph.op(v);
      if (op.kind != OpKind::kParameter || op.role != TensorRole::kParameter) continue;
      const ShardingSpec& spec = piece.sharding->ops[static_cast<size_t>(v)].result;
      EXPECT_EQ(ReplicationFactor(spec, three.stages[0].logical_mesh), 1) << op.name;
      ++weights;
    }
  }
  EXPECT_GT(weights, 8);
  EXPECT_LT(three.peak_memory_bytes, one.peak_memory_bytes);
  EXPECT_GT(three.iteration_seconds, one.iteration_seconds);
  // Without memory levels: with them, a ZeRO-1 stage that does not fit is re-solved under a
  // budget, and the solver may then shard weights itself.
  PlannerOptions tight = Options();
  tight.memory_levels = 0;
  tight.device_memory_bytes = (one.peak_memory_bytes + three.peak_memory_bytes) / 2;
  Result<PipelinePlan> no = EvaluateManualPlan(SmallGpt(), cluster, Spec(4, 1, 1, 2, 1), tight);
  ASSERT_FALSE(no.ok());
  EXPECT_EQ(no.status().code(), StatusCode::kInfeasible);
  EXPECT_TRUE(EvaluateManualPlan(SmallGpt(), cluster, Spec(4, 1, 1, 2, 3), tight).ok());
}

TEST(ManualPlan, UnevenLayersFallBackToClustering) {
  const Cluster cluster = P3(1, 6);  // 6 devices: pp = 3 over 4 blocks
  const ManualPlanSpec spec = Spec(2, 1, 3, 4);
  const PipelinePlan plan = EvaluateOrDie(spec, cluster);
  ExpectConsistent(plan, cluster, spec);
  EXPECT_EQ(plan.stages.size(), 3u);
}

// Data-parallel degrees that divide the microbatch but neither the vocabulary (1000) nor the
// hidden size (64), as Megatron's dp 24, 15, 9 and 6: the batch is split over the data-parallel
// dim, and a weight-shaped tensor crossing a piece boundary (the tied embedding, its gradient)
// that the degree cannot split is replicated over it instead of failing the plan.
TEST(ManualPlan, DataParallelDegreeNotDividingTheWeights) {
  Result<PlannerModel> gpt =
      PlannerModelFromSpec("gpt:layers=2,hidden=64,heads=2,seq=32,vocab=1000,batch=96");
  ASSERT_TRUE(gpt.ok()) << gpt.status().message();
  struct Case {
    int64_t dp, hosts, per_host, microbatches;
  };
  for (const Case& c : {Case{3, 1, 3, 4}, Case{6, 1, 6, 2}, Case{48, 6, 8, 2}}) {
    SCOPED_TRACE("dp " + std::to_string(c.dp));
    const Cluster cluster = P3(c.hosts, c.per_host);
    const ManualPlanSpec spec = Spec(c.dp, 1, 1, c.microbatches);
    Result<PipelinePlan> plan = EvaluateManualPlan(gpt.value(), cluster, spec, Options());
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    ExpectConsistent(plan.value(), cluster, spec);
    const PlannedStage& st = plan.value().stages[0];
    EXPECT_EQ(st.data_parallel, c.dp);
    int64_t replicated_boundaries = 0;
    for (const StagePiece& p : st.pieces) {
      EXPECT_EQ(BatchDims(p), std::vector<int32_t>{0});
      const Graph& g = p.subgraph->graph;
      for (int32_t v : p.subgraph->boundary_inputs) {
        const ShardingSpec& layout = p.sharding->ops[static_cast<size_t>(v)].result;
        if (g.op(v).shape[0] % c.dp == 0) continue;
        EXPECT_TRUE(layout.IsReplicated()) << DescribeOp(g, v);
        ++replicated_boundaries;
      }
    }
    EXPECT_GT(replicated_boundaries, 0);  // the case this test is about did occur
  }
}

TEST(ManualPlan, GraphWithoutMarkers) {
  Result<PlannerModel> mlp = PlannerModelFromSpec("mlp:layers=4,hidden=256,batch=16");
  ASSERT_TRUE(mlp.ok()) << mlp.status().message();
  PlannerModel model = std::move(mlp).value();
  const auto build = model.build;
  model.build = [build](int64_t microbatches) -> Result<Graph> {
    Result<Graph> g = build(microbatches);
    if (g.ok()) {
      for (Op& op : g.value().ops) op.layer = op.layer < 0 ? -1 : 0;  // one marker: none
    }
    return g;
  };
  const Cluster cluster = P3(1);
  const ManualPlanSpec spec = Spec(2, 2, 2, 4);
  Result<PipelinePlan> plan = EvaluateManualPlan(model, cluster, spec, Options());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ExpectConsistent(plan.value(), cluster, spec);
  EXPECT_FALSE(plan.value().clustering.from_markers);
  EXPECT_EQ(plan.value().clustering.num_layers, 2);
  EXPECT_EQ(plan.value().stages[0].pieces.size(), 1u);  // one piece per layer group
}

TEST(ManualPlan, BadSpecsNameTheField) {
  struct Case {
    Cluster cluster;
    ManualPlanSpec spec;
    const char* field;
  };
  ManualPlanSpec across = Spec(1, 8, 1, 2);
  const std::vector<Case> cases = {
      {P3(1), Spec(2, 2, 1, 2), "data_parallel x tensor_parallel x pipeline_parallel"},
      {P3(1), Spec(0, 8, 1, 2), "data_parallel"},
      {P3(1), Spec(8, 1, 1, 0), "microbatches"},
      {P3(1), Spec(8, 1, 1, 3), "microbatches"},
      {P3(1), Spec(8, 1, 1, 4), "data_parallel"},  // microbatch size 4
      {P3(1), Spec(8, 1, 1, 2, 4), "zero_stage must be 0, 1, 2 or 3"},
      {P3(1), Spec(8, 1, 1, 2, -1), "zero_stage"},
      {P3(1), Spec(1, 1, 8, 8), "pipeline_parallel"},  // 4 layers
      {P3(2, 4), across, "tensor_parallel"},           // 8 > 4 devices per host
      {P3(2, 6), Spec(4, 1, 3, 4), "straddle"},        // 4-device stages on 6-device hosts
  };
  for (const Case& c : cases) {
    Result<PipelinePlan> plan = EvaluateManualPlan(SmallGpt(), c.cluster, c.spec, Options());
    ASSERT_FALSE(plan.ok()) << ManualPlanSpecString(c.spec);
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument) << plan.status().message();
    EXPECT_NE(plan.status().message().find(c.field), std::string::npos)
        << c.field << " not in: " << plan.status().message();
  }
  // Tensor parallelism across hosts is allowed when asked for.
  across.tensor_inside_host = false;
  const Cluster two = P3(2, 4);
  const PipelinePlan plan = EvaluateOrDie(across, two);
  ExpectConsistent(plan, two, across);
}

TEST(ManualPlan, TinyMemoryIsInfeasible) {
  PlannerOptions options = Options();
  options.device_memory_bytes = 1 << 20;
  // On a uniform host: on the hybrid cube mesh's (2, 2) (dims of 25 and 50 GB/s) the budgeted
  // solves take 6 s instead of 0.4 s to prove that nothing fits, past the solve's time limit
  // under the sanitizers.
  Cluster uniform = P3(1);
  uniform.nvlink = NvlinkGraph();
  Result<PipelinePlan> plan = EvaluateManualPlan(SmallGpt(), uniform, Spec(2, 2, 2, 4), options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(plan.status().message().find("stage "), std::string::npos) << plan.status().message();
  EXPECT_NE(plan.status().message().find("bytes"), std::string::npos) << plan.status().message();
}

// The bytes a "stage S needs X (N bytes) per device" message states.
int64_t NeededBytes(const std::string& message) {
  const size_t open = message.find(" bytes)");
  const size_t start = message.rfind('(', open);
  if (open == std::string::npos || start == std::string::npos) return -1;
  return std::stoll(message.substr(start + 1, open - start - 1));
}

// With dp = 1 the solver may spread the batch over the tensor-parallel dim and keep every
// weight whole (on this model: the fastest layout, and 40 MiB per device). A device too small
// for that gets the layout re-solved under a memory budget, as the planner's memory levels do,
// instead of an infeasible plan; where no layout fits, the error states the least memory found.
TEST(ManualPlan, MemoryLevelsFitAStageTheFirstSolveDoesNot) {
  const Cluster cluster = P3(1);
  const ManualPlanSpec spec = Spec(1, 8, 1, 1);
  const PipelinePlan first = EvaluateOrDie(spec, cluster);
  const int64_t first_peak = first.peak_memory_bytes;
  ASSERT_GT(first_peak, 0);

  PlannerOptions options = Options();
  options.device_memory_bytes = first_peak * 3 / 4;
  Result<PipelinePlan> fitted = EvaluateManualPlan(SmallGpt(), cluster, spec, options);
  ASSERT_TRUE(fitted.ok()) << fitted.status().message();
  EXPECT_LE(fitted.value().peak_memory_bytes, *options.device_memory_bytes);
  EXPECT_GT(fitted.value().stats.intra_op_solves, first.stats.intra_op_solves);
  for (const PlannedStage& st : fitted.value().stages) {
    EXPECT_LE(st.memory_bytes, *options.device_memory_bytes);
    for (const StagePiece& p : st.pieces) {
      Status check =
          CheckShardingPlan(p.subgraph->graph, st.logical_mesh, *p.sharding, std::nullopt);
      EXPECT_TRUE(check.ok()) << "piece " << p.piece << ": " << check.message();
    }
  }

  // Without levels the same device is too small.
  PlannerOptions no_levels = options;
  no_levels.memory_levels = 0;
  Result<PipelinePlan> unfitted = EvaluateManualPlan(SmallGpt(), cluster, spec, no_levels);
  ASSERT_FALSE(unfitted.ok());
  EXPECT_EQ(unfitted.status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(NeededBytes(unfitted.status().message()), first_peak) << unfitted.status().message();

  // Two fifths of the first peak fit no layout of zero=0 here (the least needs about half); the
  // message names the least found.
  options.device_memory_bytes = first_peak * 2 / 5;
  Result<PipelinePlan> tiny = EvaluateManualPlan(SmallGpt(), cluster, spec, options);
  ASSERT_FALSE(tiny.ok());
  EXPECT_EQ(tiny.status().code(), StatusCode::kInfeasible);
  const int64_t needed = NeededBytes(tiny.status().message());
  EXPECT_GT(needed, *options.device_memory_bytes) << tiny.status().message();
  EXPECT_LE(needed, fitted.value().peak_memory_bytes) << tiny.status().message();
}

TEST(ManualPlan, EvaluatorCachesSolves) {
  ManualPlanEvaluator evaluator(SmallGpt(), P3(1), Options());
  ManualPlanSpec spec = Spec(2, 2, 2, 4);
  Result<ManualPlanCost> a = evaluator.Cost(spec);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(a.value().feasible);
  const int64_t solves = evaluator.solves();
  EXPECT_EQ(solves, 3);           // embedding, block, head on the (2, 2) mesh
  spec.remat = Recompute::kFull;  // only the composition changes
  Result<ManualPlanCost> b = evaluator.Cost(spec);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(evaluator.solves(), solves);
  EXPECT_GT(b.value().iteration_seconds, a.value().iteration_seconds);
  Result<PipelinePlan> plan = evaluator.Plan(spec);
  ASSERT_TRUE(plan.ok());
  // Cost leaves the transfers out; the plan charges once-per-iteration ones (the head's part of
  // the tied embedding's gradient) to the receiver's overhead.
  double once = 0;
  for (const CrossStageTransfer& tr : plan.value().transfers) {
    if (tr.once_per_iteration) once += tr.seconds;
  }
  EXPECT_GT(once, 0);
  EXPECT_NEAR(plan.value().schedule_seconds, b.value().iteration_seconds + once,
              1e-12 * plan.value().schedule_seconds);
  EXPECT_EQ(evaluator.solves(), solves);
}

// The planner's search space contains the Megatron-LM configurations only approximately, and
// the baseline can win where it does not:
//   - ZeRO: the planner solves with optimizer state following the weights, and tries ZeRO only
//     as a memory level (when a layer group's pieces do not fit); on this model the baseline's
//     best, dp=8 tp=1 pp=1 B=1 zero=1, is about 3 % faster than the planner's plan (the same
//     data parallelism without a sharded update);
//   - microbatches: the planner tries B = 16, 4, 1 (steps of 4) and stops when the plan gets
//     worse; the baseline tries every power of two;
//   - the intra-op local search is a heuristic: with the batch forced onto mesh dim 0 it finds
//     a slightly cheaper layout (0.01 %) than without the constraint, which contains it.
// So the planner is compared where the spaces coincide: baseline configurations without ZeRO,
// at the microbatch counts the planner tried, within 0.1 % for the local search.
TEST(BaselineSearch, PlannerIsNeverSlowerWhereTheSpacesMeet) {
  const Cluster cluster = P3(1);
  const PlannerModel model = SmallGpt();
  Result<BaselineSearchResult> baseline = SearchMegatronBaseline(model, cluster, Options());
  ASSERT_TRUE(baseline.ok()) << baseline.status().message();
  const BaselineSearchResult& b = baseline.value();
  EXPECT_GT(b.feasible, 0);
  EXPECT_LE(b.feasible, b.evaluated);
  EXPECT_EQ(static_cast<int64_t>(b.table.size()), b.evaluated);
  ASSERT_FALSE(b.table.empty());
  EXPECT_DOUBLE_EQ(b.table.front().second, b.best.iteration_seconds);
  for (size_t k = 1; k < b.table.size(); ++k) {
    EXPECT_LE(b.table[k - 1].second, b.table[k].second);
  }
  ExpectConsistent(b.best, cluster, b.spec);
  // The best configuration evaluated on its own gives the same prediction.
  const PipelinePlan again = EvaluateOrDie(b.spec, cluster);
  EXPECT_DOUBLE_EQ(again.iteration_seconds, b.best.iteration_seconds);

  Result<PipelinePlan> planned = PlanPipeline(model, cluster, Options());
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const std::vector<int64_t>& tried = planned.value().stats.microbatches_tried;
  int64_t compared = 0;
  for (const auto& [spec, seconds] : b.table) {
    if (spec.zero_stage != 0 ||
        std::find(tried.begin(), tried.end(), spec.microbatches) == tried.end()) {
      continue;
    }
    ++compared;
    EXPECT_LE(planned.value().iteration_seconds, seconds * (1 + 1e-3))
        << "baseline " << ManualPlanSpecString(spec) << " beats the planner";
  }
  EXPECT_GT(compared, 0);
}

// The chosen configuration is the table's first, and no point of the table, ranked again or
// not, is listed faster than it: a point left unranked keeps its schedule formula's value, a
// lower bound of its prediction. With the V100 fit, a GPT on two single-GPU hosts has points
// past the eight fastest by the formula whose formula value is below the best prediction.
TEST(BaselineSearch, TheChosenPointIsTheFastestListed) {
  Result<PlannerModel> model =
      PlannerModelFromSpec("gpt:hidden=256,layers=4,heads=4,seq=128,vocab=1000,batch=16");
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster = ParseClusterSpec("p3.16xlarge:hosts=2,devices_per_host=1");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  Result<Calibration> fit =
      ReadCalibrationFile(std::string(ALPA_CALIBRATION_DIR) + "/v100-p3.json");
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  cluster.value().calibration = fit.value();
  PlannerOptions options = Options();
  Result<BaselineSearchResult> baseline =
      SearchMegatronBaseline(model.value(), cluster.value(), options);
  ASSERT_TRUE(baseline.ok()) << baseline.status().message();
  const BaselineSearchResult& r = baseline.value();
  ASSERT_FALSE(r.table.empty());
  EXPECT_EQ(ManualPlanSpecString(r.table.front().first), ManualPlanSpecString(r.spec));
  EXPECT_DOUBLE_EQ(r.table.front().second, r.best.iteration_seconds);
  for (const auto& [spec, seconds] : r.table) {
    EXPECT_GE(seconds, r.best.iteration_seconds) << ManualPlanSpecString(spec);
  }
}

TEST(BaselineSearch, FixedMicrobatchesAndRemat) {
  PlannerOptions options = Options();
  options.microbatches = 4;
  options.remat = RematMode::kOff;
  Result<BaselineSearchResult> baseline = SearchMegatronBaseline(SmallGpt(), P3(1), options);
  ASSERT_TRUE(baseline.ok()) << baseline.status().message();
  for (const auto& [spec, seconds] : baseline.value().table) {
    EXPECT_EQ(spec.microbatches, 4);
    EXPECT_EQ(spec.remat, Recompute::kNone);
    EXPECT_EQ(spec.data_parallel * spec.tensor_parallel * spec.pipeline_parallel, 8);
    EXPECT_EQ(4 % spec.data_parallel, 0);
  }
  options.device_memory_bytes = 1 << 20;
  baseline = SearchMegatronBaseline(SmallGpt(), P3(1), options);
  ASSERT_FALSE(baseline.ok());
  EXPECT_EQ(baseline.status().code(), StatusCode::kInfeasible);
}

}  // namespace
}  // namespace alpa
