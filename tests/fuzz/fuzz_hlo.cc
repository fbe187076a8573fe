// libFuzzer target: the XLA HLO text importer (src/import/hlo/hlo_import.h). Every input ends in
// a graph or an error with a message; whatever imports is a valid graph that writes as JSON and
// reads back equal.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/ir/graph_json.h"
#include "import/hlo/hlo_import.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  alpa::Result<alpa::Graph> graph = alpa::ImportHloText(text);
  if (!graph.ok()) {
    if (graph.status().message().empty()) Fail("an error without a message");
    return 0;
  }
  const alpa::Status valid = alpa::ValidateGraph(graph.value());
  if (!valid.ok()) Fail("the importer returned an invalid graph: " + valid.message());
  alpa::Result<std::string> json = alpa::WriteGraphJson(graph.value());
  if (!json.ok()) Fail("writing failed: " + json.status().message());
  alpa::Result<alpa::Graph> back = alpa::ReadGraphBuffer(json.value());
  if (!back.ok()) Fail("reading back failed: " + back.status().message());
  if (!(back.value() == graph.value())) Fail("the JSON round trip changed the graph");
  return 0;
}
