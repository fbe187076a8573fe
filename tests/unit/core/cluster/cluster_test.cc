// Cluster presets, spec strings, cluster JSON (round trip and errors) and logical meshes.
#include "core/cluster/cluster.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster/logical_mesh.h"

namespace alpa {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

Cluster MustPreset(const std::string& spec) {
  Result<Cluster> c = ParseClusterSpec(spec);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? c.value() : Cluster{};
}

TEST(ClusterPresets, P3Numbers) {
  const Cluster c = MustPreset("p3.16xlarge:hosts=8");
  EXPECT_EQ(c.name, "p3.16xlarge");
  EXPECT_EQ(c.hosts, 8);
  EXPECT_EQ(c.devices_per_host, 8);
  EXPECT_EQ(c.num_devices(), 64);
  EXPECT_EQ(c.device.memory_bytes, 16 * kGiB);
  EXPECT_DOUBLE_EQ(c.device.memory_bandwidth, 900e9);
  EXPECT_DOUBLE_EQ(c.device.PeakFlops(DType::kF16), 125e12);
  EXPECT_DOUBLE_EQ(c.device.PeakFlops(DType::kF32), 15.7e12);
  EXPECT_DOUBLE_EQ(c.intra_host_link.bandwidth, 150e9);
  EXPECT_DOUBLE_EQ(c.inter_host_link.bandwidth, 3.125e9);  // 25 Gbps
  EXPECT_DOUBLE_EQ(c.intra_host_link.latency, 5e-6);
  EXPECT_DOUBLE_EQ(c.inter_host_link.latency, 20e-6);
  EXPECT_TRUE(ValidateCluster(c).ok());
}

TEST(ClusterPresets, DgxA100AndH100Numbers) {
  const Cluster a = MustPreset("dgx-a100");  // alias of dgx-a100-80g
  EXPECT_EQ(a.name, "dgx-a100-80g");
  EXPECT_EQ(a.hosts, 1);
  EXPECT_EQ(a.device.memory_bytes, 80 * kGiB);
  EXPECT_DOUBLE_EQ(a.device.memory_bandwidth, 2039e9);
  EXPECT_DOUBLE_EQ(a.device.PeakFlops(DType::kBF16), 312e12);
  EXPECT_DOUBLE_EQ(a.device.PeakFlops(DType::kF16), 312e12);
  EXPECT_DOUBLE_EQ(a.device.PeakFlops(DType::kF32), 19.5e12);
  EXPECT_DOUBLE_EQ(a.intra_host_link.bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(a.inter_host_link.bandwidth, 200e9);  // 8 x 200 Gb/s

  const Cluster a40 = MustPreset("dgx-a100-40g");
  EXPECT_EQ(a40.device.memory_bytes, 40 * kGiB);
  EXPECT_DOUBLE_EQ(a40.device.memory_bandwidth, 1555e9);

  const Cluster h = MustPreset("H100:hosts=4");  // alias, case-insensitive
  EXPECT_EQ(h.name, "dgx-h100");
  EXPECT_EQ(h.hosts, 4);
  EXPECT_EQ(h.device.memory_bytes, 80 * kGiB);
  EXPECT_DOUBLE_EQ(h.device.memory_bandwidth, 3350e9);
  EXPECT_DOUBLE_EQ(h.device.PeakFlops(DType::kBF16), 989e12);
  EXPECT_DOUBLE_EQ(h.device.PeakFlops(DType::kF32), 67e12);
  EXPECT_DOUBLE_EQ(h.intra_host_link.bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(h.inter_host_link.bandwidth, 400e9);  // 8 x 400 Gb/s
}

TEST(ClusterPresets, ListAndLookup) {
  const auto& presets = ClusterPresets();
  ASSERT_EQ(presets.size(), 5u);
  EXPECT_STREQ(presets[0].name, "p3.16xlarge");
  EXPECT_STREQ(presets[4].name, "pcie-a100-80g");
  for (const ClusterPresetInfo& p : presets) {
    Result<Cluster> c = MakePresetCluster(p.name, 2);
    ASSERT_TRUE(c.ok()) << p.name;
    EXPECT_EQ(c.value().name, p.name);
    EXPECT_EQ(c.value().hosts, 2);
  }
  Result<Cluster> bad = MakePresetCluster("tpu-v4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown cluster preset \"tpu-v4\""), std::string::npos);
  EXPECT_NE(bad.status().message().find("dgx-h100"), std::string::npos);
  EXPECT_FALSE(MakePresetCluster("p3.16xlarge", 0).ok());
}

TEST(ClusterPresets, SpecStrings) {
  const Cluster c = MustPreset(" dgx-h100 : hosts = 2 , devices_per_host=4");
  EXPECT_EQ(c.hosts, 2);
  EXPECT_EQ(c.devices_per_host, 4);
  EXPECT_EQ(MustPreset("p3").hosts, 1);

  for (const char* bad :
       {"p3.16xlarge:hosts=0", "p3.16xlarge:hosts=-1", "p3.16xlarge:hosts=", "p3.16xlarge:gpus=8",
        "p3.16xlarge:devices_per_host=16", "p3.16xlarge:hosts=2x"}) {
    Result<Cluster> r = ParseClusterSpec(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseClusterSpec("p3:gpus=8").status().message().find("unknown key \"gpus\""),
            std::string::npos);
}

TEST(ClusterJson, RoundTripAllPresets) {
  for (const ClusterPresetInfo& p : ClusterPresets()) {
    Cluster c = MakePresetCluster(p.name, 3).value();
    c.calibration.matmul_efficiency = 0.55;
    c.calibration.op_overhead_seconds = 7e-6;
    Result<std::string> text = WriteCluster(c);
    ASSERT_TRUE(text.ok()) << text.status().message();
    Result<Cluster> back = ReadClusterBuffer(text.value());
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_TRUE(back.value() == c) << p.name;
    // Writing again gives the same bytes (deterministic key order and number formatting).
    EXPECT_EQ(WriteCluster(back.value()).value(), text.value());
  }
}

TEST(ClusterJson, FileRoundTrip) {
  const Cluster c = MustPreset("dgx-a100:hosts=2");
  const std::string path = ::testing::TempDir() + "/alpa_cluster_test.json";
  {
    std::ofstream f(path);
    f << WriteCluster(c).value();
  }
  Result<Cluster> back = ReadClusterFile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back.value() == c);
  std::remove(path.c_str());
  Result<Cluster> missing = ReadClusterFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIo);
}

TEST(ClusterJson, HandWrittenAndPresetBased) {
  // Without a preset: f32 is required and the other dtypes default to it.
  Result<Cluster> c = ReadClusterBuffer(R"({
    "name": "lab", "hosts": 2, "devices_per_host": 4,
    "device": {"memory_bytes": 1e10, "memory_bandwidth": 5e11,
               "peak_flops": {"f32": 1e13, "f16": 8e13}},
    "intra_host_link": {"bandwidth": 5e10, "latency": 1e-5},
    "inter_host_link": {"bandwidth": 1e10, "latency": 3e-5}})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().device.memory_bytes, 10000000000);
  EXPECT_DOUBLE_EQ(c.value().device.PeakFlops(DType::kF16), 8e13);
  EXPECT_DOUBLE_EQ(c.value().device.PeakFlops(DType::kBF16), 1e13);
  EXPECT_TRUE(c.value().calibration == Calibration{});

  // A preset with overrides: only the keys given change.
  Result<Cluster> p = ReadClusterBuffer(R"({"preset": "p3.16xlarge", "hosts": 4,
    "inter_host_link": {"bandwidth": 12.5e9},
    "device": {"peak_flops": {"f32": 14e12}},
    "calibration": {"efficiency": {"matmul": 0.45}}})");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p.value().hosts, 4);
  EXPECT_DOUBLE_EQ(p.value().inter_host_link.bandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(p.value().inter_host_link.latency, 20e-6);
  EXPECT_DOUBLE_EQ(p.value().device.PeakFlops(DType::kF32), 14e12);
  EXPECT_DOUBLE_EQ(p.value().device.PeakFlops(DType::kF16), 125e12);
  EXPECT_DOUBLE_EQ(p.value().calibration.matmul_efficiency, 0.45);
  EXPECT_DOUBLE_EQ(p.value().calibration.memory_efficiency, 0.8);
  // The preset's fitted fusion keys (bench/calibration/v100-p3.json) stay.
  EXPECT_TRUE(p.value().calibration.fuse_elementwise);
  EXPECT_TRUE(p.value().calibration.fuse_attention);

  // An A100 preset's fitted keys (bench/calibration/a100-megatron-sc21.json) stay unless
  // overridden.
  Result<Cluster> unfused = ReadClusterBuffer(
      R"({"preset": "dgx-a100-80g", "hosts": 1,
          "calibration": {"fuse_elementwise": false, "fuse_attention": false}})");
  ASSERT_TRUE(unfused.ok()) << unfused.status().message();
  EXPECT_FALSE(unfused.value().calibration.fuse_elementwise);
  EXPECT_FALSE(unfused.value().calibration.fuse_attention);
  Result<Cluster> attention = ReadClusterBuffer(
      R"({"preset": "dgx-h100", "hosts": 1, "calibration": {"fuse_attention": true}})");
  ASSERT_TRUE(attention.ok()) << attention.status().message();
  EXPECT_TRUE(attention.value().calibration.fuse_attention);
  EXPECT_FALSE(attention.value().calibration.fuse_elementwise);
  Result<Cluster> wrong = ReadClusterBuffer(
      R"({"preset": "p3.16xlarge", "hosts": 1, "calibration": {"fuse_elementwise": 1}})");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("calibration.fuse_elementwise: expected true or false"),
            std::string::npos)
      << wrong.status().message();
}

