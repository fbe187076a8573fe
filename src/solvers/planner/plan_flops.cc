// Hardware FLOPs of a plan (plan_flops.h).
#include "solvers/planner/plan_flops.h"

#include <vector>

#include "core/ir/graph_stats.h"
#include "core/ir/recompute.h"

namespace alpa {
namespace {

// The FLOPs one microbatch's recomputation reruns in a stage.
long double RerunFlops(const PlannedStage& stage) {
  long double flops = 0;
  for (const StagePiece& piece : stage.pieces) {
    const Graph& g = piece.subgraph->graph;
    std::vector<bool> rerun;
    if (stage.remat == Recompute::kSelective) rerun = SelectivelyRecomputedOps(g);
    for (int32_t l = 0; l < g.size(); ++l) {
      const bool again = stage.remat == Recompute::kFull
                             ? g.op(l).phase == Phase::kForward
                             : !rerun.empty() && rerun[static_cast<size_t>(l)];
      if (again) flops += OpFlops(g, l);
    }
  }
  return flops;
}

}  // namespace

void SetPlanFlops(PipelinePlan& plan, const Graph& graph, const Cluster& cluster) {
  long double per_microbatch = 0, per_iteration = 0;
  for (int32_t v = 0; v < graph.size(); ++v) {
    (graph.op(v).phase == Phase::kUpdate ? per_iteration : per_microbatch) += OpFlops(graph, v);
  }
  for (const PlannedStage& stage : plan.stages) {
    if (stage.remat != Recompute::kNone) per_microbatch += RerunFlops(stage);
  }
  plan.flops_per_iteration =
      per_microbatch * static_cast<long double>(plan.microbatches) + per_iteration;
  plan.tflops_per_device =
      static_cast<double>(plan.flops_per_iteration / plan.iteration_seconds /
                          static_cast<long double>(cluster.num_devices()) / 1e12L);
}

}  // namespace alpa
