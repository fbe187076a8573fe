// Spec interning and the resharding cost cache (see spec_table.h).
#include "solvers/auto_sharding/spec_table.h"

#include <utility>

#include "core/ir/graph.h"
#include "core/problem/sharding_problem.h"
#include "core/util/hash_mix.h"

namespace alpa {
namespace {

// The bytes of a tensor; nullopt when they exceed 2^63 (or a count is invalid).
std::optional<uint64_t> TensorByteCount(const std::vector<int64_t>& shape, int64_t element_bytes) {
  const Result<int64_t> elements = ElementCount(shape);
  int64_t bytes = 0;
  if (element_bytes < 1 || !elements.ok() ||
      __builtin_mul_overflow(elements.value(), element_bytes, &bytes)) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(bytes);
}

// The price of a planned move (`allowed`: by the policy).
PricedReshard PriceOfPlan(const ReshardPlan& plan, bool allowed) {
  PricedReshard priced{allowed ? plan.cost : kForbiddenCost, plan.NumCollectives() == 0, false};
  for (const ReshardStep& step : plan.steps) {
    priced.reduce_scatter = priced.reduce_scatter || step.kind == ReshardStepKind::kReduceScatter;
  }
  return priced;
}

}  // namespace

size_t SpecTable::Hash::operator()(const ShardingSpec& s) const {
  size_t h = s.dims.size();
  for (const auto& d : s.dims) {
    h = HashMix(h, 0xffu);
    for (int32_t m : d) h = HashMix(h, static_cast<uint64_t>(m));
  }
  for (int32_t m : s.partial) h = HashMix(h, 0x100u + static_cast<uint64_t>(m));
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

std::string ReshardPolicyKey(const ReshardPolicy& policy) {
  return std::to_string(static_cast<int>(policy.options.cost_mode)) +
         (policy.options.alpa_compatible ? "a" : "-") + (policy.allow_all_gather ? "g" : "-") +
         (policy.allow_all_to_all ? "t" : "-");
}

size_t ReshardCostCache::TypeHash::operator()(const TypeKey& k) const {
  size_t h = static_cast<size_t>(k.element_bytes);
  for (int64_t d : k.shape) h = HashMix(h, static_cast<uint64_t>(d));
  return h;
}

int32_t ReshardCostCache::TensorType(const std::vector<int64_t>& shape, int64_t element_bytes) {
  TypeKey key{shape, element_bytes};
  auto it = type_ids_.find(key);
  if (it != type_ids_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(types_.size());
  type_bytes_.push_back(TensorByteCount(shape, element_bytes));
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

std::optional<SharedReshardTable::Key> ReshardCostCache::SharedKey(int32_t type, int32_t src,
                                                                   int32_t dst) const {
  if (shared_ == nullptr) return std::nullopt;
  const std::optional<uint64_t>& bytes = type_bytes_[static_cast<size_t>(type)];
  if (!bytes) return std::nullopt;
  const std::optional<uint64_t> src_code =
      SharedReshardTable::PackSpec(specs_.spec(src), mesh_.ndim());
  const std::optional<uint64_t> dst_code =
      SharedReshardTable::PackSpec(specs_.spec(dst), mesh_.ndim());
  if (!src_code || !dst_code) return std::nullopt;
  return SharedReshardTable::Key{*bytes, *src_code, *dst_code};
}

Result<PricedReshard> ReshardCostCache::Price(int32_t type, int32_t src, int32_t dst) const {
  const std::optional<SharedReshardTable::Key> shared_key = SharedKey(type, src, dst);
  if (shared_key) {
    const TypeKey& t = types_[static_cast<size_t>(type)];
    const std::optional<PricedReshard> found = shared_->Find(*shared_key);
    if (found && ValidateShardingSpec(specs_.spec(src), t.shape, mesh_.shape).ok() &&
        ValidateShardingSpec(specs_.spec(dst), t.shape, mesh_.shape).ok()) {
      return *found;
    }
  }
  Result<ReshardPlan> plan = Plan(type, src, dst, /*describe=*/false);
  if (!plan.ok()) return plan.status();
  const PricedReshard priced = PriceOfPlan(plan.value(), Allowed(plan.value()));
  if (shared_key) shared_->Insert(*shared_key, priced);
  return priced;
}

Result<double> ReshardCostCache::Cost(int32_t type, int32_t src, int32_t dst,
                                      Restriction restriction) {
  if (src == dst) return 0.0;
  const uint64_t key = (static_cast<uint64_t>(type) << 42) | (static_cast<uint64_t>(src) << 21) |
                       static_cast<uint64_t>(dst);
  auto it = costs_.find(key);
  if (it == costs_.end()) {
    Result<PricedReshard> priced = Price(type, src, dst);
    if (!priced.ok()) return priced.status();
    it = costs_.emplace(key, priced.value()).first;
  }
  const PricedReshard& p = it->second;
  if ((restriction == Restriction::kLocalOnly && !p.local) ||
      (restriction == Restriction::kNoReduceScatter && p.reduce_scatter)) {
    return kForbiddenCost;
  }
  return p.cost;
}

}  // namespace alpa
