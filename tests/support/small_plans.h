// A zoo model planned by hand on one host of p3.16xlarge (tensor parallel, microbatches), with
// its whole-batch graph and its device programs: the small GPT plans of the CUDA backend's tests
// (fusion, handovers, the GPU equivalence cases).
#pragma once

#include <cstdint>
#include <string>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/program/program.h"
#include "solvers/planner/manual_plan.h"

namespace alpa::testing {

struct SmallPlan {
  PipelinePlan plan;
  Graph whole;  // the model's graph for the whole batch
};

// `model` is a zoo spec ("gpt:layers=2,..."); the plan puts it on `tensor_parallel` devices of
// one host with `microbatches` microbatches.
Result<SmallPlan> PlanSmallModel(const std::string& model, int64_t tensor_parallel,
                                 int64_t microbatches = 2);

// The small plan's device programs (lowered with the whole batch, as the driver does).
Result<ProgramSet> LowerSmallModel(const std::string& model, int64_t tensor_parallel,
                                   int64_t microbatches = 2);

}  // namespace alpa::testing
