// NVLink graphs inside a host (nvlink_graph.h): the rings NCCL packs on p3.16xlarge's hybrid cube
// mesh, PCIe where no NVLink ring covers a group, the paths of point-to-point moves (direct,
// through one GPU, PCIe), the device order that pairs the double links, the
// logical meshes priced on them, the preset with fewer devices, and the cluster file's "nvlink"
// object.
#include "core/cluster/nvlink_graph.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster/logical_mesh.h"

namespace alpa {
namespace {

constexpr double kGB = 1e9;

Cluster P3(const std::string& spec = "p3.16xlarge") {
  Result<Cluster> c = ParseClusterSpec(spec);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? c.value() : Cluster{};
}

// The preset's graph numbered by GPU (identity order).
Cluster P3ByGpu() {
  Cluster c = P3();
  c.nvlink.device_order.clear();
  return c;
}

TEST(NvlinkGraph, RingsPackedOverTheHybridCubeMesh) {
  const Cluster c = P3ByGpu();
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 1}), 25 * kGB);         // NV1
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 3}), 50 * kGB);         // NV2: two rings
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 1, 2, 3}), 100 * kGB);  // the quad: four rings
  // All eight: six rings over six links per GPU, the host's nominal 150 GB/s.
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 1, 2, 3, 4, 5, 6, 7}), 150 * kGB);
  // A quad of two double-linked pairs joined by single links: one ring each way.
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 3, 4, 7}), 50 * kGB);
  // No NVLink between 0 and 5: NCCL's ring runs over PCIe.
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 5}), 10 * kGB);
  // One device: nothing to move, the host's link.
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {4}), c.intra_host_link.bandwidth);
}

TEST(NvlinkGraph, PcieWhereNoNvlinkPathIsFaster) {
  Cluster c = P3ByGpu();
  // Only 0-1 linked: 2 and 3 reach anything over PCIe alone.
  c.nvlink.links = {{0, 1, 25 * kGB}};
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {2, 3}), 10 * kGB);
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 1, 2}), 10 * kGB);
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 1}), 25 * kGB);
  // NCCL keeps to the NVLink ring even where PCIe were faster (a made-up server).
  c.nvlink.pcie_bandwidth = 30 * kGB;
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 1}), 25 * kGB);
  // The host link caps everything.
  c.intra_host_link.bandwidth = 20 * kGB;
  EXPECT_DOUBLE_EQ(GroupRingBandwidth(c, {0, 1}), 20 * kGB);
}

// Point-to-point moves (cross-stage sends): a direct link, else one intermediate GPU, else PCIe.
TEST(NvlinkGraph, MovesTakeTheDirectThenTheRelayedThenThePciePath) {
  Cluster c = P3ByGpu();
  const std::vector<double> t = MovePairBandwidths(c);
  ASSERT_EQ(t.size(), 64u);
  auto at = [&](int64_t a, int64_t b) { return t[static_cast<size_t>(a * 8 + b)]; };
  EXPECT_DOUBLE_EQ(at(0, 3), 50 * kGB);  // NV2
  EXPECT_DOUBLE_EQ(at(3, 0), 50 * kGB);
  EXPECT_DOUBLE_EQ(at(0, 1), 25 * kGB);  // NV1
  // No link between 0 and 7: through GPU 4, two links of NV2 each, beating PCIe 5x.
  EXPECT_DOUBLE_EQ(at(0, 7), 50 * kGB);
  // 0 and 5: through GPU 1 (NV1 then NV2) or GPU 4 (NV2 then NV1): one link's rate.
  EXPECT_DOUBLE_EQ(at(0, 5), 25 * kGB);
  EXPECT_DOUBLE_EQ(at(2, 2), c.intra_host_link.bandwidth);
  // Local indices go through the order: local 0 and 1 of the preset are GPUs 0 and 3.
  EXPECT_DOUBLE_EQ(MovePairBandwidths(P3())[1], 50 * kGB);
  // Only 0-1 linked: 2 reaches anything over PCIe; 0 -> 1 stays on its link.
  c.nvlink.links = {{0, 1, 25 * kGB}};
  const std::vector<double> sparse = MovePairBandwidths(c);
  EXPECT_DOUBLE_EQ(sparse[2 * 8 + 0], 10 * kGB);
  EXPECT_DOUBLE_EQ(sparse[0 * 8 + 1], 25 * kGB);
  // The host link caps every pair; no graph, no table (every move at the host's link).
  c.intra_host_link.bandwidth = 20 * kGB;
  EXPECT_DOUBLE_EQ(MovePairBandwidths(c)[1], 20 * kGB);
  c.nvlink = NvlinkGraph();
  EXPECT_TRUE(MovePairBandwidths(c).empty());
}

