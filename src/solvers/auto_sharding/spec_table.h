// Interned sharding specs and a cache of resharding costs, so that the thousands of edges of a
// repeated-layer graph price each (tensor type, source spec, target spec) once.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/cluster/logical_mesh.h"
#include "core/cluster/resharding.h"
#include "core/cluster/sharding_spec.h"
#include "core/util/status.h"

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

// Costs of resharding tensors between interned specs on one mesh; forbidden moves (Alpa's in
// Alpa-compatible mode, and all-gathers / all-to-alls where the policy forbids them) cost
// kForbiddenCost.
class ReshardCostCache {
 public:
  ReshardCostCache(const SpecTable& specs, const LogicalMesh& mesh, ReshardPolicy policy)
      : specs_(specs), mesh_(mesh), policy_(policy) {}

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
  std::unordered_map<TypeKey, int32_t, TypeHash> type_ids_;
  struct Priced {
    double cost;
    bool local;           // no collective
    bool reduce_scatter;  // uses a reduce-scatter
  };
  std::unordered_map<uint64_t, Priced> costs_;
};

}  // namespace alpa
