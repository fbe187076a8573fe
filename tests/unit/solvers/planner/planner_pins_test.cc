// The planner's pins (what a user knows about the plan): an exact stage count, a cap on the
// tensor-parallel degree, tensor parallelism inside a host, a fixed microbatch count. Each plan
// obeys its pin, and the search did less work than without it (fewer intra-op solves or stage
// candidates, from the planner's statistics).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/pipeline/stage_dp.h"
#include "solvers/planner/planner.h"
#include "support/clusters.h"
#include "support/plan_checks.h"

namespace alpa {
namespace {

constexpr const char* kSmallGpt = "gpt:layers=4,hidden=64,heads=2,seq=32,vocab=128,batch=16";

using testing::ExpectPiecesCheck;
using testing::P3;

Result<PipelinePlan> Plan(const Cluster& cluster, PlannerOptions options) {
  Result<PlannerModel> model = PlannerModelFromSpec(kSmallGpt);
  if (!model.ok()) return model.status();
  options.threads = 2;
  return PlanPipeline(model.value(), cluster, options);
}

PipelinePlan PlanOrDie(const Cluster& cluster, const PlannerOptions& options) {
  Result<PipelinePlan> plan = Plan(cluster, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(plan).value() : PipelinePlan{};
}

// The mesh dims the batch input (dim 0 of `microbatch_size`) of a piece is split over; none
// when the piece reads no batch.
std::vector<int32_t> BatchMeshDims(const StagePiece& piece, int64_t microbatch_size) {
  const Graph& g = piece.subgraph->graph;
  for (int32_t v = 0; v < g.size(); ++v) {
    const Op& op = g.op(v);
    if (op.kind == OpKind::kParameter && op.role == TensorRole::kInput && !op.shape.empty() &&
        op.shape[0] == microbatch_size) {
      return piece.sharding->ops[static_cast<size_t>(v)].result.dims[0];
    }
  }
  return {};
}

TEST(PlannerPins, PipelineStages) {
  const Cluster cluster = P3(2);
  PlannerOptions options;
  options.microbatches = 4;
  const PipelinePlan free = PlanOrDie(cluster, options);
  for (int32_t stages : {1, 3}) {
    SCOPED_TRACE("pipeline_stages " + std::to_string(stages));
    options.pipeline_stages = stages;
    const PipelinePlan pinned = PlanOrDie(cluster, options);
    ASSERT_EQ(pinned.stages.size(), static_cast<size_t>(stages));
    int64_t devices = 0;
    for (const PlannedStage& st : pinned.stages) devices += st.submesh.num_devices();
    EXPECT_EQ(devices, cluster.num_devices());
    ExpectPiecesCheck(pinned);
    // Submeshes too big for the other stages are not solved; ranges too long are not offered.
    EXPECT_LT(pinned.stats.intra_op_solves, free.stats.intra_op_solves);
    EXPECT_LT(pinned.stats.candidates, free.stats.candidates);
  }
  options.pipeline_stages = 7;  // more than the 6 layer groups (embedding, 4 blocks, head)
  Result<PipelinePlan> too_many = Plan(cluster, options);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_many.status().message().find("pipeline_stages 7 exceeds the 6 layer groups"),
            std::string::npos)
      << too_many.status().message();
}

TEST(PlannerPins, MaxTensorParallel) {
  const Cluster cluster = P3(2);
  PlannerOptions options;
  options.microbatches = 2;  // 8 sequences per microbatch
  const PipelinePlan free = PlanOrDie(cluster, options);
  options.max_tensor_parallel = 2;
  const PipelinePlan pinned = PlanOrDie(cluster, options);
  ExpectPiecesCheck(pinned);
  for (const PlannedStage& st : pinned.stages) {
    EXPECT_LE(st.logical_mesh[1], 2);
    EXPECT_LE(st.tensor_parallel, 2);
    if (st.logical_mesh[0] * st.logical_mesh[1] <= 2 || st.logical_mesh[0] == 1) continue;
    for (const StagePiece& p : st.pieces) {
      const std::vector<int32_t> dims = BatchMeshDims(p, 8);
      if (!dims.empty()) {
        EXPECT_EQ(dims, std::vector<int32_t>{0});
      }
    }
  }
  // Meshes whose inside-host dim exceeds 2 (and those whose batch split does not divide the
  // microbatch) are not solved.
  EXPECT_LT(pinned.stats.intra_op_solves, free.stats.intra_op_solves);
}

TEST(PlannerPins, TensorParallelInsideHost) {
  const Cluster cluster = P3(2);
  PlannerOptions options;
  options.microbatches = 4;     // 4 sequences: a mesh spanning the hosts splits them over dim 0
  options.pipeline_stages = 1;  // one stage on both hosts
  const PipelinePlan free = PlanOrDie(cluster, options);
  options.tensor_parallel_inside_host = true;
  const PipelinePlan pinned = PlanOrDie(cluster, options);
  ExpectPiecesCheck(pinned);
  ASSERT_EQ(pinned.stages.size(), 1u);
  const PlannedStage& st = pinned.stages[0];
  EXPECT_EQ(st.submesh.hosts, 2);
  // Tensor parallelism on the inside-host dim alone: the batch takes the dim that spans hosts.
  EXPECT_LE(st.tensor_parallel, cluster.devices_per_host);
  EXPECT_EQ(cluster.devices_per_host % st.logical_mesh[1], 0);
  for (const StagePiece& p : st.pieces) {
    const std::vector<int32_t> dims = BatchMeshDims(p, 4);
    if (!dims.empty()) {
      EXPECT_EQ(dims, std::vector<int32_t>{0});
    }
  }
  // Meshes spanning the hosts whose first dim does not divide the 4 sequences are not solved.
  EXPECT_LT(pinned.stats.intra_op_solves, free.stats.intra_op_solves);
}

TEST(PlannerPins, FixedMicrobatches) {
  const Cluster cluster = P3(1);
  const PipelinePlan searched = PlanOrDie(cluster, {});
  EXPECT_GT(searched.stats.microbatches_tried.size(), 1u);
  PlannerOptions options;
  options.microbatches = 4;
  const PipelinePlan pinned = PlanOrDie(cluster, options);
  EXPECT_EQ(pinned.microbatches, 4);
  EXPECT_EQ(pinned.stats.microbatches_tried, std::vector<int64_t>{4});
  EXPECT_LT(pinned.stats.intra_op_solves, searched.stats.intra_op_solves);
}

// Beyond 16 hosts the planner solves on PlannerSubmeshShapes' subset only: fewer intra-op solves
// than every (n, 8) would take, every stage on a kept size, and a pinned stage count still gets
// its balanced pipeline (40 hosts, 3 stages: 13 + 13 + 14 hosts).
TEST(PlannerSubmeshes, LargeClustersSolveTheSubsetOnly) {
  const Cluster cluster = P3(40);
  PlannerOptions options;
  options.microbatches = 4;
  const PipelinePlan free = PlanOrDie(cluster, options);
  // 6 layer groups (embedding, 4 blocks, head): at most 6 stages.
  const std::vector<SubmeshShape> kept = PlannerSubmeshShapes(40, 8, 6);
  ASSERT_LT(kept.size(), EnumerateSubmeshShapes(40, 8).size());
  // Every logical mesh of every kept shape, each solved per piece type (3) at memory level 0
  // and at most 3 levels more.
  int64_t meshes = 0;
  for (const SubmeshShape& s : kept)
    meshes += static_cast<int64_t>(EnumerateLogicalShapes(s).size());
  EXPECT_GE(free.stats.intra_op_solves, meshes * 3);
  EXPECT_LE(free.stats.intra_op_solves, meshes * 3 * 4);
  int64_t devices = 0;
  for (const PlannedStage& st : free.stages) {
    EXPECT_NE(std::find(kept.begin(), kept.end(), st.submesh), kept.end())
        << "(" << st.submesh.hosts << ", " << st.submesh.devices_per_host << ")";
    devices += st.submesh.num_devices();
  }
  EXPECT_EQ(devices, cluster.num_devices());
  ExpectPiecesCheck(free);
  options.pipeline_stages = 3;
  const PipelinePlan pinned = PlanOrDie(cluster, options);
  ASSERT_EQ(pinned.stages.size(), 3u);
  devices = 0;
  for (const PlannedStage& st : pinned.stages) devices += st.submesh.num_devices();
  EXPECT_EQ(devices, cluster.num_devices());
  ExpectPiecesCheck(pinned);
}

TEST(PlannerPins, BadPinsNameTheOption) {
  const Cluster cluster = P3(1);
  PlannerOptions options;
  options.pipeline_stages = 9;  // more stages than the 8 devices
  Result<PipelinePlan> plan = Plan(cluster, options);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("pipeline_stages"), std::string::npos);
  options.pipeline_stages = 0;
  options.max_tensor_parallel = -1;
  plan = Plan(cluster, options);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("max_tensor_parallel"), std::string::npos);
}

}  // namespace
}  // namespace alpa
