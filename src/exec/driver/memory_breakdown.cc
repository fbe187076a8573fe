// Measured and planned memory by component (memory_breakdown.h).
#include "exec/driver/memory_breakdown.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

#include "core/util/wide_int.h"
#include "exec/runtime/tensor_boxes.h"
#include "solvers/planner/gradient_sharding.h"
#include "solvers/planner/stage_costs.h"

namespace alpa {
namespace {

int64_t BufferBytes(const Buffer& b) { return ElementCountOf(b.shape) * DTypeBytes(b.dtype); }

// Whether the runtime allocates `in.out` when it runs `in` (kRecv and kAccumulate write into a
// live buffer; kCopy allocates only when its target is not live).
bool Allocates(const Instruction& in) {
  switch (in.kind) {
    case InstructionKind::kRun:
    case InstructionKind::kAllReduce:
    case InstructionKind::kAllGather:
    case InstructionKind::kReduceScatter:
    case InstructionKind::kAllToAll:
    case InstructionKind::kSlice:
    case InstructionKind::kFeed:
    case InstructionKind::kZero:
    case InstructionKind::kScale:
    case InstructionKind::kCopy:
      return in.out >= 0;
    default:
      return false;
  }
}

bool Communicates(InstructionKind kind) {
  return kind == InstructionKind::kAllReduce || kind == InstructionKind::kAllGather ||
         kind == InstructionKind::kReduceScatter || kind == InstructionKind::kAllToAll ||
         kind == InstructionKind::kRecv;
}

// Per buffer, what it holds (the runtime's view, from the program alone).
struct BufferFacts {
  std::vector<char> read_by_backward;  // a backward-phase instruction reads it
  std::vector<char> communicated;      // written by a collective or a receive
};

BufferFacts FactsOf(const DeviceProgram& program, const Graph& graph) {
  BufferFacts facts;
  facts.read_by_backward.assign(program.buffers.size(), 0);
  facts.communicated.assign(program.buffers.size(), 0);
  for (const Instruction& in : program.code) {
    if (in.kind == InstructionKind::kFree) continue;
    if (in.out >= 0 && Communicates(in.kind)) facts.communicated[static_cast<size_t>(in.out)] = 1;
    if (in.tensor < 0 || in.tensor >= graph.size()) continue;
    if (graph.op(in.tensor).phase != Phase::kBackward) continue;
    for (int32_t b : in.in) facts.read_by_backward[static_cast<size_t>(b)] = 1;
  }
  return facts;
}

// Splits the live buffers at the peak into `m`'s components.
void Classify(const DeviceProgram& program, const Graph& graph, const std::vector<char>& free_op,
              const BufferFacts& facts, const std::vector<char>& live, MeasuredMemory& m) {
  m.parameters = m.optimizer_state = m.gradient_accumulators = m.activations = 0;
  m.free_values = m.forward_temporaries = m.backward_temporaries = m.update_temporaries = 0;
  m.communicated = 0;
  std::set<int64_t> microbatches;
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    if (!live[b]) continue;
    const Buffer& buffer = program.buffers[b];
    const int64_t bytes = BufferBytes(buffer);
    const bool known = buffer.tensor >= 0 && buffer.tensor < graph.size();
    if (buffer.persistent) {
      const Op* op = known ? &graph.op(buffer.tensor) : nullptr;
      const bool held = op != nullptr && op->kind == OpKind::kParameter;
      if (held && op->role == TensorRole::kParameter) {
        m.parameters += bytes;
      } else if (held && op->role == TensorRole::kOptimizerState) {
        m.optimizer_state += bytes;
      } else {
        m.gradient_accumulators += bytes;
      }
      continue;
    }
    if (facts.communicated[b]) m.communicated += bytes;
    const Phase phase = known ? graph.op(buffer.tensor).phase : Phase::kBackward;
    if (known && free_op[static_cast<size_t>(buffer.tensor)]) {
      m.free_values += bytes;
    } else if (phase == Phase::kForward && facts.read_by_backward[b]) {
      m.activations += bytes;
      const size_t at = buffer.name.rfind("@mb");
      microbatches.insert(at == std::string::npos ? -1 : std::atoll(buffer.name.c_str() + at + 3));
    } else if (phase == Phase::kForward) {
      m.forward_temporaries += bytes;
    } else if (phase == Phase::kBackward) {
      m.backward_temporaries += bytes;
    } else {
      m.update_temporaries += bytes;
    }
  }
  m.activation_microbatches = static_cast<int64_t>(microbatches.size());
}

std::string KiB(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(bytes) / 1024.0);
  return text;
}

// The runtime's live buffers of one device over a step after the first: the parameters and
// the persistent buffers the previous step wrote, then each instruction's allocation or free.
struct LiveBuffers {
  const DeviceProgram& program;
  const Graph& graph;
  const std::vector<char>& free_op;
  std::vector<char> live;
  int64_t bytes = 0, without_free = 0;

