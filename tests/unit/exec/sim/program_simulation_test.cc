// The simulator on the device programs: the lowering's tasks tile each program in its schedule's
// order; every op instruction is priced exactly as the piece's intra-op solve priced the op
// (from the local shapes alone), collectives by the mesh dims their group spans; the programs'
// simulation lands next to the plan's, and sees what only the programs run.
#include "exec/sim/program_simulation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/cost_model.h"
#include "exec/lower/lower_plan.h"
#include "exec/sim/plan_simulation.h"
#include "models/planner_model.h"
#include "support/clusters.h"

namespace alpa {
namespace {

using testing::P3;

constexpr const char* kSmallGpt = "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=16";

struct PlannedModel {
  PipelinePlan plan;
  Graph whole;
};

PlannedModel PlanOrDie(const Cluster& cluster, int64_t microbatches, int32_t pp) {
  Result<PlannerModel> model = PlannerModelFromSpec(kSmallGpt);
  EXPECT_TRUE(model.ok()) << model.status().message();
  PlannerOptions options;
  options.microbatches = microbatches;
  options.threads = 2;
  options.pipeline_stages = pp;
  // Solves proven (not cut by the clock), so that plans do not depend on the machine's load.
  options.intra_op_time_limit_seconds = 600;
  Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  Result<Graph> whole = model.value().build(1);
  EXPECT_TRUE(whole.ok()) << whole.status().message();
  return {plan.ok() ? std::move(plan).value() : PipelinePlan{},
          whole.ok() ? std::move(whole).value() : Graph{}};
}

// Two stages on two hosts, four microbatches: made once.
const PlannedModel& TwoStagePlan() {
  static const PlannedModel planned = PlanOrDie(P3(2), 4, 2);
  return planned;
}

TEST(ProgramTasks, TileEachProgramInTheScheduleOrder) {
  const PlannedModel& m = TwoStagePlan();
  ASSERT_EQ(m.plan.stages.size(), 2u);
  for (PipelineScheduleKind kind :
       {PipelineScheduleKind::kOneFOneB, PipelineScheduleKind::kGPipe}) {
    LowerOptions options;
    options.schedule = kind;
    options.whole_batch = &m.whole;
    Result<ProgramSet> set = LowerPlan(m.plan, options);
    ASSERT_TRUE(set.ok()) << set.status().message();
    for (const DeviceProgram& p : set.value().programs) {
      if (p.stage < 0) continue;
      ASSERT_TRUE(ValidateProgram(p).ok()) << ValidateProgram(p).message();
      const std::vector<PipelineTask> schedule =
          StageSchedule(kind, 2, p.stage, m.plan.microbatches);
      ASSERT_EQ(p.tasks.size(), schedule.size() + 2) << "device " << p.device;
      EXPECT_EQ(p.tasks.front().kind, ProgramTaskKind::kSetup);
      EXPECT_EQ(p.tasks.back().kind, ProgramTaskKind::kUpdate);
      EXPECT_EQ(p.tasks.back().end, static_cast<int64_t>(p.code.size()));
      for (size_t t = 0; t < schedule.size(); ++t) {
        const ProgramTask& task = p.tasks[t + 1];
        EXPECT_EQ(task.kind, schedule[t].kind == PipelineTaskKind::kForward
                                 ? ProgramTaskKind::kForward
                                 : ProgramTaskKind::kBackward);
        EXPECT_EQ(task.microbatch, schedule[t].microbatch);
        EXPECT_LT(task.begin, task.end) << "an empty task on device " << p.device;
        // Every instruction of a microbatch's task is that microbatch's (or of none).
        for (int64_t i = task.begin; i < task.end; ++i) {
          const int64_t mb = p.code[static_cast<size_t>(i)].microbatch;
          EXPECT_TRUE(mb == task.microbatch || mb < 0) << "instruction " << i;
        }
      }
    }
  }
}

TEST(ProgramTasks, ValidationNamesATaskThatDoesNotTile) {
  const PlannedModel& m = TwoStagePlan();
  Result<ProgramSet> set = LowerPlan(m.plan);
  ASSERT_TRUE(set.ok()) << set.status().message();
  DeviceProgram p = set.value().programs[0];
  ASSERT_GE(p.tasks.size(), 3u);
  p.tasks[1].end += 1;  // overlaps the next task
  const Status status = ValidateProgram(p);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("task 2"), std::string::npos) << status.message();
}

TEST(ProgramTasks, HandedOverOneByOneTheyAreTheKeptPrograms) {
  const PlannedModel& m = TwoStagePlan();
  LowerOptions options;
  options.whole_batch = &m.whole;
  Result<ProgramSet> kept = LowerPlan(m.plan, options);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  std::vector<std::string> handed(kept.value().programs.size());
  options.threads = 2;
  Result<ProgramSet> shells = LowerPlanEach(m.plan, options, [&](DeviceProgram& p) -> Status {
    handed[static_cast<size_t>(p.device)] = ProgramText(p);
    return Status::Ok();
  });
  ASSERT_TRUE(shells.ok()) << shells.status().message();
  for (const DeviceProgram& p : kept.value().programs) {
    EXPECT_EQ(handed[static_cast<size_t>(p.device)], ProgramText(p)) << "device " << p.device;
    EXPECT_TRUE(shells.value().programs[static_cast<size_t>(p.device)].code.empty());
    EXPECT_EQ(shells.value().programs[static_cast<size_t>(p.device)].stage, p.stage);
  }
  // The taker's error ends the lowering with it.
  Result<ProgramSet> refused = LowerPlanEach(m.plan, options, [](DeviceProgram& p) -> Status {
    return InvalidArgument("no room for device " + std::to_string(p.device));
  });
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("no room for device"), std::string::npos);
}