// The A100 presets carry the calibration bench/fidelity.py fitted to published measurements;
// the file is its record. V100 and H100 keep the defaults.
TEST(ClusterPresets, CarryTheFittedCalibrationFiles) {
  const std::pair<const char*, const char*> fits[] = {{"dgx-a100-80g", "a100-megatron-sc21.json"},
                                                      {"dgx-a100-40g", "a100-megatron-sc21.json"},
                                                      {"pcie-a100-80g", "a100-megatron-sc21.json"},
                                                      {"p3.16xlarge", "v100-p3.json"}};
  for (const auto& [preset, file] : fits) {
    Result<Cluster> c = MakePresetCluster(preset, 1);
    ASSERT_TRUE(c.ok()) << preset;
    Result<Calibration> fitted =
        ReadCalibrationFile(std::string(ALPA_CALIBRATION_DIR) + "/" + file);
    ASSERT_TRUE(fitted.ok()) << file << ": " << fitted.status().message();
    EXPECT_TRUE(c.value().calibration == fitted.value()) << preset << " against " << file;
  }
  Result<Cluster> h100 = MakePresetCluster("dgx-h100", 1);
  ASSERT_TRUE(h100.ok());
  EXPECT_TRUE(h100.value().calibration == Calibration{});
  // The V100 fit carries both fusion keys.
  Result<Cluster> p3 = MakePresetCluster("p3.16xlarge", 1);
  ASSERT_TRUE(p3.ok());
  EXPECT_TRUE(p3.value().calibration.fuse_elementwise && p3.value().calibration.fuse_attention);
}

