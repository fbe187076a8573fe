// PCIe trees inside a host (pcie_tree.h): the rings of a mesh dimension sharing the switches'
// uplinks and the socket link, the moves between switches and sockets, the logical meshes of the
// PCIe-only preset, the preset with fewer devices, and the cluster file's "pcie" object.
#include "core/cluster/pcie_tree.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster/logical_mesh.h"
#include "core/cluster/nvlink_graph.h"

namespace alpa {
namespace {

constexpr double kGB = 1e9;

Cluster Pcie(const std::string& spec = "pcie-a100-80g") {
  Result<Cluster> c = ParseClusterSpec(spec);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? c.value() : Cluster{};
}

// The preset's switches split over two sockets joined at 20 GB/s.
Cluster TwoSockets() {
  Cluster c = Pcie();
  c.pcie.switch_sockets = {0, 0, 1, 1};
  c.pcie.socket_bandwidth = 20 * kGB;
  EXPECT_TRUE(ValidateCluster(c).ok()) << ValidateCluster(c).message();
  return c;
}

TEST(PcieTree, RingsShareTheUplinksTheyCross) {
  const Cluster c = Pcie();  // four switches of two GPUs, 32 GB/s links and uplinks
  using Groups = std::vector<std::vector<int64_t>>;
  // Under one switch, or one ring over several: each uplink carries one ring.
  EXPECT_EQ(PcieRingBandwidths(c, Groups{{0, 1}}), (std::vector<double>{32 * kGB}));
  EXPECT_EQ(PcieRingBandwidths(c, Groups{{0, 1, 2, 3, 4, 5, 6, 7}}),
            (std::vector<double>{32 * kGB}));
  // Four rings {i, i + 4} at once: each switch's uplink carries two of them.
  EXPECT_EQ(PcieRingBandwidths(c, Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}),
            (std::vector<double>(4, 16 * kGB)));
  // Two rings over switches 0-1 and 2-3: no uplink shared.
  EXPECT_EQ(PcieRingBandwidths(c, Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}),
            (std::vector<double>(2, 32 * kGB)));
  // Across sockets: the socket link, shared by every ring that crosses it.
  const Cluster s = TwoSockets();
  EXPECT_EQ(PcieRingBandwidths(s, Groups{{0, 1, 2, 3, 4, 5, 6, 7}}),
            (std::vector<double>{20 * kGB}));
  EXPECT_EQ(PcieRingBandwidths(s, Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}),
            (std::vector<double>(4, 5 * kGB)));
  EXPECT_EQ(PcieRingBandwidths(s, Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}),
            (std::vector<double>(2, 32 * kGB)));
  // A group of one device moves nothing: the device's link.
  EXPECT_EQ(PcieRingBandwidths(s, Groups{{3}}), (std::vector<double>{32 * kGB}));
}

TEST(PcieTree, MovesCrossTheUplinkAndTheSocketLink) {
  const Cluster c = TwoSockets();
  EXPECT_DOUBLE_EQ(c.pcie.uplink_bandwidth, 32 * kGB);
  Cluster slow = c;
  slow.pcie.uplink_bandwidth = 24 * kGB;
  EXPECT_DOUBLE_EQ(PcieMoveBandwidth(slow, 0, 1), 32 * kGB);  // one switch: the GPUs' links
  EXPECT_DOUBLE_EQ(PcieMoveBandwidth(slow, 0, 2), 24 * kGB);  // two switches: the uplink
  EXPECT_DOUBLE_EQ(PcieMoveBandwidth(slow, 0, 4), 20 * kGB);  // two sockets: the socket link
  // The simulator's and the planner's table of moves.
  const std::vector<double> t = MovePairBandwidths(slow);
  ASSERT_EQ(t.size(), 64u);
  EXPECT_DOUBLE_EQ(t[0 * 8 + 2], 24 * kGB);
  EXPECT_DOUBLE_EQ(t[7 * 8 + 1], 20 * kGB);
  EXPECT_DOUBLE_EQ(t[5 * 8 + 5], 32 * kGB);
}