  LiveBuffers(const DeviceProgram& p, const Graph& g, const std::vector<char>& f)
      : program(p), graph(g), free_op(f), live(p.buffers.size(), 0) {
    for (const ParameterBinding& b : program.parameters) Add(b.buffer);
    for (const Instruction& in : program.code) {
      if (in.out >= 0 && program.buffers[static_cast<size_t>(in.out)].persistent) Add(in.out);
    }
  }
  bool IsFreeValue(int32_t b) const {
    const Buffer& buffer = program.buffers[static_cast<size_t>(b)];
    return !buffer.persistent && buffer.tensor >= 0 && buffer.tensor < graph.size() &&
           free_op[static_cast<size_t>(buffer.tensor)];
  }
  void Add(int32_t b) {
    if (b < 0 || live[static_cast<size_t>(b)]) return;
    live[static_cast<size_t>(b)] = 1;
    const int64_t n = BufferBytes(program.buffers[static_cast<size_t>(b)]);
    bytes += n;
    if (!IsFreeValue(b)) without_free += n;
  }
  void Remove(int32_t b) {
    if (b < 0 || !live[static_cast<size_t>(b)]) return;
    live[static_cast<size_t>(b)] = 0;
    const int64_t n = BufferBytes(program.buffers[static_cast<size_t>(b)]);
    bytes -= n;
    if (!IsFreeValue(b)) without_free -= n;
  }
  // Applies `in`; true when it allocated (the live bytes may have grown).
  bool Step(const Instruction& in) {
    if (in.kind == InstructionKind::kFree) {
      Remove(in.in[0]);
      return false;
    }
    if (!Allocates(in)) return false;
    Add(in.out);
    return true;
  }
};

}  // namespace

MeasuredMemory MeasureProgramMemory(const DeviceProgram& program, const Graph& graph,
                                    const std::vector<char>& free_op) {
  MeasuredMemory m;
  // The peak first, then the live buffers there split once.
  LiveBuffers walk(program, graph, free_op);
  m.peak_bytes = walk.bytes;
  m.peak_without_free_values = walk.without_free;
  for (size_t i = 0; i < program.code.size(); ++i) {
    if (!walk.Step(program.code[i])) continue;
    m.peak_without_free_values = std::max(m.peak_without_free_values, walk.without_free);
    if (walk.bytes > m.peak_bytes) {
      m.peak_bytes = walk.bytes;
      m.peak_instruction = static_cast<int64_t>(i);
    }
  }
  LiveBuffers at_peak(program, graph, free_op);
  for (int64_t i = 0; i <= m.peak_instruction; ++i) {
    at_peak.Step(program.code[static_cast<size_t>(i)]);
  }
  Classify(program, graph, free_op, FactsOf(program, graph), at_peak.live, m);
  return m;
}

std::vector<char> FreeOpsOfPlan(const PipelinePlan& plan) {
  std::vector<char> free_op(static_cast<size_t>(plan.graph.size()), 0);
  for (const PlannedStage& st : plan.stages) {
    for (const StagePiece& piece : st.pieces) {
      const std::vector<int32_t>& origin = piece.subgraph->origin;
      for (size_t l = 0; l < origin.size() && l < piece.sharding->ops.size(); ++l) {
        const OpSharding& s = piece.sharding->ops[l];
        if ((s.free || s.fused) && origin[l] >= 0 && origin[l] < plan.graph.size()) {
          free_op[static_cast<size_t>(origin[l])] = 1;
        }
      }
    }
  }
  return free_op;
}

int64_t PlannedMemory::total() const {
  const Int128 held = persistent.persistent();
  return ClampToInt64(std::max(held + Int128{in_flight} * activation + working, held + update) +
                      Int128{weight_gradients_pending} * activation);
}

