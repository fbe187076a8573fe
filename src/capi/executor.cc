// The executor's C ABI (include/alpa.h): a plan lowered to device programs and run step by step
// on thread devices or GPUs (exec/driver/plan_executor.h).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "capi/handles.h"
#include "exec/comm/mpi_communicator.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/driver/nccl_world.h"
#include "exec/driver/plan_executor.h"
#include "models/planner_model.h"

struct alpa_executor {
  std::unique_ptr<alpa::Communicator> world;  // ALPA_DEVICES_MPI: this process's MPI ranks
  std::unique_ptr<alpa::PlanExecutor> executor;
  bool failed = false;  // a step failed: the devices' state is undefined
};

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;
using alpa::capi::WholeBatchGraph;

// The end of version 1 of alpa_executor_config (atol): the smallest size a caller may pass.
constexpr size_t kConfigV1Size = offsetof(alpa_executor_config, atol) + sizeof(double);
constexpr size_t kStepResultV1Size = sizeof(alpa_step_result);

static_assert(ALPA_SCHEDULE_GPIPE == static_cast<int32_t>(alpa::PipelineScheduleKind::kGPipe));
static_assert(ALPA_SCHEDULE_1F1B == static_cast<int32_t>(alpa::PipelineScheduleKind::kOneFOneB));
static_assert(ALPA_SCHEDULE_ZB_H1 ==
              static_cast<int32_t>(alpa::PipelineScheduleKind::kZeroBubbleH1));
static_assert(ALPA_SCHEDULE_INTERLEAVED_1F1B ==
              static_cast<int32_t>(alpa::PipelineScheduleKind::kInterleavedOneFOneB));

// The caller's config: the first min(struct_size, sizeof) bytes; the fields of a later version
// than the caller's keep their zero defaults.
alpa::Result<alpa_executor_config> ReadConfig(const alpa_executor_config* config) {
  if (config->struct_size < kConfigV1Size || config->version < 1) {
    return alpa::InvalidArgument("config: struct_size " + std::to_string(config->struct_size) +
                                 " / version " + std::to_string(config->version) +
                                 " is below version 1 (use ALPA_EXECUTOR_CONFIG_INIT)");
  }
  alpa_executor_config c;
  std::memset(&c, 0, sizeof(c));
  std::memcpy(&c, config, std::min(config->struct_size, sizeof(c)));
  return c;
}

// The CUDA backend's options, or kUnsupported naming why it cannot run here.
alpa::Status SetBackend(const alpa_executor_config& config, alpa::PlanRunOptions& options) {
  if (config.backend != ALPA_BACKEND_CPU && config.backend != ALPA_BACKEND_CUDA) {
    return alpa::InvalidArgument(
        "config.backend must be ALPA_BACKEND_CPU (0) or ALPA_BACKEND_CUDA (1), got " +
        std::to_string(config.backend));
  }
  if (config.allow_tf32 != 0 && config.allow_tf32 != 1) {
    return alpa::InvalidArgument("config.allow_tf32 must be 0 or 1, got " +
                                 std::to_string(config.allow_tf32));
  }
  if (config.backend == ALPA_BACKEND_CPU) return alpa::Status::Ok();
  std::string why;
  if (alpa::CudaDeviceCount(&why) == 0) {
    return alpa::Status(alpa::StatusCode::kUnsupported,
                        "config.backend ALPA_BACKEND_CUDA: the CUDA backend cannot run: " + why);
  }
  options.backend = alpa::ExecBackend::kCuda;
  options.cuda.allow_tf32 = config.allow_tf32 == 1;
  return alpa::Status::Ok();
}

alpa::Result<alpa::PlanRunOptions> RunOptions(const alpa_executor_config* caller) {
  alpa::PlanRunOptions options;
  if (caller == nullptr) return options;
  alpa::Result<alpa_executor_config> read = ReadConfig(caller);
  if (!read.ok()) return read.status();
  const alpa_executor_config* config = &read.value();
  if (config->schedule != ALPA_SCHEDULE_1F1B && config->schedule != ALPA_SCHEDULE_GPIPE &&
      config->schedule != ALPA_SCHEDULE_ZB_H1 &&
      config->schedule != ALPA_SCHEDULE_INTERLEAVED_1F1B) {
    return alpa::InvalidArgument(
        "config.schedule must be ALPA_SCHEDULE_1F1B (1), ALPA_SCHEDULE_GPIPE (0), "
        "ALPA_SCHEDULE_ZB_H1 (2) or ALPA_SCHEDULE_INTERLEAVED_1F1B (3, for a plan with several "
        "stages per device group), got " +
        std::to_string(config->schedule));
  }
  if (config->check != 0 && config->check != 1) {
    return alpa::InvalidArgument("config.check must be 0 or 1, got " +
                                 std::to_string(config->check));
  }
  if (config->devices != ALPA_DEVICES_THREADS && config->devices != ALPA_DEVICES_MPI &&
      config->devices != ALPA_DEVICES_NCCL) {
    return alpa::InvalidArgument(
        "config.devices must be ALPA_DEVICES_THREADS (0), ALPA_DEVICES_MPI (1) or "
        "ALPA_DEVICES_NCCL (2), got " +
        std::to_string(config->devices));
  }
  if (!(config->rtol >= 0) || !(config->atol >= 0) || !std::isfinite(config->rtol) ||
      !std::isfinite(config->atol)) {
    return alpa::InvalidArgument("config.rtol and config.atol must be finite and >= 0");
  }
  // The ALPA_SCHEDULE_* values are PipelineScheduleKind's (pinned, checked above).
  options.lower.schedule = static_cast<alpa::PipelineScheduleKind>(config->schedule);
  options.seed = config->seed;
  options.check = config->check == 1;
  options.rtol = config->rtol;
  options.atol = config->atol;
  ALPA_RETURN_IF_ERROR(SetBackend(*config, options));
  return options;
}