// Each bad document fails with `code` and a message containing `needle`.
struct BadCase {
  const char* json;
  StatusCode code;
  const char* needle;
};

TEST(ClusterJson, NicLocalityRoundTripsAndIsWrittenOnlyWhereSet) {
  Result<Cluster> c = ReadClusterBuffer(R"({"preset": "pcie-a100-80g", "hosts": 2,
      "nic_locality": {"near_devices": [0, 1, 2, 3], "far_bandwidth": 6e9}})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().nic_locality.near_devices, std::vector<int64_t>({0, 1, 2, 3}));
  EXPECT_EQ(c.value().nic_locality.far_bandwidth, 6e9);
  EXPECT_TRUE(NearNic(c.value(), 11));  // host 1, GPU 3
  EXPECT_FALSE(NearNic(c.value(), 12));
  EXPECT_EQ(InterHostMoveBandwidth(c.value(), 0, 8), c.value().inter_host_link.bandwidth);
  EXPECT_EQ(InterHostMoveBandwidth(c.value(), 0, 12), 6e9);
  Result<std::string> text = WriteCluster(c.value());
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text.value().find("\"nic_locality\""), std::string::npos);
  Result<Cluster> back = ReadClusterBuffer(text.value());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value(), c.value());
  // A cluster without it writes no such key, and every device is near.
  Result<Cluster> plain = MakePresetCluster("pcie-a100-80g", 2);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(WriteCluster(plain.value()).value().find("nic_locality"), std::string::npos);
  EXPECT_TRUE(NearNic(plain.value(), 15));
  EXPECT_FALSE(plain.value() == c.value());
}

