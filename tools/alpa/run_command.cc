// `alpa run PLAN.json` and `alpa compile PLAN.json`: a plan's device programs, run on CPU devices
// or GPUs, or printed (include/alpa.h's executor).
#include "run_command.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "cli_output.h"
#include "commands.h"

namespace alpa_cli {
namespace {

struct ExecutorHandle {
  alpa_executor* executor = nullptr;
  ~ExecutorHandle() { alpa_executor_destroy(executor); }
};

struct PlanHandle {
  alpa_plan* plan = nullptr;
  ~PlanHandle() { alpa_plan_destroy(plan); }
};

struct BufferHandle {
  alpa_buffer* buffer = nullptr;
  ~BufferHandle() { alpa_buffer_free(buffer); }
};

int CreateExecutor(const alpa_plan* plan, const RunArgs& args, ExecutorHandle& handle) {
  alpa_executor_config config = ALPA_EXECUTOR_CONFIG_INIT;
  config.schedule = args.schedule.empty() ? alpa_plan_pipeline_schedule(plan)  // the plan's own
                                          : ScheduleFromName(args.schedule);
  if (config.schedule < 0) {
    return ReportBadInput("--schedule must be 1f1b, gpipe, zb-h1 or interleaved-1f1b (got '" +
                          args.schedule + "')");
  }
  if (args.devices == "mpi") {
    config.devices = ALPA_DEVICES_MPI;
  } else if (args.devices == "nccl") {
    config.devices = ALPA_DEVICES_NCCL;
  } else if (args.devices != "threads") {
    return ReportBadInput("--devices must be threads, mpi or nccl (got '" + args.devices + "')");
  }
  if (args.backend == "cuda") {
    config.backend = ALPA_BACKEND_CUDA;
  } else if (args.backend != "cpu") {
    return ReportBadInput("--backend must be cpu or cuda (got '" + args.backend + "')");
  }
  if (args.tf32 && config.backend != ALPA_BACKEND_CUDA) {
    return ReportBadInput("--tf32 needs --backend cuda");
  }
  config.allow_tf32 = args.tf32 ? 1 : 0;
  config.seed = args.seed;
  config.check = args.check ? 1 : 0;
  alpa_error* err = nullptr;
  if (alpa_executor_create(&handle.executor, plan, &config, &err) != ALPA_OK) {
    return ReportError(err);
  }
  return 0;
}

void PrintStep(const alpa_step_result& r, bool check) {
  const double ratio =
      r.planned_bytes > 0 ? static_cast<double>(r.peak_bytes) / static_cast<double>(r.planned_bytes)
                          : NAN;
  std::printf("step %-4lld loss %-12.8g %10s  peak %s (planned %s, %.2fx)",
              static_cast<long long>(r.step), r.loss, Seconds(r.seconds, 3).c_str(),
              Bytes(static_cast<double>(r.peak_bytes), 2).c_str(),
              Bytes(static_cast<double>(r.planned_bytes), 2).c_str(), ratio);
  if (check) {
    std::printf("  one device %.8g, worst %.3g (loss) %.3g (parameters) of the tolerance %s",
                r.reference_loss, r.loss_error, r.parameter_error, r.passed ? "ok" : "FAILED");
  }
  std::printf("\n");
  std::fflush(stdout);
}

// The GPU of every device (-1: the CPU, or idle), as a JSON array.
std::string GpusJson(const alpa_executor* executor) {
  std::string out = "[";
  for (int32_t d = 0; d < alpa_executor_devices(executor); ++d) {
    if (d > 0) out += ", ";
    out += std::to_string(alpa_executor_gpu(executor, d));
  }
  return out + "]";
}

// "GPU 0" or "GPUs 0, 1": the GPUs the devices run on, each once.
std::string GpusText(const alpa_executor* executor) {
  std::set<int32_t> gpus;
  for (int32_t d = 0; d < alpa_executor_devices(executor); ++d) {
    const int32_t gpu = alpa_executor_gpu(executor, d);
    if (gpu >= 0) gpus.insert(gpu);
  }
  std::string out = gpus.size() == 1 ? "GPU " : "GPUs ";
  for (int32_t gpu : gpus) out += (out.back() == ' ' ? "" : ", ") + std::to_string(gpu);
  return out;
}

void PrintStepJson(const alpa_step_result& r, bool check, const std::string& backend,
                   const alpa_executor* executor) {
  std::printf(
      "{\"step\": %lld, \"loss\": %.17g, \"seconds\": %.9g, \"peak_bytes\": %lld, "
      "\"planned_bytes\": %lld, \"backend\": \"%s\"",
      static_cast<long long>(r.step), r.loss, r.seconds, static_cast<long long>(r.peak_bytes),
      static_cast<long long>(r.planned_bytes), backend.c_str());
  if (backend == "cuda") std::printf(", \"gpus\": %s", GpusJson(executor).c_str());
  if (check) {
    std::printf(
        ", \"reference_loss\": %.17g, \"loss_error\": %.9g, \"parameter_error\": %.9g, "
        "\"passed\": %s",
        r.reference_loss, r.loss_error, r.parameter_error, r.passed ? "true" : "false");
  }
  std::printf("}\n");
}

int ReadPlan(const std::string& file, PlanHandle& plan) {
  alpa_error* err = nullptr;
  if (alpa_plan_read_file(&plan.plan, file.c_str(), &err) != ALPA_OK) {
    return ReportError(err, file);
  }
  return 0;
}

struct CompileArgs {
  std::string file;
  int32_t device = -1;
  RunArgs run;
};

int RunCompile(const CompileArgs& args) {
  PlanHandle plan;
  if (int rc = ReadPlan(args.file, plan)) return rc;
  ExecutorHandle ex;
  if (int rc = CreateExecutor(plan.plan, args.run, ex)) return rc;
  BufferHandle text;
  alpa_error* err = nullptr;
  if (alpa_executor_program_text(&text.buffer, ex.executor, args.device, &err) != ALPA_OK) {
    return ReportError(err, "--device");
  }
  std::fwrite(alpa_buffer_data(text.buffer), 1, alpa_buffer_size(text.buffer), stdout);
  return 0;
}

struct RunFileArgs {
  std::string file;
  RunArgs run;
};

}  // namespace

void AddRunOptions(CLI::App* command, RunArgs* args) {
  command->add_option("--seed", args->seed, "Seed of the synthetic parameters and data (0)");
  command->add_flag(
      "--check", args->check,
      "Also step the one-device interpreter and compare (rtol 1e-5, atol 4e-5; f16 1e-3, 1e-5; "
      "bf16 1.6e-2, 1e-5)");
  command->add_option("--schedule", args->schedule,
                      "Pipeline schedule: 1f1b, gpipe, zb-h1 or interleaved-1f1b (default: the "
                      "plan's own, 1f1b unless the planner chose zb-h1; interleaved-1f1b runs "
                      "only, and is the only schedule of, a plan with several stages per device "
                      "group, e.g. alpa baseline --virtual-stages)");
  command->add_option("--devices", args->devices,
                      "threads (default: every device a thread of this process), mpi (one "
                      "device per process of an mpirun job) or nccl (one device per process, "
                      "each on its own GPU over NCCL; processes meet through ALPA_RENDEZVOUS "
                      "with ALPA_RANK and ALPA_WORLD_SIZE, or mpirun)");
  command->add_option("--backend", args->backend,
                      "cpu (default: the CPU runtime, exact) or cuda (every device's program on a "
                      "GPU: device d on GPU d modulo the GPUs there are)");
  command->add_flag("--tf32", args->tf32,
                    "With --backend cuda: f32 contractions on tensor cores in TF32 (faster, "
                    "less exact: --check's tolerance is for f32)");
  command->add_flag("--json", args->json, "One JSON object per step");
}

int RunPlanSteps(const alpa_plan* plan, const RunArgs& args) {
  if (args.steps < 1) return ReportBadInput("--steps must be >= 1");
  ExecutorHandle ex;
  if (int rc = CreateExecutor(plan, args, ex)) return rc;
  // With MPI every process runs this; rank 0 speaks for the job.
  const bool speaks = alpa_executor_rank(ex.executor) == 0;
  if (!args.json && speaks) {
    const std::string backend = args.backend == "cuda" ? "cuda backend on " + GpusText(ex.executor)
                                                       : std::string("cpu backend");
    std::printf("Running %lld step(s) on %d devices (%s, %s)%s\n",
                static_cast<long long>(args.steps), alpa_executor_devices(ex.executor),
                args.devices.c_str(), backend.c_str(),
                args.check ? ", checked against one device" : "");
  }
  bool passed = true;
  for (int64_t s = 0; s < args.steps; ++s) {
    alpa_step_result r = ALPA_STEP_RESULT_INIT;
    alpa_error* err = nullptr;
    if (alpa_executor_run_step(ex.executor, &r, sizeof r, &err) != ALPA_OK) {
      return ReportError(err);
    }
    passed = passed && r.passed != 0;
    if (!speaks) continue;
    if (args.json) {
      PrintStepJson(r, args.check, args.backend, ex.executor);
    } else {
      PrintStep(r, args.check);
    }
  }
  if (!passed && speaks) {
    std::fprintf(stderr, "alpa: error: the run differs from one device beyond the tolerance\n");
  }
  return passed ? 0 : 3;
}

Command AddRunCommand(CLI::App& app) {
  auto args = std::make_shared<RunFileArgs>();
  CLI::App* run = app.add_subcommand(
      "run",
      "Train a plan (alpa plan -o) for some steps on CPU devices or GPUs, on synthetic data");
  run->add_option("plan", args->file, "Plan JSON file (alpa plan -o / alpa baseline -o)")
      ->required();
  run->add_option("--steps", args->run.steps, "Training steps (default 1)");
  AddRunOptions(run, &args->run);
  return {run, [args] {
            PlanHandle plan;
            if (int rc = ReadPlan(args->file, plan)) return rc;
            return RunPlanSteps(plan.plan, args->run);
          }};
}

Command AddCompileCommand(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* compile = app.add_subcommand(
      "compile",
      "Print the device programs a plan (alpa plan -o) lowers to, one instruction "
      "per line");
  compile->add_option("plan", args->file, "Plan JSON file")->required();
  compile->add_option("--device", args->device, "Only this device's program (default: all)");
  compile->add_option("--schedule", args->run.schedule,
                      "Pipeline schedule: 1f1b, gpipe, zb-h1 or interleaved-1f1b (default: the "
                      "plan's own)");
  return {compile, [args] { return RunCompile(*args); }};
}

}  // namespace alpa_cli
