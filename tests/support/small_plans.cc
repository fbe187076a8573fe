#include "support/small_plans.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/ir/graph_builder.h"
#include "exec/lower/lower_plan.h"
#include "models/planner_model.h"

namespace alpa::testing {

Result<SmallPlan> PlanSmallModel(const std::string& model, int64_t tensor_parallel,
                                 int64_t microbatches, const Calibration* calibration) {
  Result<PlannerModel> m = PlannerModelFromSpec(model);
  if (!m.ok()) return m.status();
  Result<Cluster> cluster =
      ParseClusterSpec("p3.16xlarge:hosts=1,devices_per_host=" + std::to_string(tensor_parallel));
  if (!cluster.ok()) return cluster.status();
  if (calibration != nullptr) cluster.value().calibration = *calibration;
  ManualPlanSpec spec;
  spec.tensor_parallel = tensor_parallel;
  spec.microbatches = microbatches;
  Result<PipelinePlan> plan = EvaluateManualPlan(m.value(), cluster.value(), spec);
  if (!plan.ok()) return plan.status();
  Result<Graph> whole = m.value().build(1);
  if (!whole.ok()) return whole.status();
  SmallPlan p;
  p.plan = std::move(plan).value();
  p.whole = std::move(whole).value();
  return p;
}

Result<ProgramSet> LowerSmallModel(const std::string& model, int64_t tensor_parallel,
                                   int64_t microbatches) {
  Result<SmallPlan> p = PlanSmallModel(model, tensor_parallel, microbatches);
  if (!p.ok()) return p.status();
  LowerOptions options;
  options.whole_batch = &p.value().whole;
  return LowerPlan(p.value().plan, options);
}

void AddBuffers(DeviceProgram& p, int32_t count, const Dims& shape, DType dtype) {
  for (int32_t i = 0; i < count; ++i) {
    p.buffers.push_back({"b" + std::to_string(p.buffers.size()), shape, dtype, false, -1});
  }
}

int32_t AddElementwiseLocalOp(DeviceProgram& p, OpKind kind, int32_t operands, const Dims& shape,
                              DType dtype) {
  GraphBuilder b;
  std::vector<int32_t> in;
  for (int32_t k = 0; k < operands; ++k) {
    in.push_back(b.Parameter(shape, dtype, TensorRole::kActivation, "x" + std::to_string(k)));
  }
  b.AddOutput(operands == 1 ? b.Unary(kind, in[0]) : b.Binary(kind, in[0], in[1]));
  Result<Graph> g = std::move(b).Finish();
  if (!g.ok()) ADD_FAILURE() << OpKindName(kind) << ": " << g.status().message();
  p.local_ops.push_back(g.ok() ? std::move(g).value() : Graph());
  return static_cast<int32_t>(p.local_ops.size()) - 1;
}

void AddInstruction(DeviceProgram& p, InstructionKind kind, int32_t out, std::vector<int32_t> in,
                    int32_t local_op, bool round) {
  Instruction i;
  i.kind = kind;
  i.out = out;
  i.in = std::move(in);
  i.local_op = local_op;
  i.round = round;
  p.code.push_back(std::move(i));
}

}  // namespace alpa::testing
