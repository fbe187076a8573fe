// Logical meshes over a submesh: shape checks, alpha / beta from the links, shape enumeration.
#include "core/cluster/logical_mesh.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/cluster/nvlink_graph.h"
#include "core/cluster/pcie_tree.h"

namespace alpa {
namespace {

Status CheckShape(const std::vector<int64_t>& shape, const char* what) {
  if (shape.empty() || shape.size() > 2) {
    return InvalidArgument(std::string(what) + ": a logical mesh has 1 or 2 dimensions (got " +
                           std::to_string(shape.size()) + ")");
  }
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 1 || shape[k] > kMaxDevices) {
      return InvalidArgument(std::string(what) + "[" + std::to_string(k) + "] must be in [1, " +
                             std::to_string(kMaxDevices) + "] (got " + std::to_string(shape[k]) +
                             ")");
    }
  }
  return Status::Ok();
}

struct DimLink {
  double alpha = 0;
  double beta = 0;
  bool crosses_hosts = false;
};

// `intra`: the bytes per second of the groups' rings inside a host (InHostBandwidth).
DimLink FromLinks(const Cluster& c, double intra, int64_t groups_per_host) {
  DimLink d;
  if (groups_per_host == 0) {
    d.alpha = c.intra_host_link.latency;
    d.beta = 1.0 / intra;
    return d;
  }
  const double bw =
      std::min(intra, c.inter_host_link.bandwidth / static_cast<double>(groups_per_host));
  d.alpha = c.inter_host_link.latency;
  d.beta = 1.0 / bw;
  d.crosses_hosts = true;
  return d;
}

// The number of host-spanning groups that touch the busiest host (0: no group spans hosts)
// when the groups of one dimension are `num_groups` sets {first(g) + t * stride : t < size}.
int64_t SpanningGroupsPerHost(int64_t hosts, int64_t per_host, int64_t num_groups,
                              int64_t group_size, int64_t group_first_step, int64_t stride) {
  if (hosts == 1) return 0;
  std::vector<int64_t> count(static_cast<size_t>(hosts), 0);
  for (int64_t g = 0; g < num_groups; ++g) {
    const int64_t first = g * group_first_step;
    const int64_t first_host = first / per_host;
    const int64_t last_host = (first + (group_size - 1) * stride) / per_host;
    if (first_host == last_host) continue;  // ids increase, so equal ends mean one host
    int64_t prev = -1;
    for (int64_t t = 0; t < group_size; ++t) {
      const int64_t host = (first + t * stride) / per_host;
      if (host != prev) ++count[static_cast<size_t>(host)];
      prev = host;
    }
  }
  return *std::max_element(count.begin(), count.end());
}

// With NIC groups (Cluster::nics_per_host > 1): the least bytes per second a host-spanning group
// gets from its NICs, over the groups and the hosts they touch; 0 when no group spans hosts. On
// a host, a group uses the NIC groups of its devices there, each shared evenly with the other
// spanning groups that use it. With one NIC group this is inter_host_link.bandwidth over the
// most spanning groups on a host (SpanningGroupsPerHost).
double SpanningGroupNicBandwidth(const Cluster& c, int64_t hosts, int64_t per_host,
                                 int64_t num_groups, int64_t group_size, int64_t group_first_step,
                                 int64_t stride) {
  if (hosts == 1) return 0;
  // Submesh device id (host h, local l) -> the cluster's local index l (a submesh's devices of a
  // host are its first per_host ones: NicGroupOf reads the local index only).
  auto nic_of = [&](int64_t id) { return NicGroupOf(c, id % per_host); };
  auto spans = [&](int64_t g) {
    const int64_t first = g * group_first_step;
    return first / per_host != (first + (group_size - 1) * stride) / per_host;
  };
  // Per spanning group, the (host, NIC group) pairs of its devices, as keys host * G + group:
  // its ids ascend, so its keys never decrease and the distinct ones are those unlike the one
  // before. Per key, how many spanning groups use it.
  const int64_t nic_groups = NicGroups(c);
  std::vector<int64_t> keys, group_begin;
  std::vector<int64_t> users(static_cast<size_t>(hosts * nic_groups), 0);
  for (int64_t g = 0; g < num_groups; ++g) {
    if (!spans(g)) continue;
    group_begin.push_back(static_cast<int64_t>(keys.size()));
    for (int64_t t = 0; t < group_size; ++t) {
      const int64_t id = g * group_first_step + t * stride;
      const int64_t key = id / per_host * nic_groups + nic_of(id);
      if (static_cast<int64_t>(keys.size()) > group_begin.back() && keys.back() == key) continue;
      keys.push_back(key);
      ++users[static_cast<size_t>(key)];
    }
  }
  if (group_begin.empty()) return 0;
  group_begin.push_back(static_cast<int64_t>(keys.size()));
  const double per_nic_group = NicGroupBandwidth(c);
  double least = std::numeric_limits<double>::infinity();
  for (size_t g = 0; g + 1 < group_begin.size(); ++g) {
    // The group's bandwidth on each host it touches: its keys there, in order.
    double bandwidth = 0;
    for (int64_t k = group_begin[g]; k < group_begin[g + 1]; ++k) {
      const int64_t key = keys[static_cast<size_t>(k)];
      bandwidth += per_nic_group / static_cast<double>(users[static_cast<size_t>(key)]);
      const bool host_ends = k + 1 == group_begin[g + 1] ||
                             keys[static_cast<size_t>(k) + 1] / nic_groups != key / nic_groups;
      if (host_ends) {
        least = std::min(least, bandwidth);
        bandwidth = 0;
      }
    }
  }
  return least;
}

