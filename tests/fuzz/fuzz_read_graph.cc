// libFuzzer target: the JSON graph reader (core/ir/graph_json.h). Whatever parses must be a valid
// graph that writes, reads back equal, and writes the same bytes again.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/ir/graph_json.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  alpa::Result<alpa::Graph> graph = alpa::ReadGraphBuffer(bytes);
  if (!graph.ok()) {
    if (graph.status().message().empty()) Fail("an error without a message");
    return 0;
  }
  const alpa::Status valid = alpa::ValidateGraph(graph.value());
  if (!valid.ok()) Fail("the reader returned an invalid graph: " + valid.message());
  alpa::Result<std::string> text = alpa::WriteGraphJson(graph.value());
  if (!text.ok()) Fail("writing failed: " + text.status().message());
  alpa::Result<alpa::Graph> back = alpa::ReadGraphBuffer(text.value());
  if (!back.ok()) Fail("reading back failed: " + back.status().message());
  if (!(back.value() == graph.value())) Fail("the round trip changed the graph");
  alpa::Result<std::string> again = alpa::WriteGraphJson(back.value());
  if (!again.ok() || again.value() != text.value()) Fail("the writer is not deterministic");
  return 0;
}
