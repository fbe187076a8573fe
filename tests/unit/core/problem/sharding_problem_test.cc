#include "core/problem/sharding_problem.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace alpa {
namespace {

// Three nodes (2, 3, 2 strategies) with usages and intervals, two edges, one alias: valid.
ShardingProblem SmallProblem() {
  ShardingProblem p;
  p.nodes.resize(3);
  p.nodes[0].costs = {1, 2};
  p.nodes[0].usages = {4, 5};
  p.nodes[0].interval = {0, 3};
  p.nodes[1].costs = {3, 4, 5};
  p.nodes[1].usages = {1, 1, 1};
  p.nodes[1].interval = {1, 4};
  p.nodes[2].costs = {6, 7};
  p.nodes[2].interval = {2, 2};
  p.edges.push_back({0, 1, {1, 2, 3, 4, 5, 6}});
  p.edges.push_back({1, 2, {1, 2, 3, 4, 5, 6}});
  p.aliases.push_back({0, 2, {0, 1, 1, 0}});
  p.usage_limit = 10;
  return p;
}

// Expects kInvalidProblem whose message contains every fragment.
void ExpectInvalid(const ShardingProblem& p, const std::string& fragment,
                   const std::string& fragment2 = "") {
  const Status s = ValidateProblem(p);
  ASSERT_FALSE(s.ok()) << "expected an error mentioning '" << fragment << "'";
  EXPECT_EQ(s.code(), StatusCode::kInvalidProblem);
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
  if (!fragment2.empty()) {
    EXPECT_NE(s.message().find(fragment2), std::string::npos) << s.message();
  }
}

TEST(ValidateProblem, AcceptsValidProblem) {
  const Status s = ValidateProblem(SmallProblem());
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(ValidateProblem, AcceptsEmptyProblemSelfEdgeAndNegativeCosts) {
  EXPECT_TRUE(ValidateProblem(ShardingProblem()).ok());
  ShardingProblem p = SmallProblem();
  p.edges.push_back({1, 1, {-1, 0, 0, 0, -2, 0, 0, 0, -3}});
  p.aliases.push_back({2, 2, {1, 0, 0, 0}});
  p.nodes[0].costs = {-5, 1e18};  // one forbidden strategy is fine while another is allowed
  const Status s = ValidateProblem(p);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(ValidateProblem, NodeWithoutStrategies) {
  ShardingProblem p = SmallProblem();
  p.nodes[1].costs.clear();
  p.nodes[1].usages.clear();
  ExpectInvalid(p, "node 1", "no strategies");
}

TEST(ValidateProblem, NodeWithOnlyForbiddenStrategies) {
  ShardingProblem p = SmallProblem();
  p.nodes[2].costs = {1e18, 2e18};
  ExpectInvalid(p, "node 2", "forbidden");
  p.nodes[2].costs = {std::numeric_limits<double>::infinity(), 1e18};
  ExpectInvalid(p, "node 2", "forbidden");
}

TEST(ValidateProblem, UsageCountMismatch) {
  ShardingProblem p = SmallProblem();
  p.nodes[1].usages = {1, 1};
  ExpectInvalid(p, "node 1", "2 usages");
}

TEST(ValidateProblem, NegativeUsage) {
  ShardingProblem p = SmallProblem();
  p.nodes[0].usages = {4, -1};
  ExpectInvalid(p, "node 0 strategy 1", "negative usage -1");
}

TEST(ValidateProblem, IntervalHiBelowLo) {
  ShardingProblem p = SmallProblem();
  p.nodes[1].interval = {5, 4};
  ExpectInvalid(p, "node 1", "[5, 4)");
  p.nodes[1].interval = {-1, 4};
  ExpectInvalid(p, "node 1", "[-1, 4)");
}

TEST(ValidateProblem, EdgeEndpointOutOfRange) {
  ShardingProblem p = SmallProblem();
  p.edges[1].v = 3;
  ExpectInvalid(p, "edge 1", "endpoint 3");
  p.edges[1].v = 2;
  p.edges[0].u = -1;
  ExpectInvalid(p, "edge 0", "endpoint -1");
}

TEST(ValidateProblem, EdgeMatrixSize) {
  ShardingProblem p = SmallProblem();
  p.edges[1].costs.pop_back();
  ExpectInvalid(p, "edge 1 (1, 2)", "expected 6");
}

TEST(ValidateProblem, EdgeCostNaN) {
  ShardingProblem p = SmallProblem();
  p.edges[0].costs[4] = std::nan("");
  ExpectInvalid(p, "edge 0 cost 4", "NaN");
}

TEST(ValidateProblem, AliasEndpointAndSize) {
  ShardingProblem p = SmallProblem();
  p.aliases[0].forbidden = {0, 1, 1};
  ExpectInvalid(p, "alias 0 (0, 2)", "expected 4");
  p = SmallProblem();
  p.aliases[0].u = 7;
  ExpectInvalid(p, "alias 0", "endpoint 7");
}

TEST(ValidateProblem, FollowerOutOfRange) {
  ShardingProblem p = SmallProblem();
  p.nodes[2].follows = 3;
  ExpectInvalid(p, "node 2 follows 3");
  p.nodes[2].follows = -2;
  ExpectInvalid(p, "node 2 follows -2");
}

TEST(ValidateProblem, FollowerStrategyCountMismatch) {
  ShardingProblem p = SmallProblem();
  p.nodes[2].follows = 1;  // 2 strategies vs 3
  ExpectInvalid(p, "node 2 follows node 1", "has 2 strategies");
}

TEST(ValidateProblem, FollowerCycle) {
  ShardingProblem p = SmallProblem();
  p.nodes[0].follows = 2;
  p.nodes[2].follows = 0;
  ExpectInvalid(p, "node 0", "cycle");
  p = SmallProblem();
  p.nodes[0].follows = 0;  // following itself is a cycle too
  ExpectInvalid(p, "node 0", "cycle");
}

TEST(ValidateProblem, LiveSetNodeOutOfRange) {
  ShardingProblem p = SmallProblem();
  p.live_sets = {{0, 1}, {1, 2}, {2, 5}};
  ExpectInvalid(p, "time step 2", "node 5");
}

TEST(ValidateProblem, NodeCostNaN) {
  ShardingProblem p = SmallProblem();
  p.nodes[1].costs[2] = std::nan("");
  ExpectInvalid(p, "node 1 strategy 2", "NaN");
}

TEST(ValidateProblem, NegativeUsageLimit) {
  ShardingProblem p = SmallProblem();
  p.usage_limit = -1;
  ExpectInvalid(p, "usage limit -1");
}

TEST(FollowRoot, ResolvesChains) {
  ShardingProblem p = SmallProblem();
  p.nodes[2].follows = 0;  // 2 -> 0
  ASSERT_TRUE(ValidateProblem(p).ok());
  EXPECT_EQ(FollowRoot(p, 0), 0);
  EXPECT_EQ(FollowRoot(p, 1), 1);
  EXPECT_EQ(FollowRoot(p, 2), 0);

  ShardingProblem chain;
  chain.nodes.resize(4);
  for (ShardingNode& n : chain.nodes) n.costs = {1, 2};
  chain.nodes[0].follows = 3;  // 0 -> 3 -> 1, 2 free
  chain.nodes[3].follows = 1;
  ASSERT_TRUE(ValidateProblem(chain).ok());
  EXPECT_EQ(FollowRoot(chain, 0), 1);
  EXPECT_EQ(FollowRoot(chain, 3), 1);
  EXPECT_EQ(FollowRoot(chain, 1), 1);
  EXPECT_EQ(FollowRoot(chain, 2), 2);
}

}  // namespace
}  // namespace alpa
