// Resharding prices shared between solves (shared_reshard_costs.h).
#include "solvers/auto_sharding/shared_reshard_costs.h"

#include <cstring>
#include <utility>
#include <vector>

#include "core/util/hash_mix.h"

namespace alpa {
namespace {

template <typename T>
void AppendBytes(std::string& out, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out.append(raw, sizeof(T));
}

}  // namespace

std::optional<uint64_t> SharedReshardTable::PackSpec(const ShardingSpec& spec, int32_t mesh_ndim) {
  constexpr uint64_t kPartialPlace = 255;
  if (mesh_ndim < 0 || mesh_ndim > kMaxMeshDims || spec.dims.size() >= kPartialPlace) {
    return std::nullopt;
  }
  uint64_t place[kMaxMeshDims] = {}, position[kMaxMeshDims] = {};
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    for (size_t p = 0; p < spec.dims[i].size(); ++p) {
      const int32_t k = spec.dims[i][p];
      if (k < 0 || k >= mesh_ndim) return std::nullopt;
      place[k] = i + 1;
      position[k] = p;
    }
  }
  for (int32_t k : spec.partial) {
    if (k < 0 || k >= mesh_ndim) return std::nullopt;
    place[k] = kPartialPlace;
  }
  uint64_t packed = spec.dims.size();
  for (int32_t k = 0; k < kMaxMeshDims; ++k) {
    packed = packed << 16 | place[k] << 8 | position[k];
  }
  return packed;
}

size_t SharedReshardTable::KeyHash::operator()(const Key& k) const {
  return HashMix(HashMix(HashMix(0, k.bytes), k.src), k.dst);
}

std::optional<PricedReshard> SharedReshardTable::Find(const Key& key) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  const auto it = prices_.find(key);
  if (it == prices_.end()) return std::nullopt;
  return it->second;
}

void SharedReshardTable::Insert(const Key& key, const PricedReshard& priced) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (static_cast<int64_t>(prices_.size()) >= max_entries_) return;
  prices_.emplace(key, priced);
}

int64_t SharedReshardTable::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return static_cast<int64_t>(prices_.size());
}

int64_t SharedReshardCosts::moves() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t total = 0;
  for (const auto& [key, table] : tables_) total += table->size();
  return total;
}

SharedReshardTable* SharedReshardCosts::TableFor(const LogicalMesh& mesh,
                                                 const std::string& policy) {
  std::string key = policy;
  AppendBytes(key, static_cast<int32_t>(mesh.shape.size()));
  for (size_t k = 0; k < mesh.shape.size(); ++k) {
    AppendBytes(key, mesh.shape[k]);
    AppendBytes(key, k < mesh.alpha.size() ? mesh.alpha[k] : -1.0);
    AppendBytes(key, k < mesh.beta.size() ? mesh.beta[k] : -1.0);
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<SharedReshardTable>& table = tables_[key];
  if (!table) table = std::make_unique<SharedReshardTable>(kMaxEntriesPerTable);
  return table.get();
}

}  // namespace alpa