TEST(NvlinkGraph, BestDeviceOrderPairsTheDoubleLinks) {
  const Cluster by_gpu = P3ByGpu();
  const std::vector<int64_t> best = BestDeviceOrder(by_gpu);
  EXPECT_EQ(best, P3().nvlink.device_order);  // the preset's order is the search's
  EXPECT_EQ(best, (std::vector<int64_t>{0, 3, 1, 2, 4, 7, 5, 6}));
  // Every aligned pair of the order is double-linked, every aligned quad fully connected.
  const Cluster ordered = P3();
  EXPECT_DOUBLE_EQ(AlignedGroupRingBandwidth(ordered, 2, {0, 1}), 50 * kGB);
  EXPECT_DOUBLE_EQ(AlignedGroupRingBandwidth(ordered, 4, {0, 1, 2, 3}), 100 * kGB);
  // By GPU number, the pairs {0, 1} and {4, 5} have one link: a 2-device submesh gets half.
  EXPECT_DOUBLE_EQ(AlignedGroupRingBandwidth(by_gpu, 2, {0, 1}), 25 * kGB);
  // Without links: the identity.
  Cluster uniform = P3();
  uniform.nvlink = NvlinkGraph();
  EXPECT_EQ(BestDeviceOrder(uniform), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// 1 / beta of each dim of a logical mesh on one p3 host's `devices` devices.
std::vector<double> DimBandwidths(const Cluster& c, int64_t devices, std::vector<int64_t> shape) {
  Result<LogicalMesh> mesh = DeriveLogicalMesh(c, {1, devices}, shape);
  EXPECT_TRUE(mesh.ok()) << mesh.status().message();
  std::vector<double> out;
  if (!mesh.ok()) return out;
  for (double b : mesh.value().beta) out.push_back(1.0 / b);
  out.push_back(1.0 / mesh.value().flat_beta);
  return out;
}

TEST(NvlinkGraph, LogicalMeshesPricedOnTheGraph) {
  const Cluster c = P3();
  // (8): the whole host, 150 GB/s (as without a graph).
  EXPECT_EQ(DimBandwidths(c, 8, {8}), (std::vector<double>{150 * kGB, 150 * kGB}));
  // (2, 4): dim 1 the quads (100), dim 0 pairs across them, two of which have one link (25).
  EXPECT_EQ(DimBandwidths(c, 8, {2, 4}), (std::vector<double>{25 * kGB, 100 * kGB, 150 * kGB}));
  // (4, 2): dim 1 the double-linked pairs (50), dim 0 two rings over 4 GPUs (50).
  EXPECT_EQ(DimBandwidths(c, 8, {4, 2}), (std::vector<double>{50 * kGB, 50 * kGB, 150 * kGB}));
  // A 2-device submesh lands on a double-linked pair; a 4-device one on a quad.
  EXPECT_EQ(DimBandwidths(c, 2, {2}), (std::vector<double>{50 * kGB, 50 * kGB}));
  EXPECT_EQ(DimBandwidths(c, 4, {4}), (std::vector<double>{100 * kGB, 100 * kGB}));
  // Across hosts the NIC decides, as before.
  Result<LogicalMesh> two_hosts = DeriveLogicalMesh(P3("p3.16xlarge:hosts=2"), {2, 8}, {2, 8});
  ASSERT_TRUE(two_hosts.ok()) << two_hosts.status().message();
  EXPECT_DOUBLE_EQ(1.0 / two_hosts.value().beta[0], 25e9 / 8 / 8);
  EXPECT_DOUBLE_EQ(1.0 / two_hosts.value().beta[1], 150 * kGB);
}

TEST(NvlinkGraph, PresetWithFewerDevicesKeepsTheFirstOfItsOrder) {
  const Cluster two = P3("p3.16xlarge:devices_per_host=2");
  ASSERT_EQ(two.nvlink.links.size(), 1u);  // GPUs 0 and 3, renumbered 0 and 1
  EXPECT_DOUBLE_EQ(two.nvlink.links[0].bandwidth, 50 * kGB);
  EXPECT_TRUE(two.nvlink.device_order.empty());
  EXPECT_EQ(DimBandwidths(two, 2, {2}), (std::vector<double>{50 * kGB, 50 * kGB}));
  const Cluster four = P3("p3.16xlarge:devices_per_host=4");
  EXPECT_EQ(four.nvlink.links.size(), 6u);
  EXPECT_EQ(DimBandwidths(four, 4, {4}), (std::vector<double>{100 * kGB, 100 * kGB}));
  EXPECT_TRUE(ValidateCluster(four).ok());
  // A cluster file taking the preset with 4 devices per host does the same.
  Result<Cluster> file = ReadClusterBuffer(
      R"({"format": "alpa-cluster", "preset": "p3.16xlarge", "devices_per_host": 4})");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file.value().nvlink, four.nvlink);
}

TEST(NvlinkGraph, ClusterFileRoundTripAndComputedOrder) {
  const Cluster c = P3("p3.16xlarge:hosts=2");
  Result<std::string> text = WriteCluster(c);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_NE(text.value().find("\"nvlink\""), std::string::npos);
  Result<Cluster> back = ReadClusterBuffer(text.value());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value(), c);
  // Without device_order the reader takes the best one.
  nlohmann::json j = nlohmann::json::parse(text.value());
  j["nvlink"].erase("device_order");
  back = ReadClusterBuffer(j.dump());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().nvlink.device_order, c.nvlink.device_order);
}

