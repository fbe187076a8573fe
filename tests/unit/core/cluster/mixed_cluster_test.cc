// Mixed GPU types in one cluster (Cluster::pools): the merged view, the host -> pool maps, the
// errors, the cluster file's "pools", the "A+B" spec strings and calibration of every pool.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster/cluster.h"
#include "core/cluster/logical_mesh.h"

namespace alpa {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

Cluster MustSpec(const std::string& spec) {
  Result<Cluster> c = ParseClusterSpec(spec);
  EXPECT_TRUE(c.ok()) << spec << ": " << c.status().message();
  return c.ok() ? c.value() : Cluster{};
}

Cluster MustMix(std::vector<Cluster> pools, std::string name = "") {
  Result<Cluster> c = MakeMixedCluster(std::move(pools), std::move(name));
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? c.value() : Cluster{};
}

// 2 DGX A100 hosts then 3 p3.16xlarge hosts.
Cluster A100AndV100() {
  return MustMix({MustSpec("dgx-a100-80g:hosts=2"), MustSpec("p3.16xlarge:hosts=3")});
}

// `status` fails with `code` and a message containing `needle`.
void ExpectError(const Status& status, StatusCode code, const std::string& needle) {
  ASSERT_FALSE(status.ok()) << "expected: " << needle;
  EXPECT_EQ(status.code(), code) << status.message();
  EXPECT_NE(status.message().find(needle), std::string::npos)
      << status.message() << "\n  expected to contain: " << needle;
}

TEST(MixedCluster, MergedViewTakesTheLeastMemoryAndTheSlowerLinks) {
  const Cluster c = A100AndV100();
  ASSERT_TRUE(c.mixed());
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.name, "dgx-a100-80g + p3.16xlarge");
  EXPECT_EQ(c.hosts, 5);
  EXPECT_EQ(c.devices_per_host, 8);
  EXPECT_EQ(c.num_devices(), 40);
  // The first pool's device with the V100's 16 GiB.
  EXPECT_EQ(c.device.name, "A100-SXM4-80GB");
  EXPECT_EQ(c.device.memory_bytes, 16 * kGiB);
  EXPECT_DOUBLE_EQ(c.device.PeakFlops(DType::kBF16), 312e12);
  EXPECT_DOUBLE_EQ(c.intra_host_link.bandwidth, 150e9);
  EXPECT_DOUBLE_EQ(c.intra_host_link.latency, 5e-6);
  EXPECT_DOUBLE_EQ(c.inter_host_link.bandwidth, 3.125e9);
  EXPECT_DOUBLE_EQ(c.inter_host_link.latency, 20e-6);
  EXPECT_EQ(c.nics_per_host, 1);
  EXPECT_TRUE(c.nic_locality.empty());
  EXPECT_TRUE(c.calibration == c.pools[0].calibration);
  EXPECT_TRUE(ValidateCluster(c).ok()) << ValidateCluster(c).message();
  // The pools are kept as given.
  EXPECT_TRUE(c.pools[0] == MustSpec("dgx-a100-80g:hosts=2"));
  EXPECT_TRUE(c.pools[1] == MustSpec("p3.16xlarge:hosts=3"));
  EXPECT_EQ(MustMix(c.pools, "lab").name, "lab");
}

TEST(MixedCluster, HostsArePooledInOrderAndPricedByTheirPool) {
  const Cluster c = A100AndV100();
  const int32_t expected_pool[] = {0, 0, 1, 1, 1};
  for (int64_t host = 0; host < 5; ++host) {
    const int32_t pool = expected_pool[host];
    EXPECT_EQ(PoolOfHost(c, host), pool) << host;
    EXPECT_EQ(&HostCluster(c, host), &c.pools[static_cast<size_t>(pool)]) << host;
  }
  EXPECT_EQ(HostCluster(c, 1).device.memory_bytes, 80 * kGiB);
  EXPECT_EQ(HostCluster(c, 2).device.memory_bytes, 16 * kGiB);
  // Out of range: clamped to the first / last pool.
  EXPECT_EQ(PoolOfHost(c, -1), 0);
  EXPECT_EQ(PoolOfHost(c, 5), 1);
  EXPECT_EQ(PoolOfHost(c, int64_t{1} << 62), 1);
  EXPECT_EQ(PoolFirstHost(c, 0), 0);
  EXPECT_EQ(PoolFirstHost(c, 1), 2);
  EXPECT_EQ(PoolFirstHost(c, 2), 5);  // the end of the last pool
  EXPECT_EQ(PoolFirstHost(c, 7), 5);
  EXPECT_EQ(PoolFirstHost(c, -3), 0);

  // Without pools: one pool of every host.
  const Cluster p3 = MustSpec("p3.16xlarge:hosts=4");
  EXPECT_EQ(PoolOfHost(p3, 3), 0);
  EXPECT_EQ(PoolFirstHost(p3, 0), 0);
  EXPECT_EQ(PoolFirstHost(p3, 1), 4);
  EXPECT_EQ(&HostCluster(p3, 3), &p3);
}

