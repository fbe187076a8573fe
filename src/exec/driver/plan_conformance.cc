#include "exec/driver/plan_conformance.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace alpa {
namespace {

// The devices of `stage` that differ from logical index `logical` only on the mesh dims of
// `dims` of size > 1.
std::set<int32_t> ExpectedGroup(const PlannedStage& stage, int64_t logical,
                                const std::vector<int32_t>& dims) {
  const std::vector<int64_t>& mesh = stage.logical_mesh;
  auto coords = [&](int64_t index) {
    std::vector<int64_t> c(mesh.size(), 0);
    for (size_t k = mesh.size(); k-- > 0;) {
      c[k] = index % mesh[k];
      index /= mesh[k];
    }
    return c;
  };
  const std::vector<int64_t> mine = coords(logical);
  std::set<int32_t> group;
  for (int64_t i = 0; i < static_cast<int64_t>(stage.devices.size()); ++i) {
    const std::vector<int64_t> c = coords(i);
    bool same = true;
    for (size_t k = 0; k < mesh.size(); ++k) {
      const bool free_dim =
          std::find(dims.begin(), dims.end(), static_cast<int32_t>(k)) != dims.end();
      same = same && (free_dim || c[k] == mine[k]);
    }
    if (same) group.insert(static_cast<int32_t>(stage.devices[static_cast<size_t>(i)]));
  }
  return group;
}

bool SpansDevices(const PlannedStage& stage, const std::vector<int32_t>& dims) {
  for (int32_t m : dims) {
    if (m >= 0 && static_cast<size_t>(m) < stage.logical_mesh.size() &&
        stage.logical_mesh[static_cast<size_t>(m)] > 1) {
      return true;
    }
  }
  return false;
}

// The planned collective an executed one stands for: a piece of the stage whose collective
// `index` moves the executed tensor.
const PlannedCollective* FindPlanned(const PlannedStage& stage, int32_t index, int32_t tensor) {
  for (const StagePiece& p : stage.pieces) {
    const std::vector<PlannedCollective>& list = p.sharding->collectives;
    if (index < 0 || static_cast<size_t>(index) >= list.size()) continue;
    const PlannedCollective& c = list[static_cast<size_t>(index)];
    if (c.tensor >= 0 && p.subgraph->origin[static_cast<size_t>(c.tensor)] == tensor) return &c;
  }
  return nullptr;
}

// A once-per-iteration tensor moved its planned bytes over the step, all in one microbatch slot
// (not once per microbatch).
Status CheckOnceMoved(const std::string& where, const char* verb, int32_t tensor, int64_t bytes,
                      const std::map<std::pair<int32_t, int64_t>, int64_t>& moved) {
  int64_t total = 0, slots = 0;
  for (const auto& [key, got] : moved) {
    if (key.first != tensor) continue;
    total += got;
    ++slots;
  }
  if (total != bytes || slots != 1) {
    return InternalError(where + " " + verb + " " + std::to_string(total) + " bytes of op " +
                         std::to_string(tensor) + " in " + std::to_string(slots) +
                         " microbatches of the step; the plan moves " + std::to_string(bytes) +
                         " once per iteration");
  }
  return Status::Ok();
}

// An executed local all-gather of `tensor` on `stage_index`: the transfer into that stage that
// plans it, and that it ran as an all-gather over the transfer's gather dims.
Status CheckTransferGather(const PipelinePlan& plan, int32_t stage_index, int64_t logical,
                           const std::string& where, const ExecutedMove& m) {
  const PlannedStage& stage = plan.stages[static_cast<size_t>(stage_index)];
  for (const CrossStageTransfer& t : plan.transfers) {
    if (t.tensor != m.tensor || t.to_stage != stage_index || !t.landing_spec) continue;
    Result<std::vector<int32_t>> dims = LandingGatherDims(*t.landing_spec, t.to_spec);
    if (!dims.ok()) return InternalError(where + ": " + dims.status().message());
    if (m.kind != InstructionKind::kAllGather) {
      return InternalError(where + " completed the transfer of op " + std::to_string(m.tensor) +
                           " with a " + InstructionKindName(m.kind) + ", not an all-gather");
    }
    const std::set<int32_t> expected = ExpectedGroup(stage, logical, dims.value());
    const std::set<int32_t> group(m.group.begin(), m.group.end());
    if (group != expected) {
      return InternalError(where + " gathered the transfer of op " + std::to_string(m.tensor) +
                           " over another group than its landing layout's mesh dims");
    }
    return Status::Ok();
  }
  return InternalError(where + " ran a local all-gather of op " + std::to_string(m.tensor) +
                       " that no transfer into its stage plans");
}

// The collectives `program` ran for `stage_index` (its moves of that stage; a move without a
// stage belongs to the program's only stage): each of a planned collective's kind, group and
// bytes, and every planned collective of the stage run on this device equally often per
// microbatch.
Status CheckStageCollectives(const PipelinePlan& plan, const DeviceProgram& program,
                             int32_t stage_index, const std::vector<ExecutedMove>& moves,
                             ConformanceSummary& sum) {
  const PlannedStage& stage = plan.stages[static_cast<size_t>(stage_index)];
  const auto at =
      std::find(stage.devices.begin(), stage.devices.end(), static_cast<int64_t>(program.device));
  const int64_t logical = at - stage.devices.begin();
  const std::string where =
      "device " + std::to_string(program.device) + " (stage " + std::to_string(stage_index) + ")";
  const bool only_stage = program.stages.size() <= 1;
  // (planned collective, tensor) -> microbatch -> executions; and which ran as one piece.
  std::map<std::pair<int32_t, int32_t>, std::map<int64_t, int64_t>> runs;
  std::map<std::tuple<int32_t, int32_t, int64_t>, std::set<int32_t>> members;
  for (const ExecutedMove& m : moves) {
    if (m.kind == InstructionKind::kSend || m.kind == InstructionKind::kRecv) continue;
    if (m.stage != stage_index && !(m.stage < 0 && only_stage)) continue;
    if (m.origin == InstructionOrigin::kPieceEdge) {
      ++sum.piece_edge_collectives;
      continue;
    }
    if (m.origin == InstructionOrigin::kTransferGather) {
      ++sum.transfer_gathers;
      ALPA_RETURN_IF_ERROR(CheckTransferGather(plan, stage_index, logical, where, m));
      continue;
    }
    if (m.origin == InstructionOrigin::kExtra) {
      ++sum.extra_collectives;
      continue;
    }
    ++sum.executed_collectives;
    const PlannedCollective* c = FindPlanned(stage, m.collective, m.tensor);
    if (c == nullptr) {
      return InternalError(where + " ran a " + std::string(InstructionKindName(m.kind)) +
                           " of op " + std::to_string(m.tensor) + " that the plan does not list");
    }
    if (CollectiveKindOf(m.kind) != c->kind) {
      return InternalError(where + " ran a " + std::string(InstructionKindName(m.kind)) +
                           " for the planned " + CollectiveName(c->kind) + " " + c->description +
                           " of op " + std::to_string(m.tensor));
    }
    const std::set<int32_t> expected = ExpectedGroup(stage, logical, c->mesh_dims);
    for (int32_t g : m.group) {
      if (expected.count(g) == 0) {
        return InternalError(where + " ran the " + CollectiveName(c->kind) + " of op " +
                             std::to_string(m.tensor) + " with device " + std::to_string(g) +
                             ", outside its planned group over mesh dims of the stage");
      }
    }
    const int64_t n = static_cast<int64_t>(m.group.size());
    const bool times_n =
        m.kind == InstructionKind::kAllGather || m.kind == InstructionKind::kAllToAll;
    if (n == static_cast<int64_t>(expected.size()) &&
        static_cast<double>(times_n ? m.bytes * n : m.bytes) != c->bytes) {
      return InternalError(where + " ran the " + CollectiveName(c->kind) + " of op " +
                           std::to_string(m.tensor) + " on " + std::to_string(m.bytes) +
                           " local bytes; the plan's b is " + std::to_string(c->bytes));
    }
    ++runs[{m.collective, m.tensor}][m.microbatch];
    std::set<int32_t>& seen = members[{m.collective, m.tensor, m.microbatch}];
    seen.insert(m.group.begin(), m.group.end());
  }
  for (const auto& [key, groups] : members) {
    const PlannedCollective* c = FindPlanned(stage, std::get<0>(key), std::get<1>(key));
    if (groups != ExpectedGroup(stage, logical, c->mesh_dims)) {
      return InternalError(where + " ran the " + CollectiveName(c->kind) + " of op " +
                           std::to_string(std::get<1>(key)) +
                           " over fewer devices than its planned group");
    }
  }
  // Every planned collective of the stage ran here, equally often per microbatch.
  for (const StagePiece& p : stage.pieces) {
    const std::vector<PlannedCollective>& list = p.sharding->collectives;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!SpansDevices(stage, list[i].mesh_dims)) continue;
      const int32_t tensor = p.subgraph->origin[static_cast<size_t>(list[i].tensor)];
      auto it = runs.find({static_cast<int32_t>(i), tensor});
      if (it == runs.end()) {
        return InternalError(where + " never ran planned collective " + std::to_string(i) + " (" +
                             CollectiveName(list[i].kind) + " of op " + std::to_string(tensor) +
                             ")");
      }
      const int64_t first = it->second.begin()->second;
      for (const auto& [mb, count] : it->second) {
        if (count != first) {
          return InternalError(where + " ran planned collective " + std::to_string(i) + " of op " +
                               std::to_string(tensor) + " " + std::to_string(count) +
                               " times in microbatch " + std::to_string(mb) + ", " +
                               std::to_string(first) + " times in another");
        }
      }
    }
  }
  return Status::Ok();
}

