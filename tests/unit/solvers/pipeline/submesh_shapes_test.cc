// Submesh shapes of the stage DP: enumeration, the tiling rule, and placement of random
// multisets that sum to the cluster.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "solvers/pipeline/stage_dp.h"

namespace alpa {
namespace {

using Shapes = std::vector<SubmeshShape>;

TEST(SubmeshShapes, EnumeratesPowersOfTwoThenWholeHosts) {
  EXPECT_EQ(EnumerateSubmeshShapes(2, 8), (Shapes{{1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 8}}));
  EXPECT_EQ(EnumerateSubmeshShapes(1, 4), (Shapes{{1, 1}, {1, 2}, {1, 4}}));
  EXPECT_EQ(EnumerateSubmeshShapes(3, 6), (Shapes{{1, 1}, {1, 2}, {1, 6}, {2, 6}, {3, 6}}));
  EXPECT_EQ(EnumerateSubmeshShapes(1, 12), (Shapes{{1, 1}, {1, 2}, {1, 4}, {1, 12}}));
  EXPECT_EQ(EnumerateSubmeshShapes(3, 1), (Shapes{{1, 1}, {2, 1}, {3, 1}}));
  EXPECT_EQ(EnumerateSubmeshShapes(8, 8).size(), 11u);
  EXPECT_TRUE(EnumerateSubmeshShapes(0, 8).empty());
  EXPECT_TRUE(EnumerateSubmeshShapes(2, 0).empty());
}

TEST(SubmeshShapes, EnumeratedShapesTile) {
  for (int64_t hosts : {1, 2, 3, 8}) {
    for (int64_t per_host : {1, 2, 4, 6, 8, 12, 30}) {
      const Shapes shapes = EnumerateSubmeshShapes(hosts, per_host);
      EXPECT_TRUE(SubmeshShapesTile(hosts, per_host, shapes).ok()) << hosts << "x" << per_host;
      for (size_t j = 0; j < shapes.size(); ++j) {
        const SubmeshShape& s = shapes[j];
        if (s.hosts == 1) {
          EXPECT_EQ(per_host % s.devices_per_host, 0);
          if (j > 0) {
            EXPECT_EQ(s.devices_per_host % shapes[j - 1].devices_per_host, 0);
          }
        } else {
          EXPECT_EQ(s.devices_per_host, per_host);
          EXPECT_LE(s.hosts, hosts);
        }
      }
    }
  }
}

// The planner's subset: every shape up to kAllSubmeshHosts hosts; beyond, balanced pipelines
// of every stage count, sizes at most 12.5 % apart, and a count that grows with the log of the
// hosts.
TEST(SubmeshShapes, PlannerSubsetKeepsBalancedPipelines) {
  for (int64_t hosts : {1, 2, 8, 16}) {
    EXPECT_EQ(PlannerSubmeshShapes(hosts, 8, 16), EnumerateSubmeshShapes(hosts, 8)) << hosts;
  }
  EXPECT_TRUE(PlannerSubmeshShapes(0, 8, 16).empty());
  for (int64_t hosts : {17, 40, 384, 2048}) {
    for (int32_t max_stages : {1, 16, 64}) {
      SCOPED_TRACE(std::to_string(hosts) + " hosts, " + std::to_string(max_stages) + " stages");
      const Shapes shapes = PlannerSubmeshShapes(hosts, 8, max_stages);
      EXPECT_TRUE(SubmeshShapesTile(hosts, 8, shapes).ok());
      std::vector<char> kept(static_cast<size_t>(hosts) + 1, 0);
      for (const SubmeshShape& s : shapes) kept[static_cast<size_t>(s.hosts)] = 1;
      for (int64_t n = 1; n <= kAllSubmeshHosts; ++n) EXPECT_TRUE(kept[static_cast<size_t>(n)]);
      // S stages of floor / ceil(hosts / S) hosts: sum to the cluster with kept shapes only.
      for (int64_t stages = 1; stages <= max_stages && stages <= hosts; ++stages) {
        Shapes pipeline;
        for (int64_t j = 0; j < stages; ++j) {
          const int64_t n = hosts / stages + (j < hosts % stages ? 1 : 0);
          EXPECT_TRUE(kept[static_cast<size_t>(n)]) << n << " hosts for " << stages;
          pipeline.push_back({n, 8});
        }
        EXPECT_TRUE(PlaceSubmeshes(hosts, 8, pipeline).ok()) << stages;
      }
      // Any size has a kept one at most 12.5 % smaller.
      int64_t below = 1;
      for (int64_t n = 1; n <= hosts; ++n) {
        if (kept[static_cast<size_t>(n)]) below = n;
        EXPECT_GE(below * 9, n * 8) << n;
      }
      int64_t log2 = 0;
      while ((int64_t{1} << (log2 + 1)) <= hosts) ++log2;
      EXPECT_LE(static_cast<int64_t>(shapes.size()),
                4 + kAllSubmeshHosts + 2 * max_stages + 8 * log2);
    }
  }
  // 384 hosts, 16 stages: 4 within-host shapes, (n, 8) for n = 2..16, the balanced sizes, the
  // ladder 18, 20, ..., 352, 384.
  const Shapes shapes = PlannerSubmeshShapes(384, 8, 16);
  EXPECT_LT(shapes.size(), 80u);
  EXPECT_EQ(shapes.back(), (SubmeshShape{384, 8}));
}

void ExpectTileError(int64_t hosts, int64_t per_host, const Shapes& shapes,
                     const std::string& fragment) {
  const Status s = SubmeshShapesTile(hosts, per_host, shapes);
  ASSERT_FALSE(s.ok()) << fragment;
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

TEST(SubmeshShapes, TilingRuleErrorsNameTheShape) {
  ExpectTileError(1, 8, {{1, 1}, {1, 3}}, "submesh 1 (1, 3): 3 devices do not divide");
  ExpectTileError(2, 8, {{1, 16}}, "submesh 0 (1, 16)");
  ExpectTileError(2, 8, {{2, 4}}, "submesh 0 (2, 4): a submesh over several hosts must use all 8");
  ExpectTileError(2, 8, {{1, 8}, {3, 8}}, "submesh 1 (3, 8): needs 3 hosts, the cluster has 2");
  ExpectTileError(1, 12, {{1, 4}, {1, 6}},
                  "submesh 1 (1, 6): within-host size 6 is not a multiple of submesh 0's 4");
  ExpectTileError(1, 8, {{0, 1}}, "submesh 0 (0, 1)");
  ExpectTileError(0, 8, {}, "hosts must be in");
  EXPECT_TRUE(SubmeshShapesTile(2, 8, {{1, 2}, {2, 8}, {1, 2}}).ok());  // repeats are fine
}

// Every device once; whole hosts for multi-host stages; one run of consecutive ids inside one
// host otherwise.
void ExpectPlacement(int64_t hosts, int64_t per_host, const Shapes& stages) {
  Result<std::vector<std::vector<int64_t>>> placed = PlaceSubmeshes(hosts, per_host, stages);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  ASSERT_EQ(placed.value().size(), stages.size());
  std::vector<int> used(static_cast<size_t>(hosts * per_host), 0);
  for (size_t j = 0; j < stages.size(); ++j) {
    std::vector<int64_t> ids = placed.value()[j];
    ASSERT_EQ(static_cast<int64_t>(ids.size()), stages[j].num_devices()) << "stage " << j;
    std::sort(ids.begin(), ids.end());
    for (int64_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, hosts * per_host);
      ++used[static_cast<size_t>(id)];
    }
    if (stages[j].hosts > 1) {
      EXPECT_EQ(ids.front() % per_host, 0) << "stage " << j << " starts mid-host";
    } else {
      EXPECT_EQ(ids.front() / per_host, ids.back() / per_host) << "stage " << j;
      EXPECT_EQ(ids.front() % stages[j].devices_per_host, 0) << "stage " << j;
    }
    for (size_t t = 1; t < ids.size(); ++t) EXPECT_EQ(ids[t], ids[t - 1] + 1) << "stage " << j;
  }
  for (size_t id = 0; id < used.size(); ++id) EXPECT_EQ(used[id], 1) << "device " << id;
}

TEST(SubmeshShapes, PlacesRandomMultisets) {
  std::mt19937 rng(42);
  const int64_t clusters[][2] = {{1, 1}, {1, 4}, {2, 8}, {3, 6}, {2, 12}, {4, 1}, {3, 12}, {8, 8}};
  for (const auto& cluster : clusters) {
    const int64_t hosts = cluster[0], per_host = cluster[1];
    const Shapes shapes = EnumerateSubmeshShapes(hosts, per_host);
    for (int trial = 0; trial < 50; ++trial) {
      Shapes stages;
      int64_t left = hosts * per_host;
      while (left > 0) {
        const SubmeshShape& s =
            shapes[std::uniform_int_distribution<size_t>(0, shapes.size() - 1)(rng)];
        if (s.num_devices() > left) continue;
        stages.push_back(s);
        left -= s.num_devices();
      }
      std::shuffle(stages.begin(), stages.end(), rng);
      SCOPED_TRACE(std::to_string(hosts) + "x" + std::to_string(per_host) + " trial " +
                   std::to_string(trial));
      ExpectPlacement(hosts, per_host, stages);
    }
  }
}

TEST(SubmeshShapes, PlacementKeepsStageOrder) {
  Result<std::vector<std::vector<int64_t>>> placed =
      PlaceSubmeshes(2, 4, {{1, 1}, {1, 4}, {1, 2}, {1, 1}});
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  EXPECT_EQ(placed.value(), (std::vector<std::vector<int64_t>>{{6}, {0, 1, 2, 3}, {4, 5}, {7}}));
}

TEST(SubmeshShapes, PlacementErrors) {
  Result<std::vector<std::vector<int64_t>>> r = PlaceSubmeshes(2, 4, {{1, 4}, {1, 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("use 6 devices, the cluster has 8"), std::string::npos)
      << r.status().message();
  r = PlaceSubmeshes(1, 4, {{1, 4}, {1, 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("use 6 devices, the cluster has 4"), std::string::npos)
      << r.status().message();
  r = PlaceSubmeshes(1, 8, {{1, 3}, {1, 5}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stage 0 (1, 3)"), std::string::npos) << r.status().message();
  r = PlaceSubmeshes(2, 12, {{1, 4}, {1, 4}, {1, 4}, {1, 6}, {1, 6}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a multiple"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace alpa
