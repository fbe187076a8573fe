// The physical cluster: hosts x devices-per-host of identical devices, a link inside a host and a
// link between hosts, plus the efficiency factors (calibration) the roofline cost model applies;
// or pools of such hosts of different device types (Cluster::pools, MakeMixedCluster).
//
// Units are SI throughout: bytes, bytes per second, seconds, FLOP/s. Link semantics (these decide
// what alpha and beta mean, see logical_mesh.h):
//   intra_host_link.bandwidth  the bytes per second ONE device can push to its ring neighbour in
//                              its host at the same time as every other device does (NVLink
//                              one-direction bandwidth: 300 GB/s "bidirectional" -> 150 GB/s).
//   inter_host_link.bandwidth  the aggregate bytes per second ONE host can send to other hosts
//                              (sum over its NICs, one direction). All devices of a host that talk
//                              across hosts at once share it.
//   latency                    the fixed cost of one collective step on that link (alpha).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/util/dtype.h"
#include "core/util/status.h"

namespace alpa {

struct DeviceSpec {
  std::string name;  // e.g. "V100-SXM2-16GB"; informational
  // Peak FLOP/s per dtype, indexed by static_cast<int32_t>(DType). Matmul-class peaks (tensor
  // cores where the dtype has them); integer entries count integer ops.
  std::array<double, kNumDTypes> peak_flops{};
  int64_t memory_bytes = 0;     // device memory (HBM)
  double memory_bandwidth = 0;  // bytes per second (HBM)

  double PeakFlops(DType dtype) const { return peak_flops[static_cast<size_t>(dtype)]; }
};

struct LinkSpec {
  double bandwidth = 0;  // bytes per second, see the top of this file
  double latency = 0;    // seconds
};

// Efficiency factors of the roofline model (cost_model.h): achievable / peak. Defaults are
// typical of cuBLAS / cuDNN on large problems and of streaming kernels on HBM; a calibration file
// (docs/cluster-format.md) replaces them with measured values.
struct Calibration {
  double matmul_efficiency = 0.6;
  double convolution_efficiency = 0.6;
  // Elementwise and other ops do not run on tensor cores while peak_flops holds tensor-core
  // peaks: V100 f16 vector math is 31.4 of 125 TFLOP/s, hence 0.25. Such ops are almost always
  // memory-bound anyway.
  double elementwise_efficiency = 0.25;
  double other_efficiency = 0.25;
  double memory_efficiency = 0.8;
  // Added once per op (kernel launch and framework overhead); 0 keeps the pure roofline.
  double op_overhead_seconds = 0;
  // Elementwise chains priced as fused kernels (core/ir/fusion.h): an op's memory traffic
  // counts only the results it reads or writes that are materialised. false prices every op by
  // its own operands and result.
  bool fuse_elementwise = false;
  // With fuse_elementwise: chains fused as libalpa's CUDA runner fuses them, one kernel per root
  // and a value kept in registers only where its readers are all in that kernel
  // (SingleReaderMaterializedResults); false: as a fusing compiler such as XLA does
  // (MaterializedResults). `alpa calibrate` sets it.
  bool single_reader_fusion = false;
  // Attention cores (core/ir/attention_core.h) priced as one fused kernel (Megatron's fused
  // softmax, FlashAttention): their [batch, heads, seq, seq] values cost no memory traffic.
  // Memory use still counts the values kept for the backward pass, but with
  // single_reader_fusion, where the values the runner's kernels keep on chip (the cores among
  // them) hold no memory (OpSharding::on_chip).
  bool fuse_attention = false;
  // The fraction of peak flops the CUDA runner's fused attention kernels reach (exec/cuda/
  // flash_attention.h), as `alpa calibrate` measures them; 0 (the default): not measured. With
  // fuse_attention and a value above 0, the products of an attention core are priced at it
  // instead of matmul_efficiency, and those of a masked (causal) core at half their flops: the
  // kernels skip the masked blocks (core/ir/attention_core.h AttentionProductWork).
  double attention_efficiency = 0;

