#include "exec/program/program.h"

#include <cstdio>
#include <string>

namespace alpa {
namespace {

std::string BoxText(const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(d < offsets.size() ? offsets[d] : 0) + ":+" + std::to_string(sizes[d]);
  }
  return s + "]";
}

std::string GroupText(const std::vector<int32_t>& group) {
  std::string s = "{";
  for (size_t i = 0; i < group.size(); ++i) s += (i > 0 ? "," : "") + std::to_string(group[i]);
  return s + "}";
}

std::string BufferText(const DeviceProgram& program, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= program.buffers.size()) {
    return "b" + std::to_string(id) + "?";
  }
  const Buffer& b = program.buffers[static_cast<size_t>(id)];
  return "b" + std::to_string(id) + " " + ShapeString(b.shape);
}

}  // namespace

const char* InstructionKindName(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::kRun:
      return "run";
    case InstructionKind::kAllReduce:
      return "all-reduce";
    case InstructionKind::kAllGather:
      return "all-gather";
    case InstructionKind::kReduceScatter:
      return "reduce-scatter";
    case InstructionKind::kAllToAll:
      return "all-to-all";
    case InstructionKind::kSlice:
      return "slice";
    case InstructionKind::kSend:
      return "send";
    case InstructionKind::kRecv:
      return "recv";
    case InstructionKind::kFeed:
      return "feed";
    case InstructionKind::kAccumulate:
      return "accumulate";
    case InstructionKind::kZero:
      return "zero";
    case InstructionKind::kScale:
      return "scale";
    case InstructionKind::kCopy:
      return "copy";
    case InstructionKind::kFree:
      return "free";
    case InstructionKind::kReportLoss:
      return "report-loss";
  }
  return "?";
}

const Op& LocalOpOf(const DeviceProgram& program, const Instruction& in) {
  const Graph& local = program.local_ops[static_cast<size_t>(in.local_op)];
  return local.op(local.size() - 1);
}

std::string InstructionText(const DeviceProgram& program, const Instruction& in) {
  std::string s = InstructionKindName(in.kind);
  s.resize(std::max<size_t>(s.size(), 14), ' ');
  switch (in.kind) {
    case InstructionKind::kRun: {
      const Op& op = LocalOpOf(program, in);
      s += std::string(OpKindName(op.kind));
      if (!op.name.empty()) s += " '" + op.name + "'";
      break;
    }
    case InstructionKind::kAllReduce:
    case InstructionKind::kAllGather:
    case InstructionKind::kReduceScatter:
    case InstructionKind::kAllToAll:
      s += GroupText(in.group);
      if (in.kind == InstructionKind::kAllReduce || in.kind == InstructionKind::kReduceScatter) {
        s += in.reduce == CollectiveReduce::kMax ? " max" : " sum";
      }
      if (in.dim >= 0) s += " dim " + std::to_string(in.dim);
      if (in.split_dim >= 0) s += " from dim " + std::to_string(in.split_dim);
      s += " " + std::to_string(in.bytes) + " B";
      break;
    case InstructionKind::kSend:
      s += "to " + std::to_string(in.peer) + " tag " + std::to_string(in.tag) + " " +
           BoxText(in.offsets, in.sizes) + " " + std::to_string(in.bytes) + " B";
      break;
    case InstructionKind::kRecv:
      s += "from " + std::to_string(in.peer) + " tag " + std::to_string(in.tag) + " " +
           BoxText(in.offsets, in.sizes) + " " + std::to_string(in.bytes) + " B";
      break;
    case InstructionKind::kSlice:
    case InstructionKind::kFeed:
      s += BoxText(in.offsets, in.sizes);
      break;
    case InstructionKind::kScale: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "x %.6g", in.value);
      s += buf;
      break;
    }
    default:
      break;
  }
  if (in.out >= 0) s += "  -> " + BufferText(program, in.out);
  if (!in.in.empty()) {
    s += "  <- ";
    for (size_t i = 0; i < in.in.size(); ++i) {
      s += (i > 0 ? ", " : "") + BufferText(program, in.in[i]);
    }
  }
  if (in.tensor >= 0) s += "  op " + std::to_string(in.tensor);
  if (in.microbatch >= 0) s += " mb " + std::to_string(in.microbatch);
  if (in.origin == InstructionOrigin::kPieceEdge) s += " (piece edge)";
  if (in.origin == InstructionOrigin::kExtra) s += " (not in the plan)";
  if (in.origin == InstructionOrigin::kTransferGather) s += " (transfer's local all-gather)";
  return s;
}

