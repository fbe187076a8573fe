// Resharding plans with exact costs: Alpa's abstract 2x2 mesh (alpha = beta = 1, tie-breakers on)
// and a derived p3.16xlarge (2, 8) mesh in seconds.
#include "core/cluster/resharding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"

namespace alpa {
namespace {

ShardingSpec P(const std::string& text) { return ParseShardingSpec(text).value(); }

const ReshardOptions kAlpa{CostMode::kAlpaCompatible, true};
const ReshardOptions kReal{CostMode::kRealUnits, false};

// 8 x 4 fp32 = 128 bytes.
const std::vector<int64_t> kShape = {8, 4};

LogicalMesh Abstract2x2() { return AbstractLogicalMesh({2, 2}, {1, 1}, {1, 1}).value(); }

ReshardPlan Plan(const std::string& src, const std::string& dst, const LogicalMesh& mesh,
                 const ReshardOptions& opt, const std::vector<int64_t>& shape = kShape) {
  Result<ReshardPlan> r = PlanReshard(P(src), P(dst), shape, 4, mesh, opt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : ReshardPlan{};
}

void ExpectStep(const ReshardStep& s, ReshardStepKind kind, int32_t mesh_dim, double bytes,
                double bytes_per_device, double cost, const std::string& after) {
  EXPECT_EQ(s.kind, kind) << s.description;
  EXPECT_EQ(s.mesh_dims, (std::vector<int32_t>{mesh_dim})) << s.description;
  EXPECT_DOUBLE_EQ(s.bytes, bytes) << s.description;
  EXPECT_DOUBLE_EQ(s.bytes_per_device, bytes_per_device) << s.description;
  EXPECT_DOUBLE_EQ(s.cost, cost) << s.description;
  EXPECT_EQ(ToString(s.after), after) << s.description;
}

TEST(Reshard, IdenticalSpecsCostNothing) {
  for (const char* t : {"R R", "S0 S1", "S01 R", "R R partial(0,1)"}) {
    const ReshardPlan p = Plan(t, t, Abstract2x2(), kAlpa);
    EXPECT_TRUE(p.steps.empty()) << t;
    EXPECT_EQ(p.cost, 0.0);
    EXPECT_FALSE(p.forbidden);
  }
}

TEST(Reshard, ReplicatedToSplitIsAFreeSlice) {
  const ReshardPlan p = Plan("R R", "S0 R", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.NumCollectives(), 0);
  ExpectStep(p.steps[0], ReshardStepKind::kSlice, 0, 0, 0, 0, "S0 R");
  EXPECT_EQ(p.cost, 0.0);
  // Two slices, still free.
  const ReshardPlan q = Plan("R R", "S1 S0", Abstract2x2(), kAlpa);
  EXPECT_EQ(q.steps.size(), 2u);
  EXPECT_EQ(q.NumCollectives(), 0);
  EXPECT_EQ(q.cost, 0.0);
}

TEST(Reshard, SplitToReplicatedIsOneAllGather) {
  // Full 128 bytes gathered over 2 devices: 1 + 1/2 * 128 + 0.1.
  ReshardPlan p = Plan("S0 R", "R R", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 1u);
  ExpectStep(p.steps[0], ReshardStepKind::kAllGather, 0, 128, 64, 65.1, "R R");
  EXPECT_EQ(p.steps[0].collective, CollectiveKind::kAllGather);
  EXPECT_DOUBLE_EQ(p.cost, 65.1);
  // Real units drop the tie-breaker.
  p = Plan("S0 R", "R R", Abstract2x2(), kReal);
  EXPECT_DOUBLE_EQ(p.cost, 65.0);
  // With tensor dim 1 split on mesh dim 1, the gather covers 128 / 2 bytes.
  p = Plan("S0 S1", "R S1", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 1u);
  ExpectStep(p.steps[0], ReshardStepKind::kAllGather, 0, 64, 32, 33.1, "R S1");
}

TEST(Reshard, GatherOneDimSliceAnotherIsOneAllToAll) {
  // 1 + (1/4) * 128 * (2/2) + 0.001.
  const ReshardPlan p = Plan("S0 R", "R S0", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 1u);
  ExpectStep(p.steps[0], ReshardStepKind::kAllToAll, 0, 128, 32, 33.001, "R S0");
  EXPECT_EQ(p.steps[0].collective, CollectiveKind::kAllToAll);
  EXPECT_DOUBLE_EQ(p.cost, 33.001);
  EXPECT_FALSE(p.forbidden);
}

TEST(Reshard, PartialToReplicatedIsOneAllReduce) {
  // 1 + 2 * 1/2 * 128 + 0.01.
  const ReshardPlan p = Plan("R R partial(0)", "R R", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 1u);
  ExpectStep(p.steps[0], ReshardStepKind::kAllReduce, 0, 128, 128, 129.01, "R R");
  EXPECT_DOUBLE_EQ(p.cost, 129.01);
}

TEST(Reshard, PartialToSplitIsOneReduceScatter) {
  // 1 + 1/2 * 128 + 0.001.
  const ReshardPlan p = Plan("R R partial(0)", "S0 R", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 1u);
  ExpectStep(p.steps[0], ReshardStepKind::kReduceScatter, 0, 128, 64, 65.001, "S0 R");
  EXPECT_DOUBLE_EQ(p.cost, 65.001);
}

TEST(Reshard, SplitOnAnotherMeshDimIsForbiddenInAlpaMode) {
  ReshardPlan p = Plan("S0 R", "S1 R", Abstract2x2(), kAlpa);
  EXPECT_TRUE(p.forbidden);
  EXPECT_TRUE(std::isinf(p.cost));
  EXPECT_DOUBLE_EQ(p.plan_cost, 65.1);  // what it would take: all-gather then slice
  // Real mode prices it: all-gather the 128 bytes on mesh dim 0, then slice on mesh dim 1.
  p = Plan("S0 R", "S1 R", Abstract2x2(), kReal);
  EXPECT_FALSE(p.forbidden);
  ASSERT_EQ(p.steps.size(), 2u);
  ExpectStep(p.steps[0], ReshardStepKind::kAllGather, 0, 128, 64, 65, "R R");
  ExpectStep(p.steps[1], ReshardStepKind::kSlice, 1, 0, 0, 0, "S1 R");
  EXPECT_DOUBLE_EQ(p.cost, 65.0);
  // Other forbidden patterns; prefix extensions and all-to-alls are not.
  EXPECT_TRUE(IsAlpaForbiddenReshard(P("S01 R"), P("S10 R")));
  EXPECT_TRUE(IsAlpaForbiddenReshard(P("S01 R"), P("S1 R")));
  EXPECT_TRUE(IsAlpaForbiddenReshard(P("S0 S1"), P("S1 S0")));
  EXPECT_FALSE(IsAlpaForbiddenReshard(P("S0 R"), P("S01 R")));
  EXPECT_FALSE(IsAlpaForbiddenReshard(P("S01 R"), P("S0 S1")));
  EXPECT_FALSE(IsAlpaForbiddenReshard(P("S0 R"), P("R S0")));
}

TEST(Reshard, SwapPicksAllGatherPlusAllToAll) {
  // S0 S1 -> S1 S0 (real units): gather mesh dim 0 (64 bytes: 1 + 32), then move mesh dim 1
  // from tensor dim 1 to tensor dim 0 with an all-to-all (128 bytes: 1 + 32), then slice mesh
  // dim 0 onto tensor dim 1. Gathering both would cost 33 + 65; the mirror plan (gather mesh
  // dim 1 first) costs the same and loses the tie on the lower mesh dim.
  const ReshardPlan p = Plan("S0 S1", "S1 S0", Abstract2x2(), kReal);
  ASSERT_EQ(p.steps.size(), 3u);
  ExpectStep(p.steps[0], ReshardStepKind::kAllGather, 0, 64, 32, 33, "R S1");
  ExpectStep(p.steps[1], ReshardStepKind::kAllToAll, 1, 128, 32, 33, "S1 R");
  ExpectStep(p.steps[2], ReshardStepKind::kSlice, 0, 0, 0, 0, "S1 S0");
  EXPECT_DOUBLE_EQ(p.cost, 66.0);
  EXPECT_TRUE(Plan("S0 S1", "S1 S0", Abstract2x2(), kAlpa).forbidden);
}

TEST(Reshard, TwoDimensionalPlansTrackBytesPerStep) {
  // Partial on mesh dim 1 while split on mesh dim 0: all-reduce the 64-byte shard
  // (1 + 64 + 0.01), then all-to-all the 128 bytes on mesh dim 0 (1 + 32 + 0.001).
  ReshardPlan p = Plan("S0 R partial(1)", "R S0", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 2u);
  ExpectStep(p.steps[0], ReshardStepKind::kAllReduce, 1, 64, 64, 65.01, "S0 R");
  ExpectStep(p.steps[1], ReshardStepKind::kAllToAll, 0, 128, 32, 33.001, "R S0");
  EXPECT_DOUBLE_EQ(p.cost, 98.011);
  // S01 must be gathered minor first: mesh dim 1 over 64 bytes, then mesh dim 0 over 128.
  p = Plan("S01 R", "R R", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 2u);
  ExpectStep(p.steps[0], ReshardStepKind::kAllGather, 1, 64, 32, 33.1, "S0 R");
  ExpectStep(p.steps[1], ReshardStepKind::kAllGather, 0, 128, 64, 65.1, "R R");
  EXPECT_DOUBLE_EQ(p.cost, 98.2);
  // Slicing first shrinks the all-reduce: slice mesh dim 0 (free), all-reduce 64 bytes.
  p = Plan("R R partial(1)", "S0 R", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 2u);
  ExpectStep(p.steps[0], ReshardStepKind::kSlice, 0, 0, 0, 0, "S0 R partial(1)");
  ExpectStep(p.steps[1], ReshardStepKind::kAllReduce, 1, 64, 64, 65.01, "S0 R");
  // Reduce-scatter on mesh dim 1 then all-gather on mesh dim 0: 1 + 32 + 0.001 and 1 + 32 + 0.1
  // (the all-gather covers tensor dim 0's 8 rows of 4 -> 64 bytes after the reduce-scatter).
  p = Plan("S0 R partial(1)", "R S1", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 2u);
  ExpectStep(p.steps[0], ReshardStepKind::kReduceScatter, 1, 64, 32, 33.001, "S0 S1");
  ExpectStep(p.steps[1], ReshardStepKind::kAllGather, 0, 64, 32, 33.1, "R S1");
  EXPECT_DOUBLE_EQ(p.cost, 66.101);
}

TEST(Reshard, ToPartialZeroFills) {
  const ReshardPlan p = Plan("S0 R", "R R partial(0)", Abstract2x2(), kAlpa);
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].kind, ReshardStepKind::kAllGather);
  ExpectStep(p.steps[1], ReshardStepKind::kZeroFill, 0, 0, 0, 0, "R R partial(0)");
}

// p3.16xlarge, 2 hosts, logical (2, 8): dim 0 crosses hosts with 8 rings sharing 3.125 GB/s
// (alpha 20 us), dim 1 is NVLink at 150 GB/s (alpha 5 us). Tensor 1024 x 1024 fp32 = 4 MiB.
class P3Reshard : public ::testing::Test {
 protected:
  void SetUp() override {
    const Cluster c = ParseClusterSpec("p3.16xlarge:hosts=2").value();
    mesh_ = DeriveLogicalMesh(c, {2, 8}, {2, 8}).value();
    ASSERT_NEAR(mesh_.alpha[0], 20e-6, 1e-15);
    ASSERT_NEAR(mesh_.alpha[1], 5e-6, 1e-15);
    ASSERT_NEAR(mesh_.beta[0], 8 / 3.125e9, 1e-20);
    ASSERT_NEAR(mesh_.beta[1], 1 / 150e9, 1e-22);
  }
  double Cost(const std::string& src, const std::string& dst, const ReshardOptions& o = kReal) {
    return Plan(src, dst, mesh_, o, {1024, 1024}).cost;
  }
  LogicalMesh mesh_;
  static constexpr double kB = 4194304.0;
  static constexpr double kBeta0 = 8 / 3.125e9;
  static constexpr double kBeta1 = 1 / 150e9;
};

TEST_F(P3Reshard, Seconds) {
  EXPECT_EQ(Cost("R R", "S0 R"), 0.0);
  EXPECT_NEAR(Cost("S0 R", "R R"), 20e-6 + 0.5 * kB * kBeta0, 1e-15);
  EXPECT_NEAR(Cost("S1 R", "R R"), 5e-6 + 7.0 / 8 * kB * kBeta1, 1e-15);
  EXPECT_NEAR(Cost("S0 R", "R S0"), 20e-6 + 0.25 * kB * kBeta0, 1e-15);
  // all-to-all on 8 devices: 7/64 * b * 8/2.
  EXPECT_NEAR(Cost("S1 R", "R S1"), 5e-6 + 7.0 / 64 * kB * 4 * kBeta1, 1e-15);
  EXPECT_NEAR(Cost("R R partial(0)", "R R"), 20e-6 + kB * kBeta0, 1e-15);
  EXPECT_NEAR(Cost("R R partial(1)", "S1 R"), 5e-6 + 7.0 / 8 * kB * kBeta1, 1e-15);
  // S0 -> S1: forbidden in Alpa mode, all-gather on dim 0 + slice in real mode.
  const ReshardPlan alpa = Plan("S0 R", "S1 R", mesh_, kAlpa, {1024, 1024});
  EXPECT_TRUE(alpa.forbidden);
  EXPECT_TRUE(std::isinf(alpa.cost));
  EXPECT_NEAR(Cost("S0 R", "S1 R"), 20e-6 + 0.5 * kB * kBeta0, 1e-15);
  // 2-D: S0 S1 -> R R. Bytes grow with each gather, so the slow dim 0 goes first on the small
  // piece (kB / 8), then the fast dim 1 on kB (the other order would move kB / 2 over dim 0).
  const ReshardPlan two = Plan("S0 S1", "R R", mesh_, kReal, {1024, 1024});
  ASSERT_EQ(two.steps.size(), 2u);
  EXPECT_EQ(two.steps[0].mesh_dims, (std::vector<int32_t>{0}));
  EXPECT_DOUBLE_EQ(two.steps[0].bytes, kB / 8);
  EXPECT_DOUBLE_EQ(two.steps[1].bytes, kB);
  EXPECT_NEAR(two.cost, 20e-6 + 0.5 * kB / 8 * kBeta0 + 5e-6 + 7.0 / 8 * kB * kBeta1, 1e-15);
  // Alpa units on the same mesh add the tie-breakers.
  EXPECT_NEAR(Cost("S0 R", "R R", kAlpa), 20e-6 + 0.5 * kB * kBeta0 + 0.1, 1e-12);
}

TEST(Reshard, ErrorsNameTheSpec) {
  const LogicalMesh mesh = Abstract2x2();
  Result<ReshardPlan> r = PlanReshard(P("S0 R"), P("R R"), {3, 4}, 4, mesh, kAlpa);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("reshard source: sharding spec 'S0 R'"), std::string::npos)
      << r.status().message();
  r = PlanReshard(P("R R"), P("S2 R"), {4, 4}, 4, mesh, kAlpa);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("reshard destination"), std::string::npos);
  EXPECT_FALSE(PlanReshard(P("R R"), P("R R"), {4, 4}, 0, mesh, kAlpa).ok());
  EXPECT_FALSE(PlanReshard(P("R"), P("R R"), {4, 4}, 4, mesh, kAlpa).ok());
}