// The message of reading the p3 cluster file with `edit` applied to its "nvlink" object.
std::string NvlinkError(void (*edit)(nlohmann::json&)) {
  Result<std::string> text = WriteCluster(P3());
  EXPECT_TRUE(text.ok());
  nlohmann::json j = nlohmann::json::parse(text.value());
  edit(j["nvlink"]);
  Result<Cluster> c = ReadClusterBuffer(j.dump());
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.status().message();
}

TEST(NvlinkGraph, BadGraphsAreRefusedByName) {
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g["links"][2]["devices"][1] = 9;
            }).find("cluster.nvlink.links[2].b: 9 is not a device of a host (0..7)"),
            std::string::npos);
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g["links"][0]["devices"] = {4, 4};
            }).find("cluster.nvlink.links[0]: links device 4 to itself"),
            std::string::npos);
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g["links"][1]["devices"] = {1, 0};
            }).find("linked twice"),
            std::string::npos);
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g["links"][3]["bandwidth"] = -1;
            }).find("cluster.nvlink.links[3].bandwidth: must be a positive finite number"),
            std::string::npos);
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g["links"][3]["devices"] = {1};
            }).find("expected two devices (got 1)"),
            std::string::npos);
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g["device_order"][7] = 0;
            }).find("cluster.nvlink.device_order[7]: device 0 appears twice"),
            std::string::npos);
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g["device_order"] = {0, 1};
            }).find("has 2 entries, not one per device (8)"),
            std::string::npos);
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g.erase("pcie_bandwidth");
            }).find("missing required key \"pcie_bandwidth\""),
            std::string::npos);
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g["links"] = nlohmann::json::array();
            }).find("pcie_bandwidth or device_order set without links"),
            std::string::npos);
  EXPECT_NE(NvlinkError([](nlohmann::json& g) {
              g["bandwidth"] = 1;
            }).find("cluster.nvlink: unknown key \"bandwidth\""),
            std::string::npos);
}

TEST(NvlinkGraph, MixedClustersKeepEachPoolsGraph) {
  Result<Cluster> mixed = ParseClusterSpec("p3.16xlarge:hosts=1+dgx-a100-80g:hosts=1");
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  EXPECT_TRUE(mixed.value().nvlink.empty());  // the merged view has none
  EXPECT_FALSE(mixed.value().pools[0].nvlink.empty());
  EXPECT_TRUE(mixed.value().pools[1].nvlink.empty());
  EXPECT_TRUE(ValidateCluster(mixed.value()).ok());
}

}  // namespace
}  // namespace alpa
