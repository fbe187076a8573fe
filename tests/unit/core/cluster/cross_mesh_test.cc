// Cross-mesh resharding: exact moves on small cases, input validation, and a property test over
// random shapes, specs, meshes and device lists (every destination element received exactly
// once, every move inside the sender's and the receiver's tiles, balanced senders).
#include "core/cluster/cross_mesh.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace alpa {
namespace {

using V = std::vector<int64_t>;

ShardingSpec P(const std::string& text) { return ParseShardingSpec(text).value(); }

SliceMove M(int64_t src, int64_t dst, V offsets, V sizes, int64_t bytes) {
  SliceMove m;
  m.src_device = src;
  m.dst_device = dst;
  m.offsets = std::move(offsets);
  m.sizes = std::move(sizes);
  m.bytes = bytes;
  return m;
}

std::string Describe(const std::vector<SliceMove>& moves) {
  std::string out;
  for (const SliceMove& m : moves) {
    out += std::to_string(m.src_device) + "->" + std::to_string(m.dst_device) + " [";
    for (size_t i = 0; i < m.offsets.size(); ++i) {
      out += (i ? ", " : "") + std::to_string(m.offsets[i]) + ":" +
             std::to_string(m.offsets[i] + m.sizes[i]);
    }
    out += "] " + std::to_string(m.bytes) + "\n";
  }
  return out;
}

std::vector<SliceMove> Plan(const V& shape, int64_t elem, const std::string& src, const V& src_mesh,
                            const V& src_devices, const std::string& dst, const V& dst_mesh,
                            const V& dst_devices) {
  Result<std::vector<SliceMove>> r = PlanCrossMeshTransfer(
      shape, elem, P(src), src_mesh, src_devices, P(dst), dst_mesh, dst_devices);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : std::vector<SliceMove>{};
}

Status PlanError(const V& shape, int64_t elem, const ShardingSpec& src, const V& src_mesh,
                 const V& src_devices, const ShardingSpec& dst, const V& dst_mesh,
                 const V& dst_devices) {
  return PlanCrossMeshTransfer(shape, elem, src, src_mesh, src_devices, dst, dst_mesh, dst_devices)
      .status();
}

int64_t SentBy(const std::vector<SliceMove>& moves, int64_t device) {
  int64_t sum = 0;
  for (const SliceMove& m : moves) sum += m.src_device == device ? m.bytes : 0;
  return sum;
}

TEST(TileOfDevice, MixedRadixFirstMeshDimMajor) {
  // S01 on (2, 3): coordinate (i, j) holds piece i * 3 + j of 6; S10: piece j * 2 + i.
  const V shape = {12, 5};
  const V mesh = {2, 3};
  for (int64_t l = 0; l < 6; ++l) {
    const int64_t i = l / 3, j = l % 3;
    const TensorTile a = TileOfDevice(P("S01 R"), shape, mesh, l);
    EXPECT_EQ(a.offsets, (V{(i * 3 + j) * 2, 0}));
    EXPECT_EQ(a.sizes, (V{2, 5}));
    const TensorTile b = TileOfDevice(P("S10 R"), shape, mesh, l);
    EXPECT_EQ(b.offsets, (V{(j * 2 + i) * 2, 0}));
    const TensorTile c = TileOfDevice(P("S1 R partial(0)"), shape, mesh, l);
    EXPECT_EQ(c.offsets, (V{j * 4, 0}));
    EXPECT_EQ(c.sizes, (V{4, 5}));
  }
}

TEST(CrossMesh, SplitToReplicatedSendsBothHalvesToEachDestination) {
  // S0 on a (2, 1) mesh of devices {0, 1} -> R on a (1, 2) mesh of devices {2, 3}; 4 x 6 fp32.
  const std::vector<SliceMove> moves =
      Plan({4, 6}, 4, "S0 R", {2, 1}, {0, 1}, "R R", {1, 2}, {2, 3});
  const std::vector<SliceMove> want = {M(0, 2, {0, 0}, {2, 6}, 48), M(1, 2, {2, 0}, {2, 6}, 48),
                                       M(0, 3, {0, 0}, {2, 6}, 48), M(1, 3, {2, 0}, {2, 6}, 48)};
  EXPECT_EQ(moves, want) << Describe(moves);
}

TEST(CrossMesh, ReplicatedToTiledTakesEachQuarterFromOneBalancedSender) {
  // R R on (2, 2) {0..3} -> S0 S1 on (2, 2) {4..7}: every source holds everything; the least
  // loaded sender (ties: lowest id) serves each destination in turn, one quarter each.
  const std::vector<SliceMove> moves =
      Plan({4, 4}, 4, "R R", {2, 2}, {0, 1, 2, 3}, "S0 S1", {2, 2}, {4, 5, 6, 7});
  const std::vector<SliceMove> want = {M(0, 4, {0, 0}, {2, 2}, 16), M(1, 5, {0, 2}, {2, 2}, 16),
                                       M(2, 6, {2, 0}, {2, 2}, 16), M(3, 7, {2, 2}, {2, 2}, 16)};
  EXPECT_EQ(moves, want) << Describe(moves);
  for (int64_t d = 0; d < 4; ++d) EXPECT_EQ(SentBy(moves, d), 16);
}

TEST(CrossMesh, FourShardsToTwoAreContiguousPairs) {
  const std::vector<SliceMove> moves = Plan({8}, 2, "S0", {4}, {0, 1, 2, 3}, "S0", {2}, {4, 5});
  const std::vector<SliceMove> want = {M(0, 4, {0}, {2}, 4), M(1, 4, {2}, {2}, 4),
                                       M(2, 5, {4}, {2}, 4), M(3, 5, {6}, {2}, 4)};
  EXPECT_EQ(moves, want) << Describe(moves);
}

TEST(CrossMesh, TwoShardsToFourCutEachSourceShard) {
  // The reverse: each destination tile lies inside one source tile.
  const std::vector<SliceMove> moves = Plan({8}, 2, "S0", {2}, {10, 11}, "S0", {4}, {0, 1, 2, 3});
  const std::vector<SliceMove> want = {M(10, 0, {0}, {2}, 4), M(10, 1, {2}, {2}, 4),
                                       M(11, 2, {4}, {2}, 4), M(11, 3, {6}, {2}, 4)};
  EXPECT_EQ(moves, want) << Describe(moves);
}

TEST(CrossMesh, MisalignedSplitsIntersect) {
  // Rows split at the source, columns at the destination: each destination's column half
  // comes from both source row halves.
  const std::vector<SliceMove> moves = Plan({4, 4}, 1, "S0 R", {2}, {0, 1}, "R S0", {2}, {2, 3});
  const std::vector<SliceMove> want = {M(0, 2, {0, 0}, {2, 2}, 4), M(1, 2, {2, 0}, {2, 2}, 4),
                                       M(0, 3, {0, 2}, {2, 2}, 4), M(1, 3, {2, 2}, {2, 2}, 4)};
  EXPECT_EQ(moves, want) << Describe(moves);
}

TEST(CrossMesh, ReplicatedSendersTakeTurns) {
  // R on 2 devices -> R on 4: each destination gets the whole tensor; senders alternate.
  const std::vector<SliceMove> moves = Plan({6}, 4, "R", {2}, {7, 3}, "R", {4}, {0, 1, 2, 4});
  ASSERT_EQ(moves.size(), 4u);
  // Device 3 (logical 1) has the lower id, so it goes first.
  EXPECT_EQ(moves[0].src_device, 3);
  EXPECT_EQ(moves[1].src_device, 7);
  EXPECT_EQ(moves[2].src_device, 3);
  EXPECT_EQ(moves[3].src_device, 7);
  EXPECT_EQ(SentBy(moves, 3), 48);
  EXPECT_EQ(SentBy(moves, 7), 48);
}

TEST(CrossMesh, PartialSourceIsReducedFirstAndTreatedAsReplicated) {
  // partial(0) over 2: after the reduction both hold the value; the two destinations are
  // served by different senders.
  const std::vector<SliceMove> moves =
      Plan({2, 2}, 4, "R R partial(0)", {2}, {0, 1}, "S0 R", {2}, {2, 3});
  const std::vector<SliceMove> want = {M(0, 2, {0, 0}, {1, 2}, 8), M(1, 3, {1, 0}, {1, 2}, 8)};
  EXPECT_EQ(moves, want) << Describe(moves);
}

TEST(CrossMesh, PartialDestinationOnlyCoordinateZeroReceives) {
  // S0 partial(1) on (2, 2): devices at mesh coordinate 0 on dim 1 (logical 0 and 2) receive,
  // the others zero-fill.
  const std::vector<SliceMove> moves =
      Plan({4}, 4, "S0", {2}, {0, 1}, "S0 partial(1)", {2, 2}, {4, 5, 6, 7});
  const std::vector<SliceMove> want = {M(0, 4, {0}, {2}, 8), M(1, 6, {2}, {2}, 8)};
  EXPECT_EQ(moves, want) << Describe(moves);
}

TEST(CrossMesh, OverlappingDevicesCopyLocally) {
  // Device 1 is in both meshes: it keeps its own copy (not counted as sent), so device 2's
  // data comes from device 0 (both have sent nothing; 0 is the lower id).
  const std::vector<SliceMove> moves = Plan({4}, 4, "R", {2}, {0, 1}, "S0", {2}, {1, 2});
  const std::vector<SliceMove> want = {M(1, 1, {0}, {2}, 8), M(0, 2, {2}, {2}, 8)};
  EXPECT_EQ(moves, want) << Describe(moves);
}

TEST(CrossMesh, ScalarsAndEmptyTensors) {
  const std::vector<SliceMove> scalar = Plan({}, 8, "scalar", {2}, {0, 1}, "scalar", {2}, {2, 3});
  const std::vector<SliceMove> want = {M(0, 2, {}, {}, 8), M(1, 3, {}, {}, 8)};
  EXPECT_EQ(scalar, want) << Describe(scalar);
  EXPECT_TRUE(Plan({4, 0}, 4, "S0 R", {2}, {0, 1}, "R R", {1}, {2}).empty());
}

TEST(CrossMesh, RejectsBadInputs) {
  const ShardingSpec r1 = P("R"), s0 = P("S0");
  Status s = PlanError({4}, 0, r1, {1}, {0}, r1, {1}, {1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("element_bytes"), std::string::npos) << s.message();

  s = PlanError({-1}, 4, r1, {1}, {0}, r1, {1}, {1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor dim 0"), std::string::npos) << s.message();

  s = PlanError({int64_t{1} << 40, int64_t{1} << 30}, 4, P("R R"), {1}, {0}, P("R R"), {1}, {1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("overflow"), std::string::npos) << s.message();

  // Spec rank vs shape.
  s = PlanError({4, 4}, 4, r1, {1}, {0}, P("R R"), {1}, {1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("source spec 'R'"), std::string::npos) << s.message();

  // Uneven split: 5 elements over 2 devices.
  s = PlanError({5}, 4, r1, {1}, {0}, s0, {2}, {1, 2});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("destination spec 'S0'"), std::string::npos) << s.message();

  // Mesh dim out of range for the mesh.
  s = PlanError({4}, 4, P("S1"), {2}, {0, 1}, r1, {1}, {2});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("source spec 'S1'"), std::string::npos) << s.message();

  // Mesh products vs device counts.
  s = PlanError({4}, 4, r1, {2, 2}, {0, 1, 2}, r1, {1}, {5});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("source mesh (2, 2) has more devices than the 3 device ids"),
            std::string::npos)
      << s.message();
  s = PlanError({4}, 4, r1, {1}, {0}, r1, {2}, {1, 2, 3});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("destination mesh (2) has 2 devices, not the 3 device ids"),
            std::string::npos)
      << s.message();
  s = PlanError({4}, 4, r1, {int64_t{1} << 62, 8}, {0}, r1, {1}, {1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("more devices than"), std::string::npos) << s.message();
  s = PlanError({4}, 4, r1, {0}, {}, r1, {1}, {1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("source mesh dim 0 has size 0"), std::string::npos) << s.message();
  s = PlanError({4}, 4, r1, {}, {}, r1, {1}, {1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("no dimensions"), std::string::npos) << s.message();

  // Device ids.
  s = PlanError({4}, 4, r1, {2}, {3, 3}, r1, {1}, {1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("source device id 3 is listed twice"), std::string::npos)
      << s.message();
  s = PlanError({4}, 4, r1, {1}, {0}, r1, {1}, {-2});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("destination device 0 has a negative id"), std::string::npos)
      << s.message();
}

// A random spec on `mesh` for a tensor of `rank` dims: each mesh dim unused, partial (when
// allowed) or appended to a random tensor dim, in a random order.
ShardingSpec RandomSpec(std::mt19937_64& rng, size_t rank, size_t mesh_ndim, bool allow_partial) {
  ShardingSpec spec = ShardingSpec::Replicated(rank);
  std::vector<int32_t> order(mesh_ndim);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int32_t k : order) {
    const uint64_t choice = rng() % (rank + 2);
    if (choice < rank) {
      spec.dims[choice].push_back(k);
    } else if (choice == rank && allow_partial) {
      spec.partial.push_back(k);
    }
  }
  std::sort(spec.partial.begin(), spec.partial.end());
  return spec;
}

V RandomMesh(std::mt19937_64& rng) {
  V mesh(1 + rng() % 3);
  for (int64_t& m : mesh) m = 1 + static_cast<int64_t>(rng() % 3);
  return mesh;
}

int64_t Product(const V& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Whether box (offsets, sizes) lies inside `tile`.
bool Inside(const V& offsets, const V& sizes, const TensorTile& tile) {
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] < tile.offsets[i] || offsets[i] + sizes[i] > tile.offsets[i] + tile.sizes[i]) {
      return false;
    }
  }
  return true;
}

TEST(LocalAllGather, ReplicatedMeshDimsSplitTheLargestDividingTile) {
  // R S1 R of [8, 1024, 512] on a (4, 2) mesh: mesh dim 0 replicates the tile [8, 512, 512];
  // dims 1 and 2 both divide by 4, the first of the two largest wins.
  std::optional<LocalAllGather> local = PlanLocalAllGather(P("R S1 R"), {8, 1024, 512}, {4, 2});
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(ToString(local->landing), "R S10 R");
  EXPECT_EQ(local->mesh_dims, std::vector<int32_t>({0}));
  EXPECT_EQ(local->tensor_dim, 1);
  // Both mesh dims replicate a replicated tensor: the landing splits over both, major first.
  local = PlanLocalAllGather(P("R R"), {6, 16}, {2, 4});
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(ToString(local->landing), "R S01");
  EXPECT_EQ(local->mesh_dims, std::vector<int32_t>({0, 1}));
  Result<std::vector<int32_t>> dims = LandingGatherDims(local->landing, P("R R"));
  ASSERT_TRUE(dims.ok()) << dims.status().message();
  EXPECT_EQ(dims.value(), std::vector<int32_t>({0, 1}));
}

TEST(LocalAllGather, NoneWithoutReplicasOrWithoutADividingTile) {
  EXPECT_FALSE(PlanLocalAllGather(P("S0 S1"), {8, 8}, {2, 4}).has_value());  // no replica
  EXPECT_FALSE(PlanLocalAllGather(P("R R"), {8, 8}, {1, 1}).has_value());    // one device
  EXPECT_FALSE(PlanLocalAllGather(P("S1 R"), {8, 4}, {3, 2}).has_value());   // tiles 4, 4 on 3
  EXPECT_FALSE(PlanLocalAllGather(P("R R partial(0)"), {8, 8}, {2, 1}).has_value());  // sums
  // A partial mesh dim is not a replica: only mesh dim 1 is.
  std::optional<LocalAllGather> local = PlanLocalAllGather(P("R R partial(0)"), {8, 8}, {2, 2});
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->mesh_dims, std::vector<int32_t>({1}));
}

TEST(LocalAllGather, TheLandingMovesCarryEachElementOncePerTile) {
  // A [4, 8] tensor split S0 on host 0's (2, 1) mesh {0, 1}, needed replicated on a (1, 4)
  // mesh {8, 9, 10, 11}: plain, every receiver gets all 32 elements (4 copies); landing on
  // R S1, each receiver gets its quarter once and the all-gather rebuilds the rest.
  const std::vector<SliceMove> plain =
      Plan({4, 8}, 4, "S0 R", {2, 1}, {0, 1}, "R R", {1, 4}, {8, 9, 10, 11});
  std::optional<LocalAllGather> local = PlanLocalAllGather(P("R R"), {4, 8}, {1, 4});
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(ToString(local->landing), "R S1");
  const std::vector<SliceMove> landing =
      Plan({4, 8}, 4, "S0 R", {2, 1}, {0, 1}, ToString(local->landing), {1, 4}, {8, 9, 10, 11});
  auto total = [](const std::vector<SliceMove>& moves) {
    int64_t sum = 0;
    for (const SliceMove& m : moves) sum += m.bytes;
    return sum;
  };
  EXPECT_EQ(total(plain), 4 * 4 * 8 * 4);
  EXPECT_EQ(total(landing), 4 * 8 * 4);
}

TEST(LocalAllGather, LandingGatherDimsRejectsWhatIsNotAnExtension) {
  EXPECT_FALSE(LandingGatherDims(P("R S0"), P("S0 R")).ok());            // moved, not extended
  EXPECT_FALSE(LandingGatherDims(P("R R"), P("R R")).ok());              // nothing to gather
  EXPECT_FALSE(LandingGatherDims(P("R S0"), P("R")).ok());               // rank
  EXPECT_FALSE(LandingGatherDims(P("S0 R partial(1)"), P("R R")).ok());  // sums
  Result<std::vector<int32_t>> bad = LandingGatherDims(P("S10 R"), P("S1 R"));
  ASSERT_TRUE(bad.ok());  // S1 extended by mesh dim 0
  EXPECT_EQ(bad.value(), std::vector<int32_t>({0}));
  ShardingSpec twice;  // mesh dim 1 twice: no text parses to it, a file's spec reader checks
  twice.dims = {{0, 1}, {1}};
  Status reused = LandingGatherDims(twice, P("S0 S1")).status();
  EXPECT_FALSE(reused.ok());
  EXPECT_NE(reused.message().find("mesh dim 1"), std::string::npos) << reused.message();
}

TEST(CrossMesh, RandomCasesCoverEveryDestinationElementOnce) {
  std::mt19937_64 rng(20240611);
  int64_t checked_moves = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const size_t rank = rng() % 4;  // 0..3
    const V src_mesh = RandomMesh(rng), dst_mesh = RandomMesh(rng);
    const ShardingSpec src = RandomSpec(rng, rank, src_mesh.size(), true);
    const ShardingSpec dst = RandomSpec(rng, rank, dst_mesh.size(), true);
    V shape(rank);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t a = TensorDimShards(src, i, src_mesh), b = TensorDimShards(dst, i, dst_mesh);
      shape[i] = std::lcm(a, b) * static_cast<int64_t>(1 + rng() % 2);
    }
    const int64_t elem = 1 + static_cast<int64_t>(rng() % 4);
    // Device ids: a shuffled range; the destination's overlaps the source's in some trials.
    const int64_t ns = Product(src_mesh), nd = Product(dst_mesh);
    const bool overlap = trial % 4 == 0;
    V ids(static_cast<size_t>(ns + nd));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    const V src_devices(ids.begin(), ids.begin() + ns);
    V dst_devices(ids.begin() + ns, ids.end());
    if (overlap) {
      for (int64_t i = 0; i < std::min(ns, nd); i += 2) {
        dst_devices[static_cast<size_t>(i)] = src_devices[static_cast<size_t>(i)];
      }
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + ToString(src) + " on " +
                 std::to_string(ns) + " devices -> " + ToString(dst) + " on " + std::to_string(nd));

