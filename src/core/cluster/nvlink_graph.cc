// Ring and move bandwidths over a host's NVLink graph (see nvlink_graph.h).
#include "core/cluster/nvlink_graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>

#include "core/cluster/pcie_tree.h"
#include "core/util/number_text.h"

namespace alpa {
namespace {

// Graphs of more devices per host are refused (their matrices and masks stay small).
constexpr int64_t kMaxNvlinkDevices = 64;
// The cache of ring bandwidths is emptied past this many entries (a process that plans for many
// different graphs keeps bounded memory).
constexpr size_t kMaxCachedRings = size_t{1} << 16;

// The GPU of local index l.
int64_t GpuOf(const NvlinkGraph& graph, int64_t l) {
  return graph.device_order.empty() ? l : graph.device_order[static_cast<size_t>(l)];
}

// Per pair of GPUs (row-major, n x n): the bytes per second of their direct NVLinks.
std::vector<double> Capacities(const NvlinkGraph& graph, int64_t n) {
  std::vector<double> cap(static_cast<size_t>(n * n), 0.0);
  for (const NvlinkGraph::Link& link : graph.links) {
    cap[static_cast<size_t>(link.a * n + link.b)] = link.bandwidth;
    cap[static_cast<size_t>(link.b * n + link.a)] = link.bandwidth;
  }
  return cap;
}

// Directed Hamiltonian cycles over the direct links of `gpus` (2 .. kMaxRingSearch of them),
// packed greedily: the widest bottleneck first, taken from each link it uses.
double PackedRings(const std::vector<double>& cap, int64_t n, const std::vector<int64_t>& gpus) {
  const size_t k = gpus.size();
  std::vector<double> residual(k * k, 0.0);
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < k; ++j) {
      if (i != j) residual[i * k + j] = cap[static_cast<size_t>(gpus[i] * n + gpus[j])];
    }
  }
  // Every cycle from member 0, as its k edges (i * k + j).
  std::vector<size_t> edges;
  std::vector<size_t> rest(k - 1);
  std::iota(rest.begin(), rest.end(), size_t{1});
  do {
    size_t from = 0;
    for (size_t next : rest) {
      edges.push_back(from * k + next);
      from = next;
    }
    edges.push_back(from * k);
  } while (std::next_permutation(rest.begin(), rest.end()));
  const size_t cycles = edges.size() / k;
  const double largest = *std::max_element(residual.begin(), residual.end());
  double total = 0;
  while (true) {
    double best = 0;
    size_t arg = 0;
    for (size_t c = 0; c < cycles; ++c) {
      double width = std::numeric_limits<double>::infinity();
      for (size_t e = 0; e < k && width > best; ++e) {
        width = std::min(width, residual[edges[c * k + e]]);
      }
      if (width > best) {
        best = width;
        arg = c;
      }
    }
    if (!(best > 1e-9 * largest)) break;
    for (size_t e = 0; e < k; ++e) residual[edges[arg * k + e]] -= best;
    total += best;
  }
  return total;
}

// For more than kMaxRingSearch GPUs: the least NVLink bandwidth a member has into the group.
double RingBound(const std::vector<double>& cap, int64_t n, const std::vector<int64_t>& gpus) {
  double least = std::numeric_limits<double>::infinity();
  for (int64_t a : gpus) {
    double out = 0;
    for (int64_t b : gpus) {
      if (a != b) out += cap[static_cast<size_t>(a * n + b)];
    }
    least = std::min(least, out);
  }
  return least;
}

// A key naming the graph's links and bandwidths (not its order), the cap and the GPUs.
std::string CacheKey(const Cluster& cluster, const std::vector<int64_t>& gpus) {
  std::string key;
  auto put = [&key](const void* p, size_t bytes) {
    key.append(static_cast<const char*>(p), bytes);
  };
  put(&cluster.devices_per_host, sizeof(int64_t));
  put(&cluster.intra_host_link.bandwidth, sizeof(double));
  put(&cluster.nvlink.pcie_bandwidth, sizeof(double));
  for (const NvlinkGraph::Link& link : cluster.nvlink.links) {
    put(&link.a, sizeof(int64_t));
    put(&link.b, sizeof(int64_t));
    put(&link.bandwidth, sizeof(double));
  }
  key.push_back('|');
  for (int64_t g : gpus) put(&g, sizeof(int64_t));
  return key;
}

// The ring bandwidth of GPUs `gpus` (distinct, sorted), cached.
double RingOfGpus(const Cluster& cluster, std::vector<int64_t> gpus) {
  static std::mutex mu;
  static std::map<std::string, double>* cache = new std::map<std::string, double>();
  std::sort(gpus.begin(), gpus.end());
  const std::string key = CacheKey(cluster, gpus);
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  const int64_t n = cluster.devices_per_host;
  const std::vector<double> cap = Capacities(cluster.nvlink, n);
  const double packed = static_cast<int64_t>(gpus.size()) > kMaxRingSearch
                            ? RingBound(cap, n, gpus)
                            : PackedRings(cap, n, gpus);
  // NCCL's rings run over direct links; a group no such ring covers runs over PCIe.
  const double ring = std::min(cluster.intra_host_link.bandwidth,
                               packed > 0 ? packed : cluster.nvlink.pcie_bandwidth);
  std::lock_guard<std::mutex> lock(mu);
  if (cache->size() >= kMaxCachedRings) cache->clear();
  cache->emplace(key, ring);
  return ring;
}

