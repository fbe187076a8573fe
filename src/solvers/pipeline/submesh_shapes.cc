// Submesh shapes of the stage DP (declared in stage_dp.h): the shapes Alpa enumerates, the
// tiling rule that makes any multiset of them summing to the cluster placeable, and the
// placement itself.
//
// Why largest-first packing always succeeds under the rule: place the stages on one cursor over
// the flat device ids, largest first. Every size placed so far is a multiple of the current one
// (whole hosts are multiples of every within-host size, and within-host sizes form a divisibility
// chain), so the cursor is a multiple of the current size. A whole-host submesh therefore starts
// on a host boundary, and a within-host one (its size divides devices_per_host) never straddles
// one.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "solvers/pipeline/stage_dp.h"

namespace alpa {
namespace {

std::string ShapeString(const SubmeshShape& s) {
  return "(" + std::to_string(s.hosts) + ", " + std::to_string(s.devices_per_host) + ")";
}

Status CheckCluster(int64_t hosts, int64_t devices_per_host) {
  if (hosts < 1 || hosts > kMaxHosts) {
    return InvalidArgument("hosts must be in [1, " + std::to_string(kMaxHosts) + "] (got " +
                           std::to_string(hosts) + ")");
  }
  if (devices_per_host < 1 || devices_per_host > kMaxDevicesPerHost) {
    return InvalidArgument("devices_per_host must be in [1, " + std::to_string(kMaxDevicesPerHost) +
                           "] (got " + std::to_string(devices_per_host) + ")");
  }
  if (hosts * devices_per_host > kMaxDevices) {  // both bounded above: no overflow
    return InvalidArgument("the cluster has " + std::to_string(hosts * devices_per_host) +
                           " devices, more than " + std::to_string(kMaxDevices));
  }
  return Status::Ok();
}

// The rule for one shape; `what` names it, e.g. "submesh 3".
Status CheckOneShape(int64_t hosts, int64_t devices_per_host, const SubmeshShape& s,
                     const std::string& what) {
  const std::string name = what + " " + ShapeString(s);
  if (s.hosts < 1 || s.devices_per_host < 1) {
    return InvalidArgument(name + ": hosts and devices_per_host must be >= 1");
  }
  if (s.hosts == 1) {
    if (s.devices_per_host > devices_per_host || devices_per_host % s.devices_per_host != 0) {
      return InvalidArgument(name + ": " + std::to_string(s.devices_per_host) +
                             " devices do not divide a host's " + std::to_string(devices_per_host));
    }
    return Status::Ok();
  }
  if (s.devices_per_host != devices_per_host) {
    return InvalidArgument(name + ": a submesh over several hosts must use all " +
                           std::to_string(devices_per_host) + " devices of each");
  }
  if (s.hosts > hosts) {
    return InvalidArgument(name + ": needs " + std::to_string(s.hosts) +
                           " hosts, the cluster has " + std::to_string(hosts));
  }
  return Status::Ok();
}

// Every shape obeys the rule and the within-host sizes form a divisibility chain.
// `kind` names the elements ("submesh", "stage").
Status CheckShapes(int64_t hosts, int64_t devices_per_host, const std::vector<SubmeshShape>& shapes,
                   const std::string& kind) {
  ALPA_RETURN_IF_ERROR(CheckCluster(hosts, devices_per_host));
  std::vector<std::pair<int64_t, size_t>> within;  // (size, index)
  for (size_t j = 0; j < shapes.size(); ++j) {
    ALPA_RETURN_IF_ERROR(
        CheckOneShape(hosts, devices_per_host, shapes[j], kind + " " + std::to_string(j)));
    if (shapes[j].hosts == 1) within.emplace_back(shapes[j].devices_per_host, j);
  }
  std::sort(within.begin(), within.end());
  // Sorted sizes form a chain iff each divides the next.
  for (size_t j = 1; j < within.size(); ++j) {
    const auto& [small, small_index] = within[j - 1];
    const auto& [big, big_index] = within[j];
    if (big % small != 0) {
      return InvalidArgument(kind + " " + std::to_string(big_index) + " " +
                             ShapeString(shapes[big_index]) + ": within-host size " +
                             std::to_string(big) + " is not a multiple of " + kind + " " +
                             std::to_string(small_index) + "'s " + std::to_string(small) +
                             ", so the shapes need not tile a host");
    }
  }
  return Status::Ok();
}

}  // namespace

std::vector<SubmeshShape> EnumerateSubmeshShapes(int64_t hosts, int64_t devices_per_host) {
  std::vector<SubmeshShape> shapes;
  if (!CheckCluster(hosts, devices_per_host).ok()) return shapes;
  // The longest chain multiplies in one prime factor at a time; smallest first prefers powers
  // of two (6: 1, 2, 6; 12: 1, 2, 4, 12).
  int64_t k = 1, rest = devices_per_host;
  shapes.push_back({1, 1});
  while (rest > 1) {
    int64_t p = 2;
    while (rest % p != 0) ++p;
    k *= p;
    rest /= p;
    shapes.push_back({1, k});
  }
  for (int64_t n = 2; n <= hosts; ++n) shapes.push_back({n, devices_per_host});
  return shapes;
}

std::vector<SubmeshShape> PlannerSubmeshShapes(int64_t hosts, int64_t devices_per_host,
                                               int32_t max_stages) {
  std::vector<SubmeshShape> all = EnumerateSubmeshShapes(hosts, devices_per_host);
  if (hosts <= kAllSubmeshHosts || all.empty()) return all;
  std::vector<char> keep(static_cast<size_t>(hosts) + 1, 0);
  for (int64_t n = 1; n <= kAllSubmeshHosts; ++n) keep[static_cast<size_t>(n)] = 1;
  for (int64_t s = 1; s <= std::max<int32_t>(max_stages, 1) && s <= hosts; ++s) {
    keep[static_cast<size_t>(hosts / s)] = 1;
    keep[static_cast<size_t>((hosts + s - 1) / s)] = 1;
  }
  for (int64_t step = 1; 8 * step <= hosts; step *= 2) {
    for (int64_t m = 8; m < 16 && m * step <= hosts; ++m) keep[static_cast<size_t>(m * step)] = 1;
  }
  std::vector<SubmeshShape> shapes;
  for (const SubmeshShape& s : all) {
    if (s.hosts == 1 || keep[static_cast<size_t>(s.hosts)]) shapes.push_back(s);
  }
  return shapes;
}

Status SubmeshShapesTile(int64_t hosts, int64_t devices_per_host,
                         const std::vector<SubmeshShape>& submeshes) {
  return CheckShapes(hosts, devices_per_host, submeshes, "submesh");
}

Result<std::vector<std::vector<int64_t>>> PlaceSubmeshes(int64_t hosts, int64_t devices_per_host,
                                                         const std::vector<SubmeshShape>& stages) {
  ALPA_RETURN_IF_ERROR(CheckShapes(hosts, devices_per_host, stages, "stage"));
  const int64_t total = hosts * devices_per_host;
  int64_t sum = 0;
  for (const SubmeshShape& s : stages) {
    sum += s.num_devices();  // each is <= 2^24 after the check: no overflow
  }
  if (sum != total) {
    return InvalidArgument("the stages' submeshes use " + std::to_string(sum) +
                           " devices, the cluster has " + std::to_string(total));
  }
  std::vector<size_t> order(stages.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return stages[a].num_devices() > stages[b].num_devices();
  });
  std::vector<std::vector<int64_t>> devices(stages.size());
  int64_t cursor = 0;
  for (size_t j : order) {
    const int64_t n = stages[j].num_devices();
    devices[j].resize(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) devices[j][static_cast<size_t>(t)] = cursor + t;
    cursor += n;
  }
  return devices;
}

}  // namespace alpa
