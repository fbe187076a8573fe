// Device programs: what one device runs for a training step, as plain data (Alpa's static
// per-mesh instruction lists). The lowering (exec/lower) builds one program per device from a
// plan; every backend runs the same program: the runtime (exec/runtime) on CPU devices with a
// communicator, the simulator prices it with the cost model.
//
// A program owns a table of buffers (local tensors: the device's shard of a global tensor) and
// a list of instructions over them, in execution order. Buffer ids index `buffers`; a buffer is
// written by one instruction before it is read and dropped by kFree after its last use
// (persistent buffers, parameters and optimizer state, are never freed). Collectives name their
// group as physical device ids in chunk order; every member of a group runs the matching
// instruction in the same order relative to the group's other collectives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster/cost_model.h"
#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {

enum class InstructionKind : int32_t {
  kRun = 0,            // out = local op `local_op` applied to `in` (one per operand)
  kAllReduce = 1,      // out = reduction of `in` over `group` (sum or max)
  kAllGather = 2,      // out = the group's `in` concatenated along tensor dim `dim`
  kReduceScatter = 3,  // out = piece (position in group) along `dim` of the group's sum of `in`
  kAllToAll = 4,       // out = `in` cut along `split_dim`, exchanged, concatenated along `dim`
  kSlice = 5,          // out = the box (offsets, sizes) of `in` (local, no communication)
  kSend = 6,           // sends the box (offsets, sizes) of `in` to device `peer` with `tag`
  kRecv = 7,           // receives `sizes` from `peer` with `tag` into the box (offsets) of
                       // `out`, which kZero created
  kFeed = 8,           // out = the box (offsets, sizes) of global tensor `tensor` for microbatch
                       // `microbatch` (data inputs), from the step's data
  kAccumulate = 9,     // out += in
  kZero = 10,          // out = zeros of its buffer's shape
  kScale = 11,         // out = in * value
  kCopy = 12,          // out = in (out may be a persistent buffer: it is overwritten)
  kFree = 13,          // drops `in` (its memory returns)
  kReportLoss = 14,    // the value of `in` (a scalar) is microbatch `microbatch`'s loss
};
const char* InstructionKindName(InstructionKind kind);
// The cost model's collective an instruction runs (all-reduce, all-gather, reduce-scatter,
// all-to-all); none for the other kinds.
std::optional<CollectiveKind> CollectiveKindOf(InstructionKind kind);

enum class CollectiveReduce : int32_t { kSum = 0, kMax = 1 };

// What an instruction stands for in the plan, for checking that what runs is what was planned.
enum class InstructionOrigin : int32_t {
  kPlan = 0,       // an op, a planned collective or a planned cross-stage transfer
  kPieceEdge = 1,  // resharding between two pieces of one stage (priced by the planner)
  kExtra = 2,      // bookkeeping the plan does not list (loss reporting, weight refresh)
  // The all-gather that completes a planned transfer's local all-gather on the receiving stage
  // (CrossStageTransfer::landing_spec).
  kTransferGather = 3,
};

struct Instruction {
  InstructionKind kind = InstructionKind::kRun;
  int32_t out = -1;         // buffer written
  std::vector<int32_t> in;  // buffers read
  int32_t local_op = -1;    // kRun: index into Program::local_ops
  // Collectives: the group (physical ids, chunk order) and the tensor dims involved.
  std::vector<int32_t> group;
  CollectiveReduce reduce = CollectiveReduce::kSum;
  int32_t dim = -1, split_dim = -1;
  // kSend / kRecv: the other device and the message tag.
  int32_t peer = -1;
  int64_t tag = 0;
  // kSlice, kSend, kRecv, kFeed: a box in elements per tensor dim.
  std::vector<int64_t> offsets, sizes;
  double value = 1.0;  // kScale
  // Whether the result is rounded to its dtype. Off for partial sums (a sharded contraction's
  // addends, a microbatch's gradient before accumulation): the reduction that completes the
  // value rounds it once, as the one-device op does.
  bool round = true;
  // kRun of gather / scatter_add whose table axis is split: this device holds rows
  // [axis_offset, axis_offset + local size) of axis_size; indices elsewhere contribute nothing.
  int64_t axis_offset = 0, axis_size = -1;
  int32_t tensor = -1;      // the global op id this instruction computes or moves (-1: none)
  int64_t microbatch = -1;  // -1: once per iteration
  InstructionOrigin origin = InstructionOrigin::kPlan;
  int32_t stage = -1;  // the plan's stage this instruction belongs to
  // kRun: the op it runs as the plan has it: piece `piece` of the stage, op `piece_op` of that
  // piece's subgraph (an op of no layer is copied into several pieces).
  int32_t piece = -1, piece_op = -1;
  int32_t collective = -1;  // the planned collective's index in its piece's list, when known
  int64_t bytes = 0;        // bytes moved (collectives: the local input; send / recv: the box)
};