TEST(MixedCluster, MovesBetweenHostsRunAtTheSlowerEndsNicGroup) {
  const Cluster c = A100AndV100();
  // A DGX A100 GPU reaches another host through its own NIC: 200 GB/s / 8.
  EXPECT_DOUBLE_EQ(InterHostMoveBandwidth(c, 0, 8), 25e9);
  EXPECT_DOUBLE_EQ(InterHostMoveBandwidth(c, 15, 3), 25e9);
  // Across the pools and inside the p3 pool: the p3 host's one 25 Gbps NIC.
  EXPECT_DOUBLE_EQ(InterHostMoveBandwidth(c, 0, 16), 3.125e9);
  EXPECT_DOUBLE_EQ(InterHostMoveBandwidth(c, 39, 8), 3.125e9);
  EXPECT_DOUBLE_EQ(InterHostMoveBandwidth(c, 16, 24), 3.125e9);
}

TEST(MixedCluster, ErrorsNameThePool) {
  const Cluster a100 = MustSpec("dgx-a100-80g:hosts=1");
  const Cluster p3 = MustSpec("p3.16xlarge:hosts=1");
  ExpectError(MakeMixedCluster({a100}).status(), StatusCode::kInvalidArgument,
              "cluster.pools: a mixed cluster has 2 to 64 pools (got 1)");
  ExpectError(MakeMixedCluster({}).status(), StatusCode::kInvalidArgument, "(got 0)");
  ExpectError(MakeMixedCluster(std::vector<Cluster>(65, p3)).status(), StatusCode::kInvalidArgument,
              "2 to 64 pools (got 65)");
  ExpectError(MakeMixedCluster({a100, MustSpec("p3.16xlarge:hosts=1,devices_per_host=4")}).status(),
              StatusCode::kInvalidArgument,
              "cluster.pools[1]: devices_per_host is 4, pool 0's is 8");
  ExpectError(MakeMixedCluster({A100AndV100(), p3}).status(), StatusCode::kInvalidArgument,
              "cluster.pools[0]: a pool cannot have pools of its own (got 2)");
  Cluster far = p3;
  far.nic_locality = {{0, 1}, 1e9};
  ExpectError(MakeMixedCluster({a100, far}).status(), StatusCode::kInvalidArgument,
              "cluster.pools[1].nic_locality: not allowed in a pool of a mixed cluster");
  Cluster empty = p3;
  empty.device.memory_bytes = 0;
  ExpectError(MakeMixedCluster({a100, empty}).status(), StatusCode::kInvalidArgument,
              "cluster.pools[1].device.memory_bytes: must be >= 1 (got 0)");
  Cluster no_hosts = p3;
  no_hosts.hosts = 0;
  ExpectError(MakeMixedCluster({no_hosts, a100}).status(), StatusCode::kInvalidArgument,
              "cluster.pools[0]: hosts must be >= 1");
  // Each pool within the bounds, not all of them together.
  Cluster big = p3;
  big.hosts = kMaxHosts;
  ExpectError(MakeMixedCluster({big, big}).status(), StatusCode::kInvalidArgument,
              "cluster.pools: 2097152 hosts in all, more than 1048576");
  big.nvlink = NvlinkGraph();
  big.devices_per_host = kMaxDevicesPerHost;
  big.hosts = kMaxDevices / kMaxDevicesPerHost;
  ExpectError(MakeMixedCluster({big, big}).status(), StatusCode::kInvalidArgument,
              "cluster.pools: 33554432 devices in all, more than 16777216");
}