  bool operator==(const Calibration& o) const;
};

// Where a host's NICs sit, when not next to every device. On a server whose NIC hangs off the
// PCIe switch of some GPUs only, the others reach it through the CPU's root complex, where
// GPUDirect RDMA does not run (NVIDIA's GPUDirect RDMA manual asks for the NIC and the GPU on one
// root complex): their traffic to other hosts is staged through host memory, at far_bandwidth.
// Empty near_devices (the default): every device reaches the NICs alike.
struct NicLocality {
  std::vector<int64_t> near_devices;  // local device indices (0 .. devices_per_host - 1), ascending
  // Bytes per second (one direction) of a far device's traffic to other hosts; > 0 when
  // near_devices is not empty. The lower of it and inter_host_link.bandwidth applies.
  double far_bandwidth = 0;

  bool empty() const { return near_devices.empty(); }
  bool operator==(const NicLocality& o) const {
    return near_devices == o.near_devices && far_bandwidth == o.far_bandwidth;
  }
};

// The NVLink graph of a host (every host of the cluster alike), for hosts whose devices are not
// all connected alike: the hybrid cube mesh of DGX-1 / p3.16xlarge, where a GPU has one or two
// NVLinks to four of the other seven and none to the rest. Empty links (the default): every
// group of a host's devices runs its collectives at intra_host_link.bandwidth (NVSwitch hosts,
// or a uniform model). With links, a ring collective over a group of a host's devices gets the
// rings NCCL can pack over the group's direct links (nvlink_graph.h), or PCIe (pcie_bandwidth)
// where no ring of direct links covers the group, at most intra_host_link.bandwidth.
struct NvlinkGraph {
  struct Link {
    int64_t a = 0, b = 0;  // GPUs of a host (0 .. devices_per_host - 1), a != b
    double bandwidth = 0;  // bytes per second, one direction, all NVLinks between the two
    bool operator==(const Link& o) const {
      return a == o.a && b == o.b && bandwidth == o.bandwidth;
    }
  };
  std::vector<Link> links;  // at most one per pair of GPUs
  // Bytes per second (one direction) between two GPUs of a host with no NVLink path between
  // them (PCIe, through the CPUs); > 0 when links are given.
  double pcie_bandwidth = 0;
  // The GPU each of the planner's local device indices runs on (a permutation of 0 ..
  // devices_per_host - 1; empty: the identity). The planner places a submesh of m devices per
  // host on an aligned block of m local indices, so an order whose aligned blocks are well
  // connected (BestDeviceOrder) makes small submeshes fast; a runtime binds local index l to
  // GPU device_order[l].
  std::vector<int64_t> device_order;

  bool empty() const { return links.empty(); }
  // Equal links, PCIe bandwidth and order (an empty order equals the identity).
  bool operator==(const NvlinkGraph& o) const;
};

// The PCIe switches of a host whose GPUs talk over PCIe (no NVLink): which GPUs share a switch,
// how fast a switch reaches its CPU, and which CPU socket each switch hangs off (pcie_tree.h).
// GPUs under one switch talk at intra_host_link.bandwidth (their own links); traffic between
// switches crosses each switch's uplink, and between sockets the socket link, shared by the
// rings and moves that cross it. Empty (the default): every pair at intra_host_link.bandwidth.
struct PcieTree {
  std::vector<std::vector<int64_t>> switches;  // local GPU indices; every GPU in exactly one
  double uplink_bandwidth = 0;                 // bytes per second, one direction, switch <-> CPU
  std::vector<int64_t> switch_sockets;         // per switch its CPU socket; empty: all on 0
  double socket_bandwidth = 0;  // bytes per second, one direction, between sockets (2+ sockets)

