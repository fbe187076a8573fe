// A plan's device programs, priced, as the pipeline simulator's input (program_simulation.h).
#include "exec/sim/program_simulation.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "exec/lower/lower_plan.h"
#include "exec/sim/plan_simulation.h"
#include "solvers/planner/plan_transfers.h"

namespace alpa {
namespace {

// Per physical device: its stage in `plan` (-1: none).
std::vector<int32_t> StageOfDevice(const PipelinePlan& plan) {
  std::vector<int32_t> stage_of;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    for (int64_t d : plan.stages[s].devices) {
      if (d < 0) continue;
      if (stage_of.size() <= static_cast<size_t>(d))
        stage_of.resize(static_cast<size_t>(d) + 1, -1);
      stage_of[static_cast<size_t>(d)] = static_cast<int32_t>(s);
    }
  }
  return stage_of;
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

void CollectSends(const std::vector<int32_t>& stage_of, const DeviceProgram& program,
                  const ProgramTask& task, TaskSends& sends) {
  for (int64_t i = task.begin; i < task.end; ++i) {
    const Instruction& in = program.code[static_cast<size_t>(i)];
    if (in.kind != InstructionKind::kSend || in.peer < 0 ||
        static_cast<size_t>(in.peer) >= stage_of.size()) {
      continue;
    }
    const int32_t to_stage = stage_of[static_cast<size_t>(in.peer)];
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

void AddPriced(const PricedSeconds& priced, PricedSeconds& into) {
  for (int32_t p = 0; p < kPricedParts; ++p) into.part[p] += priced.part[p];
  into.not_in_plan += priced.not_in_plan;
  into.deferred_backward += priced.deferred_backward;
  into.transfer_gather += priced.transfer_gather;
}

// Prices `program`'s tasks into its stage's entry (the slowest device per task kind) and
// collects the messages of the representative microbatch's tasks and of the update.
// `mb` is the representative microbatch (the last lowered). Under a schedule that splits the
// backward, the weight-gradient task counts into the backward (the stage's backward_seconds is
// both parts, as the plan's latency) and alone into *weight_gradient_seconds, the backward
// device's.
Status PriceProgram(const ProgramPricer& pricer, const std::vector<int32_t>& stage_of, int64_t mb,
                    const DeviceProgram& program, ProgramStagePrice& stage, StageMessages& messages,
                    double* weight_gradient_seconds) {
  PricedSeconds f, b, u, w;
  for (const ProgramTask& task : program.tasks) {
    const bool representative =
        (task.kind == ProgramTaskKind::kForward || task.kind == ProgramTaskKind::kBackward ||
         task.kind == ProgramTaskKind::kWeightGradient) &&
        task.microbatch == mb;
    if (!representative && task.kind != ProgramTaskKind::kSetup &&
        task.kind != ProgramTaskKind::kUpdate) {
      continue;
    }
    Result<PricedSeconds> priced = pricer.PriceTask(program, task);
    if (!priced.ok()) return priced.status();
    if (task.kind == ProgramTaskKind::kWeightGradient) {
      // It sends nothing: nobody waits for a weight gradient (pipeline_simulator.h).
      AddPriced(priced.value(), w);
      AddPriced(priced.value(), b);
      continue;
    }
    PricedSeconds& into = task.kind == ProgramTaskKind::kForward    ? f
                          : task.kind == ProgramTaskKind::kBackward ? b
                                                                    : u;
    AddPriced(priced.value(), into);
    if (task.kind == ProgramTaskKind::kForward)
      CollectSends(stage_of, program, task, messages.forward);
    if (task.kind == ProgramTaskKind::kBackward) {
      CollectSends(stage_of, program, task, messages.backward);
    }
    if (task.kind == ProgramTaskKind::kUpdate)
      CollectUpdateReceives(program, task, messages.update);
  }
  // The slowest device; of equally slow ones the lowest id (devices come in any order).
  auto keep = [&program](PricedSeconds& slowest, int32_t& device, const PricedSeconds& mine) {
    if (device < 0 || mine.simulated() > slowest.simulated() ||
        (mine.simulated() == slowest.simulated() && program.device < device)) {
      slowest = mine;
      device = program.device;
    }
  };
  keep(stage.forward, stage.forward_device, f);
  keep(stage.backward, stage.backward_device, b);
  if (stage.backward_device == program.device) *weight_gradient_seconds = w.simulated();
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
  // The pricing maps each device to one stage (StageOfDevice).
  if (plan.virtual_stages > 1) {
    return Status(StatusCode::kUnsupported,
                  "simulating the device programs of an interleaved plan (" +
                      std::to_string(plan.virtual_stages) +
                      " stages per device group) is not supported; simulate the plan instead");
  }
  Result<ProgramPricer> pricer = ProgramPricer::Create(plan, cluster);
  if (!pricer.ok()) return pricer.status();

  // The plan lowered for min(B, 2) microbatches, each device's program priced as it comes.
  ProgramSimulationInput out;
  out.lowered_microbatches = std::min<int64_t>(plan.microbatches, 2);
  out.stages.resize(plan.stages.size());
  std::vector<StageMessages> messages(plan.stages.size());
  std::vector<double> weight_gradient(plan.stages.size(), 0.0);  // of the backward device
  const std::vector<int32_t> stage_of = StageOfDevice(plan);
  PipelinePlan compact = plan;
  compact.microbatches = out.lowered_microbatches;
  LowerOptions options;
  options.schedule = schedule;
  options.whole_batch = whole_batch;
  Result<ProgramSet> lowered =
      LowerPlanEach(compact, options, [&](DeviceProgram& program) -> Status {
        if (program.stage < 0) return Status::Ok();
        const size_t s = static_cast<size_t>(program.stage);
        return PriceProgram(pricer.value(), stage_of, out.lowered_microbatches - 1, program,
                            out.stages[s], messages[s], &weight_gradient[s]);
      });
  if (!lowered.ok()) return lowered.status();
  out.input = std::move(base).value();
  out.input.transfers.clear();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    // The update's messages, each tensor's moves as the planner times them.
    for (auto& [tensor, moves] : messages[s].update) {
      // In device order, whatever order the programs came in.
      std::sort(moves.begin(), moves.end(), [](const SliceMove& a, const SliceMove& b) {
        return std::tie(a.dst_device, a.src_device, a.bytes) <
               std::tie(b.dst_device, b.src_device, b.bytes);
      });
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
    // At most the backward: the same device's seconds, part of its sum.
    st.weight_gradient_seconds = std::min(weight_gradient[s], st.backward_seconds);
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