DimLink FromNicBandwidth(const Cluster& c, double intra, double nic_bandwidth) {
  if (nic_bandwidth == 0) return FromLinks(c, intra, 0);
  DimLink d;
  d.alpha = c.inter_host_link.latency;
  d.beta = 1.0 / std::min(intra, nic_bandwidth);
  d.crosses_hosts = true;
  return d;
}

// The members on the first host of the dimension's groups that start there (local indices of
// the submesh's per_host devices; every host holds the same pattern), the rings run at once.
std::vector<std::vector<int64_t>> FirstHostGroups(int64_t per_host, int64_t num_groups,
                                                  int64_t group_size, int64_t group_first_step,
                                                  int64_t stride) {
  std::vector<std::vector<int64_t>> groups;
  for (int64_t g = 0; g < num_groups; ++g) {
    const int64_t first = g * group_first_step;
    if (first >= per_host) break;  // firsts ascend: the rest start on later hosts
    std::vector<int64_t> members;
    for (int64_t t = 0; t < group_size; ++t) {
      const int64_t id = first + t * stride;
      if (id >= per_host) break;
      members.push_back(id);
    }
    groups.push_back(std::move(members));
  }
  return groups;
}

// The bytes per second of the dimension's rings inside a host: intra_host_link.bandwidth, or with
// an NVLink graph the least AlignedGroupRingBandwidth of a group's members on its first host
// (the submesh's per_host devices of a host form an aligned block; every host holds the same
// pattern, which depends only on where the group starts within its host).
double InHostBandwidth(const Cluster& c, int64_t per_host, int64_t num_groups, int64_t group_size,
                       int64_t group_first_step, int64_t stride) {
  if (!c.pcie.empty()) {
    return AlignedPcieRingBandwidth(
        c, per_host, FirstHostGroups(per_host, num_groups, group_size, group_first_step, stride));
  }
  if (c.nvlink.empty()) return c.intra_host_link.bandwidth;
  double least = c.intra_host_link.bandwidth;
  std::vector<char> seen(static_cast<size_t>(per_host), 0);
  std::vector<int64_t> members;
  for (int64_t g = 0; g < num_groups; ++g) {
    const int64_t first = g * group_first_step;
    char& start = seen[static_cast<size_t>(first % per_host)];
    if (start) continue;
    start = 1;
    members.clear();
    for (int64_t t = 0; t < group_size; ++t) {
      const int64_t id = first + t * stride;
      if (id / per_host != first / per_host) break;  // ids ascend: the first host's are first
      members.push_back(id % per_host);
    }
    least = std::min(least, AlignedGroupRingBandwidth(c, per_host, members));
  }
  return least;
}

// The link of the dimension whose groups are `num_groups` sets {first(g) + t * stride}.
DimLink DimensionLink(const Cluster& c, int64_t hosts, int64_t per_host, int64_t num_groups,
                      int64_t group_size, int64_t group_first_step, int64_t stride) {
  const double intra =
      InHostBandwidth(c, per_host, num_groups, group_size, group_first_step, stride);
  if (NicGroups(c) == 1) {
    return FromLinks(
        c, intra,
        SpanningGroupsPerHost(hosts, per_host, num_groups, group_size, group_first_step, stride));
  }
  return FromNicBandwidth(c, intra,
                          SpanningGroupNicBandwidth(c, hosts, per_host, num_groups, group_size,
                                                    group_first_step, stride));
}

}  // namespace

int64_t LogicalMesh::num_devices() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Status ValidateSubmesh(const Cluster& cluster, const SubmeshShape& s) {
  if (s.hosts < 1 || s.hosts > cluster.hosts) {
    return InvalidArgument("submesh: hosts must be in [1, " + std::to_string(cluster.hosts) +
                           "] (got " + std::to_string(s.hosts) + ")");
  }
  if (s.devices_per_host < 1 || s.devices_per_host > cluster.devices_per_host) {
    return InvalidArgument("submesh: devices_per_host must be in [1, " +
                           std::to_string(cluster.devices_per_host) + "] (got " +
                           std::to_string(s.devices_per_host) + ")");
  }
  return Status::Ok();
}