TEST(ProgramPricing, EveryOpInstructionCostsWhatTheSolvePricedItsOp) {
  const PlannedModel& m = TwoStagePlan();
  Result<ProgramSet> set = LowerPlan(m.plan);
  ASSERT_TRUE(set.ok()) << set.status().message();
  Result<ProgramPricer> pricer = ProgramPricer::Create(m.plan, P3(2));
  ASSERT_TRUE(pricer.ok()) << pricer.status().message();
  int64_t checked = 0;
  for (const DeviceProgram& p : set.value().programs) {
    if (p.stage < 0) continue;
    const PlannedStage& stage = m.plan.stages[static_cast<size_t>(p.stage)];
    for (const Instruction& in : p.code) {
      if (in.kind != InstructionKind::kRun) continue;
      // The op the instruction runs, as the plan's piece has it.
      ASSERT_GE(in.piece, 0) << InstructionText(p, in);
      ASSERT_LT(static_cast<size_t>(in.piece), stage.pieces.size());
      const StagePiece& piece = stage.pieces[static_cast<size_t>(in.piece)];
      ASSERT_EQ(piece.subgraph->origin[static_cast<size_t>(in.piece_op)], in.tensor);
      const OpSharding* solved = &piece.sharding->ops[static_cast<size_t>(in.piece_op)];
      ASSERT_NE(solved, nullptr) << InstructionText(p, in);
      Result<InstructionPrice> price = pricer.value().Price(p, in);
      ASSERT_TRUE(price.ok()) << price.status().message();
      EXPECT_EQ(price.value().part, PricedPart::kCompute);
      const double want = solved->free || solved->fused ? 0.0 : solved->compute_cost;
      EXPECT_NEAR(price.value().seconds, want, 1e-12 + 1e-9 * want) << InstructionText(p, in);
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

// One stage over two hosts of 8 devices, logical mesh (2, 8): no pieces needed to price
// collectives.
PipelinePlan TwoHostMeshPlan() {
  PipelinePlan plan;
  PlannedStage stage;
  stage.submesh = {2, 8};
  stage.logical_mesh = {2, 8};
  for (int64_t d = 0; d < 16; ++d) stage.devices.push_back(d);
  StagePiece piece;
  piece.subgraph = std::make_shared<Subgraph>();
  stage.pieces.push_back(piece);
  plan.stages.push_back(stage);
  return plan;
}

TEST(ProgramPricing, CollectivesPriceTheMeshDimsTheirGroupSpans) {
  const Cluster cluster = P3(2);
  const PipelinePlan plan = TwoHostMeshPlan();
  Result<ProgramPricer> pricer = ProgramPricer::Create(plan, cluster);
  ASSERT_TRUE(pricer.ok()) << pricer.status().message();
  Result<LogicalMesh> mesh = DeriveLogicalMesh(cluster, {2, 8}, {2, 8});
  ASSERT_TRUE(mesh.ok());
  DeviceProgram program;
  program.stage = 0;
  program.device = 3;
  const int64_t bytes = int64_t{1} << 26;  // 64 MiB of local input
  auto price = [&](InstructionKind kind, std::vector<int32_t> group) {
    Instruction in;
    in.kind = kind;
    in.group = std::move(group);
    in.bytes = bytes;
    Result<InstructionPrice> p = pricer.value().Price(program, in);
    EXPECT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p.value().part, PricedPart::kCollective);
    return p.value().seconds;
  };
  auto want = [&](CollectiveKind kind, int32_t dim, double b) {
    return MeshCollectiveCost(mesh.value(), kind, dim, b, CostMode::kRealUnits).value();
  };
  // Across the hosts (mesh dim 0), inside one (dim 1), over all 16 (flattened).
  const double across = price(InstructionKind::kAllReduce, {3, 11});
  const double inside = price(InstructionKind::kAllReduce, {0, 1, 2, 3, 4, 5, 6, 7});
  std::vector<int32_t> all;
  for (int32_t d = 0; d < 16; ++d) all.push_back(d);
  EXPECT_DOUBLE_EQ(across, want(CollectiveKind::kAllReduce, 0, bytes));
  EXPECT_DOUBLE_EQ(inside, want(CollectiveKind::kAllReduce, 1, bytes));
  EXPECT_DOUBLE_EQ(price(InstructionKind::kAllReduce, all),
                   want(CollectiveKind::kAllReduce, kFlattenedMeshDim, bytes));
  EXPECT_GT(across, inside);  // 25 Gb/s NICs against NVLink
  // The cost model's b: an all-gather's output, the group times its local input.
  EXPECT_DOUBLE_EQ(price(InstructionKind::kAllGather, {0, 1, 2, 3, 4, 5, 6, 7}),
                   want(CollectiveKind::kAllGather, 1, 8.0 * bytes));
  EXPECT_DOUBLE_EQ(price(InstructionKind::kReduceScatter, {3, 11}),
                   want(CollectiveKind::kReduceScatter, 0, bytes));
  EXPECT_EQ(price(InstructionKind::kAllReduce, {3}), 0.0);  // a group of one moves nothing

  Instruction outside;
  outside.kind = InstructionKind::kAllReduce;
  outside.group = {3, 16};
  outside.bytes = bytes;
  Result<InstructionPrice> bad = pricer.value().Price(program, outside);
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
  EXPECT_NE(bad.status().message().find("device 16"), std::string::npos) << bad.status().message();
}

TEST(ProgramSimulation, LandsNextToThePlansSimulation) {
  const PlannedModel& m = TwoStagePlan();
  const Cluster cluster = P3(2);
  Result<ProgramSimulationInput> programs =
      SimInputFromPrograms(m.plan, &m.whole, cluster, PipelineScheduleKind::kOneFOneB);
  ASSERT_TRUE(programs.ok()) << programs.status().message();
  Result<PipelineSimInput> planned =
      SimInputFromPlan(m.plan, cluster, PipelineScheduleKind::kOneFOneB);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_EQ(programs.value().lowered_microbatches, 2);
  ASSERT_EQ(programs.value().stages.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    const ProgramStagePrice& p = programs.value().stages[s];
    const PlannedStage& st = m.plan.stages[s];
    // Compute and collectives as the solves priced them. The plan also charges each parameter
    // op a write of its value, which no instruction does, and prices in every backward the
    // backward work the programs run once at the update; the programs also run what the plan
    // does not list (the loss's all-reduce, the refreshed copy of the tied embedding). With
    // those, every task is the plan's to rounding. A transfer's local all-gather runs in the
    // receiving task; the plan prices it in the transfer (gather_seconds, below).
    EXPECT_NEAR(p.forward.simulated() - p.forward.not_in_plan - p.forward.transfer_gather +
                    p.parameter_forward,
                st.forward_latency, 1e-9 * st.forward_latency);
    EXPECT_NEAR(p.backward.simulated() - p.backward.not_in_plan - p.backward.transfer_gather +
                    p.parameter_backward + p.update.deferred_backward,
                st.latency - st.forward_latency, 1e-9 * (st.latency - st.forward_latency));
    // The programs' gathers are the plan's, each priced as the plan prices it.
    double forward_gathers = 0, backward_gathers = 0;
    for (const CrossStageTransfer& t : m.plan.transfers) {
      if (t.to_stage != static_cast<int32_t>(s) || !t.landing_spec) continue;
      (t.to_stage > t.from_stage ? forward_gathers : backward_gathers) += t.gather_seconds;
    }
    EXPECT_NEAR(p.forward.transfer_gather, forward_gathers, 1e-12);
    EXPECT_NEAR(p.backward.transfer_gather, backward_gathers, 1e-12);
    EXPECT_NEAR(p.update.simulated() - p.update.not_in_plan - p.update.deferred_backward +
                    p.parameter_update,
                st.iteration_overhead, 1e-9 * st.iteration_overhead);
    EXPECT_GT(p.parameter_forward, 0.0);
    EXPECT_GT(p.update.deferred_backward, 0.0);
    EXPECT_GT(p.forward.part[static_cast<int32_t>(PricedPart::kCompute)], 0.0);
    EXPECT_GT(p.backward.part[static_cast<int32_t>(PricedPart::kBookkeeping)], 0.0)
        << "the gradient accumulation of a microbatch after the first";
    EXPECT_EQ(programs.value().input.stages[s].forward_seconds, p.forward.simulated());
  }
  // The transfers are the plan's moves, found in the programs' sends.
  int64_t planned_bytes = 0, sent_bytes = 0;
  for (const PipelineSimTransfer& t : planned.value().transfers) {
    for (const SimSliceMove& move : t.slices) planned_bytes += move.bytes;
  }
  for (const PipelineSimTransfer& t : programs.value().input.transfers) {
    for (const SimSliceMove& move : t.slices) sent_bytes += move.bytes;
  }
  EXPECT_EQ(sent_bytes, planned_bytes);
  EXPECT_GT(sent_bytes, 0);
  // This plan's activations land on a replicated layout: a local all-gather is planned.
  int64_t landings = 0;
  for (const CrossStageTransfer& t : m.plan.transfers) landings += t.landing_spec ? 1 : 0;
  EXPECT_GT(landings, 0);

  // The last stage holds a copy of the tied embedding, which the programs refresh from the
  // first stage's update (across the hosts' NICs): a message the plan does not price.
  const double refresh =
      programs.value().stages[1].update.part[static_cast<int32_t>(PricedPart::kTransfer)];
  EXPECT_GT(refresh, 0.0);
  // Without it the iterations agree within 10 %.
  PipelineSimInput without = programs.value().input;
  without.stages[1].gradient_sync_seconds -= refresh;
  Result<PipelineSimResult> a = SimulatePipeline(without);
  Result<PipelineSimResult> b = SimulatePipeline(planned.value());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(a.value().iteration_seconds, b.value().iteration_seconds,
              0.1 * b.value().iteration_seconds);
}

// ZB-H1's programs split each backward into its input-gradient and weight-gradient tasks: the
// stage's backward is their sum (1F1B's backward, the same instructions), of which the
// weight-gradient task's share is weight_gradient_seconds.
TEST(ProgramSimulation, ZeroBubbleSplitsTheBackwardItPrices) {
  const PlannedModel& m = TwoStagePlan();
  const Cluster cluster = P3(2);
  Result<ProgramSimulationInput> one =
      SimInputFromPrograms(m.plan, &m.whole, cluster, PipelineScheduleKind::kOneFOneB);
  Result<ProgramSimulationInput> zb =
      SimInputFromPrograms(m.plan, &m.whole, cluster, PipelineScheduleKind::kZeroBubbleH1);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_TRUE(zb.ok()) << zb.status().message();
  EXPECT_EQ(zb.value().input.schedule, PipelineScheduleKind::kZeroBubbleH1);
  for (size_t s = 0; s < one.value().stages.size(); ++s) {
    const PipelineSimStage& a = one.value().input.stages[s];
    const PipelineSimStage& b = zb.value().input.stages[s];
    EXPECT_EQ(a.weight_gradient_seconds, 0.0) << "stage " << s;
    EXPECT_GT(b.weight_gradient_seconds, 0.0) << "stage " << s;
    EXPECT_LT(b.weight_gradient_seconds, b.backward_seconds) << "stage " << s;
    EXPECT_DOUBLE_EQ(a.forward_seconds, b.forward_seconds) << "stage " << s;
    EXPECT_NEAR(a.backward_seconds, b.backward_seconds, 1e-9 * a.backward_seconds) << "stage " << s;
  }
  Result<PipelineSimResult> r = SimulatePipeline(zb.value().input);
  ASSERT_TRUE(r.ok()) << r.status().message();
}

TEST(ProgramSimulation, GpipeRunsTheSameTasksInItsOwnOrder) {
  const PlannedModel& m = TwoStagePlan();
  const Cluster cluster = P3(2);
  Result<ProgramSimulationInput> one =
      SimInputFromPrograms(m.plan, &m.whole, cluster, PipelineScheduleKind::kOneFOneB);
  Result<ProgramSimulationInput> gpipe =
      SimInputFromPrograms(m.plan, &m.whole, cluster, PipelineScheduleKind::kGPipe);
  ASSERT_TRUE(one.ok() && gpipe.ok());
  for (size_t s = 0; s < one.value().stages.size(); ++s) {
    EXPECT_DOUBLE_EQ(one.value().input.stages[s].forward_seconds,
                     gpipe.value().input.stages[s].forward_seconds);
    EXPECT_DOUBLE_EQ(one.value().input.stages[s].backward_seconds,
                     gpipe.value().input.stages[s].backward_seconds);
  }
  EXPECT_EQ(gpipe.value().input.schedule, PipelineScheduleKind::kGPipe);
}

}  // namespace
}  // namespace alpa