struct Buffer {
  std::string name;  // the tensor's name or "op 12", with the microbatch ("@mb3")
  Dims shape;        // local shape
  DType dtype = DType::kF32;
  bool persistent = false;  // parameters, optimizer state, accumulated gradients
  int32_t tensor = -1;      // global op id
};

// A parameter or optimizer-state buffer and the box of the global tensor it holds. Partial
// copies (a replicated zero-filled addend) hold zeros except on the group's first device.
struct ParameterBinding {
  int32_t buffer = -1;
  int32_t tensor = -1;  // global op id (a parameter op)
  std::vector<int64_t> offsets, sizes;
  bool owner = true;   // holds values (not a zero addend); for fetching, the first replica
  bool fetch = true;   // the one copy to read back when several buffers hold this tile
  int32_t stage = -1;  // the plan's stage whose piece holds it
};

// The parts of a step a program runs, in the order the lowering emits them: the set-up (zeroed
// accumulators), the pipeline schedule's tasks (each the forward or backward of one microbatch;
// under a schedule that splits the backward, kBackward is its input-gradient part and
// kWeightGradient the rest, weight_gradient_ops.h) and the update (gradient synchronisation,
// optimizer, refreshed copies). A device that runs several stages (interleaved 1F1B) has a
// set-up and an update per stage, and its stages' tasks in its device group's order
// (GroupSchedule).
enum class ProgramTaskKind : int32_t {
  kSetup = 0,
  kForward = 1,
  kBackward = 2,
  kUpdate = 3,
  kWeightGradient = 4,
};
const char* ProgramTaskKindName(ProgramTaskKind kind);  // "setup", "forward", ...

// One task: the instructions [begin, end) of the program's code.
struct ProgramTask {
  ProgramTaskKind kind = ProgramTaskKind::kSetup;
  int64_t microbatch = -1;  // forward / backward: the microbatch; else -1
  int64_t begin = 0, end = 0;
  int32_t stage = -1;  // the plan's stage whose task it is
};

struct DeviceProgram {
  int32_t device = 0;  // physical id
  // The first of the stages it runs; -1: the device runs nothing (not in any stage).
  int32_t stage = -1;
  // Every stage it runs, ascending: {stage}, or under interleaved 1F1B the stages of its device
  // group (stage, stage + groups, ...); empty when it runs nothing.
  std::vector<int32_t> stages;
  std::vector<Buffer> buffers;
  // Local ops: each a small graph whose last op is the op to run, its operands placeholder
  // parameters of the local operand types (so the CPU kernels see local shapes).
  std::vector<Graph> local_ops;
  std::vector<Instruction> code;
  // The code's tasks, in order: they tile [0, code.size()) (empty for a device that runs
  // nothing).
  std::vector<ProgramTask> tasks;
  std::vector<ParameterBinding> parameters;
  // Bytes the planner predicts for this device at its peak: its stage's memory with the
  // microbatches the lowering's schedule keeps in flight (memory_breakdown.h); with several
  // stages, the sum of theirs (they peak at different times, so the sum bounds the device's
  // peak from above).
  int64_t planned_memory_bytes = 0;
};

struct ProgramSet {
  int32_t devices = 0;  // world size the programs need (max physical id + 1)
  int64_t microbatches = 1;
  std::vector<DeviceProgram> programs;  // one per physical device, by id
  // The microbatch graph the plan was made for; kFeed / ParameterBinding tensors index it.
  Graph graph;
  // Per op of graph: the global batch dim of each data input (kInput parameters), for cutting
  // the step's data into microbatches (-1: not cut).
  std::vector<int32_t> input_batch_dim;
};

// The op a kRun instruction runs: the last op of its local graph (whose parameters stand for
// the instruction's operands).
const Op& LocalOpOf(const DeviceProgram& program, const Instruction& in);

// One line per instruction, e.g.
//   12 run      dot_general op 31 'fc1.w.grad' [64, 8] <- b4 [16, 64], b9 [16, 8]   mb 2
std::string ProgramText(const DeviceProgram& program);
std::string InstructionText(const DeviceProgram& program, const Instruction& instruction);

// Structural checks: buffer ids in range, each buffer written before read, groups containing
// the device, boxes inside their buffers, tasks tiling the code. kInternal naming the
// instruction or task.
Status ValidateProgram(const DeviceProgram& program);

}  // namespace alpa
