// Issue 21, items 1 and 3: sizes past int64 in graph building. A builder handed an id that
// names no op fails instead of reading out of bounds; the tensors of a graph together stay below
// 2^63 bytes (builder and ValidateGraph), so byte sums over a graph cannot wrap; graph
// statistics never read negative.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/autodiff/optimizer.h"
#include "core/ir/graph.h"
#include "core/ir/graph_builder.h"
#include "core/ir/graph_stats.h"

namespace alpa {
namespace {

constexpr int64_t kTwoTo60 = int64_t{1} << 60;

TEST(GraphBuilderIds, AnIdThatNamesNoOpFailsTheBuildInsteadOfReadingOutOfBounds) {
  GraphBuilder b;
  const int32_t x = b.Parameter({4}, DType::kF32, TensorRole::kInput, "x");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b.shape(-1).empty());
  EXPECT_EQ(b.dtype(x + 7), DType::kF32);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidGraph);
  EXPECT_NE(b.status().message().find("op -1 does not exist"), std::string::npos)
      << b.status().message();
  // The first error is kept; later calls do nothing.
  EXPECT_EQ(b.Add(x, x), -1);
  EXPECT_NE(b.status().message().find("op -1"), std::string::npos);
}

TEST(GraphBuilderSizes, CheckedProductFailsOnOverflowNamingWhat) {
  GraphBuilder b;
  EXPECT_EQ(b.CheckedProduct(3, 1000, "width"), 3000);
  EXPECT_TRUE(b.ok());
  EXPECT_EQ(b.CheckedProduct(4, std::numeric_limits<int64_t>::max() / 2, "the MLP width"), 0);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("the MLP width"), std::string::npos) << b.status().message();
}

TEST(GraphBuilderSizes, TensorsPast2To63BytesInAllAreRefusedNamingTheOp) {
  GraphBuilder b;
  // 2^62 bytes each: two fit (2^63 - 1 is the limit), the second brings the total to 2^63.
  b.Parameter({kTwoTo60}, DType::kF32, TensorRole::kParameter, "a");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b.Parameter({kTwoTo60}, DType::kF32, TensorRole::kParameter, "b"), -1);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidGraph);
  EXPECT_NE(b.status().message().find("op 1 'b'"), std::string::npos) << b.status().message();
  EXPECT_NE(b.status().message().find("2^63"), std::string::npos) << b.status().message();
}

TEST(ValidateGraphSizes, RefusesAGraphWhoseTensorsTotal2To63Bytes) {
  Graph g;
  for (int i = 0; i < 2; ++i) {
    Op op;
    op.kind = OpKind::kParameter;
    op.shape = {kTwoTo60};
    op.dtype = DType::kF32;
    op.role = TensorRole::kParameter;
    op.name = "w" + std::to_string(i);
    g.ops.push_back(op);
  }
  const Status s = ValidateGraph(g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidGraph);
  EXPECT_NE(s.message().find("op 1 'w1'"), std::string::npos) << s.message();
}

// The crash of issue 21: the f32 master copy of an f16 parameter fails (it would bring the
// graph past 2^63 bytes) and its -1 id was read before any check.
TEST(AppendOptimizerSizes, AFailedMasterCopyIsAnErrorNamingItNotACrash) {
  GraphBuilder b;
  // f16 [2^60]: 2^61 bytes for the parameter and as much for its gradient; the f32 master
  // copy (2^62 bytes) brings the total to 2^63.
  const int32_t p = b.Parameter({kTwoTo60}, DType::kF16, TensorRole::kParameter, "w");
  const int32_t g = b.Parameter({kTwoTo60}, DType::kF16, TensorRole::kGradient, "w.grad");
  ASSERT_TRUE(b.ok()) << b.status().message();
  OptimizerConfig config;
  config.kind = OptimizerKind::kAdam;
  config.master_weights = true;
  const Status s = AppendOptimizer(b, {p}, {g}, config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidGraph);
  EXPECT_NE(s.message().find("w.master"), std::string::npos) << s.message();
}

// The master copy alone past 2^63 bytes (the per-op check), as in
// `alpa graph --model mlp:hidden=2000000000,dtype=f16` before the graph-wide bound: the id of the
// failed state was used at once.
TEST(AppendOptimizerSizes, AMasterCopyPast2To63BytesIsAnErrorNotACrash) {
  GraphBuilder b;
  const int32_t p = b.Parameter({2 * kTwoTo60 + 1}, DType::kF16, TensorRole::kParameter, "w");
  ASSERT_TRUE(b.ok()) << b.status().message();
  OptimizerConfig config;
  config.kind = OptimizerKind::kSgd;
  config.master_weights = true;
  const Status s = AppendOptimizer(b, {p}, {p}, config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidGraph);
  EXPECT_NE(s.message().find("w.master"), std::string::npos) << s.message();
}

// graph_stats.cc summed int64 bytes that wrapped ("optimizer state -2072.5 PiB"). A validated
// graph cannot reach the limit; an unvalidated one reads INT64_MAX, never a negative total.
TEST(GraphStatsSizes, ByteTotalsNeverWrapNegative) {
  Graph g;
  for (int i = 0; i < 3; ++i) {
    Op op;
    op.kind = OpKind::kParameter;
    op.shape = {kTwoTo60};
    op.dtype = DType::kF32;
    op.role = TensorRole::kOptimizerState;
    g.ops.push_back(op);
  }
  const GraphStats stats = ComputeGraphStats(g);
  EXPECT_EQ(stats.optimizer_state_bytes, std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace alpa
