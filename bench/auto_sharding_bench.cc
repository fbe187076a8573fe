// Auto-sharding time (problem construction + solve) for one GPT layer and the whole gpt-2.6b and
// gpt-39b training graphs on 2x4 and 8x8 meshes of p3.16xlarge hosts (real units), next to the
// size of the sharding problem before and after normalization and reductions, the blocks of the
// exact block elimination (blocks, distinct) and whether the optimum is proven (optimal, gap).
// In-run baselines: the time to build the graph itself (BM_BuildGraph), and the solver without
// the block elimination (*_glpk: local search, then GLPK) on one and three GPT layers.
//   build/bin/auto_sharding_bench [--benchmark_filter=gpt-39b] [ALPA_SHARD_TIME_LIMIT=60]
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "models/model_zoo.h"
#include "solvers/auto_sharding/auto_sharding.h"

namespace {

double TimeLimit() {
  const char* s = std::getenv("ALPA_SHARD_TIME_LIMIT");
  return s != nullptr ? std::atof(s) : 60.0;
}

void BM_BuildGraph(benchmark::State& state, const std::string& spec) {
  for (auto _ : state) {
    alpa::Result<alpa::Graph> g = alpa::BuildModel(spec);
    benchmark::DoNotOptimize(g);
  }
}

void BM_AutoShard(benchmark::State& state, const std::string& spec, std::vector<int64_t> mesh_shape,
                  bool exact_elimination = true) {
  alpa::Result<alpa::Graph> g = alpa::BuildModel(spec);
  const int64_t devices = mesh_shape[0] * mesh_shape[1];
  alpa::Result<alpa::Cluster> cluster =
      alpa::MakePresetCluster("p3.16xlarge", devices > 8 ? devices / 8 : 1);
  if (!g.ok() || !cluster.ok()) {
    state.SkipWithError("model or cluster");
    return;
  }
  alpa::SubmeshShape sub{devices > 8 ? devices / 8 : 1, devices > 8 ? 8 : devices};
  alpa::Result<alpa::LogicalMesh> mesh = alpa::DeriveLogicalMesh(cluster.value(), sub, mesh_shape);
  if (!mesh.ok()) {
    state.SkipWithError(mesh.status().message().c_str());
    return;
  }
  alpa::AutoShardOptions options;
  options.solve.time_limit_seconds = TimeLimit();
  options.solve.exact_elimination = exact_elimination;
  alpa::AutoShardResult last;
  for (auto _ : state) {
    alpa::Result<alpa::AutoShardResult> r =
        alpa::AutoShard(g.value(), mesh.value(), &cluster.value(), options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    last = std::move(r).value();
  }
  state.counters["ops"] = last.stats.ops;
  state.counters["nodes"] = last.stats.solver.nodes;
  state.counters["edges"] = static_cast<double>(last.stats.solver.edges);
  state.counters["norm_nodes"] = last.stats.solver.work_nodes;
  state.counters["core_nodes"] = last.stats.solver.core_nodes;
  state.counters["core_edges"] = last.stats.solver.core_edges;
  state.counters["strategies"] = static_cast<double>(last.stats.strategies);
  state.counters["build_s"] = last.stats.build_seconds;
  state.counters["solve_s"] = last.stats.solve_seconds;
  state.counters["blocks"] = last.stats.solver.elimination_blocks;
  state.counters["distinct"] = last.stats.solver.elimination_distinct_blocks;
  state.counters["optimal"] = last.status == alpa::SolveStatus::kOptimal ? 1 : 0;
  state.counters["gap"] =
      last.objective > 0 ? static_cast<double>((last.objective - last.lower_bound) / last.objective)
                         : 0;
}

const char* kGptLayer = "gpt-2.6b:layers=1";

}  // namespace

BENCHMARK_CAPTURE(BM_BuildGraph, gpt_layer, std::string(kGptLayer))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AutoShard, gpt_layer_2x4, std::string(kGptLayer), std::vector<int64_t>{2, 4})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AutoShard, gpt_layer_8x8, std::string(kGptLayer), std::vector<int64_t>{8, 8})
    ->Unit(benchmark::kMillisecond);
// The same without the exact block elimination (the local search, then GLPK proves): the
// in-run baseline of the solver itself.
BENCHMARK_CAPTURE(BM_AutoShard, gpt_layer_2x4_glpk, std::string(kGptLayer),
                  std::vector<int64_t>{2, 4}, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AutoShard, gpt_layer_8x8_glpk, std::string(kGptLayer),
                  std::vector<int64_t>{8, 8}, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AutoShard, gpt_3_layers_2x4, std::string("gpt-2.6b:layers=3"),
                  std::vector<int64_t>{2, 4})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_AutoShard, gpt_3_layers_2x4_glpk, std::string("gpt-2.6b:layers=3"),
                  std::vector<int64_t>{2, 4}, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_BuildGraph, gpt_2_6b, std::string("gpt-2.6b"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AutoShard, gpt_2_6b_2x4, std::string("gpt-2.6b"), std::vector<int64_t>{2, 4})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_AutoShard, gpt_2_6b_8x8, std::string("gpt-2.6b"), std::vector<int64_t>{8, 8})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_BuildGraph, gpt_39b, std::string("gpt-39b"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AutoShard, gpt_39b_2x4, std::string("gpt-39b"), std::vector<int64_t>{2, 4})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_AutoShard, gpt_39b_8x8, std::string("gpt-39b"), std::vector<int64_t>{8, 8})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

BENCHMARK_MAIN();
