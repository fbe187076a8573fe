// The lowering under interleaved 1F1B (pipeline_schedule.h): a device's program holds every
// stage of its device group, its tasks are the group's in GroupSchedule's order (each emitted by
// its stage), its planned memory is the sum over those stages; and the pairings a schedule
// cannot run (a plan of several stages per group under another schedule, interleaved 1F1B on a
// plan of one stage per group, stages of one group on other devices) are refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/driver/memory_breakdown.h"
#include "exec/driver/plan_run.h"
#include "exec/lower/lower_plan.h"
#include "models/planner_model.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/manual_plan.h"

namespace alpa {
namespace {

constexpr PipelineScheduleKind kInterleaved = PipelineScheduleKind::kInterleavedOneFOneB;

const char* kGpt4 = "gpt:layers=4,hidden=16,heads=4,seq=8,vocab=32,batch=8,dtype=f32,adam_eps=1e-5";

// GPT with 4 layers on `devices` devices: pp = 2 groups of `virtual_stages` stages, the rest
// tensor parallel.
PipelinePlan GptPlan(int64_t devices, int32_t virtual_stages, int64_t microbatches) {
  Result<PlannerModel> model = PlannerModelFromSpec(kGpt4);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster =
      ParseClusterSpec("p3.16xlarge:hosts=1,devices_per_host=" + std::to_string(devices));
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  ManualPlanSpec spec;
  spec.tensor_parallel = devices / 2;
  spec.pipeline_parallel = 2;
  spec.virtual_stages = virtual_stages;
  spec.microbatches = microbatches;
  PlannerOptions options;
  options.threads = 1;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(plan).value() : PipelinePlan{};
}

Result<ProgramSet> Lower(const PipelinePlan& plan, PipelineScheduleKind schedule) {
  LowerOptions options;
  options.schedule = schedule;
  options.threads = 1;
  return LowerPlan(plan, options);
}

ProgramTaskKind ProgramKindOf(PipelineTaskKind kind) {
  return kind == PipelineTaskKind::kForward ? ProgramTaskKind::kForward
                                            : ProgramTaskKind::kBackward;
}

TEST(InterleavedLowering, EachDeviceRunsItsGroupsStagesInTheGroupsOrder) {
  const PipelinePlan plan = GptPlan(4, 2, 4);
  ASSERT_EQ(plan.stages.size(), 4u);
  ASSERT_EQ(plan.virtual_stages, 2);
  Result<ProgramSet> set = Lower(plan, kInterleaved);
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set.value().programs.size(), 4u);
  for (const DeviceProgram& p : set.value().programs) {
    ASSERT_TRUE(ValidateProgram(p).ok()) << ValidateProgram(p).message();
    const int32_t group = static_cast<int32_t>(p.device / 2);
    EXPECT_EQ(p.stage, group);
    EXPECT_EQ(p.stages, (std::vector<int32_t>{group, group + 2})) << "device " << p.device;
    // Set-ups of both stages, the group's tasks, then the updates (last stage first).
    const std::vector<GroupTask> order = GroupSchedule(kInterleaved, 4, 2, group, 4);
    ASSERT_EQ(p.tasks.size(), order.size() + 4) << "device " << p.device;
    EXPECT_EQ(p.tasks[0].kind, ProgramTaskKind::kSetup);
    EXPECT_EQ(p.tasks[0].stage, group);
    EXPECT_EQ(p.tasks[1].kind, ProgramTaskKind::kSetup);
    EXPECT_EQ(p.tasks[1].stage, group + 2);
    for (size_t t = 0; t < order.size(); ++t) {
      const ProgramTask& task = p.tasks[t + 2];
      EXPECT_EQ(task.kind, ProgramKindOf(order[t].kind)) << "task " << t;
      EXPECT_EQ(task.microbatch, order[t].microbatch) << "task " << t;
      EXPECT_EQ(task.stage, order[t].stage) << "task " << t;
      // Every instruction of a task is its stage's.
      for (int64_t i = task.begin; i < task.end; ++i) {
        EXPECT_EQ(p.code[static_cast<size_t>(i)].stage, task.stage)
            << "device " << p.device << " task " << t << " instruction " << i;
      }
    }
    EXPECT_EQ(p.tasks[order.size() + 2].kind, ProgramTaskKind::kUpdate);
    EXPECT_EQ(p.tasks[order.size() + 2].stage, group + 2);
    EXPECT_EQ(p.tasks.back().kind, ProgramTaskKind::kUpdate);
    EXPECT_EQ(p.tasks.back().stage, group);
    // Both stages' parameters, each bound by its stage.
    std::vector<int32_t> bound(4, 0);
    for (const ParameterBinding& b : p.parameters) ++bound[static_cast<size_t>(b.stage)];
    EXPECT_GT(bound[static_cast<size_t>(group)], 0);
    EXPECT_GT(bound[static_cast<size_t>(group + 2)], 0);
    // The planned memory: the sum of the two stages' models.
    Result<std::vector<PlannedMemory>> planned = PlannedDeviceMemory(plan, p.stages, kInterleaved);
    ASSERT_TRUE(planned.ok()) << planned.status().message();
    EXPECT_EQ(p.planned_memory_bytes, PlannedTotal(planned.value()));
    EXPECT_EQ(p.planned_memory_bytes, plan.stages[static_cast<size_t>(group)].memory_bytes +
                                          plan.stages[static_cast<size_t>(group + 2)].memory_bytes);
  }
}

TEST(InterleavedLowering, APlanOfSeveralStagesPerGroupRunsUnderInterleavedOneFOneBOnly) {
  const PipelinePlan plan = GptPlan(2, 2, 2);
  for (PipelineScheduleKind other : {PipelineScheduleKind::kOneFOneB, PipelineScheduleKind::kGPipe,
                                     PipelineScheduleKind::kZeroBubbleH1}) {
    Result<ProgramSet> set = Lower(plan, other);
    ASSERT_FALSE(set.ok()) << PipelineScheduleName(other);
    EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument);
    const std::string& m = set.status().message();
    EXPECT_NE(m.find("virtual_stages 2"), std::string::npos) << m;
    EXPECT_NE(m.find("only the schedule interleaved-1f1b runs"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("not ") + PipelineScheduleName(other)), std::string::npos) << m;
  }
  // The executor refuses it the same way, before running anything.
  Result<PlannerModel> model = PlannerModelFromSpec(kGpt4);
  ASSERT_TRUE(model.ok());
  Result<Graph> whole = model.value().build(1);
  ASSERT_TRUE(whole.ok());
  PlanRunOptions options;
  options.lower.schedule = PipelineScheduleKind::kOneFOneB;
  Result<PlanRunReport> run = RunPlanOnThreads(plan, whole.value(), options);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("interleaved-1f1b"), std::string::npos);
}