TEST(PcieTree, LogicalMeshesOfThePcieServer) {
  const Cluster c = Pcie();
  auto betas = [&](std::vector<int64_t> shape) {
    Result<LogicalMesh> m = DeriveLogicalMesh(c, {1, 8}, shape);
    EXPECT_TRUE(m.ok()) << m.status().message();
    std::vector<double> gbps;
    for (double b : m.value().beta) gbps.push_back(std::round(1 / b / kGB * 1e6) / 1e6);
    return gbps;
  };
  EXPECT_EQ(betas({8}), (std::vector<double>{32}));
  // (2, 4): dim 0 pairs {i, i + 4} share the uplinks two to one; dim 1 rings two switches each.
  EXPECT_EQ(betas({2, 4}), (std::vector<double>{16, 32}));
  // (4, 2): dim 0 rings cross all four switches, two per uplink; dim 1 stays under a switch.
  EXPECT_EQ(betas({4, 2}), (std::vector<double>{16, 32}));
  // A submesh of 4 devices per host lies on two switches; of 2, on one.
  Result<LogicalMesh> quad = DeriveLogicalMesh(c, {1, 4}, {2, 2});
  ASSERT_TRUE(quad.ok());
  EXPECT_DOUBLE_EQ(1 / quad.value().beta[0], 16 * kGB);  // {0, 2} and {1, 3} share both uplinks
  EXPECT_DOUBLE_EQ(1 / quad.value().beta[1], 32 * kGB);
}

TEST(PcieTree, PresetWithFewerDevicesKeepsItsSwitches) {
  const Cluster four = Pcie("pcie-a100-80g:hosts=1,devices_per_host=4");
  EXPECT_EQ(four.pcie.switches, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  // Two devices under one switch: every pair at its own links, no tree.
  EXPECT_TRUE(Pcie("pcie-a100-80g:hosts=1,devices_per_host=2").pcie.empty());
  Result<Cluster> file = ReadClusterBuffer(
      R"({"format": "alpa-cluster", "version": 1, "preset": "pcie-a100-80g", "hosts": 2,
          "devices_per_host": 4})");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file.value().pcie, four.pcie);
}

TEST(PcieTree, ClusterFileRoundTripAndReplacingThePresetsGraph) {
  const Cluster s = TwoSockets();
  Result<std::string> text = WriteCluster(s);
  ASSERT_TRUE(text.ok()) << text.status().message();
  Result<Cluster> back = ReadClusterBuffer(text.value());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value(), s);
  // "pcie" on the p3 preset replaces its NVLink graph (a host has one or the other).
  Result<Cluster> p3 = ReadClusterBuffer(
      R"({"preset": "p3.16xlarge", "pcie": {"switches": [[0, 1, 2, 3], [4, 5, 6, 7]],
          "uplink_bandwidth": 16e9}})");
  ASSERT_TRUE(p3.ok()) << p3.status().message();
  EXPECT_TRUE(p3.value().nvlink.empty());
  EXPECT_EQ(p3.value().pcie.switches.size(), 2u);
  // And "nvlink" on the PCIe preset replaces its tree.
  Result<Cluster> nv = ReadClusterBuffer(
      R"({"preset": "pcie-a100-80g", "nvlink": {"links": [{"devices": [0, 1], "bandwidth": 50e9}],
          "pcie_bandwidth": 16e9}})");
  ASSERT_TRUE(nv.ok()) << nv.status().message();
  EXPECT_TRUE(nv.value().pcie.empty());
  // null removes the preset's: a p3 host priced as NVSwitch-connected (uniform links), a PCIe
  // server as uniform PCIe; the other one stays.
  Result<Cluster> uniform = ReadClusterBuffer(R"({"preset": "p3.16xlarge", "nvlink": null})");
  ASSERT_TRUE(uniform.ok()) << uniform.status().message();
  EXPECT_TRUE(uniform.value().nvlink.empty());
  EXPECT_TRUE(uniform.value().pcie.empty());
  Result<Cluster> flat = ReadClusterBuffer(R"({"preset": "pcie-a100-80g", "pcie": null})");
  ASSERT_TRUE(flat.ok()) << flat.status().message();
  EXPECT_TRUE(flat.value().pcie.empty());
  Result<Cluster> kept = ReadClusterBuffer(R"({"preset": "p3.16xlarge", "pcie": null})");
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_FALSE(kept.value().nvlink.empty());
}

