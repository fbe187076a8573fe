// Ring and move bandwidths over a host's PCIe switches (see pcie_tree.h).
#include "core/cluster/pcie_tree.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/util/number_text.h"

namespace alpa {
namespace {

// Trees of hosts with more devices are refused (their per-device tables stay small).
constexpr int64_t kMaxPcieDevices = 64;

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0; }

// The switch of every local device (-1 where the tree has none).
std::vector<int64_t> SwitchOf(const PcieTree& tree, int64_t devices) {
  std::vector<int64_t> of(static_cast<size_t>(devices), -1);
  for (size_t s = 0; s < tree.switches.size(); ++s) {
    for (int64_t d : tree.switches[s]) {
      if (d >= 0 && d < devices) of[static_cast<size_t>(d)] = static_cast<int64_t>(s);
    }
  }
  return of;
}

int64_t SocketOf(const PcieTree& tree, int64_t sw) {
  return tree.switch_sockets.empty() ? 0 : tree.switch_sockets[static_cast<size_t>(sw)];
}

// How a ring over `group` crosses the tree: the switches it enters and leaves, and whether it
// spans sockets.
struct Crossing {
  std::vector<int64_t> switches;
  bool sockets = false;
};

Crossing CrossingOf(const PcieTree& tree, const std::vector<int64_t>& switch_of,
                    const std::vector<int64_t>& group) {
  Crossing c;
  for (int64_t d : group) c.switches.push_back(switch_of[static_cast<size_t>(d)]);
  std::sort(c.switches.begin(), c.switches.end());
  c.switches.erase(std::unique(c.switches.begin(), c.switches.end()), c.switches.end());
  if (c.switches.size() < 2) {
    c.switches.clear();
    return c;
  }
  for (int64_t sw : c.switches) c.sockets |= SocketOf(tree, sw) != SocketOf(tree, c.switches[0]);
  return c;
}

// A move between local devices a and b, given every device's switch (a == b: the device's link).
double MoveBandwidth(const Cluster& cluster, const std::vector<int64_t>& switch_of, int64_t a,
                     int64_t b) {
  const double own = cluster.intra_host_link.bandwidth;
  const PcieTree& tree = cluster.pcie;
  const int64_t sa = switch_of[static_cast<size_t>(a)], sb = switch_of[static_cast<size_t>(b)];
  if (sa == sb) return own;
  double bw = std::min(own, tree.uplink_bandwidth);
  if (SocketOf(tree, sa) != SocketOf(tree, sb)) bw = std::min(bw, tree.socket_bandwidth);
  return bw;
}

}  // namespace

Status ValidatePcieTree(const PcieTree& tree, int64_t devices_per_host, const std::string& where) {
  if (tree.switches.empty()) {
    if (tree.uplink_bandwidth != 0 || !tree.switch_sockets.empty() || tree.socket_bandwidth != 0) {
      return InvalidArgument(where + ": uplink, sockets or socket bandwidth set without switches");
    }
    return Status::Ok();
  }
  if (devices_per_host > kMaxPcieDevices) {
    return InvalidArgument(where + ": a PCIe tree is for hosts of at most " +
                           std::to_string(kMaxPcieDevices) + " devices (devices_per_host is " +
                           std::to_string(devices_per_host) + ")");
  }
  const std::string range =
      " is not a device of a host (0.." + std::to_string(devices_per_host - 1) + ")";
  std::vector<int64_t> seen(static_cast<size_t>(devices_per_host), -1);
  for (size_t s = 0; s < tree.switches.size(); ++s) {
    const std::string at = where + ".switches[" + std::to_string(s) + "]";
    if (tree.switches[s].empty()) return InvalidArgument(at + ": a switch without devices");
    for (size_t i = 0; i < tree.switches[s].size(); ++i) {
      const int64_t d = tree.switches[s][i];
      const std::string di = at + "[" + std::to_string(i) + "]";
      if (d < 0 || d >= devices_per_host)
        return InvalidArgument(di + ": " + std::to_string(d) + range);
      int64_t& first = seen[static_cast<size_t>(d)];
      if (first >= 0) {
        return InvalidArgument(di + ": device " + std::to_string(d) + " is already under switch " +
                               std::to_string(first));
      }
      first = static_cast<int64_t>(s);
    }
  }
  for (int64_t d = 0; d < devices_per_host; ++d) {
    if (seen[static_cast<size_t>(d)] < 0) {
      return InvalidArgument(where + ".switches: device " + std::to_string(d) +
                             " is under no switch (every device of a host is under one)");
    }
  }
  if (!PositiveFinite(tree.uplink_bandwidth)) {
    return InvalidArgument(where + ".uplink_bandwidth: must be a positive finite number (got " +
                           ExactDoubleText(tree.uplink_bandwidth) + ")");
  }
  bool several_sockets = false;
  if (!tree.switch_sockets.empty()) {
    if (tree.switch_sockets.size() != tree.switches.size()) {
      return InvalidArgument(
          where + ".switch_sockets: has " + std::to_string(tree.switch_sockets.size()) +
          " entries, not one per switch (" + std::to_string(tree.switches.size()) + ")");
    }
    for (size_t s = 0; s < tree.switch_sockets.size(); ++s) {
      const int64_t k = tree.switch_sockets[s];
      if (k < 0 || k >= kMaxPcieDevices) {
        return InvalidArgument(where + ".switch_sockets[" + std::to_string(s) +
                               "]: " + std::to_string(k) + " is not a socket (0.." +
                               std::to_string(kMaxPcieDevices - 1) + ")");
      }
      several_sockets |= k != tree.switch_sockets[0];
    }
  }
  if (several_sockets ? !PositiveFinite(tree.socket_bandwidth)
                      : tree.socket_bandwidth != 0 && !PositiveFinite(tree.socket_bandwidth)) {
    return InvalidArgument(
        where + ".socket_bandwidth: must be a positive finite number" +
        std::string(several_sockets ? " (the switches sit on several sockets)" : "") + " (got " +
        ExactDoubleText(tree.socket_bandwidth) + ")");
  }
  return Status::Ok();
}

