// The stage DP of the inter-op pass (REFERENCE §4): given the latency and memory fit of every
// stage candidate (a layer range on a submesh with one logical mesh / option set), choose the
// pipeline stages, in order, that cover all layers once, use submeshes whose device counts sum
// to the cluster's exactly, and minimise
//     T = sum_i (t_i + o_i) + (B - 1) * max_j t_j
// where t is the latency of one microbatch (forward + backward) and o a once-per-iteration
// overhead charged in full (gradient synchronisation and the optimizer update; 0 gives Alpa's
// formula exactly). Solved by Alpa's enumeration of t_max over the sorted distinct candidate
// latencies with a DP per t_max, stopping as soon as B * t_max can no longer beat the best; exact
// bisection skips the t_max values where the DP's optimum cannot change (stage_dp.cc).
//
// Knows nothing about graphs or meshes beyond submesh shapes (solvers/ are flat).
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster/logical_mesh.h"
#include "core/util/status.h"

namespace alpa {

struct StageCandidate {
  int32_t first_layer = 0, last_layer = 0;  // inclusive range of layers
  int32_t submesh = 0;                      // index into StageDpInput::submeshes
  int32_t config = 0;                       // the caller's id for the logical mesh / options
  double latency = 0;                       // t: seconds per microbatch, forward + backward
  double iteration_overhead = 0;            // o: seconds once per iteration
  // The most stages that may come after this one: 1F1B keeps min(B, stages after + 1)
  // microbatches of activations in flight, so a memory-hungry stage must sit late in the
  // pipeline. Negative: the candidate never fits.
  int32_t max_stages_after = 0;
  // The pool of devices it runs on (StageDpInput::pool_devices); 0 without pools.
  int32_t pool = 0;
};

struct StageDpInput {
  int32_t num_layers = 0;
  int64_t hosts = 0, devices_per_host = 0;
  // The submesh shapes stages may use. Validity (see SubmeshShapesTile): each is (1, k) with k
  // dividing devices_per_host or (n, devices_per_host); the within-host sizes form a
  // divisibility chain, so any multiset of them whose device counts sum to hosts *
  // devices_per_host tiles the cluster (PlaceSubmeshes finds the placement).
  std::vector<SubmeshShape> submeshes;
  std::vector<StageCandidate> candidates;
  int64_t microbatches = 1;  // B >= 1
  int32_t max_stages = 0;    // 0: up to num_layers
  int32_t min_stages = 0;    // 0 or 1: any; with max_stages == min_stages, exactly that many
  // Pools of a mixed cluster (one device type each, whole hosts): per pool id, its devices, a
  // multiple of devices_per_host, summing to hosts * devices_per_host. Empty: one pool (id 0) of
  // every device.
  std::vector<int64_t> pool_devices;
  // The pools the plan uses, in pipeline order: the first stages use every device of
  // pool_order[0], the next ones every device of pool_order[1], and so on; candidates of the
  // other pools are left out. Empty: every pool, in id order.
  std::vector<int32_t> pool_order;
};

struct StageDpResult {
  bool feasible = false;
  double objective = 0;         // T above
  double max_latency = 0;       // max_j t_j of the chosen stages
  std::vector<int32_t> stages;  // candidate indices, pipeline order (first layer first)
  int64_t t_max_values = 0;     // distinct latencies of candidates with max_stages_after >= 0
  int64_t t_max_tried = 0;      // how many of them the DP ran at (SolveStageDp only)
};

// Errors (kInvalidArgument, naming the element): num_layers < 1, hosts / devices_per_host < 1
// (or above kMaxHosts / kMaxDevicesPerHost / kMaxDevices), microbatches < 1, max_stages < 0, a
// candidate with a bad range / submesh index / pool / negative or non-finite latency / non-finite
// overhead (negative overheads are allowed), a submesh shape that breaks the tiling rule above,
// pools that are not whole hosts or do not sum to the cluster, a pool order naming a pool twice
// or one that does not exist.
// kUnsupported when the DP table (about layers x stages x device counts / gcd of the submesh
// sizes) would exceed 2^25 entries. No feasible plan is not an error (feasible = false).
// Ties: the smallest max latency, then the fewest stages, then, stage by stage from the first,
// the lowest candidate index.
Result<StageDpResult> SolveStageDp(const StageDpInput& input);

// For every stage count s from 1 to the most the DP allows (min(num_layers, max_stages, the
// devices over the smallest usable submesh)): the best plan of exactly s stages, as SolveStageDp
// would return it with min_stages = max_stages = s; entry s - 1, infeasible where no plan has s
// stages (or s < min_stages). Empty when no plan can exist at all. One search serves every count
// (t_max_tried is its total), far cheaper than one SolveStageDp per count. Errors as
// SolveStageDp.
Result<std::vector<StageDpResult>> SolveStageDpPerStageCount(const StageDpInput& input);

// The input checks of SolveStageDp alone (the errors listed above but kUnsupported).
Status ValidateStageDpInput(const StageDpInput& input);

// The submesh shapes of REFERENCE §4 for a cluster: (1, k) for k in the longest divisibility
// chain 1 = k_0 | k_1 | ... | devices_per_host of divisors of devices_per_host (preferring powers
// of two: 1, 2, 4, ... when devices_per_host is a power of two), then (n, devices_per_host) for
// n = 2..hosts. For 8 devices per host: (1,1), (1,2), (1,4), (1,8), (2,8), ... Empty when hosts
// or devices_per_host is out of range (see SubmeshShapesTile).
std::vector<SubmeshShape> EnumerateSubmeshShapes(int64_t hosts, int64_t devices_per_host);

// The submesh shapes the planner solves on (a subset of EnumerateSubmeshShapes that keeps the
// stage DP's choices that matter while the intra-op solves grow only logarithmically in the
// hosts): the within-host chain, and (n, devices_per_host) for
//   - every n <= kAllSubmeshHosts (so clusters of up to that many hosts get every shape),
//   - n = floor(hosts / S) and ceil(hosts / S) for every stage count S = 1..max_stages (so a
//     pipeline of S stages whose sizes differ by at most one host, which sums to the cluster
//     for every S, is always available), and
//   - a geometric ladder n = m * 2^k with 8 <= m < 16 (at most 12.5 % apart) for unbalanced
//     pipelines.
// Ascending; empty as EnumerateSubmeshShapes is. max_stages < 1 counts as 1.
inline constexpr int64_t kAllSubmeshHosts = 16;
std::vector<SubmeshShape> PlannerSubmeshShapes(int64_t hosts, int64_t devices_per_host,
                                               int32_t max_stages);

// Checks the tiling rule of StageDpInput::submeshes; the message names the offending shape.
Status SubmeshShapesTile(int64_t hosts, int64_t devices_per_host,
                         const std::vector<SubmeshShape>& submeshes);

// Physical placement of stages whose submeshes sum to the cluster: per stage, its device ids
// (host * devices_per_host + local index), hosts whole for multi-host submeshes and
// consecutive local indices inside one host otherwise. Packs largest first, which always
// succeeds under the tiling rule. Error when the shapes do not sum to the cluster or break the
// rule.
Result<std::vector<std::vector<int64_t>>> PlaceSubmeshes(int64_t hosts, int64_t devices_per_host,
                                                         const std::vector<SubmeshShape>& stages);

}  // namespace alpa
