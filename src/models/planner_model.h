// The planner's input from a zoo spec or a graph: a PlannerModel whose builder makes the training
// step of one microbatch (the global batch split B ways) for any microbatch count B.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/ir/graph.h"

#include "core/util/status.h"
#include "solvers/planner/planner.h"

namespace alpa {

// A zoo spec as a PlannerModel (its `batch` key is the global batch). kInvalidArgument when the
// spec does not parse or has no integer `batch`; the builder fails when B does not divide it.
Result<PlannerModel> PlannerModelFromSpec(const std::string& spec);

// A graph of the global batch, held in dim `batch_dim` of its input parameters, as a
// PlannerModel: the builder for B is the graph rebatched into B microbatches (core/ir/rebatch.h;
// the graph itself for B = 1), and global_batch is the inputs' batch. kInvalidGraph naming the op
// (kInvalidArgument without inputs) when the batch cannot be followed through the graph.
Result<PlannerModel> PlannerModelFromGraph(std::shared_ptr<const Graph> graph, int32_t batch_dim);

// A graph of one microbatch, the same whatever B is (global_batch 0: B is the options'
// microbatches, or 1).
PlannerModel FixedPlannerModel(std::shared_ptr<const Graph> graph);

}  // namespace alpa
