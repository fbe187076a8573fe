// NIC groups (Cluster::nics_per_host): a device reaches other hosts through its own share of the
// host's NICs. Where whole hosts talk across (the planner's multi-host meshes) nothing changes;
// where part of a host does (a stage of 4 GPUs of 8 sending to another host), it gets the NICs
// of its GPUs only, in the logical mesh, the transfers, the prediction and the simulator alike.
#include <gtest/gtest.h>

#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"
#include "exec/sim/pipeline_simulator.h"
#include "exec/sim/plan_simulation.h"
#include "solvers/planner/plan_transfers.h"
#include "solvers/planner/planner.h"
#include "support/four_stage_plans.h"
#include "support/pipeline_sim_runs.h"

namespace alpa {
namespace {

using testing::PlanFourStages;
using testing::SimulatedIterationSeconds;

// Two DGX A100 hosts (8 x 200 Gb/s of NICs each, NVSwitch inside) with their NIC bandwidth
// in `nics` NICs (the preset pools it: 1).
Cluster DgxWithNics(int64_t nics) {
  Result<Cluster> c = MakePresetCluster("dgx-a100-80g", 2);
  EXPECT_TRUE(c.ok()) << c.status().message();
  Cluster cluster = c.ok() ? c.value() : Cluster{};
  cluster.nics_per_host = nics;
  return cluster;
}

TEST(NicGroups, DevicesShareTheirHostsNicsInConsecutiveGroups) {
  const Cluster one = DgxWithNics(1);
  EXPECT_EQ(NicGroups(one), 1);
  EXPECT_EQ(NicGroupOf(one, 13), 0);
  EXPECT_EQ(NicGroupBandwidth(one), one.inter_host_link.bandwidth);
  const Cluster pairs = DgxWithNics(4);  // a NIC per GPU pair
  EXPECT_EQ(NicGroups(pairs), 4);
  EXPECT_EQ(NicGroupOf(pairs, 1), 0);
  EXPECT_EQ(NicGroupOf(pairs, 13), 2);  // host 1, GPU 5
  EXPECT_DOUBLE_EQ(NicGroupBandwidth(pairs), pairs.inter_host_link.bandwidth / 4);
  const Cluster two_per_gpu = DgxWithNics(16);
  EXPECT_EQ(NicGroups(two_per_gpu), 8);
  EXPECT_EQ(NicGroupOf(two_per_gpu, 7), 7);
  EXPECT_EQ(InterHostMoveBandwidth(two_per_gpu, 7, 8), two_per_gpu.inter_host_link.bandwidth / 8);
}

TEST(NicGroups, WholeHostMeshesKeepTheirBandwidth) {
  for (int64_t nics : {2, 4, 8, 16}) {
    const Cluster one = DgxWithNics(1);
    const Cluster many = DgxWithNics(nics);
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{16}, {2, 8}, {4, 4}, {8, 2}, {16, 1}}) {
      Result<LogicalMesh> a = DeriveLogicalMesh(one, {2, 8}, shape);
      Result<LogicalMesh> b = DeriveLogicalMesh(many, {2, 8}, shape);
      ASSERT_TRUE(a.ok() && b.ok());
      for (size_t k = 0; k < shape.size(); ++k) {
        EXPECT_DOUBLE_EQ(a.value().beta[k], b.value().beta[k])
            << nics << " NICs, " << MeshShapeString(shape) << " dim " << k;
      }
      EXPECT_DOUBLE_EQ(a.value().flat_beta, b.value().flat_beta);
    }
  }
}

TEST(NicGroups, HalfAHostReachesTheOthersThroughItsOwnNics) {
  // A (2, 4) submesh of 8-GPU hosts: one ring over 8 devices, 4 per host. With one pool it gets
  // the host's whole NIC bandwidth; with a NIC per GPU, the 4 NICs of its GPUs.
  const Cluster one = DgxWithNics(1);
  const Cluster per_gpu = DgxWithNics(8);
  Result<LogicalMesh> pooled = DeriveLogicalMesh(one, {2, 4}, {8});
  Result<LogicalMesh> own = DeriveLogicalMesh(per_gpu, {2, 4}, {8});
  ASSERT_TRUE(pooled.ok() && own.ok());
  const double host = one.inter_host_link.bandwidth;
  ASSERT_LT(host / 2, one.intra_host_link.bandwidth);  // the NICs bind, not NVSwitch
  EXPECT_DOUBLE_EQ(pooled.value().beta[0], 1.0 / host);
  EXPECT_DOUBLE_EQ(own.value().beta[0], 1.0 / (host / 2));
  // (2, 4) as (2, 4): 4 rings across the hosts, each on its own GPU's NIC, as the pool split 4
  // ways.
  Result<LogicalMesh> rings = DeriveLogicalMesh(per_gpu, {2, 4}, {2, 4});
  ASSERT_TRUE(rings.ok());
  EXPECT_DOUBLE_EQ(rings.value().beta[0], 1.0 / (host / 8));
  Result<LogicalMesh> pooled_rings = DeriveLogicalMesh(one, {2, 4}, {2, 4});
  ASSERT_TRUE(pooled_rings.ok());
  EXPECT_DOUBLE_EQ(pooled_rings.value().beta[0], 1.0 / (host / 4));
}

