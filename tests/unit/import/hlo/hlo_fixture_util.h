// Reading the HLO fixtures of tests/fixtures/hlo (real lowered JAX functions, written by
// tests/fixtures/hlo/generate.py) in the importer's tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/ir/graph.h"
#include "import/hlo/hlo_import.h"

namespace alpa {

inline std::string HloFixturePath(const std::string& name) {
  return std::string(ALPA_TEST_DATA_DIR) + "/../fixtures/hlo/" + name;
}

inline std::string ReadHloFixture(const std::string& name) {
  std::ifstream in(HloFixturePath(name), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The imported graph of fixture <name>.hlo (fails the test when the import fails).
inline Graph ImportFixture(const std::string& name) {
  Result<Graph> graph = ImportHloText(ReadHloFixture(name + ".hlo"));
  EXPECT_TRUE(graph.ok()) << name << ": " << graph.status().message();
  return graph.ok() ? graph.value() : Graph{};
}

inline int CountKind(const Graph& graph, OpKind kind) {
  int n = 0;
  for (const Op& op : graph.ops) n += op.kind == kind ? 1 : 0;
  return n;
}

inline const Op* FirstOfKind(const Graph& graph, OpKind kind) {
  for (const Op& op : graph.ops) {
    if (op.kind == kind) return &op;
  }
  return nullptr;
}

}  // namespace alpa