alpa::Result<alpa::HostTensor> ValuesFor(const alpa::PlanExecutor& ex, int32_t id,
                                         const double* values, int64_t count) {
  const alpa::Op& op = ex.whole().op(id);
  int64_t n = 1;
  for (int64_t d : op.shape) n *= d;
  if (count != n || (count > 0 && values == nullptr)) {
    return alpa::InvalidArgument(alpa::DescribeOp(ex.whole(), id) + " holds " + std::to_string(n) +
                                 " values (" + alpa::ShapeString(op.shape) + "), got " +
                                 std::to_string(count));
  }
  alpa::HostTensor t;
  t.shape = op.shape;
  t.dtype = op.dtype;
  t.data.assign(values, values + count);
  return t;
}

// alpa_executor_set_parameter / _set_input: the tensor named `name`, whole, handed to `set`.
int32_t SetByName(alpa_executor* executor, const char* name, const double* values, int64_t count,
                  alpa_error** err,
                  alpa::Status (alpa::PlanExecutor::*set)(int32_t, const alpa::HostTensor&)) {
  return Guard(err, [&] {
    if (executor == nullptr || name == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "executor and name must not be NULL");
    }
    alpa::PlanExecutor& ex = *executor->executor;
    alpa::Result<int32_t> id = ex.FindTensor(name);
    if (!id.ok()) return Fail(err, id.status());
    alpa::Result<alpa::HostTensor> t = ValuesFor(ex, id.value(), values, count);
    if (!t.ok()) return Fail(err, t.status());
    alpa::Status s = (ex.*set)(id.value(), t.value());
    return s.ok() ? ALPA_OK : Fail(err, s);
  });
}

}  // namespace

extern "C" {

ALPA_API int32_t alpa_executor_config_init(alpa_executor_config* config, size_t size,
                                           alpa_error** err) {
  return Guard(err, [&] {
    if (config == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "config is NULL");
    if (size < kConfigV1Size) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "size " + std::to_string(size) + " is below version 1 of alpa_executor_config (" +
                      std::to_string(kConfigV1Size) + " bytes)");
    }
    alpa_executor_config defaults = ALPA_EXECUTOR_CONFIG_INIT;
    // A caller built against an older header gets its own version's fields, and says so.
    defaults.struct_size = std::min(size, sizeof(defaults));
    if (defaults.struct_size < sizeof(defaults)) defaults.version = 1;
    std::memcpy(config, &defaults, defaults.struct_size);
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_executor_create(alpa_executor** out, const alpa_plan* plan,
                                      const alpa_executor_config* config, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    alpa::Result<alpa::PlanRunOptions> options = RunOptions(config);
    if (!options.ok()) return Fail(err, options.status());
    alpa::Result<alpa::Graph> whole = WholeBatchGraph(*plan);
    if (!whole.ok()) return Fail(err, whole.status());
    auto handle = std::make_unique<alpa_executor>();
    alpa::NcclCommunicator* nccl = nullptr;
    if (config != nullptr && config->devices == ALPA_DEVICES_MPI) {
      alpa::Result<std::unique_ptr<alpa::Communicator>> world = alpa::CreateMpiCommunicator();
      if (!world.ok()) return Fail(err, world.status());
      handle->world = std::move(world).value();
    } else if (config != nullptr && config->devices == ALPA_DEVICES_NCCL) {
      alpa::Result<std::unique_ptr<alpa::NcclCommunicator>> world = alpa::CreateNcclWorld();
      if (!world.ok()) return Fail(err, world.status());
      nccl = world.value().get();
      handle->world = std::move(world).value();
    }
    alpa::Result<std::unique_ptr<alpa::PlanExecutor>> ex =
        alpa::PlanExecutor::Create(plan->plan, whole.value(), options.value(), handle->world.get());
    if (!ex.ok()) {
      // The other ranks would wait for this one in their communicators' splits: tell them.
      if (nccl != nullptr) nccl->Abort(ex.status());
      return Fail(err, ex.status());
    }
    handle->executor = std::move(ex).value();
    if (nccl != nullptr) {
      const alpa::Status prepared =
          nccl->Prepare(alpa::CollectiveGroups(handle->executor->programs(), nccl->size()));
      if (!prepared.ok()) return Fail(err, prepared);
    }
    *out = handle.release();
    return ALPA_OK;
  });
}

