// Spec interning and the resharding cost cache (see spec_table.h).
#include "solvers/auto_sharding/spec_table.h"

#include "core/problem/sharding_problem.h"

namespace alpa {
namespace {

size_t Mix(size_t h, uint64_t v) {
  return h ^ (static_cast<size_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

}  // namespace

size_t SpecTable::Hash::operator()(const ShardingSpec& s) const {
  size_t h = s.dims.size();
  for (const auto& d : s.dims) {
    h = Mix(h, 0xffu);
    for (int32_t m : d) h = Mix(h, static_cast<uint64_t>(m));
  }
  for (int32_t m : s.partial) h = Mix(h, 0x100u + static_cast<uint64_t>(m));
  return h;
}

int32_t SpecTable::Intern(const ShardingSpec& spec) {
  auto it = ids_.find(spec);
  if (it != ids_.end()) return it->second;
  const int32_t id = size();
  specs_.push_back(spec);
  ids_.emplace(spec, id);
  return id;
}

size_t ReshardCostCache::TypeHash::operator()(const TypeKey& k) const {
  size_t h = static_cast<size_t>(k.element_bytes);
  for (int64_t d : k.shape) h = Mix(h, static_cast<uint64_t>(d));
  return h;
}

int32_t ReshardCostCache::TensorType(const std::vector<int64_t>& shape, int64_t element_bytes) {
  TypeKey key{shape, element_bytes};
  auto it = type_ids_.find(key);
  if (it != type_ids_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(types_.size());
  types_.push_back(key);
  type_ids_.emplace(std::move(key), id);
  return id;
}

bool ReshardCostCache::Allowed(const ReshardPlan& plan) const {
  if (plan.forbidden) return false;
  for (const ReshardStep& step : plan.steps) {
    if (!policy_.allow_all_gather && step.kind == ReshardStepKind::kAllGather) return false;
    if (!policy_.allow_all_to_all && step.kind == ReshardStepKind::kAllToAll) return false;
  }
  return true;
}

Result<ReshardPlan> ReshardCostCache::Plan(int32_t type, int32_t src, int32_t dst,
                                           bool describe) const {
  const TypeKey& t = types_[static_cast<size_t>(type)];
  ReshardOptions options = policy_.options;
  options.describe = describe;
  return PlanReshard(specs_.spec(src), specs_.spec(dst), t.shape, t.element_bytes, mesh_, options);
}

Result<double> ReshardCostCache::Cost(int32_t type, int32_t src, int32_t dst,
                                      Restriction restriction) {
  if (src == dst) return 0.0;
  const uint64_t key = (static_cast<uint64_t>(type) << 42) | (static_cast<uint64_t>(src) << 21) |
                       static_cast<uint64_t>(dst);
  auto it = costs_.find(key);
  if (it == costs_.end()) {
    Result<ReshardPlan> plan = Plan(type, src, dst, /*describe=*/false);
    if (!plan.ok()) return plan.status();
    Priced priced{Allowed(plan.value()) ? plan.value().cost : kForbiddenCost,
                  plan.value().NumCollectives() == 0, false};
    for (const ReshardStep& step : plan.value().steps) {
      priced.reduce_scatter = priced.reduce_scatter || step.kind == ReshardStepKind::kReduceScatter;
    }
    it = costs_.emplace(key, priced).first;
  }
  const Priced& p = it->second;
  if ((restriction == Restriction::kLocalOnly && !p.local) ||
      (restriction == Restriction::kNoReduceScatter && p.reduce_scatter)) {
    return kForbiddenCost;
  }
  return p.cost;
}

}  // namespace alpa
