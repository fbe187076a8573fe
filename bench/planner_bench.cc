// Planning time (Alpa's two-level search, PlanPipeline with its default options) for every GPT,
// MoE and Wide-ResNet preset of the model zoo on its benchmark GPU count (REFERENCE §6): G GPUs
// are one p3.16xlarge host of G devices when G <= 8, else G/8 hosts of 8. Counters: the plan
// (predicted TFLOP/s per GPU, iteration time, stages, microbatches, peak memory) and the split
// of the compile time. The in-run baseline is building the gpt-39b training graph alone
// (BM_BuildGraph/baseline_gpt_39b); when it ran first, x_baseline is each plan's wall time over
// the baseline's. Each preset runs twice: BM_Plan with the default search (microbatch counts
// screened on the one-dimensional logical meshes, PlannerOptions::screen_microbatch_counts) and
// BM_PlanExhaustive planning every count tried on every mesh, whose counters x_screened_time and
// x_screened_iteration are the screened run's wall time and predicted iteration time over its
// own (the speed-up and what it costs the plan, measured in the same run).
//   build/bin/planner_bench [--benchmark_filter='gpt_350m|baseline']
// bench/plan_table.py prints the same rows as a Markdown table through `alpa plan`.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "core/cluster/cluster.h"
#include "models/model_zoo.h"
#include "models/planner_model.h"
#include "solvers/planner/planner.h"

namespace {

// Mean seconds of one baseline iteration (0 until the baseline ran).
double g_baseline_seconds = 0;

// Per preset: the default (screened) search's wall seconds and predicted iteration seconds.
std::map<std::string, std::pair<double, double>> g_screened;

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_BuildGraph(benchmark::State& state, const std::string& spec) {
  double total = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    alpa::Result<alpa::Graph> g = alpa::BuildModel(spec);
    benchmark::DoNotOptimize(g);
    total += Since(start);
    ++runs;
    if (!g.ok()) {
      state.SkipWithError(g.status().message().c_str());
      return;
    }
  }
  if (runs > 0) g_baseline_seconds = total / static_cast<double>(runs);
}

// "p3.16xlarge:hosts=1,devices_per_host=G" for G <= 8, else "p3.16xlarge:hosts=G/8".
std::string ClusterSpec(int64_t gpus) {
  if (gpus <= 8) return "p3.16xlarge:hosts=1,devices_per_host=" + std::to_string(gpus);
  return "p3.16xlarge:hosts=" + std::to_string(gpus / 8);
}

void BM_Plan(benchmark::State& state, const std::string& preset, int64_t gpus, bool exhaustive) {
  const std::string cluster_spec = ClusterSpec(gpus);
  state.SetLabel(cluster_spec);
  alpa::Result<alpa::PlannerModel> model = alpa::PlannerModelFromSpec(preset);
  if (!model.ok()) {
    state.SkipWithError(model.status().message().c_str());
    return;
  }
  alpa::Result<alpa::Cluster> cluster = alpa::ParseClusterSpec(cluster_spec);
  if (!cluster.ok()) {
    state.SkipWithError(cluster.status().message().c_str());
    return;
  }
  alpa::PlannerOptions options;
  options.screen_microbatch_counts = !exhaustive;
  alpa::PipelinePlan plan;
  double wall = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    alpa::Result<alpa::PipelinePlan> r =
        alpa::PlanPipeline(model.value(), cluster.value(), options);
    wall = Since(start);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    plan = std::move(r).value();
  }
  const alpa::PlannerStats& s = plan.stats;
  state.counters["gpus"] = static_cast<double>(gpus);
  state.counters["tflops_per_gpu"] = plan.tflops_per_device;
  state.counters["iteration_s"] = plan.iteration_seconds;
  state.counters["stages"] = static_cast<double>(plan.stages.size());
  state.counters["microbatches"] = static_cast<double>(plan.microbatches);
  state.counters["clustering_s"] = s.clustering_seconds;
  state.counters["intra_op_s"] = s.intra_op_seconds;
  state.counters["dp_s"] = s.dp_seconds;
  state.counters["solves"] = static_cast<double>(s.intra_op_solves);
  state.counters["peak_mem_gib"] =
      static_cast<double>(plan.peak_memory_bytes) / (1024.0 * 1024.0 * 1024.0);
  if (g_baseline_seconds > 0) state.counters["x_baseline"] = wall / g_baseline_seconds;
  if (!exhaustive) {
    g_screened[preset] = {wall, plan.iteration_seconds};
  } else if (const auto it = g_screened.find(preset); it != g_screened.end()) {
    state.counters["x_screened_time"] = it->second.first / wall;
    state.counters["x_screened_iteration"] = it->second.second / plan.iteration_seconds;
  }
}

// "gpt-2.6b" -> "gpt_2_6b" (benchmark names without '-' and '.').
std::string BenchName(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  // The baseline first, so that x_baseline is known to the plan rows that follow it.
  benchmark::RegisterBenchmark("BM_BuildGraph/baseline_gpt_39b", BM_BuildGraph,
                               std::string("gpt-39b"))
      ->Unit(benchmark::kMillisecond);
  for (const char* family : {"gpt", "moe", "wresnet"}) {
    for (const alpa::ModelPreset& p : alpa::ModelPresets()) {
      if (p.family != family || p.benchmark_gpus <= 0) continue;
      for (const bool exhaustive : {false, true}) {
        const std::string name =
            (exhaustive ? "BM_PlanExhaustive/" : "BM_Plan/") + BenchName(p.name);
        benchmark::RegisterBenchmark(name.c_str(), BM_Plan, p.name,
                                     static_cast<int64_t>(p.benchmark_gpus), exhaustive)
            ->Iterations(1)
            ->Unit(benchmark::kSecond)
            ->UseRealTime();
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