  bool empty() const { return switches.empty(); }
  bool operator==(const PcieTree& o) const {
    return switches == o.switches && uplink_bandwidth == o.uplink_bandwidth &&
           switch_sockets == o.switch_sockets && socket_bandwidth == o.socket_bandwidth;
  }
};

struct Cluster {
  std::string name;  // preset name or the file's "name"
  int64_t hosts = 0;
  int64_t devices_per_host = 0;
  DeviceSpec device;
  LinkSpec intra_host_link;
  LinkSpec inter_host_link;
  // The NICs of a host; inter_host_link.bandwidth is their sum. The devices reach other hosts
  // through NIC groups: G = min(nics_per_host, devices_per_host) groups of consecutive devices
  // (device l in group l * G / devices_per_host), each with its share of the NICs, at
  // inter_host_link.bandwidth / G (NicGroupBandwidth). 1: every device shares one pool of the
  // host's whole bandwidth (the default, and the p3.16xlarge and PCIe presets' single NIC). The
  // DGX presets have a NIC per GPU (8): one GPU alone reaches other hosts at an eighth of the
  // host's bandwidth. 1 .. kMaxDevicesPerHost.
  int64_t nics_per_host = 1;
  NicLocality nic_locality;
  NvlinkGraph nvlink;
  PcieTree pcie;  // a host has an NVLink graph or a PCIe tree, not both
  Calibration calibration;
  // Mixed GPU types (docs/cluster-format.md "Mixed clusters"): the cluster is these pools of
  // identical hosts, numbered pool by pool (pool 0's hosts first, then pool 1's, ...). Each pool
  // is a cluster of one device type with no pools of its own and no nic_locality, all of one
  // devices_per_host. The fields above are then the merged view MakeMixedCluster derives (hosts
  // summed, the least device memory, the lowest link bandwidths and highest latencies, no NVLink
  // graph or PCIe tree): what prices one device or one host's links reads its pool (HostCluster).
  // Empty: one device type.
  std::vector<Cluster> pools;