std::string ProgramText(const DeviceProgram& program) {
  std::string s = "device " + std::to_string(program.device);
  if (program.stage < 0) return s + ": idle (in no stage)\n";
  if (program.stages.size() > 1) {
    s += ": stages";
    for (size_t i = 0; i < program.stages.size(); ++i) {
      s += (i > 0 ? ", " : " ") + std::to_string(program.stages[i]);
    }
  } else {
    s += ": stage " + std::to_string(program.stage);
  }
  s += ", " + std::to_string(program.buffers.size()) + " buffers, " +
       std::to_string(program.parameters.size()) + " parameter tiles, " +
       std::to_string(program.code.size()) + " instructions\n";
  for (size_t i = 0; i < program.code.size(); ++i) {
    s += std::to_string(i) + "\t" + InstructionText(program, program.code[i]) + "\n";
  }
  return s;
}

std::optional<CollectiveKind> CollectiveKindOf(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::kAllReduce:
      return CollectiveKind::kAllReduce;
    case InstructionKind::kAllGather:
      return CollectiveKind::kAllGather;
    case InstructionKind::kReduceScatter:
      return CollectiveKind::kReduceScatter;
    case InstructionKind::kAllToAll:
      return CollectiveKind::kAllToAll;
    default:
      return std::nullopt;
  }
}

const char* ProgramTaskKindName(ProgramTaskKind kind) {
  switch (kind) {
    case ProgramTaskKind::kSetup:
      return "setup";
    case ProgramTaskKind::kForward:
      return "forward";
    case ProgramTaskKind::kBackward:
      return "backward";
    case ProgramTaskKind::kUpdate:
      return "update";
    case ProgramTaskKind::kWeightGradient:
      return "weight-gradient";
  }
  return "?";
}

namespace {

// The tasks tile the code: consecutive, in order, from 0 to its end.
Status ValidateTasks(const DeviceProgram& program) {
  int64_t next = 0;
  for (size_t t = 0; t < program.tasks.size(); ++t) {
    const ProgramTask& task = program.tasks[t];
    if (task.begin != next || task.end < task.begin) {
      return InternalError("device " + std::to_string(program.device) + " task " +
                           std::to_string(t) + " (" + ProgramTaskKindName(task.kind) +
                           ") covers instructions [" + std::to_string(task.begin) + ", " +
                           std::to_string(task.end) + "), not from " + std::to_string(next));
    }
    next = task.end;
  }
  if (!program.tasks.empty() && next != static_cast<int64_t>(program.code.size())) {
    return InternalError("device " + std::to_string(program.device) + ": the tasks end at " +
                         std::to_string(next) + " of " + std::to_string(program.code.size()) +
                         " instructions");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateProgram(const DeviceProgram& program) {
  ALPA_RETURN_IF_ERROR(ValidateTasks(program));
  const size_t n = program.buffers.size();
  std::vector<char> live(n, 0);
  for (const ParameterBinding& b : program.parameters) {
    if (b.buffer < 0 || static_cast<size_t>(b.buffer) >= n) {
      return InternalError("device " + std::to_string(program.device) +
                           ": a parameter binding names buffer " + std::to_string(b.buffer));
    }
    live[static_cast<size_t>(b.buffer)] = 1;
  }
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Instruction& in = program.code[i];
    auto where = [&]() {
      return "device " + std::to_string(program.device) + " instruction " + std::to_string(i) +
             " (" + InstructionKindName(in.kind) + ")";
    };
    for (int32_t b : in.in) {
      if (b < 0 || static_cast<size_t>(b) >= n) {
        return InternalError(where() + " reads buffer " + std::to_string(b) + ", out of range");
      }
      if (!live[static_cast<size_t>(b)]) {
        return InternalError(where() + " reads buffer " + std::to_string(b) +
                             ", which holds no value there");
      }
    }
    if (in.kind == InstructionKind::kFree) {
      live[static_cast<size_t>(in.in[0])] = 0;
      continue;
    }
    if (in.out >= 0) {
      if (static_cast<size_t>(in.out) >= n) {
        return InternalError(where() + " writes buffer " + std::to_string(in.out) +
                             ", out of range");
      }
      if (in.kind == InstructionKind::kRecv && !live[static_cast<size_t>(in.out)]) {
        return InternalError(where() + " receives into buffer " + std::to_string(in.out) +
                             " before it exists");
      }
      live[static_cast<size_t>(in.out)] = 1;
    }
    if (in.kind == InstructionKind::kRun &&
        (in.local_op < 0 || static_cast<size_t>(in.local_op) >= program.local_ops.size())) {
      return InternalError(where() + " runs local op " + std::to_string(in.local_op) +
                           ", out of range");
    }
    if (!in.group.empty()) {
      bool member = false;
      for (int32_t d : in.group) member = member || d == program.device;
      if (!member) return InternalError(where() + " uses a group without the device");
    }
  }
  return Status::Ok();
}

}  // namespace alpa
