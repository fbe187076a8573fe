// Resharding prices shared by many solves (one planning call's pieces, memory levels and
// microbatch counts), beside each solve's own cache (spec_table.h).
//
// The price of moving a tensor from one layout to another depends on the tensor only through
// its byte count: every layout the resharding search passes through splits each tensor dim by
// a prefix of the source's or the target's mesh dims, so when both specs divide the shape, each
// step moves (bytes / shards) bytes exactly, whatever the shape. Moves are therefore keyed by
// (bytes, source spec, target spec) in a table per mesh (shape and per-dim alpha, beta) and
// policy; a solve that finds the move there checks both specs against its own shape first
// (ReshardCostCache::Price).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "core/cluster/logical_mesh.h"
#include "core/cluster/sharding_spec.h"

namespace alpa {

// A move's price and what ReshardCostCache's restrictions read from it.
struct PricedReshard {
  double cost = 0;              // kForbiddenCost where the policy forbids the move
  bool local = false;           // no collective
  bool reduce_scatter = false;  // uses a reduce-scatter
};

// The moves of one mesh and policy; thread-safe.
class SharedReshardTable {
 public:
  // Moving `bytes` bytes (the tensor's whole size) from one spec to another, each spec packed
  // in 64 bits (PackSpec).
  struct Key {
    uint64_t bytes = 0, src = 0, dst = 0;
    bool operator==(const Key& o) const { return bytes == o.bytes && src == o.src && dst == o.dst; }
  };
  // A spec of rank < 256 on a mesh of at most kMaxMeshDims dims, packed: its rank, then per mesh
  // dim the tensor dim + 1 whose list holds it (0: none, 255: partial) and its position in
  // that list. nullopt for other specs (they are not shared).
  static constexpr int32_t kMaxMeshDims = 3;
  static std::optional<uint64_t> PackSpec(const ShardingSpec& spec, int32_t mesh_ndim);

  explicit SharedReshardTable(int64_t max_entries) : max_entries_(max_entries) {}
  std::optional<PricedReshard> Find(const Key& key) const;
  // Keeps the price unless the table is full (later moves are then priced by each solve).
  void Insert(const Key& key, const PricedReshard& priced);
  int64_t size() const;

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  int64_t max_entries_;
  mutable std::shared_mutex mu_;
  std::unordered_map<Key, PricedReshard, KeyHash> prices_;
};

// The tables of every mesh and policy met so far. The policy is the caller's fingerprint of
// whatever else prices a move (cost mode, forbidden moves).
class SharedReshardCosts {
 public:
  // At most this many moves are kept per table (about 64 bytes each).
  static constexpr int64_t kMaxEntriesPerTable = int64_t{1} << 21;
  SharedReshardTable* TableFor(const LogicalMesh& mesh, const std::string& policy);
  // The moves kept, over every table.
  int64_t moves();

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<SharedReshardTable>> tables_;
};

}  // namespace alpa
