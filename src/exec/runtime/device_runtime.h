// The CPU runtime: runs one device's program (exec/program) on CPU buffers, talking to the other
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
#include "exec/runtime/device_runtime_types.h"
#include "exec/runtime/program_runner.h"

namespace alpa {

class DeviceRuntime : public ProgramRunner {
 public:
  // `program` must outlive the runtime. The buffers (parameters and optimizer state) persist
  // from step to step.
  explicit DeviceRuntime(const DeviceProgram& program);

  Status LoadParameters(const ParameterValue& value, const Graph& graph,
                        int32_t tensor = -1) override;
  Result<StepReport> RunStep(Communicator& comm, const MicrobatchInput& input,
                             const Graph& graph) override;
  Result<std::vector<ParameterTile>> FetchParameters() const override;

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
