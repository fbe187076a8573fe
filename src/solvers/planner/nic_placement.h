// NIC-aware stage placement (issue 20's topology): where a host's NICs sit next to some of its
// devices only (core/cluster/cluster.h's NicLocality), the stages that send to or receive from
// other hosts belong on those devices. PlaceSubmeshes packs stages without looking at the NICs;
// these functions reorder the stages inside each host afterwards and keep the order the
// prediction prefers.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "solvers/planner/planner.h"

namespace alpa {

// A host whose single-host stages number more than this keeps their order (the search tries
// every order of them: 720 at most).
inline constexpr size_t kMaxNicPlacementStages = 6;

// The bytes each stage of `plan` sends to or receives from other hosts in one iteration: the
// slice moves of plan.transfers between hosts, a per-microbatch transfer counted once per
// microbatch.
std::vector<double> CrossHostBytes(const PipelinePlan& plan, const Cluster& cluster);

// `devices` (each stage's device ids, as PlaceSubmeshes gives them: consecutive local indices of
// one host, or whole hosts) with, inside each host, its single-host stages in the order that
// puts the fewest of their `cross_host_bytes` on devices far from the NICs: a stage's bytes
// count in proportion to its devices that are far. Of equal orders, the current one. Unchanged
// where the cluster has no NIC locality.
std::vector<std::vector<int64_t>> NicAwareDevices(const Cluster& cluster,
                                                  const std::vector<std::vector<int64_t>>& devices,
                                                  const std::vector<double>& cross_host_bytes);

// Lists a plan's transfers for its stages (ListCrossStageTransfers with the caller's pieces).
using TransferLister =
    std::function<Result<std::vector<CrossStageTransfer>>(const std::vector<PlannedStage>&)>;

// Predicts `plan` (its stages and transfers listed, not yet predicted) with PredictPlanIteration
// and, where the cluster's NICs sit next to some devices only and NicAwareDevices moves a stage,
// also the plan with the stages moved and its transfers listed again by `list_transfers`; keeps
// the one predicted faster (the one as placed on ties). Errors: list_transfers's.
Status PredictWithNicPlacement(PipelinePlan& plan, const Cluster& cluster,
                               const TransferLister& list_transfers);

}  // namespace alpa
