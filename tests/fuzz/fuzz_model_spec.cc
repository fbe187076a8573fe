// libFuzzer target: model-zoo specs (src/models/model_zoo.h). Every spec parses to a
// ModelSpec or an error that names the spec; a parsed spec of a small model builds its training
// graph, or fails with a status that says why (never a crash, never a wrapped size). A graph
// that builds is valid and its statistics are never negative.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/ir/graph.h"
#include "core/ir/graph_stats.h"
#include "models/model_zoo.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  __builtin_trap();
}

// Keys whose value multiplies the ops of the graph (not just the sizes, which are symbolic):
// the fuzzer builds only specs with few ops, so that an execution stays within milliseconds.
// Sizes (hidden, batch, seq, ...) stay unbounded: the library must refuse what overflows.
bool SmallEnough(const alpa::ModelSpec& spec) {
  if (!spec.preset.empty()) return false;  // presets are tens of layers
  for (const auto& [key, value] : spec.keys) {
    const bool counts_ops = key == "layers" || key == "experts" || key == "moe_every";
    if (counts_ops) {
      char* end = nullptr;
      const long long n = std::strtoll(value.c_str(), &end, 10);
      if (end == value.c_str() || n > 3) return false;
    }
    if (key == "stages" && value.size() > 7) return false;  // up to four 1-digit stages
  }
  // wresnet: its 50-layer default unless stages says otherwise.
  if (spec.family == "wresnet" && spec.keys.count("stages") && spec.keys.at("stages").empty()) {
    return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  alpa::Result<alpa::ModelSpec> spec = alpa::ParseModelSpec(text);
  if (!spec.ok()) {
    if (spec.status().message().empty()) Fail("a parse error without a message");
    return 0;
  }
  if (!SmallEnough(spec.value())) return 0;
  alpa::Result<alpa::Graph> graph = alpa::BuildModel(spec.value());
  if (!graph.ok()) {
    const alpa::StatusCode code = graph.status().code();
    if (code != alpa::StatusCode::kInvalidArgument && code != alpa::StatusCode::kInvalidGraph) {
      Fail("unexpected status " + std::to_string(static_cast<int>(code)) + ": " +
           graph.status().message());
    }
    if (graph.status().message().empty()) Fail("a build error without a message");
    return 0;
  }
  const alpa::Status valid = alpa::ValidateGraph(graph.value());
  if (!valid.ok()) Fail("built an invalid graph: " + valid.message());
  const alpa::GraphStats stats = alpa::ComputeGraphStats(graph.value());
  if (stats.parameter_bytes < 0 || stats.optimizer_state_bytes < 0 || stats.gradient_bytes < 0 ||
      stats.input_bytes < 0 || stats.parameter_count < 0 || stats.activation_bytes < 0) {
    Fail("negative graph statistics for " + text);
  }
  return 0;
}
