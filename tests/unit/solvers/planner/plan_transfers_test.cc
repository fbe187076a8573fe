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
  const Cluster c = TwoHosts();
  const double link = c.intra_host_link.bandwidth;
  // Device 0 sends 300 MB to 1 and 100 MB to 2; device 3 sends 200 MB to 2 (2 receives 300 MB).
  const std::vector<SliceMove> moves = {Move(0, 1, 300000000), Move(0, 2, 100000000),
                                        Move(3, 2, 200000000)};
  EXPECT_DOUBLE_EQ(TransferSeconds(moves, c), c.intra_host_link.latency + 4e8 / link);
  EXPECT_DOUBLE_EQ(TransferSeconds({}, c), 0);
}

}  // namespace
}  // namespace alpa