    Result<std::vector<SliceMove>> r =
        PlanCrossMeshTransfer(shape, elem, src, src_mesh, src_devices, dst, dst_mesh, dst_devices);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const std::vector<SliceMove>& moves = r.value();
    // Deterministic.
    EXPECT_EQ(
        PlanCrossMeshTransfer(shape, elem, src, src_mesh, src_devices, dst, dst_mesh, dst_devices)
            .value(),
        moves);

    std::map<int64_t, int64_t> src_logical, dst_logical;
    for (int64_t l = 0; l < ns; ++l) src_logical[src_devices[static_cast<size_t>(l)]] = l;
    for (int64_t l = 0; l < nd; ++l) dst_logical[dst_devices[static_cast<size_t>(l)]] = l;

    // Per destination device: how often each element of the tensor arrives.
    const int64_t elements = Product(shape);
    std::vector<std::vector<int32_t>> received(static_cast<size_t>(nd),
                                               std::vector<int32_t>(static_cast<size_t>(elements)));
    int64_t total = 0;
    std::vector<int64_t> sent(static_cast<size_t>(ns), 0);
    int64_t largest = 0;
    for (const SliceMove& m : moves) {
      ++checked_moves;
      ASSERT_EQ(src_logical.count(m.src_device), 1u);
      ASSERT_EQ(dst_logical.count(m.dst_device), 1u);
      const int64_t sl = src_logical[m.src_device], dl = dst_logical[m.dst_device];
      ASSERT_EQ(m.offsets.size(), rank);
      ASSERT_EQ(m.sizes.size(), rank);
      EXPECT_EQ(m.bytes, Product(m.sizes) * elem);
      EXPECT_GT(m.bytes, 0);
      EXPECT_TRUE(Inside(m.offsets, m.sizes, TileOfDevice(src, shape, src_mesh, sl)))
          << Describe({m});
      EXPECT_TRUE(Inside(m.offsets, m.sizes, TileOfDevice(dst, shape, dst_mesh, dl)))
          << Describe({m});
      total += m.bytes;
      if (m.src_device != m.dst_device) {
        sent[static_cast<size_t>(sl)] += m.bytes;
        largest = std::max(largest, m.bytes);
      }
      // Mark the box's elements (row-major flat index).
      V idx(m.offsets);
      for (int64_t e = 0; e < Product(m.sizes); ++e) {
        int64_t flat = 0;
        for (size_t i = 0; i < rank; ++i) flat = flat * shape[i] + idx[i];
        ++received[static_cast<size_t>(dl)][static_cast<size_t>(flat)];
        for (size_t i = rank; i-- > 0;) {
          if (++idx[i] < m.offsets[i] + m.sizes[i]) break;
          idx[i] = m.offsets[i];
        }
      }
    }

