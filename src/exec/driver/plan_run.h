// Running a plan: lower it (exec/lower), run every device's program on threads of this process
// with real collectives (exec/comm's thread communicator), or one device per process of a
// communicator of processes (MPI), for a number of training steps on
// deterministic synthetic data (synthetic_data.h), and, with `check`, run the one-device
// interpreter on the same data and compare the loss and every parameter and optimizer state
// after every step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "exec/comm/communicator.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/lower/lower_plan.h"
#include "exec/runtime/device_runtime.h"

namespace alpa {

// What runs the devices' programs: the CPU runtime (exact in double, rounded per dtype) or the
// CUDA backend (exec/cuda: the programs on GPUs).
enum class ExecBackend : int32_t { kCpu = 0, kCuda = 1 };

struct PlanRunOptions {
  int64_t steps = 1;
  uint64_t seed = 0;
  bool check = false;
  // numpy's allclose: |a - b| <= atol + rtol |b| per element (PyTorch's pipelining tests' values).
  // For f16 and bf16 tensors at least torch.testing.assert_close's defaults for them (f16: rtol
  // 1e-3, atol 1e-5; bf16: rtol 1.6e-2, atol 1e-5): their rounding of a sum taken in another
  // order is far above these f32-sized values.
  double rtol = 1e-5, atol = 4e-5;
  LowerOptions lower;
  ExecBackend backend = ExecBackend::kCpu;
  CudaBackendOptions cuda;  // backend kCuda
};

struct StepSummary {
  int64_t step = 0;
  double loss = 0;                     // mean over the microbatches
  double seconds = 0;                  // the slowest device
  std::vector<int64_t> peak_bytes;     // per device (-1: idle)
  std::vector<int64_t> planned_bytes;  // per device: the planner's memory (-1: idle)
  // With check: the reference, and the worst differences as max |a - b| / (atol + rtol |b|)
  // (at most 1 passes) and as the largest relative difference max |a - b| / |b|.
  double reference_loss = 0;
  double loss_error = 0, loss_relative = 0;
  double parameter_error = 0, parameter_relative = 0;
  std::string worst_parameter;
  // Whether every copy of every parameter tile holds the same values on every device.
  bool replicas_agree = true;
  std::string diverged_parameter;  // the first one that does not, and where
  bool passed = true;
};

struct PlanRunReport {
  ProgramSet programs;
  std::vector<StepSummary> steps;
  std::vector<StepReport> first_step;  // per device: what the first step executed
  bool passed = true;                  // every step within tolerance (with check)
};

// `reference` is the model's graph for the whole batch (microbatches = 1): the data are cut
// from its inputs, and the check interprets it. Its ops must match the plan's microbatch graph
// op for op (the same model). Errors: kInvalidArgument for a reference of another model (naming
// the first differing op), the lowering's and the runtime's errors (the first failing device's
// message); a check above tolerance is not an error (passed = false).
Result<PlanRunReport> RunPlanOnThreads(const PipelinePlan& plan, const Graph& reference,
                                       const PlanRunOptions& options);

// The same run with device d as rank d of `world` (every rank calls it with the same plan,
// reference and options; ranks beyond the plan's devices idle and take part only in sharing the
// results). Rank 0 gathers every device's results: its report holds every device's first step
// (first_step, for CheckExecutedAgainstPlan) and the full summaries; every other rank's holds
// its own first step and the summaries' numbers that rank 0 shares (loss, errors, passed).
// Errors as RunPlanOnThreads, plus kInvalidArgument when the plan needs more devices than the
// world has ranks; a failure on one rank aborts the world (Communicator::Abort).
Result<PlanRunReport> RunPlanOnProcesses(const PipelinePlan& plan, const Graph& reference,
                                         const PlanRunOptions& options, Communicator& world);

}  // namespace alpa
