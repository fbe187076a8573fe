// A plan being trained: its device programs, one runtime per device (parameters and optimizer
// state live in the devices' buffers from step to step), the data of each step and, with the
// check on, the one-device interpreter stepping along on the same data.
//
// Devices run as threads of this process (exec/comm's thread communicator), one step at a time;
// or, given a communicator of several processes (MPI), this process runs only its rank's device,
// every process lowering the same plan and generating the same synthetic data, and after each
// step the ranks send their results (losses, peak memory, executed moves, parameter tiles) to
// rank 0, which summarises the step (and runs the check) and sends the summary back to every
// rank. Ranks beyond the plan's devices run nothing and only receive the summary. A failing rank
// aborts the communicator: every process ends with its message.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "exec/comm/communicator.h"
#include "exec/driver/plan_run.h"

namespace alpa {

// What one device returns from a step.
struct DeviceStepResult {
  StepReport report;
  std::vector<ParameterTile> tiles;
};

class PlanExecutor {
 public:
  // Lowers the plan. `whole` is the model's graph for the whole batch (see RunPlanOnThreads).
  // `world`: null for thread devices; else the processes' communicator (kept, not owned): the
  // plan's devices must not outnumber its ranks.
  static Result<std::unique_ptr<PlanExecutor>> Create(const PipelinePlan& plan, const Graph& whole,
                                                      const PlanRunOptions& options,
                                                      Communicator* world = nullptr);

  const ProgramSet& programs() const { return programs_; }
  // This process's rank among the processes (0 with thread devices).
  int32_t rank() const { return world_ == nullptr ? 0 : world_->rank(); }
  // The GPU device `device` runs on (the CUDA backend); -1 on the CPU, for a device that runs
  // nothing or another process's, or out of range.
  int32_t DeviceGpu(int32_t device) const {
    if (device < 0 || static_cast<size_t>(device) >= runtimes_.size()) return -1;
    const auto& runner = runtimes_[static_cast<size_t>(device)];
    return runner == nullptr ? -1 : runner->gpu();
  }
  const Graph& whole() const { return whole_; }
  int64_t steps_run() const { return step_; }

  // A parameter (weight or optimizer state) or data input of the graph by name; kInvalidArgument
  // naming it when there is none (or there are several).
  Result<int32_t> FindTensor(const std::string& name) const;
  // Replaces a parameter's whole value (on every device holding a tile, and in the reference).
  Status SetParameter(int32_t id, const HostTensor& value);
  // The whole-batch value of a data input for the next step (others are synthetic).
  Status SetInput(int32_t id, const HostTensor& value);
  // Runs one training step on every device.
  Result<StepSummary> RunStep();
  // A parameter's value after the last step (or as loaded), assembled from the devices' tiles
  // (with several processes: on rank 0 only).
  Result<HostTensor> Parameter(int32_t id);
  // Per device, what the last step executed.
  const std::vector<DeviceStepResult>& last_results() const { return results_; }

 private:
  PlanExecutor() = default;
  Status EnsureLoaded();
  Status LoadAll();
  Status FetchAllTiles();  // every runner's tiles into results_
  Result<std::map<int32_t, std::vector<HostTensor>>> Microbatches(
      const std::map<int32_t, HostTensor>& whole_inputs) const;
  Result<StepSummary> Summarize(const std::map<int32_t, HostTensor>& whole_inputs);
  // A step's data: the whole batch's inputs and their microbatches.
  struct StepData {
    std::map<int32_t, HostTensor> whole;
    std::map<int32_t, std::vector<HostTensor>> micro;
  };
  Result<std::unique_ptr<StepData>> MakeStepData(int64_t step, bool with_fed_inputs);
  // This step's data: what was made during the previous step when nothing was fed since, else
  // made now (the runners drop what they prepared from the other).
  Result<std::unique_ptr<StepData>> TakeStepData();
  // The next step's synthetic data, made now and announced to the runners that prepare it.
  Status AnnounceNextStep();
  Status RunDevicesOnThreads(const std::map<int32_t, std::vector<HostTensor>>& inputs);
  Status RunLocalDevice(const std::map<int32_t, std::vector<HostTensor>>& inputs);
  Status GatherResults();
  Status ShareSummary(StepSummary& sum);

  PipelinePlan plan_;
  Graph whole_;
  PlanRunOptions options_;
  ProgramSet programs_;
  std::vector<std::unique_ptr<ProgramRunner>> runtimes_;  // per device (null: idle)
  std::map<int32_t, HostTensor> parameters_;  // the reference's parameters (and the initial ones)
  std::map<int32_t, HostTensor> next_inputs_;
  // Step step_'s data, made and announced while the previous step ran (null: none).
  std::unique_ptr<StepData> upcoming_;
  std::vector<DeviceStepResult> results_;
  int64_t step_ = 0;
  bool loaded_ = false;
  Communicator* world_ = nullptr;
};

}  // namespace alpa