// Expected transfer bytes per (device, tensor): per microbatch, or once per iteration (`once`).
struct ExpectedTransfers {
  std::map<std::pair<int64_t, int32_t>, int64_t> sent, received;
  std::set<int32_t> once;
};

// The transfer bytes `program` sent and received (all its stages' together) per tensor and
// microbatch against the plan's slice moves from and to its device; a once-per-iteration
// tensor's over the step, in one message per slice move (the update's, or microbatch 0's with
// one microbatch).
Status CheckDeviceTransfers(const PipelinePlan& plan, const DeviceProgram& program,
                            const std::vector<ExecutedMove>& moves, const ExpectedTransfers& expect,
                            ConformanceSummary& sum) {
  std::string where = "device " + std::to_string(program.device) + " (stage";
  for (size_t i = 0; i < program.stages.size(); ++i) {
    where += (i > 0 ? ", " : " ") + std::to_string(program.stages[i]);
  }
  if (program.stages.empty()) where += " " + std::to_string(program.stage);
  where += ")";
  std::map<std::pair<int32_t, int64_t>, int64_t> sent, received;
  for (const ExecutedMove& m : moves) {
    if (m.kind != InstructionKind::kSend && m.kind != InstructionKind::kRecv) continue;
    if (m.origin != InstructionOrigin::kPlan) continue;
    (m.kind == InstructionKind::kSend ? sent : received)[{m.tensor, m.microbatch}] += m.bytes;
    sum.sent_transfer_bytes += m.kind == InstructionKind::kSend ? m.bytes : 0;
  }
  for (const auto& [key, bytes] : expect.sent) {
    if (key.first != program.device || expect.once.count(key.second) == 0) continue;
    ALPA_RETURN_IF_ERROR(CheckOnceMoved(where, "sent", key.second, bytes, sent));
  }
  for (const auto& [key, bytes] : expect.received) {
    if (key.first != program.device || expect.once.count(key.second) == 0) continue;
    ALPA_RETURN_IF_ERROR(CheckOnceMoved(where, "received", key.second, bytes, received));
  }
  for (int64_t mb = 0; mb < plan.microbatches; ++mb) {
    for (const auto& [key, bytes] : expect.sent) {
      if (key.first != program.device || expect.once.count(key.second) != 0) continue;
      const int64_t got = sent.count({key.second, mb}) ? sent[{key.second, mb}] : 0;
      if (got != bytes) {
        return InternalError(where + " sent " + std::to_string(got) + " bytes of op " +
                             std::to_string(key.second) + " in microbatch " + std::to_string(mb) +
                             "; the plan's moves send " + std::to_string(bytes));
      }
    }
    for (const auto& [key, bytes] : expect.received) {
      if (key.first != program.device || expect.once.count(key.second) != 0) continue;
      const int64_t got = received.count({key.second, mb}) ? received[{key.second, mb}] : 0;
      if (got != bytes) {
        return InternalError(where + " received " + std::to_string(got) + " bytes of op " +
                             std::to_string(key.second) + " in microbatch " + std::to_string(mb) +
                             "; the plan's moves bring " + std::to_string(bytes));
      }
    }
  }
  for (const auto& [key, bytes] : sent) {
    if (expect.sent.count({program.device, key.first}) == 0) {
      return InternalError(where + " sent " + std::to_string(bytes) + " bytes of op " +
                           std::to_string(key.first) + ", which the plan moves nowhere from it");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckExecutedAgainstPlan(const PipelinePlan& plan, const PlanRunReport& run,
                                ConformanceSummary* summary) {
  ConformanceSummary sum;
  const ProgramSet& set = run.programs;
  if (run.first_step.size() != set.programs.size()) {
    return InternalError("the run reports " + std::to_string(run.first_step.size()) +
                         " devices, the programs are " + std::to_string(set.programs.size()));
  }
  for (const PlannedStage& stage : plan.stages) {
    for (const StagePiece& p : stage.pieces) {
      for (const PlannedCollective& c : p.sharding->collectives) {
        if (SpansDevices(stage, c.mesh_dims)) ++sum.planned_collectives;
      }
    }
  }
  ExpectedTransfers expect;
  for (const CrossStageTransfer& t : plan.transfers) {
    if (t.once_per_iteration) expect.once.insert(t.tensor);
    for (const SliceMove& m : t.moves) {
      if (m.src_device == m.dst_device) continue;
      expect.sent[{m.src_device, t.tensor}] += m.bytes;
      expect.received[{m.dst_device, t.tensor}] += m.bytes;
      sum.planned_transfer_bytes += m.bytes * (t.once_per_iteration ? 1 : plan.microbatches);
    }
  }
  for (size_t d = 0; d < set.programs.size(); ++d) {
    const DeviceProgram& program = set.programs[d];
    if (program.stage < 0) continue;
    const std::vector<ExecutedMove>& moves = run.first_step[d].moves;
    const std::vector<int32_t> stages =
        program.stages.empty() ? std::vector<int32_t>{program.stage} : program.stages;
    for (int32_t s : stages) {
      if (s < 0 || static_cast<size_t>(s) >= plan.stages.size()) {
        return InternalError("device " + std::to_string(program.device) + " runs stage " +
                             std::to_string(s) + ", which the plan does not have");
      }
      ALPA_RETURN_IF_ERROR(CheckStageCollectives(plan, program, s, moves, sum));
    }
    ALPA_RETURN_IF_ERROR(CheckDeviceTransfers(plan, program, moves, expect, sum));
  }
  if (summary != nullptr) *summary = sum;
  return Status::Ok();
}

}  // namespace alpa