TEST(InterleavedLowering, InterleavedOneFOneBRunsOnlyAPlanMadeForIt) {
  const PipelinePlan plan = GptPlan(2, 1, 2);
  ASSERT_EQ(plan.virtual_stages, 1);
  Result<ProgramSet> set = Lower(plan, kInterleaved);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(set.status().message().find("interleaved-1f1b runs a plan made for it"),
            std::string::npos)
      << set.status().message();
  EXPECT_NE(set.status().message().find("its schedule is 1f1b"), std::string::npos)
      << set.status().message();
}

TEST(InterleavedLowering, MisshapenInterleavedPlansAreRefusedByName) {
  const PipelinePlan good = GptPlan(2, 2, 2);
  {
    // Microbatches that do not go through in rounds of the groups.
    PipelinePlan plan = good;
    plan.microbatches = 3;
    Result<ProgramSet> set = Lower(plan, kInterleaved);
    ASSERT_FALSE(set.ok());
    EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(set.status().message().find("not a multiple"), std::string::npos)
        << set.status().message();
  }
  {
    // Stage 2 on other devices than stage 0, its group's first.
    PipelinePlan plan = good;
    plan.stages[2].devices = plan.stages[1].devices;
    Result<ProgramSet> set = Lower(plan, kInterleaved);
    ASSERT_FALSE(set.ok());
    EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(set.status().message().find("stage 2 runs on other devices than stage 0"),
              std::string::npos)
        << set.status().message();
  }
  {
    // Three stages do not split into groups of two.
    PipelinePlan plan = good;
    plan.virtual_stages = 3;
    Result<ProgramSet> set = Lower(plan, kInterleaved);
    ASSERT_FALSE(set.ok());
    EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(set.status().message().find("do not split into groups of 3"), std::string::npos)
        << set.status().message();
  }
}

}  // namespace
}  // namespace alpa
