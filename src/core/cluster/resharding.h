// Resharding: the collectives that turn a tensor laid out as `src` into `dst` on one logical
// mesh, and their cost under the collective cost model (cost_model.h). REFERENCE §3.
//
// Moves, each on one mesh dim k of size n (b = the cost model's byte count, see cost_model.h):
//   slice           k unused -> k appended (minor-most) to a tensor dim: each device keeps its
//                   piece; no communication, cost 0.
//   all-gather      k removed from the minor end of a tensor dim's list. b = the gathered piece =
//                   the current shard bytes * n.
//   all-to-all      k removed from the minor end of tensor dim i and appended to tensor dim j
//                   (one dim gathered while another is sliced on the same mesh dim).
//                   b = current shard bytes * n (the data the group holds together).
//   all-reduce      k removed from partial. b = the current shard bytes.
//   reduce-scatter  k removed from partial and appended to a tensor dim. b = current shard bytes.
//   zero-fill       k unused -> partial on k (dst is partial there): one member of each group
//                   keeps the value, the others hold zeros; no communication, cost 0.
// The plan is the cheapest sequence of these moves from src to dst (a shortest-path search over
// specs), where slices, all-to-all destinations and reduce-scatters only ever append a mesh dim
// that dst has at that position (so the plan never detours through layouts dst does not want,
// e.g. no hierarchical all-reduce tricks that Alpa's strategy costs do not model). Bytes are
// recomputed from the current shard shape at every step, so gathering order matters and the
// search picks the cheaper one. Ties go to fewer collectives, then fewer steps, then the
// canonical order: partial reductions first, then all-to-alls, then all-gathers, slices last.
//
// Consequences for the basic cases: identical specs cost 0 with no steps; R -> S0 is a free
// slice; S0 -> R one all-gather of the full bytes (divided by the shards on other mesh dims);
// S0 R -> R S0 one all-to-all; partial(0) -> R one all-reduce; partial(0) -> S0 one
// reduce-scatter. A tensor dim whose mesh-dim list must lose some entry and gain another after
// their common prefix (S0 -> S1, S01 -> S10, S01 -> S1) is a move Alpa forbids (it would need a
// collective-permute); with options.alpa_compatible the result has forbidden = true and
// cost = +infinity, otherwise it is priced by the cheapest plan above (all-gather then slice,
// or an all-to-all where one applies).
//
// Collectives over several mesh dims at once (the flattened mesh) are not used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/cost_model.h"
#include "core/cluster/logical_mesh.h"
#include "core/cluster/sharding_spec.h"
#include "core/util/status.h"

namespace alpa {

enum class ReshardStepKind : int32_t {
  kAllReduce = 0,
  kReduceScatter = 1,
  kAllToAll = 2,
  kAllGather = 3,
  kSlice = 4,     // local, free
  kZeroFill = 5,  // local, free
};

const char* ReshardStepName(ReshardStepKind kind);  // "all-gather", ..., "slice", "zero-fill"

struct ReshardStep {
  ReshardStepKind kind = ReshardStepKind::kSlice;
  bool is_collective = false;
  CollectiveKind collective = CollectiveKind::kAllGather;  // when is_collective
  std::vector<int32_t> mesh_dims;                          // the mesh dim(s) it runs over
  double bytes = 0;             // b passed to the cost model (0 for local steps)
  double bytes_per_device = 0;  // bytes each device receives (ring algorithms)
  double cost = 0;              // cost model units (0 for local steps)
  std::string description;      // e.g. "all-gather tensor dim 0 over mesh dim 0: S0 R -> R R"
  ShardingSpec after;           // the layout after this step
};

struct ReshardPlan {
  std::vector<ReshardStep> steps;  // in execution order, local steps included
  double plan_cost = 0;            // sum of step costs
  bool forbidden = false;          // an Alpa-forbidden move and options.alpa_compatible
  double cost = 0;                 // plan_cost, or +infinity when forbidden

  int32_t NumCollectives() const;
  std::vector<ReshardStep> Collectives() const;  // the collective steps only
};

struct ReshardOptions {
  CostMode cost_mode = CostMode::kAlpaCompatible;
  // Flag (and price at +infinity) the moves Alpa forbids.
  bool alpa_compatible = true;
  // Write each step's description and layout after; false leaves them empty (for callers that
  // only price the move: the search then builds no text).
  bool describe = true;
};

// Whether src -> dst contains a move Alpa forbids (see the top of this file). Specs must have
// equal rank.
bool IsAlpaForbiddenReshard(const ShardingSpec& src, const ShardingSpec& dst);

// The plan for a tensor of `tensor_shape` with `element_bytes` bytes per element. Both specs are
// validated against the shape and mesh (errors name the spec); element_bytes must be >= 1.
Result<ReshardPlan> PlanReshard(const ShardingSpec& src, const ShardingSpec& dst,
                                const std::vector<int64_t>& tensor_shape, int64_t element_bytes,
                                const LogicalMesh& mesh, const ReshardOptions& options = {});

}  // namespace alpa