TEST(ClusterJson, NicsPerHostRoundTripsAndIsWrittenOnlyWhereNotOne) {
  // The DGX presets have a NIC per GPU; a file may pool them (1) or name another count.
  Result<Cluster> dgx = MakePresetCluster("dgx-h100", 2);
  ASSERT_TRUE(dgx.ok());
  EXPECT_EQ(dgx.value().nics_per_host, 8);
  Result<Cluster> pooled = ReadClusterBuffer(R"({"preset": "dgx-h100", "nics_per_host": 1})");
  ASSERT_TRUE(pooled.ok()) << pooled.status().message();
  EXPECT_EQ(pooled.value().nics_per_host, 1);
  Result<Cluster> c = ReadClusterBuffer(R"({"preset": "p3.16xlarge", "hosts": 2,
      "nics_per_host": 4})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().nics_per_host, 4);
  for (const Cluster& cluster : {dgx.value(), pooled.value(), c.value()}) {
    Result<std::string> text = WriteCluster(cluster);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(text.value().find("\"nics_per_host\"") != std::string::npos,
              cluster.nics_per_host != 1)
        << text.value();
    Result<Cluster> back = ReadClusterBuffer(text.value());
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back.value(), cluster);
  }
  EXPECT_FALSE(dgx.value() == pooled.value());
  // Fewer devices per host keep the NICs: 3 GPUs, a group of NICs each.
  Result<Cluster> half = ParseClusterSpec("dgx-h100:hosts=2,devices_per_host=3");
  ASSERT_TRUE(half.ok()) << half.status().message();
  EXPECT_EQ(NicGroups(half.value()), 3);
}

