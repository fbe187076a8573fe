// The lowering under ZB-H1 (pipeline_schedule.h): each stage's program runs the schedule's
// forward, input-gradient (kBackward) and weight-gradient (kWeightGradient) tasks in its order;
// the input-gradient task holds the backward's sends and receives, the weight-gradient task the
// ops WeightGradientOps flags and the gradient accumulation; together they hold what 1F1B's one
// backward task holds; and the planned memory adds an activation per pending weight gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "exec/lower/lower_plan.h"
#include "models/planner_model.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/stage_costs.h"
#include "solvers/planner/weight_gradient_ops.h"

namespace alpa {
namespace {

constexpr PipelineScheduleKind kZb = PipelineScheduleKind::kZeroBubbleH1;
constexpr PipelineScheduleKind k1F1B = PipelineScheduleKind::kOneFOneB;

const char* kMlp = "mlp:layers=4,hidden=16,batch=16,dtype=f32";
const char* kGpt4 = "gpt:layers=4,hidden=16,heads=4,seq=8,vocab=32,batch=8,dtype=f32,adam_eps=1e-5";

PipelinePlan ManualPlan(const std::string& model_spec, int64_t per_host, int64_t tp, int64_t pp,
                        int64_t b, Recompute remat = Recompute::kNone) {
  Result<PlannerModel> model = PlannerModelFromSpec(model_spec);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster =
      ParseClusterSpec("p3.16xlarge:hosts=1,devices_per_host=" + std::to_string(per_host));
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  ManualPlanSpec spec;
  spec.data_parallel = 1;
  spec.tensor_parallel = tp;
  spec.pipeline_parallel = pp;
  spec.microbatches = b;
  spec.remat = remat;
  PlannerOptions options;
  options.threads = 1;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(plan).value();
}

ProgramSet Lower(const PipelinePlan& plan, PipelineScheduleKind schedule) {
  LowerOptions options;
  options.schedule = schedule;
  options.threads = 1;
  Result<ProgramSet> set = LowerPlan(plan, options);
  EXPECT_TRUE(set.ok()) << set.status().message();
  return std::move(set).value();
}

ProgramTaskKind ProgramKindOf(PipelineTaskKind kind) {
  switch (kind) {
    case PipelineTaskKind::kForward:
      return ProgramTaskKind::kForward;
    case PipelineTaskKind::kBackward:
      return ProgramTaskKind::kBackward;
    case PipelineTaskKind::kWeightGradient:
      return ProgramTaskKind::kWeightGradient;
  }
  return ProgramTaskKind::kSetup;
}

int64_t Count(const DeviceProgram& program, const ProgramTask& task, InstructionKind kind) {
  int64_t n = 0;
  for (int64_t i = task.begin; i < task.end; ++i) {
    n += program.code[static_cast<size_t>(i)].kind == kind;
  }
  return n;
}

// What an instruction does, apart from buffer and local-op numbering (which follow the order
// the lowering emits in).
using Signature = std::tuple<int32_t, int32_t, int64_t, int32_t, int32_t, int64_t, int32_t, int32_t,
                             int32_t, int64_t, std::vector<int64_t>>;
Signature SignatureOf(const Instruction& in) {
  return {static_cast<int32_t>(in.kind),
          in.tensor,
          in.microbatch,
          static_cast<int32_t>(in.origin),
          in.peer,
          in.tag,
          in.piece,
          in.piece_op,
          in.collective,
          in.bytes,
          in.sizes};
}

// The sorted signatures of the program's tasks of `kinds` for microbatch mb (kFree left out:
// frees follow the last use, which the split moves).
std::vector<Signature> TaskSignatures(const DeviceProgram& program,
                                      const std::vector<ProgramTaskKind>& kinds, int64_t mb) {
  std::vector<Signature> out;
  for (const ProgramTask& task : program.tasks) {
    if (task.microbatch != mb || std::find(kinds.begin(), kinds.end(), task.kind) == kinds.end()) {
      continue;
    }
    for (int64_t i = task.begin; i < task.end; ++i) {
      const Instruction& in = program.code[static_cast<size_t>(i)];
      if (in.kind != InstructionKind::kFree) out.push_back(SignatureOf(in));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ZeroBubbleLowering, EveryStageRunsItsScheduleTasksInOrder) {
  const PipelinePlan plan = ManualPlan(kMlp, 4, 1, 4, 4);
  ASSERT_EQ(plan.stages.size(), 4u);
  const ProgramSet set = Lower(plan, kZb);
  for (const DeviceProgram& program : set.programs) {
    ASSERT_TRUE(ValidateProgram(program).ok()) << ValidateProgram(program).message();
    const std::vector<PipelineTask> schedule = StageSchedule(kZb, 4, program.stage, 4);
    ASSERT_EQ(program.tasks.size(), schedule.size() + 2) << "stage " << program.stage;
    EXPECT_EQ(program.tasks.front().kind, ProgramTaskKind::kSetup);
    EXPECT_EQ(program.tasks.back().kind, ProgramTaskKind::kUpdate);
    for (size_t t = 0; t < schedule.size(); ++t) {
      EXPECT_EQ(program.tasks[t + 1].kind, ProgramKindOf(schedule[t].kind))
          << "stage " << program.stage << " task " << t;
      EXPECT_EQ(program.tasks[t + 1].microbatch, schedule[t].microbatch)
          << "stage " << program.stage << " task " << t;
    }
  }
  // 1F1B is as before: no weight-gradient task.
  for (const DeviceProgram& program : Lower(plan, k1F1B).programs) {
    for (const ProgramTask& task : program.tasks) {
      EXPECT_NE(task.kind, ProgramTaskKind::kWeightGradient);
    }
  }
}

// A middle stage's input-gradient task receives the output gradient and sends the input
// gradient; its weight-gradient task talks to no other device and accumulates the gradients.
TEST(ZeroBubbleLowering, MiddleStageSendsInTheBackwardAndAccumulatesInTheWeightGradient) {
  const PipelinePlan plan = ManualPlan(kMlp, 4, 1, 4, 4);
  const ProgramSet set = Lower(plan, kZb);
  for (int32_t stage : {1, 2}) {
    const DeviceProgram& program =
        set.programs[static_cast<size_t>(plan.stages[static_cast<size_t>(stage)].devices[0])];
    int64_t backward = 0, weight = 0;
    for (const ProgramTask& task : program.tasks) {
      if (task.kind == ProgramTaskKind::kBackward) {
        ++backward;
        EXPECT_GT(Count(program, task, InstructionKind::kSend), 0)
            << "stage " << stage << " mb " << task.microbatch;
        EXPECT_GT(Count(program, task, InstructionKind::kRecv), 0)
            << "stage " << stage << " mb " << task.microbatch;
        EXPECT_EQ(Count(program, task, InstructionKind::kAccumulate), 0)
            << "stage " << stage << " mb " << task.microbatch;
      }
      if (task.kind == ProgramTaskKind::kWeightGradient) {
        ++weight;
        EXPECT_EQ(Count(program, task, InstructionKind::kSend), 0)
            << "stage " << stage << " mb " << task.microbatch;
        EXPECT_EQ(Count(program, task, InstructionKind::kRecv), 0)
            << "stage " << stage << " mb " << task.microbatch;
        EXPECT_GT(Count(program, task, InstructionKind::kAccumulate), 0)
            << "stage " << stage << " mb " << task.microbatch;
        EXPECT_GT(Count(program, task, InstructionKind::kRun), 0)
            << "stage " << stage << " mb " << task.microbatch;
      }
    }
    EXPECT_EQ(backward, 4);
    EXPECT_EQ(weight, 4);
  }
}

// Every backward op a task runs is of its part: WeightGradientOps of its piece flags it exactly
// in the weight-gradient tasks (the forward ops a remat reruns run in the input-gradient task).
// A GPT of 4 layers on 2 stages of tp 2: stages of several pieces, with and without remat.
TEST(ZeroBubbleLowering, EachTaskRunsTheBackwardOpsOfItsPart) {
  for (Recompute remat : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    const PipelinePlan plan = ManualPlan(kGpt4, 4, 2, 2, 4, remat);
    ASSERT_EQ(plan.stages.size(), 2u);
    EXPECT_GT(plan.stages[0].pieces.size(), 1u);
    std::vector<std::vector<std::vector<char>>> flags(plan.stages.size());
    for (size_t s = 0; s < plan.stages.size(); ++s) {
      for (const StagePiece& piece : plan.stages[s].pieces) {
        flags[s].push_back(WeightGradientOps(piece.subgraph->graph));
      }
    }
    const ProgramSet set = Lower(plan, kZb);
    for (const DeviceProgram& program : set.programs) {
      ASSERT_TRUE(ValidateProgram(program).ok()) << ValidateProgram(program).message();
      const PlannedStage& st = plan.stages[static_cast<size_t>(program.stage)];
      int64_t weight_runs = 0, input_runs = 0;
      for (const ProgramTask& task : program.tasks) {
        const bool split = task.kind == ProgramTaskKind::kBackward ||
                           task.kind == ProgramTaskKind::kWeightGradient;
        if (!split) continue;
        for (int64_t i = task.begin; i < task.end; ++i) {
          const Instruction& in = program.code[static_cast<size_t>(i)];
          if (in.kind != InstructionKind::kRun || in.piece < 0 || in.piece_op < 0) continue;
          const Graph& g = st.pieces[static_cast<size_t>(in.piece)].subgraph->graph;
          if (g.op(in.piece_op).phase != Phase::kBackward) continue;
          const bool flagged =
              flags[static_cast<size_t>(program.stage)][static_cast<size_t>(in.piece)]
                   [static_cast<size_t>(in.piece_op)] != 0;
          EXPECT_EQ(flagged, task.kind == ProgramTaskKind::kWeightGradient)
              << "remat " << static_cast<int>(remat) << " device " << program.device << ": "
              << InstructionText(program, in);
          (flagged ? weight_runs : input_runs) += 1;
        }
      }
      // Every stage has pieces that another piece waits for (the blocks after the first).
      EXPECT_GT(weight_runs, 0) << "device " << program.device;
      EXPECT_GT(input_runs, 0) << "device " << program.device;
    }
  }
}

// Per microbatch, ZB-H1's input-gradient and weight-gradient tasks together hold exactly what
// 1F1B's backward task holds (the order aside), its forward tasks and update the same.
TEST(ZeroBubbleLowering, SplitBackwardHoldsOneFOneBsBackward) {
  for (Recompute remat : {Recompute::kNone, Recompute::kFull}) {
    const PipelinePlan plan = ManualPlan(kGpt4, 4, 1, 4, 4, remat);
    const ProgramSet zb = Lower(plan, kZb);
    const ProgramSet one = Lower(plan, k1F1B);
    ASSERT_EQ(zb.programs.size(), one.programs.size());
    for (size_t d = 0; d < zb.programs.size(); ++d) {
      for (int64_t mb = 0; mb < 4; ++mb) {
        EXPECT_EQ(TaskSignatures(zb.programs[d], {ProgramTaskKind::kForward}, mb),
                  TaskSignatures(one.programs[d], {ProgramTaskKind::kForward}, mb))
            << "device " << d << " mb " << mb;
        EXPECT_EQ(
            TaskSignatures(zb.programs[d],
                           {ProgramTaskKind::kBackward, ProgramTaskKind::kWeightGradient}, mb),
            TaskSignatures(one.programs[d], {ProgramTaskKind::kBackward}, mb))
            << "device " << d << " mb " << mb;
      }
      EXPECT_EQ(TaskSignatures(zb.programs[d], {ProgramTaskKind::kUpdate}, -1),
                TaskSignatures(one.programs[d], {ProgramTaskKind::kUpdate}, -1))
          << "device " << d;
    }
  }
}

// Each stage is planned with min(stages, B) microbatches in flight plus one activation per
// weight gradient it keeps pending (min(stage, B - 1)).
TEST(ZeroBubbleLowering, PlannedMemoryHoldsThePendingWeightGradients) {
  for (int64_t b : {2, 4}) {
    const PipelinePlan plan = ManualPlan(kMlp, 4, 1, 4, b);
    ASSERT_EQ(plan.schedule, k1F1B);
    const ProgramSet set = Lower(plan, kZb);
    for (int32_t s = 0; s < 4; ++s) {
      const PlannedStage& st = plan.stages[static_cast<size_t>(s)];
      Result<StageMemory> model = PlannedStageMemoryModel(st);
      ASSERT_TRUE(model.ok()) << model.status().message();
      const int64_t expected = model.value().With(std::min<int64_t>(4, b)) +
                               std::min<int64_t>(s, b - 1) * st.activation_bytes;
      EXPECT_EQ(set.programs[static_cast<size_t>(st.devices.front())].planned_memory_bytes,
                expected)
          << "B " << b << " stage " << s;
    }
  }
}

}  // namespace
}  // namespace alpa