// The order with the identity written out.
std::vector<int64_t> EffectiveOrder(const NvlinkGraph& graph, size_t devices) {
  if (!graph.device_order.empty()) return graph.device_order;
  std::vector<int64_t> order(devices);
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

}  // namespace

bool NvlinkGraph::operator==(const NvlinkGraph& o) const {
  if (!(links == o.links) || pcie_bandwidth != o.pcie_bandwidth) return false;
  const size_t devices = std::max(device_order.size(), o.device_order.size());
  return EffectiveOrder(*this, devices) == EffectiveOrder(o, devices);
}

Status ValidateNvlinkGraph(const NvlinkGraph& graph, int64_t devices_per_host,
                           const std::string& where) {
  if (graph.links.empty()) {
    if (graph.pcie_bandwidth != 0 || !graph.device_order.empty()) {
      return InvalidArgument(where + ": pcie_bandwidth or device_order set without links");
    }
    return Status::Ok();
  }
  if (devices_per_host > kMaxNvlinkDevices) {
    return InvalidArgument(where + ": an NVLink graph is for hosts of at most " +
                           std::to_string(kMaxNvlinkDevices) + " devices (devices_per_host is " +
                           std::to_string(devices_per_host) + ")");
  }
  const std::string range =
      " is not a device of a host (0.." + std::to_string(devices_per_host - 1) + ")";
  std::vector<char> seen(static_cast<size_t>(devices_per_host * devices_per_host), 0);
  for (size_t i = 0; i < graph.links.size(); ++i) {
    const NvlinkGraph::Link& link = graph.links[i];
    const std::string at = where + ".links[" + std::to_string(i) + "]";
    if (link.a < 0 || link.a >= devices_per_host) {
      return InvalidArgument(at + ".a: " + std::to_string(link.a) + range);
    }
    if (link.b < 0 || link.b >= devices_per_host) {
      return InvalidArgument(at + ".b: " + std::to_string(link.b) + range);
    }
    if (link.a == link.b) {
      return InvalidArgument(at + ": links device " + std::to_string(link.a) + " to itself");
    }
    if (!std::isfinite(link.bandwidth) || link.bandwidth <= 0) {
      return InvalidArgument(at + ".bandwidth: must be a positive finite number (got " +
                             ExactDoubleText(link.bandwidth) + ")");
    }
    char& pair = seen[static_cast<size_t>(std::min(link.a, link.b) * devices_per_host +
                                          std::max(link.a, link.b))];
    if (pair) {
      return InvalidArgument(at + ": devices " + std::to_string(link.a) + " and " +
                             std::to_string(link.b) +
                             " are linked twice (give one link with their summed bandwidth)");
    }
    pair = 1;
  }
  if (!std::isfinite(graph.pcie_bandwidth) || graph.pcie_bandwidth <= 0) {
    return InvalidArgument(where + ".pcie_bandwidth: must be a positive finite number (got " +
                           ExactDoubleText(graph.pcie_bandwidth) + ")");
  }
  if (graph.device_order.empty()) return Status::Ok();
  if (static_cast<int64_t>(graph.device_order.size()) != devices_per_host) {
    return InvalidArgument(
        where + ".device_order: has " + std::to_string(graph.device_order.size()) +
        " entries, not one per device (" + std::to_string(devices_per_host) + ")");
  }
  std::vector<char> used(static_cast<size_t>(devices_per_host), 0);
  for (size_t i = 0; i < graph.device_order.size(); ++i) {
    const int64_t d = graph.device_order[i];
    const std::string at = where + ".device_order[" + std::to_string(i) + "]";
    if (d < 0 || d >= devices_per_host)
      return InvalidArgument(at + ": " + std::to_string(d) + range);
    if (used[static_cast<size_t>(d)]) {
      return InvalidArgument(at + ": device " + std::to_string(d) + " appears twice");
    }
    used[static_cast<size_t>(d)] = 1;
  }
  return Status::Ok();
}

double GroupRingBandwidth(const Cluster& cluster, const std::vector<int64_t>& group) {
  if (cluster.nvlink.empty() || group.size() < 2) return cluster.intra_host_link.bandwidth;
  std::vector<int64_t> gpus;
  gpus.reserve(group.size());
  for (int64_t l : group) gpus.push_back(GpuOf(cluster.nvlink, l));
  return RingOfGpus(cluster, std::move(gpus));
}

