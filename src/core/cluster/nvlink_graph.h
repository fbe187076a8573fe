// Bandwidths inside a host with an NVLink graph (Cluster::nvlink): what a ring collective over a
// group of the host's devices gets, and the device order that makes the planner's aligned
// submeshes well connected.
//
// Rings. NCCL runs a collective inside a host as rings ("channels") over direct NVLinks, each
// ring using one link direction per hop, several rings side by side. A group's bandwidth is the
// total of the directed Hamiltonian cycles over its direct links, packed greedily (the cycle
// with the widest bottleneck first, its bottleneck taken from every link it uses, until no cycle
// is left): on the hybrid cube mesh, 25 GB/s per link direction, all eight GPUs pack 6 cycles
// (150 GB/s, the host's nominal ring bandwidth), a fully connected quad 4 (100 GB/s), a
// double-linked pair 2 (50 GB/s), a single-linked pair 1 (25 GB/s). A group no direct cycle
// covers (two GPUs without a link) runs over PCIe (pcie_bandwidth), as NCCL does. The result is
// capped by intra_host_link.bandwidth. Groups of more than kMaxRingSearch devices use a bound
// instead: the least NVLink bandwidth a device has into the group.
//
// Local indices. The planner numbers a host's devices 0 .. devices_per_host - 1 and places a
// submesh of m devices per host on an aligned block of m of them; local index l is GPU
// device_order[l]. Functions taking local indices map them through the order.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster/cluster.h"

namespace alpa {

// Groups up to this size are packed exactly as above ((n - 1)! cycles); larger ones bounded.
inline constexpr int64_t kMaxRingSearch = 8;

// Checks cluster.nvlink against devices_per_host ("<where>.links[2].b: 9 is not a device of a
// host (0..7)"); an empty graph with pcie_bandwidth or device_order set is refused too.
Status ValidateNvlinkGraph(const NvlinkGraph& graph, int64_t devices_per_host,
                           const std::string& where);

// Bytes per second per device of a ring collective over the local devices `group` (distinct, in
// [0, devices_per_host)) of one host; intra_host_link.bandwidth without an NVLink graph or for a
// group of one device.
double GroupRingBandwidth(const Cluster& cluster, const std::vector<int64_t>& group);

// The least GroupRingBandwidth of the group {block + l : l in `members`} over the aligned blocks
// of `block_size` local devices (block = 0, block_size, ...) of a host: what a submesh of
// block_size devices per host gets wherever the planner places it.
double AlignedGroupRingBandwidth(const Cluster& cluster, int64_t block_size,
                                 const std::vector<int64_t>& members);

// Bytes per second of a point-to-point move between two devices of a host with an NVLink graph,
// per ordered pair of local indices (row-major, devices_per_host^2 entries, the diagonal
// intra_host_link.bandwidth): the pair's direct NVLinks; without them the best path through one
// intermediate GPU (NCCL routes sends "through NVLink via an intermediate GPU" unless
// NCCL_NVB_DISABLE is set), at the narrower of its two links; without such a path PCIe
// (pcie_bandwidth); at most intra_host_link.bandwidth. A host with a PCIe tree instead: each
// pair's PcieMoveBandwidth (pcie_tree.h). Empty without either: every move inside a host runs at
// intra_host_link.bandwidth.
std::vector<double> MovePairBandwidths(const Cluster& cluster);

// The device order (NvlinkGraph::device_order) that maximises the sum, over the logical meshes
// the planner makes inside a host (widths w = 2, 4, ... dividing devices_per_host, as (w) and as
// (d0, w / d0)), of each dimension's least ring bandwidth on any aligned block; the first such
// permutation in lexicographic order. The identity without links or for hosts of more than
// kMaxRingSearch devices.
std::vector<int64_t> BestDeviceOrder(const Cluster& cluster);

// The graph of a host of `host_devices` devices taken with `devices` per host instead (a preset
// with another devices_per_host): with fewer, the links among GPUs device_order[0 .. devices),
// renumbered so that they become GPUs 0 .. devices - 1 in that order (the identity order), and
// no graph where none of them is linked; with more, no graph (uniform links).
NvlinkGraph ResizedHostGraph(const NvlinkGraph& graph, int64_t host_devices, int64_t devices);

}  // namespace alpa
