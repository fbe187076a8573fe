// Merging items (kernels) into the one item that reads them, again until nothing merges: the
// walk the CUDA runner's multi-output fusion (exec/cuda/group_merge.h) and the planner's replay
// of it (core/ir/fusion.h SingleReaderFusion) share.
#pragma once

#include <cstdint>
#include <vector>

namespace alpa {

// Which item each item has merged into: an item merges into a later one, which holds it then.
class MergeOwners {
 public:
  explicit MergeOwners(size_t count) : owner_(count) {
    for (size_t k = 0; k < count; ++k) owner_[k] = static_cast<int32_t>(k);
  }
  // The item that holds item k now (k itself until it merges).
  int32_t Holder(int32_t k) const {
    while (owner_[static_cast<size_t>(k)] != k) k = owner_[static_cast<size_t>(k)];
    return k;
  }
  bool Holds(size_t k) const { return owner_[k] == static_cast<int32_t>(k); }
  void Merge(size_t from, int32_t into) { owner_[from] = into; }

 private:
  std::vector<int32_t> owner_;
};

// Over `count` items in order, each item k still holding itself merged into
// sole_reader(k, owners) (the one item reading it, or -1) where merge(k, reader) does so;
// passes again while any merges (an item read by two merges once they are one).
template <typename SoleReader, typename Merge>
MergeOwners MergeIntoSoleReaders(size_t count, SoleReader sole_reader, Merge merge) {
  MergeOwners owners(count);
  for (bool merging = true; merging;) {
    merging = false;
    for (size_t k = 0; k < count; ++k) {
      if (!owners.Holds(k)) continue;
      const int32_t reader = sole_reader(static_cast<int32_t>(k), owners);
      if (reader < 0 || !merge(static_cast<int32_t>(k), reader)) continue;
      owners.Merge(k, reader);
      merging = true;
    }
  }
  return owners;
}

}  // namespace alpa
