// Sharding specs: validation errors, shard shapes and counts, text round trips, GSPMD and Shardy
// strings.
#include "core/cluster/sharding_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace alpa {
namespace {

ShardingSpec P(const std::string& text) {
  Result<ShardingSpec> r = ParseShardingSpec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? r.value() : ShardingSpec{};
}

TEST(ShardingSpec, ParsesIntoFields) {
  const ShardingSpec s = P("S0 R S1");
  EXPECT_EQ(s.dims, (std::vector<std::vector<int32_t>>{{0}, {}, {1}}));
  EXPECT_TRUE(s.partial.empty());
  const ShardingSpec t = P("S10 R partial(2)");
  EXPECT_EQ(t.dims, (std::vector<std::vector<int32_t>>{{1, 0}, {}}));
  EXPECT_EQ(t.partial, (std::vector<int32_t>{2}));
  EXPECT_EQ(P("scalar").rank(), 0u);
  EXPECT_EQ(P("R R"), ShardingSpec::Replicated(2));
  EXPECT_TRUE(P("R R").IsReplicated());
  EXPECT_FALSE(P("R R partial(0)").IsReplicated());
}

TEST(ShardingSpec, PrintParseRoundTrip) {
  const std::vector<std::string> texts = {"R",
                                          "S0",
                                          "S1",
                                          "R R",
                                          "S0 R",
                                          "R S0",
                                          "S0 S1",
                                          "S1 S0",
                                          "S01 R",
                                          "R S10",
                                          "S0 R S1",
                                          "R R partial(1)",
                                          "R R partial(0,1)",
                                          "S0 R partial(1)",
                                          "S012 R R R",
                                          "S2 S0 S1",
                                          "R S21 R partial(0)",
                                          "scalar",
                                          "scalar partial(0,2)",
                                          "S0 R R R R R"};
  for (const std::string& t : texts) {
    const ShardingSpec s = P(t);
    EXPECT_EQ(ToString(s), t);
    EXPECT_EQ(P(ToString(s)), s) << t;
  }
  // Extra whitespace is accepted; printing normalizes it.
  EXPECT_EQ(ToString(P("  S0\tR   S1 ")), "S0 R S1");
}

TEST(ShardingSpec, ParseErrorsNameTheToken) {
  struct Case {
    const char* text;
    const char* token;
  };
  const std::vector<Case> cases = {{"S0 X", "'X'"},
                                   {"Sa R", "'Sa'"},
                                   {"S R", "'S'"},
                                   {"partial(0) S1", "'S1'"},
                                   {"R partial(0", "'partial(0'"},
                                   {"R partial()", "'partial()'"},
                                   {"R partial(0,)", "'partial(0,)'"},
                                   {"R partial(10)", "'partial(10)'"},
                                   {"R scalar", "'scalar'"}};
  for (const Case& c : cases) {
    Result<ShardingSpec> r = ParseShardingSpec(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kParse);
    EXPECT_NE(r.status().message().find(c.token), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(ParseShardingSpec("").ok());
  EXPECT_FALSE(ParseShardingSpec("   ").ok());
  // Structural errors surface at parse time too.
  Result<ShardingSpec> twice = ParseShardingSpec("S00 R");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("mesh dim 0 is used twice"), std::string::npos);
}

TEST(ShardingSpec, ValidationErrors) {
  const std::vector<int64_t> mesh = {2, 2};
  // Uneven split: 3 rows over 2 devices.
  Status s = ValidateShardingSpec(P("S0 R"), {3, 4}, mesh);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor dim 0 (size 3) is not divisible by its 2 shards"),
            std::string::npos)
      << s.message();
  // 6 over 4 (S01) is uneven even though 6 splits over 2.
  s = ValidateShardingSpec(P("R S01"), {4, 6}, mesh);
  EXPECT_NE(s.message().find("tensor dim 1 (size 6) is not divisible by its 4 shards"),
            std::string::npos)
      << s.message();
  // Mesh dim used twice: in two tensor dims, and in a tensor dim and the partial set.
  ShardingSpec twice;
  twice.dims = {{0}, {0}};
  s = ValidateShardingSpec(twice, {4, 4}, mesh);
  EXPECT_NE(s.message().find("mesh dim 0 is used twice (tensor dim 0 and tensor dim 1)"),
            std::string::npos)
      << s.message();
  ShardingSpec split_and_partial;
  split_and_partial.dims = {{1}, {}};
  split_and_partial.partial = {1};
  s = ValidateShardingSpec(split_and_partial, {4, 4}, mesh);
  EXPECT_NE(s.message().find("mesh dim 1 is used twice (tensor dim 0 and partial)"),
            std::string::npos)
      << s.message();
  // Out of range for a 2-D mesh.
  s = ValidateShardingSpec(P("S2 R"), {4, 4}, mesh);
  EXPECT_NE(s.message().find("tensor dim 0 uses mesh dim 2, out of range for a 2-D mesh"),
            std::string::npos)
      << s.message();
  twice.dims = {{-1}, {}};
  EXPECT_FALSE(ValidateShardingSpec(twice, {4, 4}, mesh).ok());
  // Rank mismatch, unsorted partial, bad mesh, negative dim.
  s = ValidateShardingSpec(P("S0 R"), {4, 4, 4}, mesh);
  EXPECT_NE(s.message().find("2 tensor dims but the tensor has rank 3"), std::string::npos);
  ShardingSpec unsorted = ShardingSpec::Replicated(1);
  unsorted.partial = {1, 0};
  EXPECT_NE(ValidateShardingSpec(unsorted, {4}, mesh).message().find("increasing order"),
            std::string::npos);
  EXPECT_FALSE(ValidateShardingSpec(P("R"), {4}, {2, 0}).ok());
  EXPECT_FALSE(ValidateShardingSpec(P("R"), {-4}, mesh).ok());
  // Valid ones, including 1-D and 3-D meshes.
  EXPECT_TRUE(ValidateShardingSpec(P("S0 R S1"), {8, 3, 12}, {2, 4}).ok());
  EXPECT_TRUE(ValidateShardingSpec(P("S0"), {6}, {6}).ok());
  EXPECT_TRUE(ValidateShardingSpec(P("S2 S01 partial(3)"), {4, 8}, {2, 4, 4, 3}).ok());
}

TEST(ShardingSpec, ShardShapesAndCounts) {
  EXPECT_EQ(ShardShape(P("S0 R S1"), {8, 3, 12}, {2, 4}).value(), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(ShardShape(P("S01 R"), {16, 5}, {2, 4}).value(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(ShardShape(P("R R partial(0)"), {16, 5}, {2, 4}).value(),
            (std::vector<int64_t>{16, 5}));
  EXPECT_EQ(ShardShape(P("S2 S0"), {4, 8}, {2, 3, 4}).value(), (std::vector<int64_t>{1, 4}));
  EXPECT_FALSE(ShardShape(P("S1 R"), {6, 5}, {2, 4}).ok());

  const std::vector<int64_t> mesh3 = {2, 3, 4};
  const ShardingSpec s = P("S0 R partial(2)");
  EXPECT_EQ(ShardCount(s, mesh3), 2);
  EXPECT_EQ(ReplicationFactor(s, mesh3), 3);
  EXPECT_EQ(PartialCount(s, mesh3), 4);
  EXPECT_EQ(ShardCount(P("S21 S0"), mesh3), 24);
  EXPECT_EQ(ReplicationFactor(P("S21 S0"), mesh3), 1);
  EXPECT_EQ(TensorDimShards(P("S21 S0"), 0, mesh3), 12);
  EXPECT_EQ(ReplicationFactor(P("R R"), mesh3), 24);
}

TEST(ShardingSpec, DeterministicOrdering) {
  const ShardingSpec a = P("R S0"), b = P("S0 R"), c = P("S0 R partial(1)");
  EXPECT_TRUE(a < b);  // [] < [0] on tensor dim 0
  EXPECT_TRUE(b < c);  // same dims, fewer partial
  EXPECT_FALSE(c < b);
  EXPECT_FALSE(b < b);
  EXPECT_NE(b, c);
}

TEST(ShardingSpec, GspmdStrings) {
  auto g = [](const std::string& t, const std::vector<int64_t>& mesh) {
    Result<std::string> r = ToGspmdString(P(t), mesh);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r.value() : std::string();
  };
  EXPECT_EQ(g("S0 R S1", {2, 4}), "{devices=[2,1,4]0,1,2,3,4,5,6,7}");
  // Tensor dim 0 on mesh dim 1: tile (a, b) is mesh (b, a) = device 4b + a.
  EXPECT_EQ(g("S1 S0", {2, 4}), "{devices=[4,2]0,4,1,5,2,6,3,7}");
  EXPECT_EQ(g("S0 R", {2, 4}), "{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}");
  EXPECT_EQ(g("R S1", {2, 4}), "{devices=[1,4,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}");
  EXPECT_EQ(g("S01 R", {2, 2}), "{devices=[4,1]0,1,2,3}");
  EXPECT_EQ(g("S10 R", {2, 2}), "{devices=[4,1]0,2,1,3}");
  EXPECT_EQ(g("R R", {2, 2}), "{replicated}");
  EXPECT_EQ(g("S0", {8}), "{devices=[8]0,1,2,3,4,5,6,7}");
  // 3-D: device id = 4 m0 + 2 m1 + m2; tiles walk (m2, m0, m1).
  EXPECT_EQ(g("S2 S0 R", {2, 2, 2}), "{devices=[2,2,1,2]0,2,4,6,1,3,5,7 last_tile_dim_replicate}");
  // Size-1 replicated mesh dims need no trailing tile dim.
  EXPECT_EQ(g("S0 R", {4, 1}), "{devices=[4,1]0,1,2,3}");
  Result<std::string> partial = ToGspmdString(P("S0 partial(1)"), {2, 2});
  EXPECT_EQ(partial.status().code(), StatusCode::kUnsupported);
}

TEST(ShardingSpec, ShardyStrings) {
  EXPECT_EQ(ToShardyString(P("S0 R S1"), {2, 4}).value(),
            "#sdy.sharding<@mesh, [{\"x\"}, {}, {\"y\"}]>");
  EXPECT_EQ(ToShardyString(P("S10 R"), {2, 4}).value(),
            "#sdy.sharding<@mesh, [{\"y\", \"x\"}, {}]>");
  EXPECT_EQ(
      ToShardyString(P("S01 R partial(2)"), {2, 2, 2}, {"data", "model", "pipe"}, "m").value(),
      "#sdy.sharding<@m, [{\"data\", \"model\"}, {}], unreduced={\"pipe\"}>");
  EXPECT_EQ(ToShardyString(P("R S3"), {1, 1, 1, 2}).value(),
            "#sdy.sharding<@mesh, [{}, {\"a3\"}]>");
  EXPECT_FALSE(ToShardyString(P("S0 R"), {2, 2}, {"only_one"}).ok());
  EXPECT_FALSE(ToShardyString(P("S2 R"), {2, 2}).ok());
}

}  // namespace
}  // namespace alpa
