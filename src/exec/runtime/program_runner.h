// What runs one device's program: the CPU runtime (device_runtime.h) or the CUDA backend
// (exec/cuda). The driver (exec/driver) holds one runner per device and knows nothing else of
// the backend: a runner keeps the device's buffers (parameters and optimizer state persist from
// step to step), runs a step with a communicator, and reads the parameter tiles back.
#pragma once

#include <cstdint>
#include <vector>

#include "core/util/status.h"
#include "exec/comm/communicator.h"
#include "exec/runtime/device_runtime_types.h"

namespace alpa {

class ProgramRunner {
 public:
  virtual ~ProgramRunner() = default;
  // Fills the parameter tiles of `tensor` (every tile when -1) from the whole tensors.
  // kInvalidArgument naming the tensor when a value is missing or has the wrong shape.
  virtual Status LoadParameters(const ParameterValue& value, const Graph& graph,
                                int32_t tensor = -1) = 0;
  // Runs the program once with `comm` (comm.rank() is the program's device). Errors name the
  // instruction; a communicator error (another device failed) is returned as is.
  virtual Result<StepReport> RunStep(Communicator& comm, const MicrobatchInput& input,
                                     const Graph& graph) = 0;
  // The input the next RunStep will be given, known before this step runs: a runner that
  // prepares it (PreparesNextInput) may do so while its device works on this step (the CUDA
  // runner encodes its feeds into pinned memory). The next RunStep uses what was prepared only
  // for the same HostTensor objects; the driver keeps them alive until that step has returned,
  // or announces an empty function first, which drops whatever was prepared.
  virtual void AnnounceNextInput(MicrobatchInput next) { (void)next; }
  virtual bool PreparesNextInput() const { return false; }
  // Every tile the device holds values of, as doubles.
  virtual Result<std::vector<ParameterTile>> FetchParameters() const = 0;
  // The GPU the program runs on; -1 for a runner on the CPU.
  virtual int32_t gpu() const { return -1; }
};

}  // namespace alpa
