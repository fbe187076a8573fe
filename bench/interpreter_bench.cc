// The CPU reference interpreter on tiny zoo models: one training step (forward, backward,
// optimizer) against the forward pass of the same model in the same run (the baseline; a
// training step should cost about 3x its forward pass).
#include <benchmark/benchmark.h>

#include <string>

#include "exec/cpu/interpreter.h"
#include "models/model_zoo.h"

namespace {

alpa::HostFeeds MakeFeeds(const alpa::Graph& g) {
  alpa::HostFeeds feeds;
  for (int32_t id = 0; id < g.size(); ++id) {
    const alpa::Op& op = g.op(id);
    if (op.kind != alpa::OpKind::kParameter) continue;
    alpa::HostTensor t{op.shape, op.dtype, {}};
    int64_t n = 1;
    for (int64_t d : op.shape) n *= d;
    t.data.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      // Indices stay small (valid for any vocabulary / class count >= 8); weights are small.
      t.data.push_back(alpa::IsInteger(op.dtype)
                           ? static_cast<double>((i * 7 + id) % 8)
                           : 0.02 * static_cast<double>((i * 13 + id) % 11 - 5) +
                                 (op.role == alpa::TensorRole::kOptimizerState ? 0.2 : 0.0));
    }
    feeds[id] = std::move(t);
  }
  return feeds;
}

void BM_Interpret(benchmark::State& state, const std::string& spec) {
  alpa::Result<alpa::Graph> g = alpa::BuildModel(spec);
  if (!g.ok()) {
    state.SkipWithError(g.status().message().c_str());
    return;
  }
  alpa::HostFeeds feeds = MakeFeeds(g.value());
  for (auto _ : state) {
    alpa::Result<std::vector<alpa::HostTensor>> r =
        alpa::Interpret(g.value(), feeds, g.value().outputs);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(r);
  }
  state.counters["ops"] = static_cast<double>(g.value().size());
}

const char* const kGpt = "gpt:hidden=32,layers=2,heads=2,seq=16,vocab=64,batch=2,dtype=f32";
const char* const kResNet =
    "wresnet:layers=50,channels=4,width=1,image=16,classes=8,batch=2,"
    "stages=1-1";

BENCHMARK_CAPTURE(BM_Interpret, tiny_gpt_forward, std::string(kGpt) + ",training=0")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Interpret, tiny_gpt_training_step, std::string(kGpt))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Interpret, tiny_wresnet_forward, std::string(kResNet) + ",training=0")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Interpret, tiny_wresnet_training_step, std::string(kResNet))
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
