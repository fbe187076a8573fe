// NIC-aware stage placement (nic_placement.h): on a server whose NIC hangs off the PCIe switch of
// GPUs 0-3 only, the stages that send across hosts move onto those GPUs, the prediction and the
// simulator both see the faster transfers, and nothing moves where the NICs serve every GPU.
#include "solvers/planner/nic_placement.h"

#include <gtest/gtest.h>

#include <vector>

#include "solvers/planner/plan_transfers.h"
#include "support/four_stage_plans.h"
#include "support/pipeline_sim_runs.h"

namespace alpa {
namespace {

using testing::PlanFourStages;
using testing::SimulatedIterationSeconds;

// Two 8-GPU PCIe servers whose one NIC sits next to GPUs 0-3; the others reach it through the
// CPU at `far_bandwidth`.
Cluster PcieWithNicNearFirstHalf(double far_bandwidth) {
  Result<Cluster> c = MakePresetCluster("pcie-a100-80g", 2);
  EXPECT_TRUE(c.ok()) << c.status().message();
  Cluster cluster = c.ok() ? c.value() : Cluster{};
  cluster.nic_locality.near_devices = {0, 1, 2, 3};
  cluster.nic_locality.far_bandwidth = far_bandwidth;
  return cluster;
}

std::vector<std::vector<int64_t>> Range4(std::vector<int64_t> firsts) {
  std::vector<std::vector<int64_t>> devices;
  for (int64_t f : firsts) devices.push_back({f, f + 1, f + 2, f + 3});
  return devices;
}

TEST(NicAwareDevices, TheStagesSendingAcrossHostsMoveNextToTheNic) {
  const Cluster cluster = PcieWithNicNearFirstHalf(4e9);
  // Stages 1 and 2 meet across the hosts; PlaceSubmeshes put stage 1 on the far GPUs 4-7.
  const std::vector<std::vector<int64_t>> packed = Range4({0, 4, 8, 12});
  const std::vector<std::vector<int64_t>> moved =
      NicAwareDevices(cluster, packed, {0.0, 5e9, 5e9, 0.0});
  EXPECT_EQ(moved, Range4({4, 0, 8, 12}));
}

TEST(NicAwareDevices, NothingMovesWithoutNicLocalityOrCrossHostBytes) {
  Cluster uniform = PcieWithNicNearFirstHalf(4e9);
  const std::vector<std::vector<int64_t>> packed = Range4({0, 4, 8, 12});
  // Stages without traffic to other hosts: every order is as good, the current one stays.
  EXPECT_EQ(NicAwareDevices(uniform, packed, {0.0, 0.0, 0.0, 0.0}), packed);
  uniform.nic_locality = {};
  EXPECT_EQ(NicAwareDevices(uniform, packed, {0.0, 5e9, 5e9, 0.0}), packed);
}

TEST(NicAwareDevices, WholeHostStagesStay) {
  const Cluster cluster = PcieWithNicNearFirstHalf(4e9);
  const std::vector<std::vector<int64_t>> packed = {{0, 1, 2, 3, 4, 5, 6, 7},
                                                    {8, 9, 10, 11, 12, 13, 14, 15}};
  EXPECT_EQ(NicAwareDevices(cluster, packed, {1e9, 1e9}), packed);
}

TEST(TransferSeconds, AMoveFromAFarDeviceRunsAtTheFarBandwidth) {
  const Cluster cluster = PcieWithNicNearFirstHalf(4e9);
  SliceMove near_move;
  near_move.src_device = 0;
  near_move.dst_device = 8;
  near_move.bytes = 1'000'000'000;
  SliceMove far_move = near_move;
  far_move.src_device = 4;
  const double latency = cluster.inter_host_link.latency;
  EXPECT_DOUBLE_EQ(TransferSeconds({near_move}, cluster),
                   latency + 1e9 / cluster.inter_host_link.bandwidth);
  EXPECT_DOUBLE_EQ(TransferSeconds({far_move}, cluster), latency + 1e9 / 4e9);
  // Both through host 0's NIC, one after the other.
  EXPECT_DOUBLE_EQ(TransferSeconds({near_move, far_move}, cluster),
                   latency + 1e9 / cluster.inter_host_link.bandwidth + 1e9 / 4e9);
}

TEST(NicPlacement, ThePlannerPutsTheCrossHostStagesNextToTheNic) {
  const Cluster cluster = PcieWithNicNearFirstHalf(4e9);
  Result<PipelinePlan> placed = PlanFourStages(cluster, true);
  Result<PipelinePlan> packed = PlanFourStages(cluster, false);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  ASSERT_TRUE(packed.ok()) << packed.status().message();
  const PipelinePlan& p = placed.value();
  ASSERT_EQ(p.stages.size(), 4u);
  for (const PlannedStage& st : p.stages) ASSERT_EQ(st.devices.size(), 4u);
  // Stage 1 sends across the hosts to stage 2: both sit on GPUs 0-3 of their hosts.
  EXPECT_EQ(p.stages[1].devices, std::vector<int64_t>({0, 1, 2, 3}));
  EXPECT_EQ(p.stages[2].devices, std::vector<int64_t>({8, 9, 10, 11}));
  EXPECT_EQ(packed.value().stages[1].devices, std::vector<int64_t>({4, 5, 6, 7}));
  // Predicted and simulated faster than where PlaceSubmeshes packed them.
  EXPECT_LT(p.iteration_seconds, packed.value().iteration_seconds);
  EXPECT_LT(SimulatedIterationSeconds(p, cluster),
            SimulatedIterationSeconds(packed.value(), cluster));
}

TEST(NicPlacement, StaysOffWhereEveryGpuReachesTheNicAlike) {
  Cluster cluster = PcieWithNicNearFirstHalf(4e9);
  cluster.nic_locality = {};
  Result<PipelinePlan> on = PlanFourStages(cluster, true);
  Result<PipelinePlan> off = PlanFourStages(cluster, false);
  ASSERT_TRUE(on.ok()) << on.status().message();
  ASSERT_TRUE(off.ok()) << off.status().message();
  ASSERT_EQ(on.value().stages.size(), off.value().stages.size());
  for (size_t s = 0; s < on.value().stages.size(); ++s) {
    EXPECT_EQ(on.value().stages[s].devices, off.value().stages[s].devices) << "stage " << s;
  }
  EXPECT_EQ(on.value().iteration_seconds, off.value().iteration_seconds);
}

}  // namespace
}  // namespace alpa
