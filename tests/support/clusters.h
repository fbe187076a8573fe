// Clusters the planner tests share.
#pragma once

#include <cstdint>

#include "core/cluster/cluster.h"

namespace alpa::testing {

// The p3.16xlarge preset with `hosts` hosts, optionally with another device count per host
// (8 V100s each by default). Fails the running test when the preset cannot be made.
Cluster P3(int64_t hosts, int64_t devices_per_host = 8);

}  // namespace alpa::testing