double AlignedGroupRingBandwidth(const Cluster& cluster, int64_t block_size,
                                 const std::vector<int64_t>& members) {
  if (cluster.nvlink.empty() || members.size() < 2) return cluster.intra_host_link.bandwidth;
  double least = std::numeric_limits<double>::infinity();
  std::vector<int64_t> group(members.size());
  for (int64_t block = 0; block + block_size <= cluster.devices_per_host; block += block_size) {
    for (size_t i = 0; i < members.size(); ++i) group[i] = block + members[i];
    least = std::min(least, GroupRingBandwidth(cluster, group));
  }
  // A block wider than the host (not a submesh the planner makes): the members as they are.
  return std::isfinite(least) ? least : GroupRingBandwidth(cluster, members);
}

std::vector<double> MovePairBandwidths(const Cluster& cluster) {
  if (!cluster.pcie.empty()) return PcieMoveBandwidths(cluster);
  if (cluster.nvlink.empty()) return {};
  const int64_t n = cluster.devices_per_host;
  const std::vector<double> cap = Capacities(cluster.nvlink, n);
  std::vector<double> table(static_cast<size_t>(n * n), cluster.intra_host_link.bandwidth);
  for (int64_t a = 0; a < n; ++a) {
    for (int64_t b = 0; b < n; ++b) {
      if (a == b) continue;
      const int64_t ga = GpuOf(cluster.nvlink, a), gb = GpuOf(cluster.nvlink, b);
      double path = cap[static_cast<size_t>(ga * n + gb)];
      if (path == 0) {
        for (int64_t k = 0; k < n; ++k) {
          const double relay =
              std::min(cap[static_cast<size_t>(ga * n + k)], cap[static_cast<size_t>(k * n + gb)]);
          path = std::max(path, relay);
        }
      }
      if (path == 0) path = cluster.nvlink.pcie_bandwidth;
      double& cell = table[static_cast<size_t>(a * n + b)];
      cell = std::min(cell, path);
    }
  }
  return table;
}

std::vector<int64_t> BestDeviceOrder(const Cluster& cluster) {
  const int64_t n = cluster.devices_per_host;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (cluster.nvlink.empty() || n > kMaxRingSearch) return order;
  // The in-host logical meshes the planner makes: widths 2, 4, ... dividing n, each as one dim
  // (d0 = 1) and as (d0, w / d0) for d0 = 2, 4, ... < w.
  std::vector<std::pair<int64_t, int64_t>> shapes;  // (width, d0)
  for (int64_t w = 2; w <= n; w *= 2) {
    if (n % w != 0) continue;
    for (int64_t d0 = 1; d0 < w; d0 *= 2) shapes.push_back({w, d0});
  }
  // Per set of GPUs (a bit mask): its ring bandwidth, filled as needed.
  std::vector<double> ring(size_t{1} << n, -1.0);
  auto ring_of = [&](const int64_t* gpus, int64_t count) {
    size_t mask = 0;
    for (int64_t i = 0; i < count; ++i) mask |= size_t{1} << gpus[i];
    double& r = ring[mask];
    if (r < 0) r = RingOfGpus(cluster, std::vector<int64_t>(gpus, gpus + count));
    return r;
  };
  std::vector<int64_t> best = order;
  double best_value = -1;
  std::vector<int64_t> perm = order;
  std::vector<int64_t> group;
  do {
    double value = 0;
    for (const auto& [w, d0] : shapes) {
      // Dim 1: groups of w / d0 consecutive devices; dim 0 (d0 > 1): groups of stride w / d0.
      const int64_t d1 = w / d0;
      double dim0 = std::numeric_limits<double>::infinity();
      double dim1 = std::numeric_limits<double>::infinity();
      for (int64_t block = 0; block < n; block += w) {
        for (int64_t i = 0; d1 > 1 && i < d0; ++i) {
          dim1 = std::min(dim1, ring_of(&perm[static_cast<size_t>(block + i * d1)], d1));
        }
        for (int64_t j = 0; d0 > 1 && j < d1; ++j) {
          group.clear();
          for (int64_t i = 0; i < d0; ++i)
            group.push_back(perm[static_cast<size_t>(block + i * d1 + j)]);
          dim0 = std::min(dim0, ring_of(group.data(), d0));
        }
      }
      if (d1 > 1) value += dim1;
      if (d0 > 1) value += dim0;
    }
    if (value > best_value) {
      best_value = value;
      best = perm;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

NvlinkGraph ResizedHostGraph(const NvlinkGraph& graph, int64_t host_devices, int64_t devices) {
  if (graph.empty() || devices == host_devices) return graph;
  if (devices > host_devices) return NvlinkGraph();  // no longer the graph's host
  std::map<int64_t, int64_t> local;                  // GPU -> its new number
  for (int64_t l = 0; l < devices; ++l) local[GpuOf(graph, l)] = l;
  NvlinkGraph out;
  out.pcie_bandwidth = graph.pcie_bandwidth;
  for (const NvlinkGraph::Link& link : graph.links) {
    const auto a = local.find(link.a);
    const auto b = local.find(link.b);
    if (a == local.end() || b == local.end()) continue;
    out.links.push_back({a->second, b->second, link.bandwidth});
  }
  // No link left (one device, or none of them linked): no graph, the uniform model.
  if (out.links.empty()) out.pcie_bandwidth = 0;
  return out;
}

}  // namespace alpa
