// The runtime: runs one device's program (exec/program) on CPU buffers, talking to the other
// devices through a communicator (exec/comm). It keeps the buffer table, measures the live bytes
// (elements times the dtype's bytes, as a device would hold them) and their peak, times every
// instruction kind, and records every collective and point-to-point move it executes so that
// what ran can be compared with what was planned.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/util/status.h"
#include "exec/comm/communicator.h"
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
};

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

class DeviceRuntime {
 public:
  // `program` must outlive the runtime. The buffers (parameters and optimizer state) persist
  // from step to step.
  explicit DeviceRuntime(const DeviceProgram& program);

  // Fills the parameter tiles of `tensor` (every tile when -1) from the whole tensors.
  // kInvalidArgument naming the tensor when a value is missing or has the wrong shape.
  Status LoadParameters(const ParameterValue& value, const Graph& graph, int32_t tensor = -1);
  // Runs the program once with `comm` (comm.rank() is the program's device). Errors name the
  // instruction; a communicator error (another device failed) is returned as is.
  Result<StepReport> RunStep(Communicator& comm, const MicrobatchInput& input, const Graph& graph);
  std::vector<ParameterTile> FetchParameters() const;

 private:
  Status Execute(Communicator& comm, const Instruction& in, const MicrobatchInput& input,
                 const Graph& graph, StepReport& report);
  Status RunCollective(Communicator& comm, const Instruction& in, StepReport& report);
  HostTensor& Allocate(int32_t buffer);
  void Release(int32_t buffer);
  const HostTensor& Get(int32_t buffer) const { return buffers_[static_cast<size_t>(buffer)]; }

  const DeviceProgram& program_;
  std::vector<HostTensor> buffers_;
  std::vector<char> allocated_;
  int64_t live_bytes_ = 0;
  int64_t peak_bytes_ = 0;
};

}  // namespace alpa
