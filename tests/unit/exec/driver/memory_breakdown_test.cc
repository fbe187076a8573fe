// The planner's memory model of a stage as the executor is told it (per schedule) and as the
// pieces' solutions compose, and the measured side's walk over a program.
#include "exec/driver/memory_breakdown.h"

#include <gtest/gtest.h>

#include "exec/lower/lower_plan.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/plan_json.h"
#include "solvers/planner/plan_json_read.h"
#include "solvers/planner/stage_costs.h"

namespace alpa {
namespace {

PipelinePlan ManualPlan(const std::string& model_spec, int64_t per_host, int64_t dp, int64_t tp,
                        int64_t pp, int64_t b) {
  Result<PlannerModel> model = PlannerModelFromSpec(model_spec);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster =
      ParseClusterSpec("p3.16xlarge:hosts=1,devices_per_host=" + std::to_string(per_host));
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  ManualPlanSpec spec;
  spec.data_parallel = dp;
  spec.tensor_parallel = tp;
  spec.pipeline_parallel = pp;
  spec.microbatches = b;
  PlannerOptions options;
  options.threads = 1;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(plan).value();
}

const char* kMlp = "mlp:layers=4,hidden=16,batch=16,dtype=f32";

// Each piece's split adds back up to its solve's own peak: persistent plus the larger of
// activations + forward-backward working and the update's peak.
TEST(ProfileUnitMemory, SplitsTheSolvesPeakIntoForwardBackwardAndUpdate) {
  const PipelinePlan plan = ManualPlan(kMlp, 2, 1, 2, 1, 1);
  int32_t with_update = 0;
  for (const PlannedStage& st : plan.stages) {
    for (const StagePiece& piece : st.pieces) {
      Result<UnitMemory> m = ProfileUnitMemory(piece.subgraph->graph, *piece.sharding);
      ASSERT_TRUE(m.ok()) << m.status().message();
      const UnitMemory& u = m.value();
      EXPECT_EQ(u.persistent() + std::max(u.activations + u.working, u.update),
                piece.sharding->peak_memory_bytes)
          << "piece " << piece.piece;
      with_update += u.update > 0;
    }
  }
  EXPECT_GT(with_update, 0);
}

// GPipe holds every microbatch's activations, 1F1B min(stages - stage, B): the memory each
// device's program is planned to peak at follows the schedule the run uses.
TEST(PlannedMemory, FollowsTheRunsSchedule) {
  const PipelinePlan plan = ManualPlan(kMlp, 2, 1, 1, 2, 4);
  ASSERT_EQ(plan.stages.size(), 2u);
  for (PipelineScheduleKind kind :
       {PipelineScheduleKind::kOneFOneB, PipelineScheduleKind::kGPipe}) {
    LowerOptions options;
    options.schedule = kind;
    Result<ProgramSet> set = LowerPlan(plan, options);
    ASSERT_TRUE(set.ok()) << set.status().message();
    for (int32_t s = 0; s < 2; ++s) {
      const PlannedStage& st = plan.stages[static_cast<size_t>(s)];
      Result<StageMemory> model = PlannedStageMemoryModel(st);
      ASSERT_TRUE(model.ok()) << model.status().message();
      const StageMemory& m = model.value();
      const int64_t in_flight = kind == PipelineScheduleKind::kGPipe ? 4 : 2 - s;
      const int64_t expected =
          std::max(m.persistent + in_flight * m.activation + m.working, m.persistent + m.update);
      const DeviceProgram& program = set.value().programs[static_cast<size_t>(st.devices.front())];
      EXPECT_EQ(program.planned_memory_bytes, expected) << "stage " << s;
      if (kind == PipelineScheduleKind::kOneFOneB) {
        EXPECT_EQ(program.planned_memory_bytes, st.memory_bytes) << "stage " << s;
      }
      Result<PlannedMemory> planned = PlannedStageMemory(plan, s, kind);
      ASSERT_TRUE(planned.ok());
      EXPECT_EQ(planned.value().total(), expected) << "stage " << s;
    }
  }
}

// A plan read back from its JSON keeps its stated memory but not its solves' bytes per op: a
// GPipe run is planned with the plan's activation_bytes per further microbatch, and the
// per-component model says why it cannot be rebuilt.
TEST(PlannedMemory, OfAPlanReadFromJsonUsesThePlansFigures) {
  const PipelinePlan plan = ManualPlan(kMlp, 2, 1, 1, 2, 4);
  Result<Cluster> cluster = ParseClusterSpec("p3.16xlarge:hosts=1,devices_per_host=2");
  ASSERT_TRUE(cluster.ok());
  Result<std::string> text = PipelinePlanJson(plan, cluster.value(), kMlp, 2);
  ASSERT_TRUE(text.ok()) << text.status().message();
  Result<PipelinePlan> read = ReadPipelinePlanJson(text.value(), nullptr);
  ASSERT_TRUE(read.ok()) << read.status().message();
  LowerOptions options;
  options.schedule = PipelineScheduleKind::kGPipe;
  Result<ProgramSet> set = LowerPlan(read.value(), options);
  ASSERT_TRUE(set.ok()) << set.status().message();
  for (int32_t s = 0; s < 2; ++s) {
    const PlannedStage& st = read.value().stages[static_cast<size_t>(s)];
    EXPECT_EQ(set.value().programs[static_cast<size_t>(st.devices.front())].planned_memory_bytes,
              st.memory_bytes + (4 - st.in_flight) * st.activation_bytes)
        << "stage " << s;
  }
  Result<PlannedMemory> model = PlannedStageMemory(read.value(), 0, PipelineScheduleKind::kGPipe);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("stage 0"), std::string::npos)
      << model.status().message();
}

// The update writes each new parameter and optimizer state into its buffer as soon as the old
// value is dead, as the planner's donated update does: the step never holds a second copy of
// the parameters and optimizer state (it did: 1.31 x the planned peak for this plan).
TEST(MeasureProgramMemory, UpdateHoldsNoSecondCopyOfTheState) {
  const PipelinePlan plan = ManualPlan(kMlp, 2, 2, 1, 1, 2);
  Result<ProgramSet> set = LowerPlan(plan);
  ASSERT_TRUE(set.ok()) << set.status().message();
  const std::vector<char> free_op = FreeOpsOfPlan(plan);
  for (const DeviceProgram& program : set.value().programs) {
    const MeasuredMemory m = MeasureProgramMemory(program, set.value().graph, free_op);
    EXPECT_GT(m.parameters, 0);
    EXPECT_GT(m.optimizer_state, 0);
    EXPECT_LT(m.update_temporaries, m.parameters + m.optimizer_state);
    EXPECT_LE(static_cast<double>(m.peak_without_free_values),
              1.1 * static_cast<double>(program.planned_memory_bytes))
        << "device " << program.device;
  }
}

}  // namespace
}  // namespace alpa