ALPA_API void alpa_executor_destroy(alpa_executor* executor) {
  if (executor == nullptr) return;
  const bool mpi = executor->world != nullptr;
  executor->executor.reset();
  executor->world.reset();
  delete executor;
  // The process's MPI ends with its executor (MPI cannot start again in the process); MPI that
  // an NCCL executor's rendezvous started too.
  if (mpi) alpa::FinalizeMpi();
}

ALPA_API int32_t alpa_executor_devices(const alpa_executor* executor) {
  return executor == nullptr ? -1 : executor->executor->programs().devices;
}

ALPA_API int32_t alpa_executor_rank(const alpa_executor* executor) {
  return executor == nullptr ? -1 : executor->executor->rank();
}

ALPA_API int32_t alpa_executor_gpu(const alpa_executor* executor, int32_t device) {
  return executor == nullptr ? -1 : executor->executor->DeviceGpu(device);
}

ALPA_API int32_t alpa_executor_program_text(alpa_buffer** out, const alpa_executor* executor,
                                            int32_t device, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || executor == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and executor must not be NULL");
    }
    const alpa::ProgramSet& set = executor->executor->programs();
    if (device < -1 || device >= set.devices) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "device " + std::to_string(device) + " is out of range (the plan runs on " +
                      std::to_string(set.devices) + " devices; -1 for all)");
    }
    std::string text;
    for (const alpa::DeviceProgram& p : set.programs) {
      if (device == -1 || p.device == device) text += alpa::ProgramText(p);
    }
    alpa_buffer* buffer = alpa::capi::MakeBuffer(std::move(text));
    if (buffer == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    *out = buffer;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_executor_set_parameter(alpa_executor* executor, const char* name,
                                             const double* values, int64_t count,
                                             alpa_error** err) {
  return SetByName(executor, name, values, count, err, &alpa::PlanExecutor::SetParameter);
}

ALPA_API int32_t alpa_executor_set_input(alpa_executor* executor, const char* name,
                                         const double* values, int64_t count, alpa_error** err) {
  return SetByName(executor, name, values, count, err, &alpa::PlanExecutor::SetInput);
}

ALPA_API int32_t alpa_executor_run_step(alpa_executor* executor, alpa_step_result* out,
                                        size_t element_size, alpa_error** err) {
  return Guard(err, [&] {
    if (executor == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "executor is NULL");
    if (out != nullptr && element_size < kStepResultV1Size) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "element_size " + std::to_string(element_size) +
                      " is below version 1 of alpa_step_result (" +
                      std::to_string(kStepResultV1Size) + " bytes)");
    }
    if (executor->failed) {
      return Fail(err, ALPA_ERR_INTERNAL,
                  "an earlier step failed; the devices' state is undefined: create a new executor");
    }
    alpa::Result<alpa::StepSummary> step = executor->executor->RunStep();
    if (!step.ok()) {
      executor->failed = true;
      return Fail(err, step.status());
    }
    if (out != nullptr) {
      const alpa::StepSummary& s = step.value();
      const bool checked = executor->executor->programs().devices > 0 && s.reference_loss != 0;
      alpa_step_result r;
      std::memset(&r, 0, sizeof(r));
      r.struct_size = std::min(element_size, sizeof(r));
      r.version = 1;
      r.passed = s.passed ? 1 : 0;
      r.step = s.step;
      r.loss = s.loss;
      r.seconds = s.seconds;
      const double nan = std::numeric_limits<double>::quiet_NaN();
      r.reference_loss = checked ? s.reference_loss : nan;
      r.loss_error = checked ? s.loss_error : nan;
      r.parameter_error = checked ? s.parameter_error : nan;
      for (size_t d = 0; d < s.peak_bytes.size(); ++d) {
        if (s.peak_bytes[d] > r.peak_bytes) {
          r.peak_bytes = s.peak_bytes[d];
          r.planned_bytes = s.planned_bytes[d];
        }
      }
      std::memcpy(out, &r, r.struct_size);
    }
    return ALPA_OK;
  });
}

ALPA_API int64_t alpa_executor_get_parameter(const alpa_executor* executor, const char* name,
                                             double* out, int64_t capacity, alpa_error** err) {
  int64_t count = -ALPA_ERR_INVALID_ARGUMENT;
  const int32_t status = Guard(err, [&] {
    if (executor == nullptr || name == nullptr || capacity < 0 ||
        (capacity > 0 && out == nullptr)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "executor and name must not be NULL, capacity >= 0 and out set when > 0");
    }
    alpa::Result<int32_t> id = executor->executor->FindTensor(name);
    if (!id.ok()) return Fail(err, id.status());
    alpa::Result<alpa::HostTensor> t = executor->executor->Parameter(id.value());
    if (!t.ok()) return Fail(err, t.status());
    count = t.value().size();
    std::copy_n(t.value().data.begin(), std::min(count, capacity), out);
    return ALPA_OK;
  });
  return status == ALPA_OK ? count : -static_cast<int64_t>(status);
}

}  // extern "C"
