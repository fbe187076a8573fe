// The executor against the one-device interpreter, in the same run: training steps per second of
// a small GPT on one device (the interpreter on the whole batch) and as a plan on 8 thread
// devices (dp 2 x tp 2 x pp 2, 4 microbatches, lowered once, real collectives between threads).
// Items per second = steps per second. The MPI row (8 processes) is bench/executor_table.py.
#include <benchmark/benchmark.h>

#include <string>

#include "exec/driver/plan_run.h"
#include "exec/driver/synthetic_data.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"

namespace {

const char* kModel = "gpt:layers=4,hidden=64,heads=4,seq=32,vocab=128,batch=16,dtype=f32";
constexpr int64_t kSteps = 4;

void BM_OneDeviceInterpreter(benchmark::State& state) {
  alpa::Result<alpa::PlannerModel> model = alpa::PlannerModelFromSpec(kModel);
  alpa::Result<alpa::Graph> whole = model.value().build(1);
  alpa::HostFeeds feeds;
  for (auto& [id, t] : alpa::InitialParameters(whole.value(), 0)) feeds[id] = t;
  for (auto& [id, t] : alpa::StepInputs(whole.value(), 0, 0)) feeds[id] = t;
  alpa::InterpretOptions io;
  io.max_total_elements = 0;
  for (auto _ : state) {
    for (int64_t s = 0; s < kSteps; ++s) {
      auto out = alpa::Interpret(whole.value(), feeds, whole.value().outputs, io);
      if (!out.ok()) state.SkipWithError(out.status().message().c_str());
      benchmark::DoNotOptimize(out);
    }
  }
  state.SetItemsProcessed(state.iterations() * kSteps);
}

void BM_EightThreadDevices(benchmark::State& state) {
  alpa::Result<alpa::PlannerModel> model = alpa::PlannerModelFromSpec(kModel);
  alpa::Result<alpa::Cluster> cluster = alpa::ParseClusterSpec("p3.16xlarge:hosts=1");
  alpa::ManualPlanSpec spec;
  spec.data_parallel = 2;
  spec.tensor_parallel = 2;
  spec.pipeline_parallel = 2;
  spec.microbatches = 4;
  alpa::Result<alpa::PipelinePlan> plan =
      alpa::EvaluateManualPlan(model.value(), cluster.value(), spec);
  if (!plan.ok()) {
    state.SkipWithError(plan.status().message().c_str());
    return;
  }
  alpa::Result<alpa::Graph> whole = model.value().build(1);
  alpa::PlanRunOptions options;
  options.steps = kSteps;
  for (auto _ : state) {
    auto run = alpa::RunPlanOnThreads(plan.value(), whole.value(), options);
    if (!run.ok()) state.SkipWithError(run.status().message().c_str());
    benchmark::DoNotOptimize(run);
  }
  state.SetItemsProcessed(state.iterations() * kSteps);
}

BENCHMARK(BM_OneDeviceInterpreter)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EightThreadDevices)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