std::vector<double> PcieRingBandwidths(const Cluster& cluster,
                                       const std::vector<std::vector<int64_t>>& groups) {
  const double own = cluster.intra_host_link.bandwidth;
  std::vector<double> out(groups.size(), own);
  if (cluster.pcie.empty()) return out;
  const PcieTree& tree = cluster.pcie;
  const std::vector<int64_t> switch_of = SwitchOf(tree, cluster.devices_per_host);
  std::vector<Crossing> crossing;
  crossing.reserve(groups.size());
  std::vector<int64_t> uplink_users(tree.switches.size(), 0);
  int64_t socket_users = 0;
  for (const std::vector<int64_t>& g : groups) {
    crossing.push_back(g.size() < 2 ? Crossing() : CrossingOf(tree, switch_of, g));
    for (int64_t sw : crossing.back().switches) ++uplink_users[static_cast<size_t>(sw)];
    socket_users += crossing.back().sockets ? 1 : 0;
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    double bw = own;
    for (int64_t sw : crossing[i].switches) {
      bw = std::min(
          bw, tree.uplink_bandwidth / static_cast<double>(uplink_users[static_cast<size_t>(sw)]));
    }
    if (crossing[i].sockets) {
      bw = std::min(bw, tree.socket_bandwidth / static_cast<double>(socket_users));
    }
    out[i] = bw;
  }
  return out;
}

double AlignedPcieRingBandwidth(const Cluster& cluster, int64_t block_size,
                                const std::vector<std::vector<int64_t>>& groups) {
  double least = cluster.intra_host_link.bandwidth;
  if (cluster.pcie.empty() || block_size < 1) return least;
  std::vector<std::vector<int64_t>> shifted = groups;
  for (int64_t block = 0; block + block_size <= cluster.devices_per_host; block += block_size) {
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t i = 0; i < groups[g].size(); ++i) shifted[g][i] = block + groups[g][i];
    }
    for (double bw : PcieRingBandwidths(cluster, shifted)) least = std::min(least, bw);
  }
  return least;
}

double PcieMoveBandwidth(const Cluster& cluster, int64_t a, int64_t b) {
  if (cluster.pcie.empty()) return cluster.intra_host_link.bandwidth;
  const std::vector<int64_t> switch_of = SwitchOf(cluster.pcie, cluster.devices_per_host);
  return MoveBandwidth(cluster, switch_of, a, b);
}

std::vector<double> PcieMoveBandwidths(const Cluster& cluster) {
  if (cluster.pcie.empty()) return {};
  const int64_t n = cluster.devices_per_host;
  const std::vector<int64_t> switch_of = SwitchOf(cluster.pcie, n);
  std::vector<double> table(static_cast<size_t>(n * n));
  for (int64_t a = 0; a < n; ++a) {
    for (int64_t b = 0; b < n; ++b) {
      table[static_cast<size_t>(a * n + b)] = MoveBandwidth(cluster, switch_of, a, b);
    }
  }
  return table;
}

PcieTree ResizedHostTree(const PcieTree& tree, int64_t host_devices, int64_t devices) {
  if (tree.empty() || devices == host_devices) return tree;
  if (devices > host_devices) return PcieTree();
  PcieTree out;
  out.uplink_bandwidth = tree.uplink_bandwidth;
  for (size_t s = 0; s < tree.switches.size(); ++s) {
    std::vector<int64_t> kept;
    for (int64_t d : tree.switches[s]) {
      if (d < devices) kept.push_back(d);
    }
    if (kept.empty()) continue;
    out.switches.push_back(std::move(kept));
    if (!tree.switch_sockets.empty()) out.switch_sockets.push_back(tree.switch_sockets[s]);
  }
  bool several = false;
  for (int64_t k : out.switch_sockets) several |= k != out.switch_sockets[0];
  if (several) {
    out.socket_bandwidth = tree.socket_bandwidth;
  } else {
    out.switch_sockets.clear();  // one socket left: the link between sockets is unused
  }
  if (out.switches.size() < 2) return PcieTree();  // one switch: every pair at its own links
  return out;
}

}  // namespace alpa