std::vector<SliceMove> FourToFour(int64_t first_src, int64_t first_dst, int64_t bytes) {
  std::vector<SliceMove> moves;
  for (int64_t i = 0; i < 4; ++i) {
    SliceMove mv;
    mv.src_device = first_src + i;
    mv.dst_device = first_dst + i;
    mv.bytes = bytes;
    moves.push_back(mv);
  }
  return moves;
}

TEST(NicGroups, FourGpusSendingAcrossHostsUseFourNics) {
  const std::vector<SliceMove> moves = FourToFour(4, 8, 250'000'000);
  const Cluster one = DgxWithNics(1);
  const Cluster per_gpu = DgxWithNics(8);
  const double latency = one.inter_host_link.latency;
  const double host = one.inter_host_link.bandwidth;
  EXPECT_DOUBLE_EQ(TransferSeconds(moves, one), latency + 1e9 / host);
  EXPECT_DOUBLE_EQ(TransferSeconds(moves, per_gpu), latency + 2.5e8 / (host / 8));
  // A NIC per GPU pair: two moves share each NIC.
  EXPECT_DOUBLE_EQ(TransferSeconds(moves, DgxWithNics(4)), latency + 5e8 / (host / 4));
}

TEST(NicGroups, ThePredictionAndTheSimulatorPriceTheStagesOwnNics) {
  const Cluster one = DgxWithNics(1);
  const Cluster per_gpu = DgxWithNics(8);
  Result<PipelinePlan> pooled = PlanFourStages(one);
  Result<PipelinePlan> own = PlanFourStages(per_gpu);
  ASSERT_TRUE(pooled.ok()) << pooled.status().message();
  ASSERT_TRUE(own.ok()) << own.status().message();
  // The same stages; the transfer between the hosts runs on 4 of the 8 NICs.
  ASSERT_EQ(own.value().stages.size(), 4u);
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(own.value().stages[s].devices, pooled.value().stages[s].devices) << "stage " << s;
  }
  double pooled_transfer = 0, own_transfer = 0;
  for (const CrossStageTransfer& t : pooled.value().transfers) pooled_transfer += t.seconds;
  for (const CrossStageTransfer& t : own.value().transfers) own_transfer += t.seconds;
  EXPECT_GT(own_transfer, pooled_transfer);
  EXPECT_GT(own.value().iteration_seconds, pooled.value().iteration_seconds);
  const double simulated_pooled = SimulatedIterationSeconds(pooled.value(), one);
  const double simulated_own = SimulatedIterationSeconds(own.value(), per_gpu);
  EXPECT_GT(simulated_own, simulated_pooled);
  // The simulator prices the plan as the planner does (no contention in this pipeline beyond
  // what the prediction models): within 2 %.
  EXPECT_NEAR(simulated_own / own.value().iteration_seconds, 1.0, 0.02);
}

TEST(NicGroups, TheSimulatorRefusesBadNicGroups) {
  const Cluster per_gpu = DgxWithNics(8);
  Result<PipelinePlan> plan = PlanFourStages(per_gpu);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Result<PipelineSimInput> in = SimInputFromPlan(plan.value(), per_gpu, plan.value().schedule);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in.value().device_nic_group, std::vector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_DOUBLE_EQ(in.value().inter_host.bandwidth, per_gpu.inter_host_link.bandwidth / 8);
  in.value().device_nic_group[3] = 8;
  Result<PipelineSimResult> r = SimulatePipeline(in.value());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("device_nic_group[3] must be in [0, 7], got 8"),
            std::string::npos)
      << r.status().message();
  in.value().device_nic_group.pop_back();
  r = SimulatePipeline(in.value());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("device_nic_group has 7 entries for 8 devices per host"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace alpa
