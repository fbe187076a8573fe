// TransferSeconds (plan_transfers.h): the busiest link of a transfer's slice moves.
#include "solvers/planner/plan_transfers.h"

#include <gtest/gtest.h>

namespace alpa {
namespace {

Cluster TwoHosts() {
  Result<Cluster> c = MakePresetCluster("p3.16xlarge", 2);
  EXPECT_TRUE(c.ok());
  return c.value();
}

SliceMove Move(int64_t src, int64_t dst, int64_t bytes) {
  SliceMove m;
  m.src_device = src;
  m.dst_device = dst;
  m.bytes = bytes;
  return m;
}

TEST(TransferSeconds, ReplicatedDestinationCountsEveryCopy) {
  const Cluster c = TwoHosts();
  const double nic = c.inter_host_link.bandwidth;
  // One tensor of 1 GB, held whole by device 0, sent to 4 devices of host 1 that each hold it
  // whole: host 0's NIC sends it 4 times.
  std::vector<SliceMove> moves;
  for (int64_t d = 8; d < 12; ++d) moves.push_back(Move(0, d, 1000000000));
  EXPECT_DOUBLE_EQ(TransferSeconds(moves, c), c.inter_host_link.latency + 4e9 / nic);
  // Split over the 4 receivers instead: the NIC carries the tensor once.
  for (SliceMove& m : moves) m.bytes = 250000000;
  EXPECT_DOUBLE_EQ(TransferSeconds(moves, c), c.inter_host_link.latency + 1e9 / nic);
}

TEST(TransferSeconds, InsideAHostTheBusiestDeviceLinkCounts) {
  Cluster c = TwoHosts();
  c.nvlink = NvlinkGraph();  // every pair at the host's link (the next test has the graph)
  const double link = c.intra_host_link.bandwidth;
  // Device 0 sends 300 MB to 1 and 100 MB to 2; device 3 sends 200 MB to 2 (2 receives 300 MB).
  const std::vector<SliceMove> moves = {Move(0, 1, 300000000), Move(0, 2, 100000000),
                                        Move(3, 2, 200000000)};
  EXPECT_DOUBLE_EQ(TransferSeconds(moves, c), c.intra_host_link.latency + 4e8 / link);
  EXPECT_DOUBLE_EQ(TransferSeconds({}, c), 0);
}

TEST(TransferSeconds, InsideAHostWithAnNvlinkGraphEachMoveTakesItsPairsPath) {
  // The p3 preset: the hybrid cube mesh, local indices 0 .. 7 on GPUs 0, 3, 1, 2, 4, 7, 5, 6.
  const Cluster c = TwoHosts();
  const double lat = c.intra_host_link.latency;
  // Local 0 -> 1 (GPUs 0 and 3): two NVLinks; 0 -> 2 (GPUs 0 and 1): one; 0 -> 5 (GPUs 0 and
  // 7): none, but two double links through GPU 4; 0 -> 7 (GPUs 0 and 6): through GPU 2 or 4,
  // a single link on each way.
  EXPECT_DOUBLE_EQ(TransferSeconds({Move(0, 1, 1000000000)}, c), lat + 1e9 / 50e9);
  EXPECT_DOUBLE_EQ(TransferSeconds({Move(0, 2, 1000000000)}, c), lat + 1e9 / 25e9);
  EXPECT_DOUBLE_EQ(TransferSeconds({Move(0, 5, 1000000000)}, c), lat + 1e9 / 50e9);
  EXPECT_DOUBLE_EQ(TransferSeconds({Move(0, 7, 1000000000)}, c), lat + 1e9 / 25e9);
  // One sender's moves run one after another, each at its own pair's rate; host 1 alike.
  EXPECT_DOUBLE_EQ(TransferSeconds({Move(0, 1, 1000000000), Move(0, 2, 1000000000)}, c),
                   lat + 1e9 / 50e9 + 1e9 / 25e9);
  EXPECT_DOUBLE_EQ(TransferSeconds({Move(8, 10, 1000000000)}, c), lat + 1e9 / 25e9);
  // A pair with neither a link nor a relay runs over PCIe.
  Cluster pcie = c;
  pcie.devices_per_host = 4;
  pcie.nvlink = NvlinkGraph();
  pcie.nvlink.links = {{0, 1, 50e9}};
  pcie.nvlink.pcie_bandwidth = 10e9;
  ASSERT_TRUE(ValidateCluster(pcie).ok()) << ValidateCluster(pcie).message();
  EXPECT_DOUBLE_EQ(TransferSeconds({Move(0, 2, 1000000000)}, pcie), lat + 1e9 / 10e9);
  EXPECT_DOUBLE_EQ(TransferSeconds({Move(1, 0, 1000000000)}, pcie), lat + 1e9 / 50e9);
}

}  // namespace
}  // namespace alpa