TEST(ClusterJson, ErrorsNameTheField) {
  const BadCase cases[] = {
      {R"({"preset": "p3", "hosts": 0})", StatusCode::kInvalidArgument,
       "cluster: hosts must be >= 1"},
      {R"({"preset": "p3", "device": {"memory_bytes": 0}})", StatusCode::kInvalidArgument,
       "cluster.device.memory_bytes: must be >= 1"},
      {R"({"preset": "p3", "device": {"memory_bytes": "16G"}})", StatusCode::kParse,
       "cluster.device.memory_bytes: expected a number"},
      {R"({"preset": "p3", "device": {"memory_bytes": 1.5}})", StatusCode::kParse,
       "cluster.device.memory_bytes: expected an integer"},
      {R"({"preset": "p3", "intra_host_link": {"bandwidth": -1}})", StatusCode::kInvalidArgument,
       "cluster.intra_host_link.bandwidth: must be a positive"},
      {R"({"preset": "p3", "inter_host_link": {"latency": -1e-6}})", StatusCode::kInvalidArgument,
       "cluster.inter_host_link.latency"},
      {R"({"preset": "p3", "device": {"peak_flops": {"f16": 0}}})", StatusCode::kInvalidArgument,
       "cluster.device.peak_flops.f16"},
      {R"({"preset": "p3", "device": {"peak_flops": {"fp16": 1e12}}})", StatusCode::kParse,
       "cluster.device.peak_flops: unknown key \"fp16\""},
      {R"({"preset": "p3", "hostz": 2})", StatusCode::kParse, "cluster: unknown key \"hostz\""},
      {R"({"preset": "tpu"})", StatusCode::kParse, "cluster.preset: unknown cluster preset"},
      {R"({"preset": "p3", "calibration": {"efficiency": {"matmul": 1.5}}})",
       StatusCode::kInvalidArgument, "cluster.calibration.efficiency.matmul: must be in (0, 1]"},
      {R"({"format": "alpa", "preset": "p3"})", StatusCode::kParse,
       "cluster.format: expected \"alpa-cluster\""},
      {R"({"version": 2, "preset": "p3"})", StatusCode::kParse, "unsupported version 2"},
      {R"({"hosts": 1, "devices_per_host": 8})", StatusCode::kParse,
       "cluster: missing required key \"device\""},
      {R"({"devices_per_host": 8, "device": {"memory_bytes": 1, "memory_bandwidth": 1,
           "peak_flops": {"f16": 1}}})",
       StatusCode::kParse, "cluster.device.peak_flops: missing required key \"f32\""},
      {R"({"preset": "p3", "nic_locality": {"near_devices": [0, 8], "far_bandwidth": 1e9}})",
       StatusCode::kInvalidArgument,
       "cluster.nic_locality.near_devices[1]: 8 is not a device of a host (0..7)"},
      {R"({"preset": "p3", "nic_locality": {"near_devices": [2, 1], "far_bandwidth": 1e9}})",
       StatusCode::kInvalidArgument, "cluster.nic_locality.near_devices[1]: 1 is not above"},
      {R"({"preset": "p3", "nic_locality": {"near_devices": [0], "far_bandwidth": 0}})",
       StatusCode::kInvalidArgument, "cluster.nic_locality.far_bandwidth: must be a positive"},
      {R"({"preset": "p3", "nic_locality": {"near_devices": [0]}})", StatusCode::kParse,
       "cluster.nic_locality: missing required key \"far_bandwidth\""},
      {R"({"preset": "p3", "nics_per_host": 0})", StatusCode::kInvalidArgument,
       "cluster.nics_per_host: must be in [1, 4096] (got 0)"},
      {R"({"preset": "p3", "nics_per_host": 5000})", StatusCode::kInvalidArgument,
       "cluster.nics_per_host: must be in [1, 4096] (got 5000)"},
      {R"({"preset": "p3", "nics_per_host": 2.5})", StatusCode::kParse, "cluster.nics_per_host:"},
      {R"({"preset": "p3", "nic_locality": {"near_devices": [], "far_bandwidth": 1e9}})",
       StatusCode::kInvalidArgument, "cluster.nic_locality.far_bandwidth: set (1000000000)"},
      {R"({"preset": "p3", "nic_locality": {"near_devices": ["0"], "far_bandwidth": 1e9}})",
       StatusCode::kParse, "cluster.nic_locality.near_devices[0]: expected"},
      {R"({"preset": "p3", "nic_locality": {"near_devices": 0, "far_bandwidth": 1e9}})",
       StatusCode::kParse, "cluster.nic_locality.near_devices: expected an array"},
      {R"({"preset": "p3", "nic_locality": {"near": [0], "far_bandwidth": 1e9}})",
       StatusCode::kParse, "cluster.nic_locality: missing required key \"near_devices\""},
      {R"([1, 2])", StatusCode::kParse, "cluster: expected an object"},
      {R"({"preset": )", StatusCode::kParse, "cluster: invalid JSON"},
  };
  for (const BadCase& bc : cases) {
    Result<Cluster> r = ReadClusterBuffer(bc.json);
    ASSERT_FALSE(r.ok()) << bc.json;
    EXPECT_EQ(r.status().code(), bc.code) << bc.json << " -> " << r.status().message();
    EXPECT_NE(r.status().message().find(bc.needle), std::string::npos)
        << bc.json << " -> " << r.status().message();
  }
  // Deep nesting is refused before parsing.
  EXPECT_EQ(ReadClusterBuffer(std::string(100, '[')).status().code(), StatusCode::kParse);
}

