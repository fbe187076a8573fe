// Sequence parallelism (Megatron-SP) is a layout the intra-op solve reaches by itself, not a
// separate switch: with tensor parallelism, the layer norms, residual adds and dropout-like
// elementwise work between the tensor-parallel matmuls can run split along the sequence dim,
// reached by a reduce-scatter of the row-parallel matmul's partial sums and left by an
// all-gather before the next column-parallel matmul (the same bytes as Megatron-TP's
// all-reduce, with 1/tp of the norm work and activation memory). The solve takes it where the
// cost model prices that work (real units) and leaves it off where only communication counts
// (Alpa's units: an all-reduce costs what a reduce-scatter and an all-gather cost, and fewer
// collectives win the tie) or saves less than a collective's latency (small activations), and
// it cannot split a sequence the mesh dim does not divide.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "core/problem/sharding_evaluator.h"
#include "models/model_zoo.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/auto_sharding/auto_sharding_problem.h"
#include "solvers/auto_sharding/plan_check.h"

namespace alpa {
namespace {

// Two pre-LN GPT layers without embeddings: [batch 2, seq 1024, hidden 1024], 16 heads. A batch
// of 2 leaves 4 devices the sequence, the hidden dim or the heads to split.
constexpr const char* kLayers = "gpt:layers=2,batch=2,seq=1024,hidden=1024,heads=16,embed=0";
// The same layers at [2, 256, 512]: 1 MiB activations.
constexpr const char* kSmallLayers = "gpt:layers=2,batch=2,seq=256,hidden=512,heads=8,embed=0";

struct TensorParallelRun {
  Graph graph;
  Cluster cluster;
  LogicalMesh mesh;
  AutoShardOptions options;
  AutoShardResult result;
};

// The layers on one host's 4 GPUs as one tensor-parallel mesh dim (1 x 4), priced with the V100
// calibration fitted to published runs (bench/calibration/v100-p3.json).
TensorParallelRun SolveTensorParallel(const std::string& spec, CostMode mode) {
  TensorParallelRun run;
  Result<Graph> g = BuildModel(spec);
  EXPECT_TRUE(g.ok()) << g.status().message();
  run.graph = std::move(g).value();
  run.cluster = MakePresetCluster("p3.16xlarge", 1).value();
  // The V100 fit (fused elementwise chains and attention), whatever the preset carries.
  Result<Calibration> fit =
      ReadCalibrationFile(std::string(ALPA_CALIBRATION_DIR) + "/v100-p3.json");
  EXPECT_TRUE(fit.ok()) << fit.status().message();
  if (fit.ok()) run.cluster.calibration = fit.value();
  run.mesh = DeriveLogicalMesh(run.cluster, SubmeshShape{1, 4}, {1, 4}).value();
  run.options.cost_mode = mode;
  run.options.solve.deterministic = true;
  Result<AutoShardResult> r = AutoShard(run.graph, run.mesh, &run.cluster, run.options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  run.result = std::move(r).value();
  Status check = CheckShardingPlan(run.graph, {1, 4}, run.result, std::nullopt);
  EXPECT_TRUE(check.ok()) << check.message();
  return run;
}

// Forward activation collectives (not gradient synchronisation, not inside an op) by kind.
struct ForwardCollectives {
  int64_t all_reduce = 0, reduce_scatter = 0, all_gather = 0;
};

ForwardCollectives CountForward(const TensorParallelRun& run) {
  ForwardCollectives c;
  for (const PlannedCollective& col : run.result.collectives) {
    if (col.gradient_sync || col.inside_op || col.tensor < 0) continue;
    if (run.graph.op(col.tensor).phase != Phase::kForward) continue;
    if (col.kind == CollectiveKind::kAllReduce) ++c.all_reduce;
    if (col.kind == CollectiveKind::kReduceScatter) ++c.reduce_scatter;
    if (col.kind == CollectiveKind::kAllGather) ++c.all_gather;
  }
  return c;
}

// The layouts the layer norms read for their statistics (the reduce_sums over the hidden dim
// of a [batch, seq, hidden] activation), one per layer norm.
std::vector<std::string> LayerNormStatisticInputs(const TensorParallelRun& run) {
  std::vector<std::string> specs;
  for (int32_t v = 0; v < run.graph.size(); ++v) {
    const Op& op = run.graph.op(v);
    if (op.kind != OpKind::kReduceSum || op.phase != Phase::kForward) continue;
    if (op.operands.empty() || run.graph.op(op.operands[0]).shape.size() != 3) continue;
    if (op.shape.size() != 2) continue;  // reduces the hidden dim only
    specs.push_back(ToString(run.result.ops[static_cast<size_t>(v)].operands[0]));
  }
  return specs;
}

// Tensor dim 1's entry of a rank-3 spec ("R S1 R" -> "S1").
std::string SequenceDimLayout(const std::string& spec) {
  const size_t first = spec.find(' ');
  const size_t second = spec.find(' ', first + 1);
  if (first == std::string::npos || second == std::string::npos) return spec;
  return spec.substr(first + 1, second - first - 1);
}

// The real-units objective and peak memory of `assignment` on the run's (real-units) model.
Evaluation EvaluateInRealUnits(const TensorParallelRun& run,
                               const std::vector<int32_t>& assignment) {
  Result<std::unique_ptr<AutoShardModel>> model =
      BuildAutoShardModel(run.graph, run.mesh, &run.cluster, run.options);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return EvaluateAssignment(model.value()->problem, assignment);
}

TEST(SequenceParallelTest, RealUnitsSplitTheNormsAlongTheSequence) {
  TensorParallelRun run = SolveTensorParallel(kLayers, CostMode::kRealUnits);
  // Every layer norm reads its input split along the sequence (tensor dim 1) over the
  // tensor-parallel mesh dim.
  const std::vector<std::string> norms = LayerNormStatisticInputs(run);
  ASSERT_EQ(norms.size(), 8u);  // mean and variance of ln1 and ln2, two layers
  for (const std::string& spec : norms) EXPECT_EQ(SequenceDimLayout(spec), "S1") << spec;
  // The forward's partial sums leave the matmuls as reduce-scatters, and the activations are
  // gathered back before the column-parallel matmuls: no forward all-reduce of activations.
  const ForwardCollectives c = CountForward(run);
  EXPECT_EQ(c.all_reduce, 0);
  EXPECT_EQ(c.reduce_scatter, 4);  // after attention out and MLP fc2 of each layer
  EXPECT_EQ(c.all_gather, 4);      // before the qkv and fc1 matmuls of each layer
}

TEST(SequenceParallelTest, WinsOverMegatronTensorParallelismInTimeAndMemory) {
  TensorParallelRun sp = SolveTensorParallel(kLayers, CostMode::kRealUnits);
  // Megatron-TP's layout: what the solve picks when only communication counts.
  TensorParallelRun tp = SolveTensorParallel(kLayers, CostMode::kAlpaCompatible);
  ASSERT_EQ(sp.result.node_strategy_counts, tp.result.node_strategy_counts);  // same choices
  const Evaluation with_sp = EvaluateInRealUnits(sp, sp.result.node_strategies);
  const Evaluation without = EvaluateInRealUnits(sp, tp.result.node_strategies);
  ASSERT_TRUE(with_sp.violation.empty()) << with_sp.violation;
  ASSERT_TRUE(without.violation.empty()) << without.violation;
  RecordProperty("time_ratio", std::to_string(static_cast<double>(with_sp.cost / without.cost)));
  RecordProperty("memory_ratio",
                 std::to_string(static_cast<double>(with_sp.peak_usage / without.peak_usage)));
  EXPECT_LT(with_sp.cost, without.cost);
  EXPECT_LT(with_sp.peak_usage, without.peak_usage);
}

TEST(SequenceParallelTest, StaysOffWhereOnlyCommunicationCounts) {
  // Alpa's units price no compute and no memory traffic: splitting the norms saves nothing,
  // so the layers stay Megatron-TP with one all-reduce after each row-parallel matmul.
  TensorParallelRun run = SolveTensorParallel(kLayers, CostMode::kAlpaCompatible);
  for (const std::string& spec : LayerNormStatisticInputs(run)) EXPECT_EQ(spec, "R R R");
  const ForwardCollectives c = CountForward(run);
  EXPECT_EQ(c.all_reduce, 4);  // after attention out and MLP fc2 of each layer
  EXPECT_EQ(c.reduce_scatter, 0);
}

TEST(SequenceParallelTest, StaysOffWhereTheSavedNormWorkIsBelowACollectivesLatency) {
  // With fused elementwise chains (the V100 fit) a norm costs one read and one
  // write of a 1 MiB activation, about 2 us on a V100: splitting it saves less than the second
  // collective's latency, so the layers stay Megatron-TP.
  TensorParallelRun run = SolveTensorParallel(kSmallLayers, CostMode::kRealUnits);
  ASSERT_TRUE(run.cluster.calibration.fuse_elementwise);
  for (const std::string& spec : LayerNormStatisticInputs(run)) {
    EXPECT_EQ(SequenceDimLayout(spec), "R") << spec;
  }
  const ForwardCollectives c = CountForward(run);
  EXPECT_EQ(c.all_reduce, 4);
  EXPECT_EQ(c.reduce_scatter, 0);
}

TEST(SequenceParallelTest, StaysOffWhereTheMeshDoesNotDivideTheSequence) {
  // A sequence of 6 on 4 devices: the norms cannot split it, so they stay replicated over the
  // tensor-parallel dim (or split the batch), never the sequence.
  TensorParallelRun run = SolveTensorParallel(
      "gpt:layers=2,batch=2,seq=6,hidden=512,heads=8,embed=0", CostMode::kRealUnits);
  const std::vector<std::string> norms = LayerNormStatisticInputs(run);
  ASSERT_EQ(norms.size(), 8u);
  for (const std::string& spec : norms) EXPECT_EQ(SequenceDimLayout(spec), "R") << spec;
}

}  // namespace
}  // namespace alpa