TEST(MixedCluster, ValidationRefusesMergedFieldsThatAreNotDerived) {
  const Cluster c = A100AndV100();
  Cluster renamed = c;
  renamed.name = "any name";
  EXPECT_TRUE(ValidateCluster(renamed).ok());
  Cluster more_hosts = c;
  more_hosts.hosts = 6;
  ExpectError(ValidateCluster(more_hosts), StatusCode::kInvalidArgument,
              "cluster.hosts: the merged fields of a mixed cluster must be those "
              "MakeMixedCluster derives from its pools");
  Cluster more_memory = c;
  more_memory.device.memory_bytes = 80 * kGiB;
  ExpectError(ValidateCluster(more_memory), StatusCode::kInvalidArgument, "cluster.device:");
  Cluster faster = c;
  faster.inter_host_link.bandwidth = 200e9;
  ExpectError(ValidateCluster(faster), StatusCode::kInvalidArgument, "cluster.inter_host_link:");
  Cluster bad_pool = c;
  bad_pool.pools[1].intra_host_link.bandwidth = -1;
  ExpectError(ValidateCluster(bad_pool), StatusCode::kInvalidArgument,
              "cluster.pools[1].intra_host_link.bandwidth: must be a positive");
  Cluster one_pool = MustSpec("p3.16xlarge");
  one_pool.pools = {MustSpec("p3.16xlarge")};
  ExpectError(ValidateCluster(one_pool), StatusCode::kInvalidArgument, "(got 1)");
  // Equality sees the pools.
  Cluster other_pools = c;
  other_pools.pools[1].calibration.matmul_efficiency = 0.5;
  EXPECT_FALSE(other_pools == c);
}

TEST(MixedCluster, JsonRoundTripWritesOnlyThePools) {
  Cluster p3 = MustSpec("p3.16xlarge:hosts=3");
  p3.calibration.op_overhead_seconds = 7e-6;
  const Cluster c = MustMix({MustSpec("dgx-a100-80g:hosts=2,devices_per_host=4"),
                             MustSpec("dgx-h100:hosts=1,devices_per_host=4"),
                             MustSpec("pcie-a100-80g:hosts=1,devices_per_host=4")},
                            "three kinds");
  for (const Cluster& cluster : {A100AndV100(), MustMix({MustSpec("dgx-h100"), p3}), c}) {
    Result<std::string> text = WriteCluster(cluster);
    ASSERT_TRUE(text.ok()) << text.status().message();
    const nlohmann::json json = nlohmann::json::parse(text.value());
    EXPECT_EQ(json.size(), 4u) << text.value();  // format, name, pools, version
    EXPECT_EQ(json["pools"].size(), cluster.pools.size());
    Result<Cluster> back = ReadClusterBuffer(text.value());
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_TRUE(back.value() == cluster) << text.value();
    EXPECT_EQ(WriteCluster(back.value()).value(), text.value());
  }
}

TEST(MixedCluster, FileMixesPresetSpecsAndClusterObjects) {
  Result<Cluster> c = ReadClusterBuffer(R"({
    "format": "alpa-cluster", "version": 1, "name": "lab",
    "pools": ["dgx-a100-80g:hosts=2",
              {"preset": "p3.16xlarge", "hosts": 3, "intra_host_link": {"bandwidth": 130e9}}]})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  Cluster p3 = MustSpec("p3.16xlarge:hosts=3");
  p3.intra_host_link.bandwidth = 130e9;
  EXPECT_TRUE(c.value() == MustMix({MustSpec("dgx-a100-80g:hosts=2"), p3}, "lab"));
  EXPECT_DOUBLE_EQ(c.value().intra_host_link.bandwidth, 130e9);
  // Without a name: the pools' names joined.
  Result<Cluster> unnamed = ReadClusterBuffer(R"({"pools": ["a100", "p3"]})");
  ASSERT_TRUE(unnamed.ok()) << unnamed.status().message();
  EXPECT_EQ(unnamed.value().name, "dgx-a100-80g + p3.16xlarge");
  EXPECT_EQ(unnamed.value().hosts, 2);
}

struct BadFile {
  const char* json;
  StatusCode code;
  const char* needle;
};

