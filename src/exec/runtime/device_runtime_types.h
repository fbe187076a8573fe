// What a device's program exchanges with the driver, whatever runs it (program_runner.h): the
// moves a step executed, its report, the parameter tiles read back, and the callbacks that give
// the step's data and the parameters' initial values.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "exec/cpu/interpreter.h"
#include "exec/program/program.h"

namespace alpa {

// A collective, send or receive as executed.
struct ExecutedMove {
  InstructionKind kind = InstructionKind::kAllReduce;
  std::vector<int32_t> group;  // collectives; send / recv: {peer}
  int64_t bytes = 0;
  int64_t microbatch = -1;
  int32_t tensor = -1;
  int32_t collective = -1;
  InstructionOrigin origin = InstructionOrigin::kPlan;
  int32_t stage = -1;  // the plan's stage of the instruction (Instruction::stage)
};

// What running `in` (a collective, a send or a receive) moved: its group, or for a send or a
// receive its peer.
inline ExecutedMove MoveOf(const Instruction& in) {
  const bool point_to_point =
      in.kind == InstructionKind::kSend || in.kind == InstructionKind::kRecv;
  return {in.kind,   point_to_point ? std::vector<int32_t>{in.peer} : in.group,
          in.bytes,  in.microbatch,
          in.tensor, in.collective,
          in.origin, in.stage};
}

struct StepReport {
  std::vector<std::pair<int64_t, double>> losses;  // (microbatch, loss) reported here
  int64_t peak_bytes = 0;                          // live bytes at the step's peak
  double seconds = 0;
  std::vector<double> seconds_by_kind;  // per InstructionKind value
  std::vector<ExecutedMove> moves;
};

// A parameter tile read back: every tile a device holds values of (ParameterBinding::owner);
// `fetch` marks the one copy to assemble the parameter from.
struct ParameterTile {
  int32_t tensor = -1;
  std::vector<int64_t> offsets, sizes;
  std::vector<double> values;
  bool fetch = false;
};

// The data of a step: microbatch `microbatch`'s value of data input `tensor` (a global op id),
// whole; null when the caller has none.
using MicrobatchInput = std::function<const HostTensor*(int32_t tensor, int64_t microbatch)>;
// A parameter's whole initial value; null when the caller has none.
using ParameterValue = std::function<const HostTensor*(int32_t tensor)>;

}  // namespace alpa
