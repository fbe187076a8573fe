// The interpreter on the model zoo's tiny GPT training step (forward, autodiff backward, Adam
// update): it runs and the loss is plausible. (Its speed is measured by bench/interpreter_bench.)
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "exec/cpu/interpreter.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

// The zoo's tiny GPT training step (forward, autodiff backward, Adam update).
TEST(InterpretModel, TinyGptTrainingStepLossNearLogVocab) {
  Result<Graph> model =
      BuildModel("gpt:hidden=32,layers=2,heads=2,seq=16,vocab=64,batch=2,dtype=f32,optimizer=adam");
  if (!model.ok()) GTEST_SKIP() << "model zoo not available: " << model.status().message();
  const Graph& g = model.value();
  HostFeeds feeds;
  for (int32_t id = 0; id < g.size(); ++id) {
    const Op& op = g.op(id);
    if (op.kind != OpKind::kParameter) continue;
    HostTensor t{op.shape, op.dtype, {}};
    int64_t n = 1;
    for (int64_t d : op.shape) n *= d;
    for (int64_t i = 0; i < n; ++i) {
      // Token ids / labels in range; small weights; positive optimizer state.
      t.data.push_back(IsInteger(op.dtype)
                           ? static_cast<double>((i * 7 + id) % 64)
                           : 0.02 * static_cast<double>((i * 13 + id) % 11 - 5) +
                                 (op.role == TensorRole::kOptimizerState ? 0.2 : 0.0));
    }
    feeds[id] = std::move(t);
  }
  Result<std::vector<HostTensor>> r = Interpret(g, feeds, g.outputs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r.value().empty());
  ASSERT_EQ(r.value()[0].data.size(), 1u);
  // Near-uniform logits over 64 classes: the loss is close to ln 64 = 4.16.
  EXPECT_TRUE(std::isfinite(r.value()[0].data[0]));
  EXPECT_NEAR(r.value()[0].data[0], std::log(64.0), 0.5);
}

}  // namespace
}  // namespace alpa
