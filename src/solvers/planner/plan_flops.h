// The hardware FLOPs a plan runs per iteration (what a GPU executes, recomputation included)
// and the FLOP/s per device its predicted iteration time gives.
#pragma once

#include "core/cluster/cluster.h"
#include "core/ir/graph.h"
#include "solvers/planner/planner.h"

namespace alpa {

// Sets plan.flops_per_iteration and plan.tflops_per_device from `graph` (the plan's training
// graph) and plan.iteration_seconds: every op once per microbatch (the update once per
// iteration), plus the forward ops each stage's recomputation reruns (all of its pieces'
// forward under full recomputation, the attention cores under selective).
void SetPlanFlops(PipelinePlan& plan, const Graph& graph, const Cluster& cluster);

}  // namespace alpa
