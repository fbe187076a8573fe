// The importer's mapping of HLO instructions to IR ops (kinds, shapes, attributes), the roles,
// phases, aliases and layers of real JAX train steps, and its errors.
#include "import/hlo/hlo_import.h"

#include <map>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "import/hlo/hlo_layers.h"
#include "unit/import/hlo/hlo_fixture_util.h"

namespace alpa {
namespace {

using ::testing::HasSubstr;

TEST(HloImportTest, DotKeepsBatchAndContractingDims) {
  Graph graph = ImportFixture("dot_batch");
  const Op* dot = FirstOfKind(graph, OpKind::kDotGeneral);
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(dot->attrs.dot.lhs_batch, (Dims{0}));
  EXPECT_EQ(dot->attrs.dot.rhs_batch, (Dims{0}));
  EXPECT_EQ(dot->attrs.dot.lhs_contracting, (Dims{2}));
  EXPECT_EQ(dot->attrs.dot.rhs_contracting, (Dims{1}));
  EXPECT_EQ(dot->shape, (Dims{2, 3, 5}));
}

TEST(HloImportTest, ConvolutionWindowBecomesStridesPaddingDilation) {
  Graph graph = ImportFixture("conv");
  const Op* conv = FirstOfKind(graph, OpKind::kConvolution);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->attrs.strides, (Dims{2, 1}));
  EXPECT_EQ(conv->attrs.padding_lo, (Dims{1, 0}));
  EXPECT_EQ(conv->attrs.padding_hi, (Dims{1, 1}));
  EXPECT_EQ(conv->attrs.rhs_dilation, (Dims{1, 2}));
  EXPECT_EQ(CountKind(graph, OpKind::kTranspose), 0);  // already NCHW / OIHW
  // NHWC / HWIO: transposes into the IR's layout and back.
  Graph nhwc = ImportFixture("conv_nhwc");
  EXPECT_EQ(CountKind(nhwc, OpKind::kTranspose), 3);
  EXPECT_EQ(nhwc.op(nhwc.outputs[0]).shape, (Dims{2, 8, 8, 4}));
}

TEST(HloImportTest, ReduceToApplyChoosesSumMaxMin) {
  Graph graph = ImportFixture("reduce");
  EXPECT_EQ(CountKind(graph, OpKind::kReduceSum), 1);
  EXPECT_EQ(CountKind(graph, OpKind::kReduceMax), 2);  // max, and min as -max(-x)
  EXPECT_EQ(FirstOfKind(graph, OpKind::kReduceSum)->attrs.dims, (Dims{1}));
  EXPECT_EQ(FirstOfKind(graph, OpKind::kReduceMax)->attrs.dims, (Dims{0, 2}));
}

TEST(HloImportTest, WindowsAndSelectAndScatter) {
  Graph pools = ImportFixture("reduce_window");
  ASSERT_EQ(CountKind(pools, OpKind::kReduceWindow), 2);
  const Op* max_pool = FirstOfKind(pools, OpKind::kReduceWindow);
  EXPECT_EQ(max_pool->attrs.reduce, ReduceKind::kMax);
  EXPECT_EQ(max_pool->attrs.window, (Dims{1, 1, 2, 2}));
  EXPECT_EQ(max_pool->attrs.strides, (Dims{1, 1, 2, 2}));
  Graph grad = ImportFixture("select_and_scatter");
  const Op* sas = FirstOfKind(grad, OpKind::kSelectAndScatter);
  ASSERT_NE(sas, nullptr);
  EXPECT_EQ(sas->shape, (Dims{2, 3, 8, 8}));
}

TEST(HloImportTest, GatherAndScatterIndexOneAxis) {
  Graph gather = ImportFixture("gather");
  ASSERT_NE(FirstOfKind(gather, OpKind::kGather), nullptr);
  EXPECT_EQ(FirstOfKind(gather, OpKind::kGather)->attrs.axis, 0);
  Graph inner = ImportFixture("gather_axis1");
  EXPECT_EQ(FirstOfKind(inner, OpKind::kGather)->attrs.axis, 1);
  Graph scatter = ImportFixture("scatter");
  ASSERT_NE(FirstOfKind(scatter, OpKind::kScatterAdd), nullptr);
  EXPECT_EQ(FirstOfKind(scatter, OpKind::kScatterAdd)->shape, (Dims{5, 4}));
}

TEST(HloImportTest, DataMovementAndSources) {
  Graph graph = ImportFixture("slice_pad_concat");
  const Op* slice = FirstOfKind(graph, OpKind::kSlice);
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ(slice->attrs.starts, (Dims{1, 0}));
  EXPECT_EQ(slice->attrs.strides, (Dims{1, 2}));
  const Op* pad = FirstOfKind(graph, OpKind::kPad);
  ASSERT_NE(pad, nullptr);  // its value came through a call and a convert
  EXPECT_EQ(pad->attrs.padding_lo, (Dims{1, 0}));
  EXPECT_EQ(pad->attrs.padding_hi, (Dims{0, 2}));
  EXPECT_EQ(CountKind(graph, OpKind::kConcatenate), 1);
  Graph iota = ImportFixture("iota_broadcast");
  EXPECT_EQ(CountKind(iota, OpKind::kIota), 1);
  // The array constant {1, 2, 3, 4}: four splats concatenated.
  EXPECT_EQ(CountKind(iota, OpKind::kConstant), 4);
  Graph moved = ImportFixture("transpose_reshape");
  EXPECT_EQ(FirstOfKind(moved, OpKind::kTranspose)->attrs.dims, (Dims{2, 0, 1}));
  EXPECT_EQ(CountKind(moved, OpKind::kReshape), 1);
}

TEST(HloImportTest, CallsAreInlined) {
  Graph graph = ImportFixture("call");
  EXPECT_EQ(CountKind(graph, OpKind::kTanh), 1);
  Graph scan = ImportFixture("scan_unrolled");
  EXPECT_EQ(CountKind(scan, OpKind::kAdd), 4);  // one per unrolled step
}

TEST(HloImportTest, SgdStepRolesPhasesAliasesLayers) {
  Graph graph = ImportFixture("sgd_step");
  // params (3 layers x kernel, bias), then x and y: pytree order.
  std::set<std::string> weights;
  int inputs = 0;
  for (const Op& op : graph.ops) {
    if (op.kind != OpKind::kParameter) continue;
    if (op.role == TensorRole::kParameter) weights.insert(op.name);
    if (op.role == TensorRole::kInput) ++inputs;
  }
  EXPECT_EQ(weights.size(), 6u);
  EXPECT_EQ(weights.count("params['layers'][1]['kernel']"), 1u);
  EXPECT_EQ(inputs, 2);
  // The loss first, then one update per weight, each aliasing it and in the update phase.
  ASSERT_EQ(graph.outputs.size(), 7u);
  const Op& loss = graph.op(graph.outputs[0]);
  EXPECT_TRUE(loss.shape.empty());
  EXPECT_EQ(loss.phase, Phase::kForward);
  for (size_t i = 1; i < graph.outputs.size(); ++i) {
    const Op& update = graph.op(graph.outputs[i]);
    ASSERT_GE(update.alias_of, 0);
    EXPECT_EQ(graph.op(update.alias_of).role, TensorRole::kParameter);
    EXPECT_EQ(update.phase, Phase::kUpdate);
    EXPECT_EQ(update.kind, OpKind::kSub);  // w - lr * g
    EXPECT_EQ(update.layer, graph.op(update.alias_of).layer);
  }
  int gradients = 0;
  std::set<int32_t> layers;
  for (const Op& op : graph.ops) {
    if (op.role == TensorRole::kGradient) {
      ++gradients;
      EXPECT_EQ(op.phase, Phase::kBackward);
    }
    if (op.phase == Phase::kForward) layers.insert(op.layer);
  }
  EXPECT_EQ(gradients, 6);
  EXPECT_EQ(layers, (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(graph.op(1).layer, 0);  // params['layers'][0]['kernel']
  EXPECT_EQ(graph.op(5).layer, 2);
}

TEST(HloImportTest, AdamStepOptimizerStateIsDonatedButNotReadByTheLoss) {
  Graph graph = ImportFixture("adam_step");
  int weights = 0, state = 0, inputs = 0;
  for (const Op& op : graph.ops) {
    if (op.kind != OpKind::kParameter) continue;
    if (op.role == TensorRole::kParameter) ++weights;
    if (op.role == TensorRole::kOptimizerState) {
      ++state;
      EXPECT_EQ(op.name.rfind("opt_state[", 0), 0u) << op.name;
    }
    if (op.role == TensorRole::kInput) ++inputs;
  }
  EXPECT_EQ(weights, 6);
  EXPECT_EQ(state, 13);  // mu and nu per weight, and the step count
  EXPECT_EQ(inputs, 2);
  // Every donated parameter is replaced by exactly one output.
  ASSERT_EQ(graph.outputs.size(), 20u);
  std::set<int32_t> replaced;
  for (size_t i = 1; i < graph.outputs.size(); ++i) {
    replaced.insert(graph.op(graph.outputs[i]).alias_of);
    EXPECT_EQ(graph.op(graph.outputs[i]).phase, Phase::kUpdate);
  }
  EXPECT_EQ(replaced.size(), 19u);
}

TEST(HloImportTest, TiedEmbeddingHasOneGradientSummingBothUses) {
  Graph graph = ImportFixture("lm_step");
  int gradients = 0;
  for (const Op& op : graph.ops) {
    if (op.role != TensorRole::kGradient) continue;
    ++gradients;
    if (op.shape == Dims{11, 8}) {
      // The lookup's scatter plus the head's dot (JAX's add_any).
      EXPECT_EQ(op.kind, OpKind::kAdd);
    }
  }
  EXPECT_EQ(gradients, 3);  // wte, fc, proj: one each
  EXPECT_EQ(graph.op(0).name, "params['fc']");
  EXPECT_EQ(graph.op(2).name, "params['wte']");
  EXPECT_EQ(graph.op(2).role, TensorRole::kParameter);
  EXPECT_EQ(graph.op(3).role, TensorRole::kInput);  // tokens
}

TEST(HloImportTest, ForwardFunctionsAreForwardOnlyWithInputs) {
  Graph graph = ImportFixture("elementwise");
  for (const Op& op : graph.ops) {
    EXPECT_EQ(op.phase, Phase::kForward);
    EXPECT_EQ(op.layer, 0);
    EXPECT_EQ(op.alias_of, -1);
    if (op.kind == OpKind::kParameter) {
      EXPECT_EQ(op.role, TensorRole::kInput);
    }
  }
}

TEST(HloImportTest, LayerMarkersFromScopesAndPytreePaths) {
  EXPECT_EQ(LayerMarker("jit(step)/transpose(jvp(layers_3))/dot_general"), 3);
  EXPECT_EQ(LayerMarker("params['layers'][7]['kernel']"), 7);
  EXPECT_EQ(LayerMarker("jit(step)/h_11/attn/dot_general"), 11);
  EXPECT_EQ(LayerMarker("jit(step)/blocks/2/mlp"), 2);
  EXPECT_EQ(LayerMarker("jit(step)/jvp(Dense_0)/dot_general"), std::nullopt);
  EXPECT_EQ(LayerMarker("jit(step)/sub"), std::nullopt);
}

Status ImportError(const std::string& text) {
  Result<Graph> graph = ImportHloText(text);
  EXPECT_FALSE(graph.ok());
  return graph.status();
}

TEST(HloImportTest, WhileLoopNamesTheInstructionLineAndTheUnrolling) {
  Status status = ImportError(ReadHloFixture("scan.hlo"));
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_THAT(status.message(), HasSubstr("line 72, column 3: instruction \"while.5\" (while)"));
  EXPECT_THAT(status.message(), HasSubstr("jax.lax.scan(..., unroll=True)"));
}

TEST(HloImportTest, DynamicSliceNeedsConstantStarts) {
  Status runtime = ImportError(ReadHloFixture("dynamic_slice.hlo"));
  EXPECT_THAT(runtime.message(),
              HasSubstr("instruction \"dynamic_slice.1\" (dynamic-slice): start index 0 must be "
                        "a constant"));
  // With constant starts (JAX folds those into a slice itself; other producers may not), a
  // slice clamped into range as HLO defines it.
  Result<Graph> graph = ImportHloText(
      "HloModule m\nENTRY e {\n  a = f32[4,6] parameter(0)\n  i = s32[] constant(3)\n"
      "  j = s32[] constant(-2)\n  ROOT d = f32[2,3] dynamic-slice(a, i, j), "
      "dynamic_slice_sizes={2,3}\n}\n");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const Op* slice = FirstOfKind(graph.value(), OpKind::kSlice);
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ(slice->attrs.starts, (Dims{2, 0}));
  EXPECT_EQ(slice->attrs.limits, (Dims{4, 3}));
}

// Every op keeps the op_name of the instruction it was lowered from (the ops a `call` inlines
// included), so that a plan's layouts can be mapped back to the program.
TEST(HloImportTest, OpsKeepTheirInstructionsOpNameAsSource) {
  Result<Graph> graph = ImportHloText(
      "HloModule m\n"
      "f {\n  p = f32[2,2] parameter(0)\n"
      "  t = f32[2,2] tanh(p), metadata={op_name=\"jit(f)/tanh\"}\n"
      "  ROOT u = f32[2,2] exponential(t), metadata={op_name=\"jit(step)/call/exp\"}\n}\n"
      "ENTRY e {\n  a = f32[2,2] parameter(0), metadata={op_name=\"x\"}\n"
      "  d = f32[2,2] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
      "metadata={op_name=\"jit(step)/jvp(layers_1)/dot_general\" source_line=3}\n"
      "  c = f32[2,2] call(d), to_apply=f, metadata={op_name=\"jit(step)/call\"}\n"
      "  ROOT n = f32[2,2] negate(c)\n}\n");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  std::map<std::string, std::string> source_by_name;
  for (const Op& op : graph.value().ops) source_by_name[op.name] = op.source;
  EXPECT_EQ(source_by_name["x"], "x");
  EXPECT_EQ(source_by_name["d"], "jit(step)/jvp(layers_1)/dot_general");
  // The call's own op_name is the inlined ops' prefix (JAX prints a nested jit's instructions
  // without the caller's name stack); an op_name that already starts with it is kept.
  EXPECT_EQ(source_by_name["t"], "jit(step)/call/jit(f)/tanh");
  EXPECT_EQ(source_by_name["u"], "jit(step)/call/exp");
  EXPECT_EQ(source_by_name["n"], "");
}

TEST(HloImportTest, NamesAndMessagesStayPrintableUtf8) {
  Result<Graph> graph = ImportHloText(
      "HloModule m\nENTRY e {\n  ROOT a = f32[2] parameter(0), metadata={op_name=\"w\x92\"}\n}\n");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_EQ(graph.value().op(0).name, "w\\x92");
  EXPECT_EQ(graph.value().op(0).source, "w\\x92");
  Status status = ImportError(
      "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n"
      "  ROOT c = pred[2] compare(a, a), direction=\x01X\n}\n");
  EXPECT_THAT(status.message(), HasSubstr("unknown comparison direction \"\\x01X\""));
}

// Window dims out of the result's range, repeated or out of order are an error naming the
// attribute (fuzz_hlo found offset_dims={2} on a rank-2 gather writing past its permutation).
TEST(HloImportTest, GatherAndScatterWindowDimsAreChecked) {
  const std::string head =
      "HloModule m\nENTRY e {\n  t = f32[5,4] parameter(0)\n  i = s32[3,1] parameter(1)\n";
  const std::string gather =
      "  ROOT g = f32[3,4] gather(t, i), offset_dims={%s}, collapsed_slice_dims={0}, "
      "start_index_map={%s}, index_vector_dim=1, slice_sizes={1,4}\n}\n";
  auto text = [&](const std::string& offset, const std::string& start) {
    std::string body = gather;
    body.replace(body.find("%s"), 2, offset);
    body.replace(body.find("%s"), 2, start);
    return head + body;
  };
  ASSERT_TRUE(ImportHloText(text("1", "0")).ok());
  for (const char* offset : {"2", "-1", "0,1"}) {
    Status status = ImportError(text(offset, "0"));
    EXPECT_EQ(status.code(), StatusCode::kParse) << offset;
    EXPECT_THAT(status.message(), HasSubstr("instruction \"g\" (gather): offset_dims must be "
                                            "increasing dims of the result"))
        << offset;
  }
  Status axis = ImportError(text("1", "7"));
  EXPECT_THAT(axis.message(), HasSubstr("only a gather of whole slices along one axis"));
  Status scatter = ImportError(
      "HloModule m\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
      "  ROOT z = f32[] add(x, y)\n}\nENTRY e {\n  t = f32[5,4,4] parameter(0)\n"
      "  i = s32[3,1] parameter(1)\n  u = f32[3,4,4] parameter(2)\n"
      "  ROOT s = f32[5,4,4] scatter(t, i, u), update_window_dims={1,1}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n");
  EXPECT_THAT(scatter.message(), HasSubstr("update_window_dims must be increasing dims"));
}

TEST(HloImportTest, UnsupportedInstructionsAreNamed) {
  const std::string head = "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n";
  Status custom =
      ImportError(head + "  ROOT c = f32[4] custom-call(a), custom_call_target=\"x\"\n}\n");
  EXPECT_EQ(custom.code(), StatusCode::kUnsupported);
  EXPECT_THAT(custom.message(), HasSubstr("line 4, column 8: instruction \"c\" (custom-call): "
                                          "a custom-call is opaque"));
  Status cosine = ImportError(head + "  ROOT c = f32[4] cosine(a)\n}\n");
  EXPECT_THAT(cosine.message(), HasSubstr("instruction \"c\" (cosine): the opcode has no IR "
                                          "equivalent"));
  Status type = ImportError("HloModule m\nENTRY e {\n  ROOT a = u32[4] parameter(0)\n}\n");
  EXPECT_THAT(type.message(), HasSubstr("element type u32 is not supported"));
  Status undefined = ImportError(head + "  ROOT c = f32[4] add(a, b)\n}\n");
  EXPECT_EQ(undefined.code(), StatusCode::kParse);
  EXPECT_THAT(undefined.message(), HasSubstr("operand \"b\" is not defined before its use"));
  Status shape = ImportError(head + "  ROOT c = f32[5] negate(a)\n}\n");
  EXPECT_THAT(shape.message(), HasSubstr("imported as f32[4] but the HLO states f32[5]"));
  Status cycle = ImportError(
      "HloModule m\nf {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=f\n}\n"
      "ENTRY e {\n  a = f32[] parameter(0)\n  ROOT c = f32[] call(a), to_apply=f\n}\n");
  EXPECT_THAT(cycle.message(), HasSubstr("computation \"f\" calls itself"));
  Status reducer = ImportError(
      "HloModule m\nr {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
      "  ROOT z = f32[] multiply(x, y)\n}\nENTRY e {\n  a = f32[4] parameter(0)\n"
      "  c = f32[] constant(1)\n  ROOT s = f32[] reduce(a, c), dimensions={0}, to_apply=r\n}\n");
  EXPECT_THAT(reducer.message(), HasSubstr("a reduce whose to_apply computes \"multiply\""));
}

}  // namespace
}  // namespace alpa