TEST(PcieTree, BadTreesAreRefusedByName) {
  struct Case {
    std::string pcie, needle;
  };
  const std::vector<Case> cases = {
      {R"({"switches": [[0, 1, 2, 3], [4, 5, 6, 9]], "uplink_bandwidth": 1e9})",
       "cluster.pcie.switches[1][3]: 9 is not a device of a host (0..7)"},
      {R"({"switches": [[0, 1, 2, 3], [3, 4, 5, 6, 7]], "uplink_bandwidth": 1e9})",
       "cluster.pcie.switches[1][0]: device 3 is already under switch 0"},
      {R"({"switches": [[0, 1, 2, 3], [4, 5, 6]], "uplink_bandwidth": 1e9})",
       "cluster.pcie.switches: device 7 is under no switch"},
      {R"({"switches": [[0, 1, 2, 3], []], "uplink_bandwidth": 1e9})",
       "cluster.pcie.switches[1]: a switch without devices"},
      {R"({"switches": [[0, 1, 2, 3], [4, 5, 6, 7]], "uplink_bandwidth": 0})",
       "cluster.pcie.uplink_bandwidth: must be a positive finite number"},
      {R"({"switches": [[0, 1, 2, 3], [4, 5, 6, 7]], "uplink_bandwidth": 1e9,
           "switch_sockets": [0]})",
       "cluster.pcie.switch_sockets: has 1 entries, not one per switch (2)"},
      {R"({"switches": [[0, 1, 2, 3], [4, 5, 6, 7]], "uplink_bandwidth": 1e9,
           "switch_sockets": [0, 1]})",
       "cluster.pcie.socket_bandwidth: must be a positive finite number (the switches sit on "
       "several sockets)"},
      {R"({"switches": [[0, 1, 2, 3], [4, 5, 6, 7]], "uplink": 1e9})", "uplink"},
      {R"({"switches": [[0, "a"]], "uplink_bandwidth": 1e9})", "cluster.pcie.switches[0][1]"},
  };
  for (const Case& bc : cases) {
    const std::string json = R"({"preset": "pcie-a100-80g", "pcie": )" + bc.pcie + "}";
    Result<Cluster> r = ReadClusterBuffer(json);
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_NE(r.status().message().find(bc.needle), std::string::npos)
        << json << " -> " << r.status().message();
  }
  // Both on one host, as a struct.
  Cluster both = Pcie();
  both.nvlink.links = {{0, 1, 50 * kGB}};
  both.nvlink.pcie_bandwidth = 16 * kGB;
  const Status st = ValidateCluster(both);
  EXPECT_NE(st.message().find("an NVLink graph or a PCIe tree, not both"), std::string::npos)
      << st.message();
  // Beside pools.
  Result<Cluster> pools = ReadClusterBuffer(
      R"({"pools": [{"preset": "pcie-a100-80g"}, {"preset": "p3.16xlarge"}],
          "pcie": {"switches": [[0]], "uplink_bandwidth": 1e9}})");
  ASSERT_FALSE(pools.ok());
  EXPECT_NE(pools.status().message().find("\"pcie\" is not allowed beside \"pools\""),
            std::string::npos)
      << pools.status().message();
}

}  // namespace
}  // namespace alpa
