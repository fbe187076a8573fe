// Clusters the planner tests share (clusters.h).
#include "support/clusters.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/cluster/nvlink_graph.h"

namespace alpa::testing {

Cluster P3(int64_t hosts, int64_t devices_per_host) {
  Result<Cluster> c = MakePresetCluster("p3.16xlarge", hosts);
  EXPECT_TRUE(c.ok());
  Cluster cluster = std::move(c).value();
  cluster.nvlink = ResizedHostGraph(cluster.nvlink, cluster.devices_per_host, devices_per_host);
  cluster.devices_per_host = devices_per_host;
  return cluster;
}

}  // namespace alpa::testing
