// Solve time of the sharding solver on generated problems of growing size: chains, trees and
// grids, without memory limit (reductions alone must solve chains and trees) and with one.
// Counters report the problem size before and after normalization and reductions.
//
//   build/bin/sharding_solver_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdint>

#include "core/problem/sharding_problem.h"
#include "solvers/sharding/sharding_solver.h"
#include "support/random_problem.h"

namespace {

using alpa::testing::GraphShape;
using alpa::testing::MemoryMode;

void RunSolve(benchmark::State& state, GraphShape shape, MemoryMode memory) {
  alpa::testing::RandomProblemSpec spec;
  spec.nodes = static_cast<int32_t>(state.range(0));
  spec.max_strategies = 8;
  spec.shape = shape;
  spec.memory = memory;
  spec.limit_tightness = 0.3;
  spec.max_cost = 1000;
  const alpa::ShardingProblem problem = alpa::testing::RandomProblem(spec, 42);
  alpa::SolveOptions options;
  options.deterministic = true;
  options.time_limit_seconds = 10;  // grids past ~1,000 nodes stop here: see "optimal"
  alpa::SolveResult result;
  for (auto _ : state) {
    result = alpa::SolveSharding(problem, options);
    benchmark::DoNotOptimize(result.objective);
  }
  state.counters["nodes"] = result.stats.nodes;
  state.counters["edges"] = result.stats.edges;
  state.counters["core_nodes"] = result.stats.core_nodes;
  state.counters["core_edges"] = result.stats.core_edges;
  state.counters["mem_rows"] = result.stats.memory_rows;
  state.counters["optimal"] = result.status == alpa::SolveStatus::kOptimal ? 1 : 0;
  state.SetComplexityN(state.range(0));
}

void BM_Chain(benchmark::State& state) { RunSolve(state, GraphShape::kChain, MemoryMode::kNone); }
void BM_Tree(benchmark::State& state) { RunSolve(state, GraphShape::kTree, MemoryMode::kNone); }
void BM_Grid(benchmark::State& state) { RunSolve(state, GraphShape::kGrid, MemoryMode::kNone); }
void BM_ChainWithMemory(benchmark::State& state) {
  RunSolve(state, GraphShape::kChain, MemoryMode::kIntervals);
}

BENCHMARK(BM_Chain)
    ->RangeMultiplier(10)
    ->Range(1000, 100000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
BENCHMARK(BM_Tree)
    ->RangeMultiplier(10)
    ->Range(1000, 100000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();
BENCHMARK(BM_Grid)->RangeMultiplier(4)->Range(64, 4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChainWithMemory)->RangeMultiplier(4)->Range(64, 4096)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
