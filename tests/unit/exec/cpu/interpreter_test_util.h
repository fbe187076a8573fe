// Shared helpers of the interpreter tests: a graph builder that records feeds, and a runner.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/graph_builder.h"
#include "exec/cpu/interpreter.h"

namespace alpa {
namespace testing_interp {

// A GraphBuilder whose parameters carry their values, so a test reads as "inputs, op, expected".
struct Case {
  GraphBuilder b;
  HostFeeds feeds;

  int32_t Param(Dims shape, std::vector<double> data, DType dtype = DType::kF64) {
    const int32_t id =
        b.Parameter(shape, dtype, TensorRole::kInput, "p" + std::to_string(feeds.size()));
    feeds[id] = HostTensor{std::move(shape), dtype, std::move(data)};
    return id;
  }

  // Interprets the graph built so far and returns the value of op `id` (empty on failure,
  // with a test failure recorded).
  HostTensor Run(int32_t id) {
    EXPECT_TRUE(b.ok()) << b.status().message();
    if (!b.ok()) return {};
    Result<std::vector<HostTensor>> r = Interpret(b.graph(), feeds, {id});
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return {};
    return r.value()[0];
  }
  std::vector<double> Values(int32_t id) { return Run(id).data; }
};

}  // namespace testing_interp
}  // namespace alpa