Result<PlannedMemory> PlannedStageMemory(const PipelinePlan& plan, int32_t stage,
                                         PipelineScheduleKind schedule) {
  const PlannedStage& st = plan.stages[static_cast<size_t>(stage)];
  PlannedMemory planned;
  for (const StagePiece& piece : st.pieces) {
    Result<UnitMemory> m = ProfileUnitMemory(piece.subgraph->graph, *piece.sharding);
    if (!m.ok()) return m.status();
    planned.persistent.parameters += m.value().parameters;
    planned.persistent.optimizer_state += m.value().optimizer_state;
    planned.persistent.gradients += m.value().gradients;
    if (st.shard_gradients) {  // ZeRO-2: the chains' gradients are held as shards
      planned.persistent.gradients -=
          FindGradientChains(piece.subgraph->graph, *piece.sharding).saved_bytes;
    }
  }
  Result<StageMemory> model = PlannedStageMemoryModel(st);
  if (!model.ok()) return model.status();
  const int32_t stages = static_cast<int32_t>(plan.stages.size());
  // The plan's figure holds its own schedule's pending weight gradients (PlannedMemory).
  const int64_t stated =
      ClampToInt64(Int128{model.value().With(st.in_flight)} +
                   Int128{WeightGradientsPending(plan.schedule, stages, stage, plan.microbatches,
                                                 plan.virtual_stages)} *
                       model.value().activation);
  if (stated != st.memory_bytes) {
    return InvalidArgument("stage " + std::to_string(stage) + ": its pieces give " +
                           std::to_string(stated) + " bytes, the plan " +
                           std::to_string(st.memory_bytes) +
                           " (a plan read from JSON does not carry its solves' bytes per op)");
  }
  planned.activation = model.value().activation;
  planned.working = model.value().working;
  planned.update = model.value().update;
  // Several stages per device group run under interleaved 1F1B alone (lower_plan.h).
  const int32_t virtual_stages =
      schedule == PipelineScheduleKind::kInterleavedOneFOneB ? plan.virtual_stages : 1;
  planned.in_flight =
      MicrobatchesInFlight(schedule, stages, stage, plan.microbatches, virtual_stages);
  planned.weight_gradients_pending =
      WeightGradientsPending(schedule, stages, stage, plan.microbatches, virtual_stages);
  return planned;
}

Result<std::vector<PlannedMemory>> PlannedDeviceMemory(const PipelinePlan& plan,
                                                       const std::vector<int32_t>& stages,
                                                       PipelineScheduleKind schedule) {
  std::vector<PlannedMemory> planned;
  for (int32_t s : stages) {
    if (s < 0 || static_cast<size_t>(s) >= plan.stages.size()) {
      return InvalidArgument("stage " + std::to_string(s) + " is not a stage of the plan (" +
                             std::to_string(plan.stages.size()) + " stages)");
    }
    Result<PlannedMemory> stage = PlannedStageMemory(plan, s, schedule);
    if (!stage.ok()) return stage.status();
    planned.push_back(stage.value());
  }
  return planned;
}

int64_t PlannedTotal(const std::vector<PlannedMemory>& stages) {
  Int128 sum = 0;
  for (const PlannedMemory& p : stages) sum += p.total();
  return ClampToInt64(sum);
}

std::string MemoryBreakdownHeader() {
  return "KiB per device at its peak: measured param / opt / grad-acc / act (microbatches) / "
         "free-op / fwd-tmp / bwd-tmp / upd-tmp [communicated] = peak | planned param / opt / "
         "grad / act x in-flight (+ pending weight gradients) / working / update = total | "
         "measured / planned";
}

namespace {

// "param / opt / grad / act x in-flight (+ pending) / working / update = total" in KiB.
std::string PlannedText(const PlannedMemory& p) {
  return KiB(p.persistent.parameters) + " / " + KiB(p.persistent.optimizer_state) + " / " +
         KiB(p.persistent.gradients) + " / " + KiB(p.activation) + " x " +
         std::to_string(p.in_flight) +
         (p.weight_gradients_pending > 0 ? " + " + std::to_string(p.weight_gradients_pending)
                                         : std::string()) +
         " / " + KiB(p.working) + " / " + KiB(p.update) + " = " + KiB(p.total());
}

}  // namespace

std::string MemoryBreakdownRow(const MeasuredMemory& m, const PlannedMemory& p) {
  return MemoryBreakdownRow(m, std::vector<PlannedMemory>{p});
}

std::string MemoryBreakdownRow(const MeasuredMemory& m, const std::vector<PlannedMemory>& stages) {
  const int64_t planned = PlannedTotal(stages);
  char ratio[64];
  const double of = planned > 0 ? static_cast<double>(planned) : 1.0;
  std::snprintf(ratio, sizeof(ratio), "%.3f (%.3f without free-op values)",
                static_cast<double>(m.peak_bytes) / of,
                static_cast<double>(m.peak_without_free_values) / of);
  std::string text = KiB(m.parameters) + " / " + KiB(m.optimizer_state) + " / " +
                     KiB(m.gradient_accumulators) + " / " + KiB(m.activations) + " (" +
                     std::to_string(m.activation_microbatches) + ") / " + KiB(m.free_values) +
                     " / " + KiB(m.forward_temporaries) + " / " + KiB(m.backward_temporaries) +
                     " / " + KiB(m.update_temporaries) + " [" + KiB(m.communicated) +
                     "] = " + KiB(m.peak_bytes) + " | ";
  if (stages.size() == 1) return text + PlannedText(stages.front()) + " | " + ratio;
  for (size_t i = 0; i < stages.size(); ++i) {
    text += (i > 0 ? " + (" : "(") + PlannedText(stages[i]) + ")";
  }
  return text + " = " + KiB(planned) + " | " + ratio;
}

}  // namespace alpa
