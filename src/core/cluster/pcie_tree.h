// Bandwidths inside a host with a PCIe tree (Cluster::pcie): what the ring collectives of a mesh
// dimension and the point-to-point moves between two GPUs get when the GPUs talk over PCIe
// switches instead of NVLink.
//
// Rings. A ring over GPUs under one switch runs at their own links (intra_host_link.bandwidth).
// A ring over several switches enters and leaves each of them once, in each direction: it
// crosses each such switch's uplink once per direction, and the socket link once per direction
// when its switches sit on two or more sockets. The rings of one mesh dimension run at the same
// time, so a link crossed by k of them gives each 1/k of its bandwidth; a ring runs at the least
// share along its way. Moves. A move between two GPUs of one switch runs at their links; of two
// switches at the uplink; of two sockets at the lower of the uplink and the socket link (each
// move alone: moves sharing an uplink are not slowed, the sender's and receiver's links are).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"

namespace alpa {

// Checks cluster.pcie against devices_per_host ("<where>.switches[1][0]: 9 is not a device of a
// host (0..7)", every GPU in exactly one switch, positive finite bandwidths, a socket bandwidth
// where the switches sit on several sockets).
Status ValidatePcieTree(const PcieTree& tree, int64_t devices_per_host, const std::string& where);

// Bytes per second per device of each of `groups` (local device indices of one host, run at the
// same time, the rings of one mesh dimension), under the sharing above; at most
// intra_host_link.bandwidth. A group of fewer than two devices gets intra_host_link.bandwidth.
std::vector<double> PcieRingBandwidths(const Cluster& cluster,
                                       const std::vector<std::vector<int64_t>>& groups);

// The least PcieRingBandwidths over the aligned blocks of `block_size` local devices (block =
// 0, block_size, ...) of a host, the groups shifted into each block: what the dimension's rings
// get wherever the planner places a submesh of block_size devices per host.
double AlignedPcieRingBandwidth(const Cluster& cluster, int64_t block_size,
                                const std::vector<std::vector<int64_t>>& groups);

// Bytes per second of a move between local devices a and b (a != b) of a host, as above.
double PcieMoveBandwidth(const Cluster& cluster, int64_t a, int64_t b);

// PcieMoveBandwidth of every ordered pair of local devices (row-major, devices_per_host^2
// entries, the diagonal intra_host_link.bandwidth); empty without a tree.
std::vector<double> PcieMoveBandwidths(const Cluster& cluster);

// The tree of a host of `host_devices` devices taken with `devices` per host instead (a preset
// with another devices_per_host): with fewer, the switches keep their GPUs below `devices` (the
// emptied switches dropped, with their sockets); with more, no tree (uniform links).
PcieTree ResizedHostTree(const PcieTree& tree, int64_t host_devices, int64_t devices);

}  // namespace alpa