// ---- Logical meshes --------------------------------------------------------------------------

TEST(LogicalMesh, SingleHostUsesNvlink) {
  const Cluster c = MustPreset("p3.16xlarge:hosts=2");
  // (2, 4) on one host of the hybrid cube mesh (nvlink_graph_test has the other shapes): dim 0
  // pairs GPUs across the two quads, two of them over a single NVLink (25 GB/s); dim 1 rings over
  // a fully connected quad (100 GB/s); the flattened mesh over all eight (150 GB/s).
  Result<LogicalMesh> m = DeriveLogicalMesh(c, {1, 8}, {2, 4});
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_DOUBLE_EQ(m.value().alpha[k], 5e-6);
    EXPECT_FALSE(m.value().crosses_hosts[k]);
  }
  EXPECT_DOUBLE_EQ(m.value().beta[0], 1.0 / 25e9);
  EXPECT_DOUBLE_EQ(m.value().beta[1], 1.0 / 100e9);
  EXPECT_DOUBLE_EQ(m.value().flat_beta, 1.0 / 150e9);
  // A 1 x 4 slice of one host, 1-D: the quad's rings.
  Result<LogicalMesh> slice = DeriveLogicalMesh(c, {1, 4}, {4});
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(slice.value().ndim(), 1);
  EXPECT_DOUBLE_EQ(slice.value().beta[0], 1.0 / 100e9);
}

TEST(LogicalMesh, DimAcrossHostsUsesTheSlowLinkShared) {
  const Cluster c = MustPreset("p3.16xlarge:hosts=2");
  // (2, 8) on 2 hosts: dim 0 = 8 groups of 2 devices, one per host, all sharing the 25 Gbps
  // NIC; dim 1 stays in a host.
  Result<LogicalMesh> m = DeriveLogicalMesh(c, {2, 8}, {2, 8});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m.value().crosses_hosts[0]);
  EXPECT_FALSE(m.value().crosses_hosts[1]);
  EXPECT_DOUBLE_EQ(m.value().alpha[0], 20e-6);
  EXPECT_DOUBLE_EQ(m.value().beta[0], 8.0 / 3.125e9);
  EXPECT_DOUBLE_EQ(m.value().alpha[1], 5e-6);
  EXPECT_DOUBLE_EQ(m.value().beta[1], 1.0 / 150e9);
  // The flattened mesh is one ring over all 16 devices: the whole NIC.
  EXPECT_DOUBLE_EQ(m.value().flat_alpha, 20e-6);
  EXPECT_DOUBLE_EQ(m.value().flat_beta, 1.0 / 3.125e9);

  // (4, 4) on 2 hosts: dim 1 groups of 4 stay inside a host; dim 0 groups {j, j+4, j+8, j+12}
  // touch both hosts (2 devices each): 4 groups share a NIC.
  Result<LogicalMesh> q = DeriveLogicalMesh(c, {2, 8}, {4, 4});
  ASSERT_TRUE(q.ok());
  EXPECT_DOUBLE_EQ(q.value().beta[0], 4.0 / 3.125e9);
  EXPECT_DOUBLE_EQ(q.value().beta[1], 1.0 / 100e9);  // a quad of the hybrid cube mesh

  // (1, 16): the single dim-1 group spans both hosts: g = 1; dim 0 has one device.
  Result<LogicalMesh> r = DeriveLogicalMesh(c, {2, 8}, {1, 16});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().crosses_hosts[1]);
  EXPECT_FALSE(r.value().crosses_hosts[0]);
  EXPECT_DOUBLE_EQ(r.value().beta[1], 1.0 / 3.125e9);

  // On DGX H100 the NICs (400 GB/s per host) outrun NVLink's 450 GB/s only when not shared:
  // a single spanning ring is capped by min(NVLink, NIC).
  const Cluster h = MustPreset("dgx-h100:hosts=2");
  Result<LogicalMesh> hm = DeriveLogicalMesh(h, {2, 8}, {16});
  ASSERT_TRUE(hm.ok());
  EXPECT_DOUBLE_EQ(hm.value().beta[0], 1.0 / 400e9);
  Result<LogicalMesh> hm2 = DeriveLogicalMesh(h, {2, 8}, {2, 8});
  ASSERT_TRUE(hm2.ok());
  EXPECT_DOUBLE_EQ(hm2.value().beta[0], 8.0 / 400e9);
}