TEST(MixedCluster, FileErrorsNameTheFieldOrThePool) {
  const BadFile cases[] = {
      {R"({"pools": ["a100", "p3"], "hosts": 4})", StatusCode::kParse,
       "cluster: \"hosts\" is not allowed beside \"pools\" (a mixed cluster's fields come from "
       "its pools)"},
      {R"({"pools": ["a100", "p3"], "calibration": {}})", StatusCode::kParse,
       "cluster: \"calibration\" is not allowed beside \"pools\""},
      {R"({"preset": "p3", "pools": ["a100", "p3"]})", StatusCode::kParse,
       "cluster: \"preset\" is not allowed beside \"pools\""},
      {R"({"pools": ["a100", "p3"], "hostz": 4})", StatusCode::kParse,
       "cluster: unknown key \"hostz\""},
      {R"({"pools": "a100+p3"})", StatusCode::kParse, "cluster.pools: expected an array"},
      {R"({"pools": ["a100"]})", StatusCode::kInvalidArgument,
       "cluster.pools: a mixed cluster has 2 to 64 pools (got 1)"},
      {R"({"pools": []})", StatusCode::kInvalidArgument, "(got 0)"},
      {R"({"pools": ["a100", {"preset": "p3", "device": {"memory_bytes": 0}}]})",
       StatusCode::kInvalidArgument, "cluster.pools[1].device.memory_bytes: must be >= 1"},
      {R"({"pools": ["a100", {"preset": "p3", "device": {"memory_bytes": "16G"}}]})",
       StatusCode::kParse, "cluster.pools[1].device.memory_bytes: expected a number"},
      {R"({"pools": ["a100", {"preset": "p3", "hostz": 2}]})", StatusCode::kParse,
       "cluster.pools[1]: unknown key \"hostz\""},
      {R"({"pools": ["a100", {"format": "alpa", "preset": "p3"}]})", StatusCode::kParse,
       "cluster.pools[1].format: expected \"alpa-cluster\""},
      {R"({"pools": ["a100", "p3:hosts=0"]})", StatusCode::kInvalidArgument,
       "cluster.pools[1]: cluster spec \"p3:hosts=0\": hosts must be a positive integer"},
      {R"({"pools": ["a100", "tpu"]})", StatusCode::kInvalidArgument,
       "cluster.pools[1]: unknown cluster preset \"tpu\""},
      {R"({"pools": ["a100", 8]})", StatusCode::kParse,
       "cluster.pools[1]: expected a cluster object or a preset spec string"},
      {R"({"pools": ["a100", {"pools": ["a100", "p3"]}]})", StatusCode::kParse,
       "cluster.pools[1].pools: a pool cannot have pools of its own"},
      {R"({"pools": ["a100+p3", "p3"]})", StatusCode::kInvalidArgument,
       "cluster.pools[0]: a pool cannot have pools of its own (got 2)"},
      {R"({"pools": ["a100", "p3:devices_per_host=4"]})", StatusCode::kInvalidArgument,
       "cluster.pools[1]: devices_per_host is 4, pool 0's is 8"},
      {R"({"pools": ["a100", {"preset": "p3", "nic_locality": {"near_devices": [0],
           "far_bandwidth": 1e9}}]})",
       StatusCode::kInvalidArgument,
       "cluster.pools[1].nic_locality: not allowed in a pool of a mixed cluster"},
  };
  for (const BadFile& bad : cases) {
    SCOPED_TRACE(bad.json);
    ExpectError(ReadClusterBuffer(bad.json).status(), bad.code, bad.needle);
  }
  // More than 64 pools are refused before any is read.
  nlohmann::json many = {{"pools", std::vector<std::string>(65, "tpu")}};
  ExpectError(ReadClusterBuffer(many.dump()).status(), StatusCode::kInvalidArgument,
              "cluster.pools: a mixed cluster has 2 to 64 pools (got 65)");
  many["pools"] = std::vector<std::string>(64, "p3");
  Result<Cluster> most = ReadClusterBuffer(many.dump());
  ASSERT_TRUE(most.ok()) << most.status().message();
  EXPECT_EQ(most.value().hosts, 64);
}

TEST(MixedCluster, SpecJoinedByPlusIsTheMixedClusterOfItsParts) {
  const Cluster c = MustSpec("dgx-a100-80g:hosts=2+p3.16xlarge:hosts=3");
  EXPECT_TRUE(c == A100AndV100());
  EXPECT_TRUE(MustSpec(" dgx-a100 : hosts = 2 + p3:hosts=3 ") == A100AndV100());
  EXPECT_EQ(MustSpec("a100+p3+h100").name, "dgx-a100-80g + p3.16xlarge + dgx-h100");
  EXPECT_EQ(MustSpec("a100+p3+h100").hosts, 3);
  // Without '+' nothing changes.
  EXPECT_FALSE(MustSpec("p3.16xlarge:hosts=3").mixed());
}

