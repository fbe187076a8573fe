// Building the training graphs of the largest presets (forward + autodiff + optimizer): time,
// op count and the graph's own memory (the capacities of its vectors), next to the forward-only
// build of the same spec as the in-run baseline, and the process's peak RSS.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>
#include <type_traits>

#include "models/model_zoo.h"

namespace {

// Heap bytes held by the graph: the op array plus every op's vectors and name.
double GraphBytes(const alpa::Graph& g) {
  double bytes = static_cast<double>(g.ops.capacity() * sizeof(alpa::Op));
  auto vec = [](const auto& v) {
    return static_cast<double>(v.capacity() *
                               sizeof(typename std::decay_t<decltype(v)>::value_type));
  };
  for (const alpa::Op& op : g.ops) {
    const alpa::OpAttrs& a = op.attrs;
    bytes += vec(op.operands) + vec(op.shape) + vec(a.dims) + vec(a.dot.lhs_batch) +
             vec(a.dot.rhs_batch) + vec(a.dot.lhs_contracting) + vec(a.dot.rhs_contracting) +
             vec(a.starts) + vec(a.limits) + vec(a.strides) + vec(a.padding_lo) +
             vec(a.padding_hi) + vec(a.padding_interior) + vec(a.lhs_dilation) +
             vec(a.rhs_dilation) + vec(a.window);
    if (op.name.capacity() > 15) bytes += static_cast<double>(op.name.capacity() + 1);
  }
  return bytes + vec(g.outputs);
}

void BM_BuildModel(benchmark::State& state, const std::string& spec) {
  double ops = 0, bytes = 0;
  for (auto _ : state) {
    alpa::Result<alpa::Graph> g = alpa::BuildModel(spec);
    if (!g.ok()) {
      state.SkipWithError(g.status().message().c_str());
      return;
    }
    ops = static_cast<double>(g.value().ops.size());
    bytes = GraphBytes(g.value());
    benchmark::DoNotOptimize(g);
  }
  state.counters["ops"] = ops;
  state.counters["graph_MiB"] = bytes / (1024.0 * 1024.0);
  state.counters["bytes_per_op"] = ops > 0 ? bytes / ops : 0;
  // The process's peak resident set so far (benchmarks run in order, so it is an upper bound
  // for this one and everything before it).
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

BENCHMARK_CAPTURE(BM_BuildModel, gpt_39b_forward, std::string("gpt-39b:training=0"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildModel, gpt_39b_training, std::string("gpt-39b"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildModel, moe_70b_forward, std::string("moe-70b:training=0"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildModel, moe_70b_training, std::string("moe-70b"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildModel, wresnet_13b_forward, std::string("wresnet-13b:training=0"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildModel, wresnet_13b_training, std::string("wresnet-13b"))
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