Result<LogicalMesh> DeriveLogicalMesh(const Cluster& cluster, const SubmeshShape& submesh,
                                      const std::vector<int64_t>& logical_shape) {
  ALPA_RETURN_IF_ERROR(ValidateCluster(cluster));
  if (cluster.mixed()) {
    return InvalidArgument("cluster " + cluster.name +
                           " mixes GPU types: a logical mesh lies on one of its pools (derive it "
                           "from that pool's cluster)");
  }
  ALPA_RETURN_IF_ERROR(ValidateSubmesh(cluster, submesh));
  ALPA_RETURN_IF_ERROR(CheckShape(logical_shape, "logical_shape"));
  const int64_t devices = submesh.num_devices();
  int64_t product = 1;
  for (int64_t d : logical_shape) product *= d;  // each <= 2^24, at most two: no overflow
  if (product != devices) {
    return InvalidArgument(
        "logical shape " + MeshShapeString(logical_shape) + " has " + std::to_string(product) +
        " devices but the submesh (" + std::to_string(submesh.hosts) + " x " +
        std::to_string(submesh.devices_per_host) + ") has " + std::to_string(devices));
  }
  const int64_t h = submesh.hosts;
  const int64_t m = submesh.devices_per_host;
  LogicalMesh mesh;
  mesh.shape = logical_shape;
  std::vector<DimLink> dims;
  if (logical_shape.size() == 1) {
    dims.push_back(DimensionLink(cluster, h, m, 1, devices, 0, 1));
  } else {
    const int64_t d0 = logical_shape[0];
    const int64_t d1 = logical_shape[1];
    // Dim 0: d1 groups {j + i * d1}; dim 1: d0 groups {i * d1 + j}.
    dims.push_back(DimensionLink(cluster, h, m, d1, d0, 1, d1));
    dims.push_back(DimensionLink(cluster, h, m, d0, d1, d1, 1));
  }
  for (const DimLink& d : dims) {
    mesh.alpha.push_back(d.alpha);
    mesh.beta.push_back(d.beta);
    mesh.crosses_hosts.push_back(d.crosses_hosts);
  }
  const DimLink flat = DimensionLink(cluster, h, m, 1, devices, 0, 1);
  mesh.flat_alpha = flat.alpha;
  mesh.flat_beta = flat.beta;
  return mesh;
}

Result<LogicalMesh> AbstractLogicalMesh(const std::vector<int64_t>& shape,
                                        std::vector<double> alpha, std::vector<double> beta) {
  ALPA_RETURN_IF_ERROR(CheckShape(shape, "shape"));
  if (alpha.empty())
    alpha.assign(kAlpaDefaultAlpha.begin(),
                 kAlpaDefaultAlpha.begin() + static_cast<ptrdiff_t>(shape.size()));
  if (beta.empty())
    beta.assign(kAlpaDefaultBeta.begin(),
                kAlpaDefaultBeta.begin() + static_cast<ptrdiff_t>(shape.size()));
  if (alpha.size() != shape.size() || beta.size() != shape.size()) {
    return InvalidArgument("mesh: alpha and beta need one value per dimension (shape has " +
                           std::to_string(shape.size()) + ", alpha " +
                           std::to_string(alpha.size()) + ", beta " + std::to_string(beta.size()) +
                           ")");
  }
  for (size_t k = 0; k < shape.size(); ++k) {
    if (!std::isfinite(alpha[k]) || alpha[k] < 0) {
      return InvalidArgument("mesh: alpha[" + std::to_string(k) + "] must be finite and >= 0");
    }
    if (!std::isfinite(beta[k]) || beta[k] < 0) {
      return InvalidArgument("mesh: beta[" + std::to_string(k) + "] must be finite and >= 0");
    }
  }
  LogicalMesh mesh;
  mesh.shape = shape;
  mesh.flat_alpha = *std::max_element(alpha.begin(), alpha.end());
  mesh.flat_beta = *std::max_element(beta.begin(), beta.end());
  mesh.alpha = std::move(alpha);
  mesh.beta = std::move(beta);
  mesh.crosses_hosts.assign(shape.size(), false);
  return mesh;
}

std::vector<std::vector<int64_t>> EnumerateLogicalShapes(const SubmeshShape& submesh) {
  std::vector<std::vector<int64_t>> shapes;
  const int64_t devices = submesh.num_devices();
  if (submesh.hosts < 1 || submesh.devices_per_host < 1) return shapes;
  for (int64_t mp = 1; mp <= submesh.devices_per_host; ++mp) {
    // (1, D) is the 1-D mesh (D, 1) transposed: the same groups over the same links.
    if (devices / mp == 1 && mp > 1) continue;
    if (submesh.devices_per_host % mp == 0) shapes.push_back({devices / mp, mp});
  }
  return shapes;
}

std::string MeshShapeString(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) {
    if (k > 0) s += ", ";
    s += std::to_string(shape[k]);
  }
  return s + ")";
}

}  // namespace alpa
