// Built-in cluster presets and the "<preset>:hosts=N" spec strings (joined by '+': mixed).
//
// Sources of the numbers (vendor datasheets; "GB" = 1e9 bytes, memory sizes are GiB as the
// devices report them):
//   V100 SXM2 16 GB   NVIDIA Tesla V100 datasheet (2018): FP64 7.8, FP32 15.7, tensor (FP16)
//                     125 TFLOP/s; HBM2 900 GB/s; NVLink2 300 GB/s per GPU (6 links x 25 GB/s
//                     each way = 150 GB/s one direction).
//   p3.16xlarge       AWS EC2 P3 page: 8 x V100 16 GB, NVLink (hybrid cube mesh), 25 Gbps network
//                     = 3.125 GB/s per host. nccl-tests measure ~130 GB/s bus bandwidth for
//                     all-reduce inside a p3 host; we keep the nominal 150 GB/s (a cluster file can
//                     lower it).
//   A100 SXM4         NVIDIA A100 datasheet: FP64 9.7 (tensor 19.5), FP32 19.5, TF32 156,
//                     BF16/FP16 312, INT8 624 TOP/s; 80 GB: 2039 GB/s, 40 GB: 1555 GB/s;
//                     NVLink3 600 GB/s per GPU (300 GB/s one direction).
//   DGX A100          DGX A100 user guide: 8 x A100, NVSwitch, 8 x 200 Gb/s HDR InfiniBand for
//                     compute = 200 GB/s per host.
//   H100 SXM5         NVIDIA H100 datasheet: FP64 34 (tensor 67), FP32 67, TF32 495,
//                     BF16/FP16 989 (dense), INT8 1979 TOP/s; 80 GB HBM3 3.35 TB/s; NVLink4
//                     900 GB/s per GPU (450 GB/s one direction).
//   A100 PCIe 80 GB   NVIDIA A100 PCIe datasheet: the SXM4 part's rates (BF16/FP16 312 TFLOP/s),
//                     HBM2e 1935 GB/s, no NVLink bridge in this preset: GPUs talk over PCIe
//                     Gen4 x16, 64 GB/s both ways = 32 GB/s one direction per GPU (nccl-tests
//                     reach ~20-25 GB/s bus bandwidth on such servers; a cluster file can lower
//                     it), one 200 Gb/s HDR NIC per host = 25 GB/s.
//   DGX H100          DGX H100 user guide: 8 x H100, NVSwitch, 8 x 400 Gb/s NDR InfiniBand
//                     (ConnectX-7) = 400 GB/s per host.
// Calibration (the roofline's efficiencies, cluster.h), fitted to published throughput by
// bench/fidelity*.py (docs/cluster-format.md "Calibrations fitted to published measurements"):
//   A100 (dgx-a100-*, pcie-a100-80g) bench/calibration/a100-megatron-sc21.json: matmul 0.728
//                     with fused elementwise chains (Megatron-LM SC'21 Table 1, ten rows).
//   V100 (p3.16xlarge) bench/calibration/v100-p3.json: matmul 0.693 with fused elementwise
//                     chains and fused attention (NVIDIA ADLR's Megatron-LM v1.0 times on one
//                     and four V100s, Alpa's GPT-39B on 64).
//   H100 keeps the defaults: no published end-to-end measurement is fitted yet.
// Choices: f32 is strict IEEE FP32 (no TF32; set 156e12 / 495e12 in a cluster file for TF32
// matmuls). f64 uses the FP64 tensor-core rate where there is one (matmul-class peak). V100 has no
// bf16 hardware: XLA computes it in f32, so bf16 gets the f32 rate. Integer and pred rates are
// rough (INT32 units; s64 at the f64 rate); they only matter for index arithmetic. Latencies:
// ~5 us for an NVLink collective step, ~10 us for InfiniBand, ~20 us for AWS TCP.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "core/cluster/cluster.h"
#include "core/cluster/nvlink_graph.h"
#include "core/cluster/pcie_tree.h"

