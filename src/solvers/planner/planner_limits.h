// Bounds on the work one planning call accepts (planner.h, baseline_search.h), checked before
// that work starts: the cluster's hosts and devices before anything is built, a model's layer
// count before its graph is built, the graph's ops and layers once it is, and the estimated
// intra-op solves before the first one runs. A refusal is kInvalidArgument and its message says
// the limit, the value that exceeds it, and the option that raises it (PlannerLimits field =
// plan option name = CLI flag, e.g. max_hosts / --max-hosts; 0 there removes the bound).
#pragma once

#include <cstdint>

#include "core/cluster/cluster.h"
#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {

// Each bound: 0 means none. The defaults keep a plan of the default model under about a minute
// on a few cores (intra-op solves dominate; a host adds about four logical meshes to solve on).
struct PlannerLimits {
  int64_t max_hosts = 1024;
  int64_t max_devices = 16384;
  int64_t max_graph_ops = 1000000;       // ops of the microbatch graph
  int64_t max_layers = 4096;             // layers of the model (layer markers of the graph)
  int64_t max_intra_op_solves = 100000;  // estimated, over the microbatch counts to try
};

// The work of the intra-op phase as estimated before it starts.
struct PlannerWorkEstimate {
  int64_t piece_types = 0;           // distinct layer pieces (solved once per logical mesh)
  int64_t logical_meshes = 0;        // over all submesh shapes
  int64_t solves_per_count = 0;      // piece_types * logical_meshes: level-0 solves per count
  int64_t max_solves_per_count = 0;  // with every memory level solved
  int64_t microbatch_counts = 0;     // counts the search tries (at most)
  int64_t solves = 0;                // solves_per_count * microbatch_counts
  int64_t stage_candidates = 0;      // per count, at most: configs * layer-group ranges
};

// Hosts and devices of the cluster.
Status CheckClusterLimits(const Cluster& cluster, const PlannerLimits& limits);
// A model's layer count known before its graph is built (0: unknown, not checked).
Status CheckModelLayerLimit(int64_t layers, const PlannerLimits& limits);
// The microbatch graph's ops and distinct layer markers.
Status CheckGraphLimits(const Graph& graph, const PlannerLimits& limits);
// The estimated intra-op solves.
Status CheckWorkEstimate(const PlannerWorkEstimate& estimate, const PlannerLimits& limits);

// a * b, saturating at INT64_MAX (estimates only; the inputs are non-negative).
int64_t SaturatingProduct(int64_t a, int64_t b);

}  // namespace alpa
