// A plan's device programs, priced, as the pipeline simulator's input (program_simulation.h).
#include "exec/sim/program_simulation.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "exec/lower/lower_plan.h"
#include "exec/sim/plan_simulation.h"
#include "solvers/planner/plan_transfers.h"

namespace alpa {
namespace {

// The plan lowered for min(B, 2) microbatches (program_simulation.h).
Result<ProgramSet> LowerCompact(const PipelinePlan& plan, const Graph* whole_batch,
                                PipelineScheduleKind schedule) {
  PipelinePlan compact = plan;
  compact.microbatches = std::min<int64_t>(plan.microbatches, 2);
  LowerOptions options;
  options.schedule = schedule;
  options.whole_batch = whole_batch;
  return LowerPlan(compact, options);
}

// Sends of one task, keyed (receiving stage, tensor): bytes per (device, peer).
using TaskSends =
    std::map<std::pair<int32_t, int32_t>, std::map<std::pair<int64_t, int64_t>, int64_t>>;
// Messages a stage receives at its update (once per iteration), per tensor: its slice moves.
using UpdateReceives = std::map<int32_t, std::vector<SliceMove>>;

void CollectUpdateReceives(const DeviceProgram& program, const ProgramTask& task,
                           UpdateReceives& receives) {
  for (int64_t i = task.begin; i < task.end; ++i) {
    const Instruction& in = program.code[static_cast<size_t>(i)];
    if (in.kind != InstructionKind::kRecv) continue;
    SliceMove move;
    move.src_device = in.peer;
    move.dst_device = program.device;
    move.bytes = in.bytes;
    receives[in.tensor].push_back(move);
  }
}

void CollectSends(const ProgramSet& set, const DeviceProgram& program, const ProgramTask& task,
                  TaskSends& sends) {
  for (int64_t i = task.begin; i < task.end; ++i) {
    const Instruction& in = program.code[static_cast<size_t>(i)];
    if (in.kind != InstructionKind::kSend || in.peer < 0 || in.peer >= set.devices) continue;
    const int32_t to_stage = set.programs[static_cast<size_t>(in.peer)].stage;
    sends[{to_stage, in.tensor}][{program.device, in.peer}] += in.bytes;
  }
}

void AddTransfers(int32_t from_stage, SimTransferDirection direction, const TaskSends& sends,
                  std::vector<PipelineSimTransfer>& out) {
  for (const auto& [key, moves] : sends) {
    PipelineSimTransfer t;
    t.from_stage = from_stage;
    t.to_stage = key.first;
    t.direction = direction;
    for (const auto& [pair, bytes] : moves) {
      t.slices.push_back({pair.first, pair.second, bytes});
      t.bytes += bytes;
    }
    out.push_back(std::move(t));
  }
}

// What the devices of one stage send and receive.
struct StageMessages {
  TaskSends forward, backward;
  UpdateReceives update;
};

// Prices `program`'s tasks into its stage's entry (the slowest device per task kind) and
// collects the messages of the representative microbatch's tasks and of the update.
Status PriceProgram(const ProgramPricer& pricer, const ProgramSet& set,
                    const DeviceProgram& program, ProgramStagePrice& stage,
                    StageMessages& messages) {
  const int64_t mb = set.microbatches - 1;
  PricedSeconds f, b, u;
  for (const ProgramTask& task : program.tasks) {
    const bool representative =
        (task.kind == ProgramTaskKind::kForward || task.kind == ProgramTaskKind::kBackward) &&
        task.microbatch == mb;
    if (!representative && task.kind != ProgramTaskKind::kSetup &&
        task.kind != ProgramTaskKind::kUpdate) {
      continue;
    }
    Result<PricedSeconds> priced = pricer.PriceTask(program, task);
    if (!priced.ok()) return priced.status();
    PricedSeconds& into = task.kind == ProgramTaskKind::kForward    ? f
                          : task.kind == ProgramTaskKind::kBackward ? b
                                                                    : u;
    for (int32_t p = 0; p < kPricedParts; ++p) into.part[p] += priced.value().part[p];
    into.not_in_plan += priced.value().not_in_plan;
    into.deferred_backward += priced.value().deferred_backward;
    if (task.kind == ProgramTaskKind::kForward) CollectSends(set, program, task, messages.forward);
    if (task.kind == ProgramTaskKind::kBackward) {
      CollectSends(set, program, task, messages.backward);
    }
    if (task.kind == ProgramTaskKind::kUpdate)
      CollectUpdateReceives(program, task, messages.update);
  }
  auto keep = [&program](PricedSeconds& slowest, int32_t& device, const PricedSeconds& mine) {
    if (device < 0 || mine.simulated() > slowest.simulated()) {
      slowest = mine;
      device = program.device;
    }
  };
  keep(stage.forward, stage.forward_device, f);
  keep(stage.backward, stage.backward_device, b);
  keep(stage.update, stage.update_device, u);
  stage.instructions += static_cast<int64_t>(program.code.size());
  return Status::Ok();
}

}  // namespace

Result<ProgramSimulationInput> SimInputFromPrograms(const PipelinePlan& plan,
                                                    const Graph* whole_batch,
                                                    const Cluster& cluster,
                                                    PipelineScheduleKind schedule) {
  // The plan's own conversion gives the links, the memory and the checks of the cluster.
  Result<PipelineSimInput> base = SimInputFromPlan(plan, cluster, schedule);
  if (!base.ok()) return base.status();
  Result<ProgramSet> set = LowerCompact(plan, whole_batch, schedule);
  if (!set.ok()) return set.status();
  Result<ProgramPricer> pricer = ProgramPricer::Create(plan, cluster);
  if (!pricer.ok()) return pricer.status();

  ProgramSimulationInput out;
  out.lowered_microbatches = set.value().microbatches;
  out.stages.resize(plan.stages.size());
  std::vector<StageMessages> messages(plan.stages.size());
  for (const DeviceProgram& program : set.value().programs) {
    if (program.stage < 0) continue;
    const size_t s = static_cast<size_t>(program.stage);
    ALPA_RETURN_IF_ERROR(
        PriceProgram(pricer.value(), set.value(), program, out.stages[s], messages[s]));
  }
  out.input = std::move(base).value();
  out.input.transfers.clear();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    // The update's messages, each tensor's moves as the planner times them.
    for (const auto& [tensor, moves] : messages[s].update) {
      const double seconds = TransferSeconds(moves, cluster);
      out.stages[s].update.part[static_cast<int32_t>(PricedPart::kTransfer)] += seconds;
      // The plan moves a tied weight's gradient contribution (which it prices); the refreshed
      // copy of the weight is the lowering's own message.
      bool planned = false;
      for (const CrossStageTransfer& t : plan.transfers) {
        planned = planned || (t.once_per_iteration && t.tensor == tensor &&
                              t.to_stage == static_cast<int32_t>(s));
      }
      if (!planned) out.stages[s].update.not_in_plan += seconds;
    }
    PipelineSimStage& st = out.input.stages[s];
    st.forward_seconds = out.stages[s].forward.simulated();
    st.backward_seconds = out.stages[s].backward.simulated();
    st.gradient_sync_seconds = out.stages[s].update.simulated();
    st.update_seconds = 0;
    const PlannedStage& planned = plan.stages[s];
    out.stages[s].planned_forward = planned.forward_latency;
    out.stages[s].planned_backward = planned.latency - planned.forward_latency;
    out.stages[s].planned_overhead = planned.iteration_overhead;
    const std::array<double, 3> charges = pricer.value().ParameterCharges(static_cast<int32_t>(s));
    out.stages[s].parameter_forward = charges[0];
    // Full recomputation runs the forward again in the backward, as the plan prices it.
    out.stages[s].parameter_backward =
        charges[1] + (planned.remat == Recompute::kFull ? charges[0] : 0.0);
    out.stages[s].parameter_update = charges[2];
    AddTransfers(static_cast<int32_t>(s), SimTransferDirection::kForward, messages[s].forward,
                 out.input.transfers);
    AddTransfers(static_cast<int32_t>(s), SimTransferDirection::kBackward, messages[s].backward,
                 out.input.transfers);
  }
  ALPA_RETURN_IF_ERROR(ValidatePipelineSimInput(out.input));
  return out;
}

}  // namespace alpa