namespace alpa {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// peak_flops in DType order: f32, f16, bf16, f64, s8, s32, s64, pred.
DeviceSpec Device(const char* name, std::array<double, kNumDTypes> peaks, int64_t memory,
                  double bandwidth) {
  DeviceSpec d;
  d.name = name;
  d.peak_flops = peaks;
  d.memory_bytes = memory;
  d.memory_bandwidth = bandwidth;
  return d;
}

// The hybrid cube mesh of a p3.16xlarge / DGX-1 (V100): `nvidia-smi topo -m` lists one or two
// NVLinks (NV1 / NV2) between each GPU and four others, none to the remaining three; 25 GB/s
// per NVLink and direction, 10 GB/s for PCIe through the CPUs (Apache MXNet's p3.16xlarge link
// topology). The device order pairs the double links and keeps the fully connected quads (0-3,
// 4-7) together; BestDeviceOrder gives it (tested).
NvlinkGraph P3Nvlink() {
  constexpr double kNv = 25e9;
  NvlinkGraph g;
  const int64_t pairs[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                              {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                              {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
  for (const auto& p : pairs) g.links.push_back({p[0], p[1], static_cast<double>(p[2]) * kNv});
  g.pcie_bandwidth = 10e9;
  g.device_order = {0, 3, 1, 2, 4, 7, 5, 6};
  return g;
}

Cluster P3() {
  Cluster c;
  c.name = "p3.16xlarge";
  c.devices_per_host = 8;
  c.device = Device("V100-SXM2-16GB",
                    {15.7e12, 125e12, 15.7e12, 7.8e12, 62.8e12, 15.7e12, 7.8e12, 15.7e12},
                    16 * kGiB, 900e9);
  c.intra_host_link = {150e9, 5e-6};
  c.inter_host_link = {25e9 / 8, 20e-6};
  c.nvlink = P3Nvlink();
  c.calibration.matmul_efficiency = 0.693;
  c.calibration.fuse_elementwise = true;
  c.calibration.fuse_attention = true;
  return c;
}

DeviceSpec A100(const char* name, int64_t memory, double bandwidth) {
  return Device(name, {19.5e12, 312e12, 312e12, 19.5e12, 624e12, 19.5e12, 9.7e12, 19.5e12}, memory,
                bandwidth);
}

Cluster DgxA100_80() {
  Cluster c;
  c.name = "dgx-a100-80g";
  c.devices_per_host = 8;
  c.device = A100("A100-SXM4-80GB", 80 * kGiB, 2039e9);
  c.intra_host_link = {300e9, 5e-6};
  c.inter_host_link = {8 * 200e9 / 8, 10e-6};
  c.nics_per_host = 8;  // one HDR NIC per GPU
  c.calibration.matmul_efficiency = 0.728;
  c.calibration.fuse_elementwise = true;
  return c;
}

Cluster DgxA100_40() {
  Cluster c = DgxA100_80();
  c.name = "dgx-a100-40g";
  c.device = A100("A100-SXM4-40GB", 40 * kGiB, 1555e9);
  return c;
}

// An 8-GPU server without NVLink: every GPU pair goes through PCIe (issue 20's PCIe-only case).
Cluster PcieA100() {
  Cluster c;
  c.name = "pcie-a100-80g";
  c.devices_per_host = 8;
  c.device = A100("A100-PCIe-80GB", 80 * kGiB, 1935e9);
  c.intra_host_link = {32e9, 10e-6};
  c.inter_host_link = {200e9 / 8, 10e-6};
  // Four PCIe Gen4 switches of two GPUs each under one CPU root complex (the layout of 8-GPU
  // PCIe servers built for peer-to-peer traffic, e.g. Supermicro's single-root 4029GP-TRT2):
  // GPUs of a switch talk at their x16 links, other pairs through the switches' x16 uplinks.
  c.pcie.switches = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  c.pcie.uplink_bandwidth = 32e9;
  c.calibration = DgxA100_80().calibration;  // the same chip
  return c;
}

Cluster DgxH100() {
  Cluster c;
  c.name = "dgx-h100";
  c.devices_per_host = 8;
  c.device =
      Device("H100-SXM5-80GB", {67e12, 989e12, 989e12, 67e12, 1979e12, 33.5e12, 34e12, 33.5e12},
             80 * kGiB, 3350e9);
  c.intra_host_link = {450e9, 5e-6};
  c.inter_host_link = {8 * 400e9 / 8, 10e-6};
  c.nics_per_host = 8;  // one NDR NIC per GPU
  return c;
}

struct PresetEntry {
  ClusterPresetInfo info;
  Cluster (*make)();
};

const std::vector<PresetEntry>& Entries() {
  static const std::vector<PresetEntry> kEntries = {
      {{"p3.16xlarge", "p3,aws-p3.16xlarge,v100",
        "AWS p3.16xlarge: 8 x V100 16 GB, NVLink2, 25 Gbps between hosts (Alpa's testbed)"},
       &P3},
      {{"dgx-a100-80g", "dgx-a100,a100,dgx-a100-80gb,a100-80g",
        "NVIDIA DGX A100: 8 x A100 80 GB, NVLink3/NVSwitch, 8 x 200 Gb/s HDR InfiniBand"},
       &DgxA100_80},
      {{"dgx-a100-40g", "dgx-a100-40gb,a100-40g",
        "NVIDIA DGX A100: 8 x A100 40 GB, NVLink3/NVSwitch, 8 x 200 Gb/s HDR InfiniBand"},
       &DgxA100_40},
      {{"dgx-h100", "h100,dgx-h100-80g,dgx-h100-80gb",
        "NVIDIA DGX H100: 8 x H100 SXM 80 GB, NVLink4/NVSwitch, 8 x 400 Gb/s NDR InfiniBand"},
       &DgxH100},
      {{"pcie-a100-80g", "pcie-a100,a100-pcie",
        "8 x A100 PCIe 80 GB without NVLink (PCIe Gen4 x16 between GPUs), 200 Gb/s per host"},
       &PcieA100},
  };
  return kEntries;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool MatchesPreset(const ClusterPresetInfo& info, const std::string& lowered) {
  if (lowered == info.name) return true;
  std::string_view aliases = info.aliases;
  while (!aliases.empty()) {
    size_t comma = aliases.find(',');
    if (aliases.substr(0, comma) == lowered) return true;
    if (comma == std::string_view::npos) break;
    aliases.remove_prefix(comma + 1);
  }
  return false;
}

std::string PresetNameList() {
  std::string names;
  for (const PresetEntry& e : Entries()) {
    if (!names.empty()) names += ", ";
    names += e.info.name;
  }
  return names;
}

// A decimal integer in [1, 2^62]; nullopt-like -1 on anything else.
int64_t ParsePositive(const std::string& text) {
  if (text.empty() || text.size() > 18) return -1;
  int64_t v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return -1;
    v = v * 10 + (ch - '0');
  }
  return v >= 1 ? v : -1;
}

// One preset's spec ("p3.16xlarge:hosts=2", no '+').
Result<Cluster> ParsePresetSpec(std::string_view spec) {
  const size_t colon = spec.find(':');
  int64_t hosts = 1;
  int64_t devices_per_host = -1;
  if (colon != std::string_view::npos) {
    std::string_view rest = spec.substr(colon + 1);
    while (true) {
      const size_t comma = rest.find(',');
      const std::string item = Trim(rest.substr(0, comma));
      const size_t eq = item.find('=');
      const std::string key = eq == std::string::npos ? item : Trim(item.substr(0, eq));
      const std::string value = eq == std::string::npos ? "" : Trim(item.substr(eq + 1));
      const int64_t v = ParsePositive(value);
      if (key != "hosts" && key != "devices_per_host") {
        return InvalidArgument("cluster spec \"" + std::string(spec) + "\": unknown key \"" + key +
                               "\" (expected hosts=N or devices_per_host=N)");
      }
      if (v < 0) {
        return InvalidArgument("cluster spec \"" + std::string(spec) + "\": " + key +
                               " must be a positive integer (got \"" + value + "\")");
      }
      (key == "hosts" ? hosts : devices_per_host) = v;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  Result<Cluster> c = MakePresetCluster(spec.substr(0, colon), hosts);
  if (!c.ok()) return c.status();
  if (devices_per_host > 0) {
    if (devices_per_host > c.value().devices_per_host) {
      return InvalidArgument("cluster spec \"" + std::string(spec) + "\": devices_per_host " +
                             std::to_string(devices_per_host) + " exceeds the preset's " +
                             std::to_string(c.value().devices_per_host));
    }
    // Fewer devices: the first ones of the preset's device order, with their links.
    c.value().nvlink =
        ResizedHostGraph(c.value().nvlink, c.value().devices_per_host, devices_per_host);
    c.value().pcie = ResizedHostTree(c.value().pcie, c.value().devices_per_host, devices_per_host);
    c.value().devices_per_host = devices_per_host;
  }
  return c;
}

}  // namespace

const std::vector<ClusterPresetInfo>& ClusterPresets() {
  static const std::vector<ClusterPresetInfo> kInfos = [] {
    std::vector<ClusterPresetInfo> infos;
    for (const PresetEntry& e : Entries()) infos.push_back(e.info);
    return infos;
  }();
  return kInfos;
}

Result<Cluster> MakePresetCluster(std::string_view name, int64_t hosts) {
  const std::string lowered = Lower(Trim(name));
  for (const PresetEntry& e : Entries()) {
    if (!MatchesPreset(e.info, lowered)) continue;
    Cluster c = e.make();
    c.hosts = hosts;
    ALPA_RETURN_IF_ERROR(ValidateCluster(c));
    return c;
  }
  return InvalidArgument("unknown cluster preset \"" + std::string(name) +
                         "\" (known: " + PresetNameList() + ")");
}

Result<Cluster> ParseClusterSpec(std::string_view spec) {
  if (spec.find('+') == std::string_view::npos) return ParsePresetSpec(spec);
  const std::string quoted = "cluster spec \"" + std::string(spec) + "\"";
  const int64_t parts = 1 + std::count(spec.begin(), spec.end(), '+');
  if (parts > kMaxPools) {
    return InvalidArgument(quoted + ": " + std::to_string(parts) + " parts, more than " +
                           std::to_string(kMaxPools) + " pools");
  }
  std::vector<Cluster> pools;
  std::string_view rest = spec;
  while (true) {
    const size_t plus = rest.find('+');
    const std::string_view part = rest.substr(0, plus);
    Result<Cluster> pool = ParsePresetSpec(part);
    if (!pool.ok()) {
      return Status(pool.status().code(), quoted + ": part " + std::to_string(pools.size()) +
                                              " \"" + std::string(part) +
                                              "\": " + pool.status().message());
    }
    pools.push_back(std::move(pool).value());
    if (plus == std::string_view::npos) break;
    rest.remove_prefix(plus + 1);
  }
  Result<Cluster> mixed = MakeMixedCluster(std::move(pools));
  if (!mixed.ok()) return Status(mixed.status().code(), quoted + ": " + mixed.status().message());
  return mixed;
}

}  // namespace alpa