TEST(Reshard, ThreeDimensionalMesh) {
  // A 2x2x2 mesh built by hand (the mesh constructors stop at 2-D), alpha = beta = 1.
  LogicalMesh mesh;
  mesh.shape = {2, 2, 2};
  mesh.alpha = {1, 1, 1};
  mesh.beta = {1, 1, 1};
  mesh.crosses_hosts = {false, false, false};
  // 8 x 8 fp32 = 256 bytes. S012 -> R: gathers on 2 (64), 1 (128), 0 (256):
  // (1 + 32) + (1 + 64) + (1 + 128) = 227.
  const ReshardPlan p = Plan("S012 R", "R R", mesh, kReal, {8, 8});
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(p.steps[0].bytes, 64);
  EXPECT_DOUBLE_EQ(p.steps[1].bytes, 128);
  EXPECT_DOUBLE_EQ(p.steps[2].bytes, 256);
  EXPECT_DOUBLE_EQ(p.cost, 227.0);
}

TEST(Reshard, MeshesOfManyDimsAreAnErrorNotACorruptPlan) {
  // Six dims of size 1 and one of 2 (past the 5 dims kept inline): still planned.
  LogicalMesh mesh;
  mesh.shape = {1, 1, 1, 1, 1, 1, 2};
  mesh.alpha.assign(7, 1);
  mesh.beta.assign(7, 1);
  mesh.crosses_hosts.assign(7, false);
  const ReshardPlan p = Plan("S6 R", "R S6", mesh, kReal, {8, 8});
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kind, ReshardStepKind::kAllToAll);
  // 256 dims: positions no longer fit the search's encoding.
  mesh.shape.assign(256, 1);
  mesh.alpha.assign(256, 1);
  mesh.beta.assign(256, 1);
  mesh.crosses_hosts.assign(256, false);
  Result<ReshardPlan> r = PlanReshard(P("R R"), P("R R"), {8, 8}, 4, mesh, kReal);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("a mesh of 256 dims"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace alpa