    // Every receiving destination gets exactly its tile, once; zero-filled ones nothing.
    int64_t expected_total = 0;
    for (int64_t dl = 0; dl < nd; ++dl) {
      V coords(dst_mesh.size());
      for (size_t k = dst_mesh.size(), rest = static_cast<size_t>(dl); k-- > 0;) {
        coords[k] = static_cast<int64_t>(rest) % dst_mesh[k];
        rest /= static_cast<size_t>(dst_mesh[k]);
      }
      bool receives = true;
      for (int32_t k : dst.partial) receives = receives && coords[static_cast<size_t>(k)] == 0;
      const TensorTile tile = TileOfDevice(dst, shape, dst_mesh, dl);
      if (receives) expected_total += Product(tile.sizes) * elem;
      V idx(rank, 0);
      for (int64_t flat = 0; flat < elements; ++flat) {
        const bool in_tile = Inside(idx, V(rank, 1), tile);
        EXPECT_EQ(received[static_cast<size_t>(dl)][static_cast<size_t>(flat)],
                  receives && in_tile ? 1 : 0)
            << "destination " << dl << " element " << flat;
        for (size_t i = rank; i-- > 0;) {
          if (++idx[i] < shape[i]) break;
          idx[i] = 0;
        }
      }
    }
    EXPECT_EQ(total, expected_total);

    // Balance: holders of the same pieces (devices whose source tiles coincide) differ in bytes
    // sent by at most one move's bytes (greedy least-loaded), without local copies.
    if (!overlap) {
      std::map<V, std::vector<int64_t>> groups;
      for (int64_t l = 0; l < ns; ++l) {
        groups[TileOfDevice(src, shape, src_mesh, l).offsets].push_back(
            sent[static_cast<size_t>(l)]);
      }
      for (const auto& [offsets, loads] : groups) {
        const auto [lo, hi] = std::minmax_element(loads.begin(), loads.end());
        EXPECT_LE(*hi - *lo, largest);
      }
    }
  }
  EXPECT_GT(checked_moves, 1000);
}

}  // namespace
}  // namespace alpa
