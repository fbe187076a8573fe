// A zoo model planned by hand on one host of p3.16xlarge (tensor parallel, microbatches), with
// its whole-batch graph and its device programs: the small GPT plans of the CUDA backend's tests
// (fusion, handovers, the GPU equivalence cases); and device programs built by hand, a few
// instructions at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
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
// one host (a p3.16xlarge) with `microbatches` microbatches, priced with `calibration` when given
// instead of the preset's.
Result<SmallPlan> PlanSmallModel(const std::string& model, int64_t tensor_parallel,
                                 int64_t microbatches = 2,
                                 const Calibration* calibration = nullptr);

// The small plan's device programs (lowered with the whole batch, as the driver does).
Result<ProgramSet> LowerSmallModel(const std::string& model, int64_t tensor_parallel,
                                   int64_t microbatches = 2);

// Appends `count` buffers "b<index>" of `shape` and `dtype` (not persistent) to `p`.
void AddBuffers(DeviceProgram& p, int32_t count, const Dims& shape, DType dtype);

// Appends the local graph of elementwise `kind` over `operands` (1 or 2) parameters of `shape`
// and `dtype` to `p`; returns its index (Instruction::local_op).
int32_t AddElementwiseLocalOp(DeviceProgram& p, OpKind kind, int32_t operands, const Dims& shape,
                              DType dtype);

// Appends an instruction to `p`.
void AddInstruction(DeviceProgram& p, InstructionKind kind, int32_t out, std::vector<int32_t> in,
                    int32_t local_op = -1, bool round = true);

}  // namespace alpa::testing