TEST(MixedCluster, SpecErrorsNameThePart) {
  const std::pair<const char*, const char*> cases[] = {
      {"dgx-a100-80g:hosts=2+p3:gpus=8",
       "cluster spec \"dgx-a100-80g:hosts=2+p3:gpus=8\": part 1 \"p3:gpus=8\": cluster spec "
       "\"p3:gpus=8\": unknown key \"gpus\""},
      {"a100+tpu", "part 1 \"tpu\": unknown cluster preset \"tpu\""},
      {"tpu+a100", "part 0 \"tpu\": unknown cluster preset"},
      {"a100+", "part 1 \"\": unknown cluster preset"},
      {"a100+p3:hosts=0", "part 1 \"p3:hosts=0\""},
      {"a100+p3:devices_per_host=4",
       "cluster spec \"a100+p3:devices_per_host=4\": cluster.pools[1]: devices_per_host is 4, "
       "pool 0's is 8"},
  };
  for (const auto& [spec, needle] : cases) {
    SCOPED_TRACE(spec);
    ExpectError(ParseClusterSpec(spec).status(), StatusCode::kInvalidArgument, needle);
  }
  std::string many = "p3";
  for (int i = 0; i < 64; ++i) many += "+p3";
  ExpectError(ParseClusterSpec(many).status(), StatusCode::kInvalidArgument,
              "65 parts, more than 64 pools");
}

TEST(MixedCluster, CalibrationAppliesToEveryPoolOnTopOfItsOwn) {
  const Cluster c = MustMix(A100AndV100().pools, "lab");
  Result<Cluster> calibrated =
      ApplyCalibrationBuffer(c, R"({"format": "alpa-calibration", "op_overhead_seconds": 1e-5})");
  ASSERT_TRUE(calibrated.ok()) << calibrated.status().message();
  const Cluster& out = calibrated.value();
  EXPECT_EQ(out.name, "lab");
  ASSERT_EQ(out.pools.size(), 2u);
  // Each pool keeps its own fitted matmul efficiency.
  EXPECT_DOUBLE_EQ(out.pools[0].calibration.matmul_efficiency, 0.728);
  EXPECT_DOUBLE_EQ(out.pools[1].calibration.matmul_efficiency, 0.693);
  for (const Cluster& pool : out.pools) {
    EXPECT_DOUBLE_EQ(pool.calibration.op_overhead_seconds, 1e-5);
  }
  EXPECT_TRUE(out.calibration == out.pools[0].calibration);
  EXPECT_TRUE(ValidateCluster(out).ok()) << ValidateCluster(out).message();

  // One device type: the file's keys on top of the cluster's, as ReadCalibrationBuffer.
  const Cluster p3 = MustSpec("p3.16xlarge:hosts=2");
  const std::string doc = R"({"efficiency": {"memory": 0.7}})";
  Result<Cluster> one = ApplyCalibrationBuffer(p3, doc);
  ASSERT_TRUE(one.ok()) << one.status().message();
  Cluster expected = p3;
  expected.calibration = ReadCalibrationBuffer(doc, p3.calibration).value();
  EXPECT_TRUE(one.value() == expected);

  ExpectError(ApplyCalibrationBuffer(c, R"({"efficiency": {"matmul": 2}})").status(),
              StatusCode::kInvalidArgument, "calibration.efficiency.matmul: must be in (0, 1]");
  ExpectError(ApplyCalibrationBuffer(c, "{").status(), StatusCode::kParse,
              "calibration: invalid JSON");
}

// A logical mesh lies on one device type: derived from a pool, never from the mixed cluster.
TEST(MixedCluster, LogicalMeshesComeFromAPool) {
  const Cluster mixed = A100AndV100();
  ExpectError(DeriveLogicalMesh(mixed, SubmeshShape{1, 8}, {2, 4}).status(),
              StatusCode::kInvalidArgument,
              "mixes GPU types: a logical mesh lies on one of its pools");
  Result<LogicalMesh> a100 = DeriveLogicalMesh(HostCluster(mixed, 0), SubmeshShape{1, 8}, {2, 4});
  Result<LogicalMesh> v100 = DeriveLogicalMesh(HostCluster(mixed, 4), SubmeshShape{1, 8}, {2, 4});
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  ASSERT_TRUE(v100.ok()) << v100.status().message();
  // NVSwitch (300 GB/s a direction everywhere) against the V100 pool's hybrid cube mesh (its
  // quads 100 GB/s): a third of the seconds per byte on dim 1.
  EXPECT_DOUBLE_EQ(a100.value().beta[1] * 3, v100.value().beta[1]);
}

}  // namespace
}  // namespace alpa
