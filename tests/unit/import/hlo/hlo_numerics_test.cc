// Every op kind the importer handles, checked in numbers: each fixture is a real JAX function
// lowered to HLO (tests/fixtures/hlo/generate.py), and its .expected.json holds the inputs and
// what JAX computed from them. The imported graph, run by the CPU interpreter on the same
// inputs, must give the same outputs.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exec/cpu/interpreter.h"
#include "unit/import/hlo/hlo_fixture_util.h"

namespace alpa {
namespace {

HostTensor TensorFromJson(const nlohmann::json& j) {
  HostTensor t;
  t.shape = j.at("shape").get<Dims>();
  t.dtype = ParseDType(j.at("dtype").get<std::string>()).value();
  t.data = j.at("data").get<std::vector<double>>();
  return t;
}

void ExpectMatchesJax(const std::string& name) {
  SCOPED_TRACE(name);
  Graph graph = ImportFixture(name);
  ASSERT_FALSE(graph.ops.empty());
  nlohmann::json expected = nlohmann::json::parse(ReadHloFixture(name + ".expected.json"));
  HostFeeds feeds;
  const nlohmann::json& inputs = expected.at("inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    // The entry parameters are ops 0..P-1 in parameter order, the jit's flattened arguments.
    ASSERT_EQ(graph.op(static_cast<int32_t>(i)).kind, OpKind::kParameter);
    feeds[static_cast<int32_t>(i)] = TensorFromJson(inputs[i]);
  }
  Result<std::vector<HostTensor>> outputs = Interpret(graph, feeds, graph.outputs);
  ASSERT_TRUE(outputs.ok()) << outputs.status().message();
  const nlohmann::json& want = expected.at("outputs");
  ASSERT_EQ(outputs.value().size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    HostTensor w = TensorFromJson(want[o]);
    const HostTensor& got = outputs.value()[o];
    ASSERT_EQ(got.shape, w.shape) << "output " << o;
    ASSERT_EQ(got.dtype, w.dtype) << "output " << o;
    for (size_t k = 0; k < w.data.size(); ++k) {
      if (std::isnan(w.data[k])) {
        EXPECT_TRUE(std::isnan(got.data[k])) << "output " << o << " element " << k;
        continue;
      }
      EXPECT_NEAR(got.data[k], w.data[k], 2e-5 * (1 + std::fabs(w.data[k])))
          << "output " << o << " element " << k;
    }
  }
}

TEST(HloNumericsTest, ElementwiseAndComposedOps) { ExpectMatchesJax("elementwise"); }
TEST(HloNumericsTest, CompareSelectConvert) { ExpectMatchesJax("compare_select"); }
TEST(HloNumericsTest, DotWithBatchDims) { ExpectMatchesJax("dot_batch"); }
TEST(HloNumericsTest, ConvolutionStridedPaddedDilated) { ExpectMatchesJax("conv"); }
TEST(HloNumericsTest, ConvolutionNhwc) { ExpectMatchesJax("conv_nhwc"); }
TEST(HloNumericsTest, ReduceSumMaxMin) { ExpectMatchesJax("reduce"); }
TEST(HloNumericsTest, ReduceWindowMaxAndAvgPool) { ExpectMatchesJax("reduce_window"); }
TEST(HloNumericsTest, SelectAndScatterFromMaxPoolGradient) {
  ExpectMatchesJax("select_and_scatter");
}
TEST(HloNumericsTest, GatherRows) { ExpectMatchesJax("gather"); }
TEST(HloNumericsTest, GatherInnerAxisWithBoundsCheck) { ExpectMatchesJax("gather_axis1"); }
TEST(HloNumericsTest, ScatterAdd) { ExpectMatchesJax("scatter"); }
TEST(HloNumericsTest, SlicePadConcatenate) { ExpectMatchesJax("slice_pad_concat"); }
TEST(HloNumericsTest, IotaBroadcastArrayConstant) { ExpectMatchesJax("iota_broadcast"); }
TEST(HloNumericsTest, TransposeReshape) { ExpectMatchesJax("transpose_reshape"); }
TEST(HloNumericsTest, CallInlined) { ExpectMatchesJax("call"); }
TEST(HloNumericsTest, UnrolledScan) { ExpectMatchesJax("scan_unrolled"); }
TEST(HloNumericsTest, SgdTrainStep) { ExpectMatchesJax("sgd_step"); }
TEST(HloNumericsTest, AdamTrainStep) { ExpectMatchesJax("adam_step"); }
TEST(HloNumericsTest, LanguageModelStepWithTiedEmbedding) { ExpectMatchesJax("lm_step"); }

}  // namespace
}  // namespace alpa