TEST(LogicalMesh, Errors) {
  const Cluster c = MustPreset("p3.16xlarge:hosts=2");
  EXPECT_FALSE(DeriveLogicalMesh(c, {3, 8}, {24}).ok());   // more hosts than the cluster
  EXPECT_FALSE(DeriveLogicalMesh(c, {1, 16}, {16}).ok());  // more devices than a host
  Result<LogicalMesh> r = DeriveLogicalMesh(c, {2, 8}, {4, 8});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(4, 8) has 32 devices but the submesh (2 x 8) has 16"),
            std::string::npos);
  EXPECT_FALSE(DeriveLogicalMesh(c, {1, 8}, {2, 2, 2}).ok());
  EXPECT_FALSE(DeriveLogicalMesh(c, {1, 8}, {0, 8}).ok());
  EXPECT_FALSE(DeriveLogicalMesh(c, {1, 8}, {}).ok());
}

TEST(LogicalMesh, AbstractUnits) {
  Result<LogicalMesh> m = AbstractLogicalMesh({2, 2});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.value().alpha, (std::vector<double>{1, 1}));
  EXPECT_EQ(m.value().beta, (std::vector<double>{1, 0.1}));
  EXPECT_DOUBLE_EQ(m.value().flat_alpha, 1);
  EXPECT_DOUBLE_EQ(m.value().flat_beta, 1);
  Result<LogicalMesh> one = AbstractLogicalMesh({4});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one.value().beta, (std::vector<double>{1}));
  Result<LogicalMesh> custom = AbstractLogicalMesh({2, 4}, {0.5, 2}, {3, 0.25});
  ASSERT_TRUE(custom.ok());
  EXPECT_DOUBLE_EQ(custom.value().flat_alpha, 2);
  EXPECT_DOUBLE_EQ(custom.value().flat_beta, 3);
  EXPECT_FALSE(AbstractLogicalMesh({2, 2}, {1}, {1, 1}).ok());
  EXPECT_FALSE(AbstractLogicalMesh({2, 2}, {1, -1}, {1, 1}).ok());
}

TEST(LogicalMesh, Enumeration) {
  using Shapes = std::vector<std::vector<int64_t>>;
  // (1, 8) is (8, 1) transposed: left out.
  EXPECT_EQ(EnumerateLogicalShapes({1, 8}), (Shapes{{8, 1}, {4, 2}, {2, 4}}));
  EXPECT_EQ(EnumerateLogicalShapes({1, 2}), (Shapes{{2, 1}}));
  EXPECT_EQ(EnumerateLogicalShapes({2, 8}), (Shapes{{16, 1}, {8, 2}, {4, 4}, {2, 8}}));
  EXPECT_EQ(EnumerateLogicalShapes({1, 1}), (Shapes{{1, 1}}));
  EXPECT_EQ(EnumerateLogicalShapes({3, 6}), (Shapes{{18, 1}, {9, 2}, {6, 3}, {3, 6}}));
  // Every enumerated shape derives on a cluster that holds the submesh.
  const Cluster c = MustPreset("p3.16xlarge:hosts=4");
  for (const auto& shape : EnumerateLogicalShapes({4, 8})) {
    EXPECT_TRUE(DeriveLogicalMesh(c, {4, 8}, shape).ok()) << MeshShapeString(shape);
  }
}

}  // namespace
}  // namespace alpa