  int64_t num_devices() const { return hosts * devices_per_host; }
  bool mixed() const { return !pools.empty(); }
};

// The cluster of `pools` (2 .. kMaxPools; each valid, without pools or nic_locality of its own,
// all of one devices_per_host, kMaxHosts hosts and kMaxDevices devices at most in all), hosts
// numbered pool by pool, with the merged view of Cluster::pools: name `name` (empty: the pools'
// names joined by " + "), hosts summed, devices_per_host the pools', device the first pool's with
// memory_bytes the least of any pool's, each link the lowest bandwidth and the highest latency of
// any pool, nics_per_host the least, no nic_locality, calibration the first pool's. Errors
// (InvalidArgument) name the pool ("cluster.pools[1]: devices_per_host is 4, pool 0's is 8").
Result<Cluster> MakeMixedCluster(std::vector<Cluster> pools, std::string name = "");
// The pool host `host` belongs to: 0 without pools; a host past the last (or below 0) counts as
// the last pool's (the first's).
int32_t PoolOfHost(const Cluster& cluster, int64_t host);
// The first host of pool `pool`; pool == the number of pools (1 without pools) gives `hosts`,
// the end of the last pool, so that pool p's hosts are [PoolFirstHost(p), PoolFirstHost(p + 1)).
// Pools out of that range are clamped to it.
int64_t PoolFirstHost(const Cluster& cluster, int32_t pool);
// The cluster of one device type that prices `host`'s devices and links: its pool
// (PoolOfHost), or `cluster` itself when it has no pools.
const Cluster& HostCluster(const Cluster& cluster, int64_t host);
// The cluster that prices a group of devices on one pool (physical ids; a stage's): the
// HostCluster of the first one's host (host 0 when empty).
const Cluster& DevicesCluster(const Cluster& cluster, const std::vector<int64_t>& devices);

// Whether `device` (a global id, host * devices_per_host + local index) reaches its host's NICs
// at inter_host_link.bandwidth: every device does unless nic_locality says otherwise.
bool NearNic(const Cluster& cluster, int64_t device);
// The NIC groups of a host (see Cluster::nics_per_host), the group of `device` (a global id; its
// local index * groups / devices_per_host) and the bytes per second of one group.
int64_t NicGroups(const Cluster& cluster);
int64_t NicGroupOf(const Cluster& cluster, int64_t device);
double NicGroupBandwidth(const Cluster& cluster);
// The bytes per second of a move from `src_device` to `dst_device` on different hosts: its NIC
// groups' bandwidth, or the far bandwidth where either end is far from its NICs (the lower).
// In a mixed cluster, the lower of the two ends' pools' NIC group bandwidths.
double InterHostMoveBandwidth(const Cluster& cluster, int64_t src_device, int64_t dst_device);

// Bounds that keep every derived count far from int64 overflow and mesh enumeration cheap.
inline constexpr int64_t kMaxHosts = int64_t{1} << 20;
inline constexpr int64_t kMaxDevicesPerHost = int64_t{1} << 12;
inline constexpr int64_t kMaxDevices = int64_t{1} << 24;
// Pools of a mixed cluster.
inline constexpr int64_t kMaxPools = 64;

// Checks every field ("cluster: hosts must be >= 1 (got 0)", "cluster.device.memory_bytes: ...",
// "cluster.nic_locality.near_devices[2]: ..."; `where` replaces the leading "cluster"). A mixed
// cluster: every pool ("cluster.pools[1].device.memory_bytes: ...", the rules of
// MakeMixedCluster) and that the merged fields are those MakeMixedCluster derives from the pools
// (the name may be any).
Status ValidateCluster(const Cluster& cluster, const std::string& where = "cluster");
Status ValidateCalibration(const Calibration& calibration,
                           const std::string& where = "calibration");

// ---- Presets (cluster_presets.cc)
// ----------------------------------------------------------------
struct ClusterPresetInfo {
  const char* name;         // canonical name, e.g. "p3.16xlarge"
  const char* aliases;      // comma-separated other names accepted, e.g. "p3,aws-p3.16xlarge"
  const char* description;  // one line
};
// Every preset, in a fixed order.
const std::vector<ClusterPresetInfo>& ClusterPresets();
// The preset `name` (canonical or alias, case-insensitive) with `hosts` hosts.
Result<Cluster> MakePresetCluster(std::string_view name, int64_t hosts = 1);
// A spec string: "<preset>[:key=value[,key=value...]]" with keys hosts (>= 1, default 1) and
// devices_per_host (1..the preset's count; fewer devices per host, same links),
// e.g. "p3.16xlarge:hosts=8" or "dgx-h100:hosts=2,devices_per_host=4". Specs joined by '+'
// ("dgx-a100-80g:hosts=2+p3.16xlarge:hosts=2", at most kMaxPools) give the mixed cluster of
// them (MakeMixedCluster, the names joined); errors name the part ('part 1 "p3:hosts=x": ...',
// counted from 0 as the pools are).
Result<Cluster> ParseClusterSpec(std::string_view spec);

// ---- JSON (cluster_json.cc; docs/cluster-format.md)
// ----------------------------------------------
Result<Cluster> ClusterFromJson(const nlohmann::json& json);
Result<Cluster> ReadClusterBuffer(std::string_view bytes);
Result<Cluster> ReadClusterFile(const std::string& path);
// Writes every field (so that reading it back gives an equal cluster), pretty-printed.
Result<std::string> WriteCluster(const Cluster& cluster);
nlohmann::json ClusterToJson(const Cluster& cluster);

// Calibration files: {"format": "alpa-calibration", "version": 1, "efficiency": {...},
// "op_overhead_seconds": ...}. Keys left out keep the values of `base`.
Result<Calibration> CalibrationFromJson(const nlohmann::json& json, const Calibration& base = {},
                                        const std::string& where = "calibration");
Result<Calibration> ReadCalibrationBuffer(std::string_view bytes, const Calibration& base = {});
Result<Calibration> ReadCalibrationFile(const std::string& path, const Calibration& base = {});
std::string WriteCalibration(const Calibration& calibration);
nlohmann::json CalibrationToJson(const Calibration& calibration);
// `cluster` with its calibration overridden by the calibration document `bytes`, keys left out
// keeping the cluster's values. A mixed cluster: every pool's calibration, each on top of its own
// values (a V100 pool keeps its matmul efficiency where the file sets only the overhead), and
// the merged view rebuilt (MakeMixedCluster, the name kept). Errors as ReadCalibrationBuffer's.
Result<Cluster> ApplyCalibrationBuffer(const Cluster& cluster, std::string_view bytes);

bool operator==(const DeviceSpec& a, const DeviceSpec& b);
bool operator==(const LinkSpec& a, const LinkSpec& b);
bool operator==(const Cluster& a, const Cluster& b);

}  // namespace alpa
