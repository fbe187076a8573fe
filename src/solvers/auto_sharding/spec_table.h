// Interned sharding specs and a cache of resharding costs, so that the thousands of edges of a
// repeated-layer graph price each (tensor type, source spec, target spec) once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster/logical_mesh.h"
#include "core/cluster/resharding.h"
#include "core/cluster/sharding_spec.h"
#include "core/util/status.h"
#include "solvers/auto_sharding/shared_reshard_costs.h"

namespace alpa {

class SpecTable {
 public:
  int32_t Intern(const ShardingSpec& spec);
  const ShardingSpec& spec(int32_t id) const { return specs_[static_cast<size_t>(id)]; }
  int32_t size() const { return static_cast<int32_t>(specs_.size()); }

 private:
  struct Hash {
    size_t operator()(const ShardingSpec& s) const;
  };
  std::vector<ShardingSpec> specs_;
  std::unordered_map<ShardingSpec, int32_t, Hash> ids_;
};

struct ReshardPolicy {
  ReshardOptions options;
  bool allow_all_gather = true;
  bool allow_all_to_all = true;
};

// What SharedReshardCosts::TableFor needs of a policy: every field that prices a move.
std::string ReshardPolicyKey(const ReshardPolicy& policy);

// Costs of resharding tensors between interned specs on one mesh; forbidden moves (Alpa's in
// Alpa-compatible mode, and all-gathers / all-to-alls where the policy forbids them) cost
// kForbiddenCost. With a shared table (of the same mesh and policy), a move this cache has not
// priced is looked up there before it is planned, and kept there once planned.
class ReshardCostCache {
 public:
  ReshardCostCache(const SpecTable& specs, const LogicalMesh& mesh, ReshardPolicy policy,
                   SharedReshardTable* shared = nullptr)
      : specs_(specs), mesh_(mesh), policy_(policy), shared_(shared) {}

  // An id for a tensor type (shape and element size).
  int32_t TensorType(const std::vector<int64_t>& shape, int64_t element_bytes);
  // Moves a caller may rule out for one edge (they then cost kForbiddenCost).
  enum class Restriction : int32_t {
    kNone = 0,
    kLocalOnly = 1,        // no collective at all
    kNoReduceScatter = 2,  // partial sums are all-reduced
  };
  // The cost of src -> dst for a tensor of `type` (an error when a spec does not fit it).
  Result<double> Cost(int32_t type, int32_t src, int32_t dst,
                      Restriction restriction = Restriction::kNone);
  // The full plan (not cached): for reporting the chosen collectives; without `describe`, the
  // steps carry no text or layout after.
  Result<ReshardPlan> Plan(int32_t type, int32_t src, int32_t dst, bool describe = true) const;
  bool Allowed(const ReshardPlan& plan) const;

 private:
  // src -> dst priced: from the shared table where it has the move and both specs fit the
  // type's shape, else planned (and kept in the shared table).
  Result<PricedReshard> Price(int32_t type, int32_t src, int32_t dst) const;
  // The move's key in the shared table; nullopt without one, or where the tensor's bytes or a
  // spec do not pack.
  std::optional<SharedReshardTable::Key> SharedKey(int32_t type, int32_t src, int32_t dst) const;

  struct TypeKey {
    std::vector<int64_t> shape;
    int64_t element_bytes;
    bool operator==(const TypeKey& o) const {
      return shape == o.shape && element_bytes == o.element_bytes;
    }
  };
  struct TypeHash {
    size_t operator()(const TypeKey& k) const;
  };
  const SpecTable& specs_;
  const LogicalMesh& mesh_;
  ReshardPolicy policy_;
  std::vector<TypeKey> types_;
  std::vector<std::optional<uint64_t>> type_bytes_;  // per type: its bytes, where they fit
  std::unordered_map<TypeKey, int32_t, TypeHash> type_ids_;
  SharedReshardTable* shared_;
  std::unordered_map<uint64_t, PricedReshard> costs_;
};

}  // namespace alpa
