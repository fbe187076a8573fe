// What the planner and the manual-plan evaluator (manual_plan.h) both do once a plan's stages
// are known: list the tensors that cross between stages, and predict the iteration time from
// the stages and those transfers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/cluster/cross_mesh.h"
#include "core/ir/graph.h"
#include "core/util/status.h"
#include "solvers/pipeline/pipeline_estimate.h"
#include "solvers/planner/planner.h"
#include "solvers/planner/subgraph.h"

namespace alpa {

// The time of one transfer's slice moves when nothing else uses the links, as the simulator
// runs them: every device's intra-host link and every host's NIC group (Cluster::nics_per_host)
// serves its outgoing and its incoming moves one after another, so the busiest of those servers
// (a move inside a host at its pair's bandwidth, MovePairBandwidths: the host's link, or with an
// NVLink graph the pair's direct, relayed or PCIe path; a NIC group's bytes over its bandwidth;
// a move between hosts from or to a device far from its NICs at the far bandwidth, cluster.h's
// NicLocality) plus the slower link's latency. A destination that holds its tile replicated
// receives it once per replica, which a plain bytes / bandwidth misses.
double TransferSeconds(const std::vector<SliceMove>& moves, const Cluster& cluster);

// Every boundary input of a piece whose producer sits on another stage, with the cross-mesh
// slice moves between the two stages' layouts and their time (TransferSeconds). A gradient
// contribution the receiver accumulates into a weight's gradient (an add of the tensor's own
// shape) is marked once_per_iteration. `stages` must have their devices, logical meshes and
// pieces (pieces p of stage s: group_first_piece[first_layer] .. [last_layer + 1] - 1);
// stage_of_piece gives each piece's stage. Errors: kInternal when a transfer cannot be planned.
Result<std::vector<CrossStageTransfer>> ListCrossStageTransfers(
    const Graph& graph, const std::vector<std::shared_ptr<const Subgraph>>& piece_graph,
    const std::vector<int32_t>& op_piece, const std::vector<int32_t>& group_first_piece,
    const std::vector<int32_t>& stage_of_piece, const std::vector<PlannedStage>& stages,
    const Cluster& cluster);

// Given plan.stages (latency, forward_latency, iteration_overhead) and plan.transfers: charges
// each once-per-iteration transfer to its receiver's iteration_overhead (it crosses before the
// receiver's gradient synchronisation), then sets schedule_seconds (the DP's objective:
// sum (t + o) + (B - 1) max t), max_stage_latency, and iteration_seconds / period_seconds from
// EstimatePipeline (pipeline_estimate.h) for plan.schedule with the per-microbatch transfers:
// between stages s and s + 1 their seconds add up per direction; a transfer that skips stages is
// charged to the link into its receiver (forward) or into its receiver from the next stage
// (backward).
void PredictPlanIteration(PipelinePlan& plan);
// Its second half alone (the overheads already charged): what to call again after changing
// plan.schedule.
void EstimatePlanIteration(PipelinePlan& plan);
// The estimate's view of the plan's stages: their forward, backward and weight-gradient seconds,
// overheads, and the per-microbatch transfers between neighbours (as above).
std::vector<PipelineEstimateStage> PlanEstimateStages(const PipelinePlan& plan);

}  // namespace alpa
