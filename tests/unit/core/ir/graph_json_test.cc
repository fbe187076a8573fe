// The JSON graph format: lossless round trips of every op kind and attribute, non-finite
// constants, and the error (code and message) of each kind of malformed or invalid input.
#include "core/ir/graph_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "core/ir/graph_builder.h"
#include "models/model_zoo.h"
#include "support/test_data.h"

namespace alpa {
namespace {

// A graph with every op kind, every attribute, every role and phase, names, an alias, layers
// (including -1), outputs, non-finite constants and a stray attribute. Also the source of
// tests/golden/graph_all_kinds.json (regenerate with ALPA_WRITE_GOLDEN=1).
Graph AllKindsGraph() {
  GraphBuilder b;
  const double inf = std::numeric_limits<double>::infinity();
  int32_t x = b.Parameter({2, 3, 4}, DType::kF32, TensorRole::kInput, "x");
  int32_t w = b.Parameter({4, 5}, DType::kF32, TensorRole::kParameter, "w");
  int32_t m = b.Parameter({4, 5}, DType::kF32, TensorRole::kOptimizerState, "w.momentum");
  int32_t c = b.Constant(0.1, {2, 3, 4}, DType::kF32);
  b.SetName(c, "tenth");
  b.Constant(inf, {}, DType::kF32);
  b.Constant(-inf, {2}, DType::kF64);
  b.Constant(std::nan(""), {1}, DType::kF16);
  b.Constant(-0.0, {}, DType::kBF16);
  b.Constant(1e-300, {3}, DType::kF64);
  b.Constant(12345678901234567.0, {}, DType::kF64);
  b.Constant(7, {2}, DType::kS8);
  b.Constant(1, {2}, DType::kPred);
  for (OpKind k : {OpKind::kNeg, OpKind::kAbs, OpKind::kExp, OpKind::kLog, OpKind::kTanh,
                   OpKind::kSqrt, OpKind::kRsqrt, OpKind::kGelu, OpKind::kRelu}) {
    b.Unary(k, x);
  }
  b.Convert(x, DType::kF16);
  for (OpKind k : {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kMax,
                   OpKind::kMin, OpKind::kPow}) {
    b.Binary(k, x, c);
  }
  int32_t lt = b.Compare(Comparison::kLt, x, c);
  b.Compare(Comparison::kGe, x, c);
  b.Select(lt, x, c);
  b.set_layer(1);
  int32_t dot = b.MatMul(x, w);
  b.SetName(dot, "attn.qkv");
  int32_t y = b.Parameter({2, 4, 6}, DType::kF32, TensorRole::kInput, "y");
  DotDims batched;
  batched.lhs_batch = {0};
  batched.rhs_batch = {0};
  batched.lhs_contracting = {2};
  batched.rhs_contracting = {1};
  b.DotGeneral(x, y, batched);
  int32_t img = b.Parameter({1, 2, 5, 5}, DType::kF32, TensorRole::kInput, "image");
  int32_t kernel = b.Parameter({4, 1, 3, 3}, DType::kF32, TensorRole::kParameter, "kernel");
  b.Convolution(img, kernel, {2, 1}, {1, 0}, {1, 2}, {1, 2}, {2, 1}, 2);
  int32_t bias = b.Parameter({3}, DType::kF32, TensorRole::kParameter, "bias");
  b.BroadcastInDim(bias, {2, 3, 4}, {1});
  b.Reshape(x, {6, 4});
  b.Transpose(x, {2, 0, 1});
  b.Slice(x, {0, 1, 0}, {2, 3, 4}, {1, 1, 2});
  b.Concatenate({x, c, x}, 1);
  b.Pad(x, -inf, {1, 0, -1}, {0, 2, 0}, {0, 1, 0});
  b.Reverse(x, {0, 2});
  b.set_layer(-1);
  b.ReduceSum(x, {1});
  b.ReduceMax(x, {0, 2});
  b.ReduceWindow(ReduceKind::kMax, img, {1, 1, 2, 2}, {1, 1, 2, 2}, {0, 0, 0, 0}, {0, 0, 1, 1});
  b.ReduceWindow(ReduceKind::kSum, img, {1, 2, 3, 3}, {1, 1, 1, 1}, {0, 0, 1, 1}, {0, 0, 1, 1});
  int32_t source = b.Parameter({1, 2, 3, 3}, DType::kF32, TensorRole::kActivation, "source");
  b.SelectAndScatter(img, source, {1, 1, 2, 2}, {1, 1, 2, 2}, {0, 0, 0, 0}, {0, 0, 1, 1});
  int32_t idx = b.Iota({3}, DType::kS32, 0);
  b.Iota({2, 7}, DType::kS64, 1);
  int32_t rows = b.Gather(w, idx, 0);
  b.ScatterAdd(w, idx, rows, 0);
  // A stray attribute (add reads none): kept by the format all the same.
  Op stray;
  stray.kind = OpKind::kAdd;
  stray.operands = {x, c};
  stray.attrs.axis = 3;
  stray.attrs.window = {9};
  b.Add(stray);
  b.set_phase(Phase::kBackward);
  b.set_layer(2);
  int32_t loss = b.ReduceSum(dot, {0, 1, 2});
  int32_t grad = b.Mul(w, b.ScalarLike(2.0, w));
  b.SetRole(grad, TensorRole::kGradient);
  b.set_phase(Phase::kUpdate);
  int32_t new_m = b.Add(m, grad);
  b.SetAlias(new_m, m);
  int32_t new_w = b.Sub(w, b.Scale(new_m, 0.01));
  b.SetAlias(new_w, w);
  b.SetRole(new_w, TensorRole::kParameter);
  b.SetName(new_w, "w.new \"quoted\" \xc3\xa9");
  b.AddOutput(loss);
  b.AddOutput(new_w);
  b.AddOutput(new_m);
  Result<Graph> g = std::move(b).Finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? g.value() : Graph{};
}

// A two-layer MLP step, also built by arrays through the C ABI in tests/unit/capi and
// tests/capi (they compare against tests/golden/graph_mlp.json, written from this graph).
Graph MlpGraph() {
  GraphBuilder b;
  int32_t x = b.Parameter({8, 4}, DType::kF32, TensorRole::kInput, "x");
  int32_t w1 = b.Parameter({4, 16}, DType::kF32, TensorRole::kParameter, "w1");
  int32_t b1 = b.Parameter({16}, DType::kF32, TensorRole::kParameter, "b1");
  int32_t xw = b.MatMul(x, w1);  // sequenced: argument order is unspecified in C++
  int32_t h = b.Add(xw, b.BroadcastInDim(b1, {8, 16}, {1}));
  int32_t r = b.Unary(OpKind::kRelu, h);
  b.set_layer(1);
  int32_t w2 = b.Parameter({16, 2}, DType::kF32, TensorRole::kParameter, "w2");
  int32_t o = b.MatMul(r, w2);
  int32_t loss = b.ReduceSum(b.Mul(o, o), {0, 1});
  b.SetName(loss, "loss");
  b.set_phase(Phase::kUpdate);
  int32_t new_w2 = b.Sub(w2, b.Scale(w2, 0.01));
  b.SetName(new_w2, "w2.new");
  b.SetAlias(new_w2, w2);
  b.AddOutput(loss);
  b.AddOutput(new_w2);
  Result<Graph> g = std::move(b).Finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? g.value() : Graph{};
}

Graph RoundTrip(const Graph& g) {
  Result<std::string> text = WriteGraphJson(g);
  EXPECT_TRUE(text.ok()) << text.status().message();
  if (!text.ok()) return {};
  Result<Graph> back = ReadGraphBuffer(text.value());
  EXPECT_TRUE(back.ok()) << back.status().message() << "\n" << text.value();
  return back.ok() ? back.value() : Graph{};
}

TEST(GraphJson, RoundTripsEveryKindAndAttribute) {
  const Graph g = AllKindsGraph();
  ASSERT_GT(g.size(), 60);
  std::vector<bool> seen(100, false);
  for (const Op& op : g.ops) seen[static_cast<size_t>(op.kind)] = true;
  for (OpKind k : AllOpKinds()) EXPECT_TRUE(seen[static_cast<size_t>(k)]) << OpKindName(k);

  const Graph back = RoundTrip(g);
  ASSERT_EQ(back.size(), g.size());
  for (int32_t i = 0; i < g.size(); ++i) EXPECT_TRUE(back.op(i) == g.op(i)) << DescribeOp(g, i);
  EXPECT_TRUE(back == g);
  // Deterministic: the same graph writes the same bytes.
  EXPECT_EQ(WriteGraphJson(back).value(), WriteGraphJson(g).value());
}

// An op's source (where an importer found it) is kept, written only when not empty, and part of
// the graph's equality.
TEST(GraphJson, SourceRoundTrips) {
  Graph g = AllKindsGraph();
  const std::string without = WriteGraphJson(g).value();
  g.ops[3].source = "jit(step)/jvp(layers_3)/dot_general";
  const std::string text = WriteGraphJson(g).value();
  EXPECT_EQ(text.size() - without.size(),
            std::string(", \"source\": \"jit(step)/jvp(layers_3)/dot_general\"").size());
  EXPECT_NE(text.find("\"source\": \"jit(step)/jvp(layers_3)/dot_general\""), std::string::npos);
  const Graph back = RoundTrip(g);
  EXPECT_EQ(back.op(3).source, "jit(step)/jvp(layers_3)/dot_general");
  EXPECT_TRUE(back == g);
  Graph other = g;
  other.ops[3].source = "jit(step)/dot_general";
  EXPECT_FALSE(other == g);
}

TEST(GraphJson, StopGradientRoundTripsWrittenOnlyWhenSet) {
  Graph g = AllKindsGraph();
  const std::string without = WriteGraphJson(g).value();
  EXPECT_EQ(without.find("stop_gradient"), std::string::npos);
  g.ops[3].stop_gradient = true;
  const std::string text = WriteGraphJson(g).value();
  EXPECT_EQ(text.size() - without.size(), std::string(", \"stop_gradient\": true").size());
  const Graph back = RoundTrip(g);
  EXPECT_TRUE(back.op(3).stop_gradient);
  EXPECT_FALSE(back.op(4).stop_gradient);
  EXPECT_TRUE(back == g);
  Graph other = g;
  other.ops[3].stop_gradient = false;
  EXPECT_FALSE(other == g);
}

TEST(GraphJson, NonFiniteAndSignedZeroConstants) {
  const Graph g = AllKindsGraph();
  const std::string text = WriteGraphJson(g).value();
  EXPECT_NE(text.find("\"value\": \"inf\""), std::string::npos);
  EXPECT_NE(text.find("\"value\": \"-inf\""), std::string::npos);
  EXPECT_NE(text.find("\"value\": \"nan\""), std::string::npos);
  EXPECT_NE(text.find("\"value\": -0.0"), std::string::npos);
  EXPECT_NE(text.find("\"value\": 1e-300"), std::string::npos);
  const Graph back = ReadGraphBuffer(text).value();
  int found = 0;
  for (const Op& op : back.ops) {
    if (op.kind != OpKind::kConstant) continue;
    const double v = op.attrs.value;
    if (std::isinf(v) && v > 0) ++found;
    if (std::isinf(v) && v < 0) ++found;
    if (std::isnan(v)) ++found;
    if (v == 0 && std::signbit(v)) ++found;
    if (v == 1e-300) ++found;
    if (v == 12345678901234567.0) ++found;
  }
  EXPECT_EQ(found, 6);
}

TEST(GraphJson, GoldenFileMatchesTheBuilder) {
  const Graph g = AllKindsGraph();
  const std::string path = testing::GoldenPath("graph_all_kinds.json");
  if (std::getenv("ALPA_WRITE_GOLDEN") != nullptr) {
    std::ofstream(path) << WriteGraphJson(g).value();
  }
  Result<Graph> golden = ReadGraphFile(path);
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  EXPECT_TRUE(golden.value() == g);
}

TEST(GraphJson, GoldenMlpMatchesTheBuilder) {
  const Graph g = MlpGraph();
  ASSERT_EQ(g.size(), 14);
  const std::string path = testing::GoldenPath("graph_mlp.json");
  if (std::getenv("ALPA_WRITE_GOLDEN") != nullptr) {
    std::ofstream(path) << WriteGraphJson(g).value();
  }
  std::ifstream in(path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Byte for byte: the C ABI tests compare their array-built graph's JSON with this file.
  EXPECT_EQ(bytes, WriteGraphJson(g).value());
}

TEST(GraphJson, ModelGraphsRoundTrip) {
  for (const char* spec :
       {"mlp", "gpt:hidden=64,layers=2,heads=4,seq=16,vocab=50,batch=2",
        "bert:hidden=64,layers=2,heads=4,seq=16,vocab=50,batch=2",
        "moe:hidden=64,layers=2,experts=4,heads=4,seq=16,vocab=50,batch=2,group=16",
        "wresnet:layers=50,channels=4,width=1,image=16,classes=10,batch=2,stages=1-1-1-1"}) {
    Result<Graph> g = BuildModel(spec);
    ASSERT_TRUE(g.ok()) << spec << ": " << g.status().message();
    EXPECT_TRUE(RoundTrip(g.value()) == g.value()) << spec;
  }
}

TEST(GraphJson, HandWrittenGraphInfersOmittedTypes) {
  // Only sources, broadcast/reshape shapes and convert dtypes are given; defaults elsewhere.
  const char* text = R"({"ops": [
    {"kind": "parameter", "name": "x", "dtype": "f32", "shape": [8, 4], "role": "input"},
    {"kind": "parameter", "name": "w", "dtype": "f32", "shape": [4, 2], "role": "parameter"},
    {"kind": "dot_general", "operands": [0, 1],
     "attrs": {"lhs_contracting": [1], "rhs_contracting": [0]}},
    {"kind": "reduce_sum", "operands": [2], "attrs": {"dims": [0, 1]}, "phase": "forward"},
    {"kind": "select_and_scatter", "operands": [0, 0],
     "attrs": {"window": [1, 1], "strides": [1, 1], "padding_lo": [0, 0], "padding_hi": [0, 0]}}
  ], "outputs": [3]})";
  Result<Graph> g = ReadGraphBuffer(text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g.value().op(2).shape, (Dims{8, 2}));
  EXPECT_EQ(g.value().op(2).dtype, DType::kF32);
  EXPECT_EQ(g.value().op(3).shape, Dims{});
  EXPECT_EQ(g.value().op(3).layer, 0);
  EXPECT_EQ(g.value().op(0).role, TensorRole::kInput);
  // select_and_scatter is max-based whether or not "reduce" is written.
  EXPECT_EQ(g.value().op(4).attrs.reduce, ReduceKind::kMax);
  EXPECT_EQ(g.value().outputs, std::vector<int32_t>{3});
}

struct BadCase {
  const char* name;
  const char* json;
  StatusCode code;
  const char* message;  // a substring of the expected message
};

constexpr const char* kX = R"({"kind": "parameter", "name": "x", "dtype": "f32", "shape": [8, 4]})";

std::string Ops(const std::string& ops, const std::string& extra = "") {
  return "{\"ops\": [" + std::string(kX) + ", " + ops + "]" + extra + "}";
}

TEST(GraphJson, ErrorsNameTheOpAndField) {
  const std::string dot =
      R"({"kind": "dot_general", "name": "attn.qkv", "operands": [0, 0],
          "attrs": {"lhs_contracting": [1], "rhs_contracting": [0]}})";
  const std::vector<std::pair<std::string, BadCase>> cases = {
      {"{\"ops\": [", {"truncated", "", StatusCode::kParse, "graph: JSON:"}},
      {"[1, 2]", {"not object", "", StatusCode::kParse, "graph: expected an object"}},
      {"{}", {"no ops", "", StatusCode::kParse, "missing field \"ops\""}},
      {"{\"ops\": [], \"extra\": 1}",
       {"unknown top", "", StatusCode::kParse, "graph.extra: unknown field"}},
      {"{\"ops\": [], \"version\": 2}",
       {"version", "", StatusCode::kParse, "unsupported version 2"}},
      {"{\"ops\": [], \"format\": \"iopddl\"}", {"format", "", StatusCode::kParse, "graph.format"}},
      {R"({"ops": [{"kind": "parameter", "name": "x", "dtype": "f32", "shape": "abc"}]})",
       {"shape type", "", StatusCode::kParse, "graph.ops[0] 'x': shape: expected an array"}},
      {R"({"ops": [{"kind": "parameter", "name": "x", "source": 3, "dtype": "f32", "shape": [2]}]})",
       {"source type", "", StatusCode::kParse, "graph.ops[0] 'x': source: expected a string"}},
      {R"({"ops": [{"kind": "parameter", "name": "x", "stop_gradient": 1, "dtype": "f32", "shape": [2]}]})",
       {"stop_gradient type", "", StatusCode::kParse,
        "graph.ops[0] 'x': stop_gradient: expected true or false, found number"}},
      {R"({"ops": [{"kind": "parameter", "name": "x", "dtype": "f32", "shape": [8, 2.5]}]})",
       {"fraction", "", StatusCode::kParse, "graph.ops[0] 'x': shape[1]: expected an integer"}},
      {R"({"ops": [{"kind": "parameter", "dtype": "f32", "shape": [1e30]}]})",
       {"huge", "", StatusCode::kParse, "graph.ops[0]: shape[0]: expected an integer"}},
      {R"({"ops": [{"kind": "matmul", "name": "m"}]})",
       {"unknown kind", "", StatusCode::kParse,
        "graph.ops[0] 'm': kind: unknown op kind \"matmul\""}},
      {R"({"ops": [{"kind": "parameter", "name": "x", "dtype": "f33", "shape": []}]})",
       {"bad dtype", "", StatusCode::kParse, "graph.ops[0] 'x': dtype: unknown dtype \"f33\""}},
      {R"({"ops": [{"kind": "parameter", "name": "x", "shape": []}]})",
       {"missing dtype", "", StatusCode::kParse,
        "missing field \"dtype\" (required for parameter)"}},
      {R"({"ops": [{"kind": "parameter", "dtype": "f32"}]})",
       {"missing shape", "", StatusCode::kParse, "missing field \"shape\""}},
      {R"({"ops": [{"kind": "parameter", "dtype": "f32", "shape": [], "colour": 1}]})",
       {"unknown field", "", StatusCode::kParse, "graph.ops[0]: colour: unknown field"}},
      {Ops(R"({"kind": "reduce_sum", "operands": [0], "attrs": {"dimz": [0]}})"),
       {"unknown attr", "", StatusCode::kParse, "graph.ops[1]: attrs.dimz: unknown attribute"}},
      {Ops(R"({"kind": "compare", "operands": [0, 0], "attrs": {"comparison": "less"}})"),
       {"bad comparison", "", StatusCode::kParse, "unknown comparison \"less\""}},
      {Ops(R"({"id": 5, "kind": "neg", "operands": [0]})"),
       {"id mismatch", "", StatusCode::kParse, "graph.ops[1]: id: is 5"}},
      {Ops(R"({"kind": "neg", "operands": [0], "role": "weights"})"),
       {"bad role", "", StatusCode::kParse, "unknown tensor role \"weights\""}},
      {Ops(R"({"kind": "neg", "operands": [5000000000]})"),
       {"operand range", "", StatusCode::kParse, "operands[0]: number out of range"}},
      {Ops(R"({"kind": "constant", "dtype": "f32", "shape": [], "attrs": {"value": "infinity"}})"),
       {"bad value", "", StatusCode::kParse, "attrs.value: expected a number or one of"}},
      {Ops(R"({"kind": "neg", "name": "n", "operands": [7]})"),
       {"dangling", "", StatusCode::kInvalidGraph,
        "graph.ops[1] 'n' (neg): operand 0 refers to op 7, which does not exist"}},
      {Ops(R"({"kind": "add", "name": "a", "operands": [0, 2]},
              {"kind": "neg", "name": "b", "operands": [1]})"),
       {"cycle", "", StatusCode::kInvalidGraph,
        "the graph has a cycle: op 1 'a' (add) -> op 2 'b'"}},
      {Ops(R"({"kind": "neg", "name": "late", "operands": [2]},
              {"kind": "neg", "operands": [0]})"),
       {"forward ref", "", StatusCode::kInvalidGraph, "which comes later"}},
      {Ops(dot),
       {"contracting", "", StatusCode::kInvalidGraph,
        "graph.ops[1] 'attn.qkv' (dot_general): contracting dim sizes differ: lhs dim 1 is 4, rhs "
        "dim 0 is 8"}},
      {Ops(R"({"kind": "neg", "name": "n", "operands": [0], "shape": [4, 8]})"),
       {"given shape", "", StatusCode::kInvalidGraph,
        "graph.ops[1] 'n' (neg): shape [4, 8] differs from the inferred [8, 4]"}},
      {Ops(R"({"kind": "neg", "name": "n", "operands": [0], "dtype": "f16"})"),
       {"given dtype", "", StatusCode::kInvalidGraph,
        "graph.ops[1] 'n' (neg): dtype f16 differs from the inferred f32"}},
      {R"({"ops": [{"kind": "parameter", "name": "huge", "dtype": "f32",
                    "shape": [4611686018427387904, 4]}]})",
       {"overflow", "", StatusCode::kInvalidGraph, "graph.ops[0] 'huge' (parameter):"}},
      {R"({"ops": [{"kind": "parameter", "name": "neg", "dtype": "f32", "shape": [-1]}]})",
       {"negative dim", "", StatusCode::kInvalidGraph, "graph.ops[0] 'neg' (parameter): dim 0"}},
      {Ops(R"({"kind": "neg", "name": "n", "operands": [0]},
              {"kind": "neg", "name": "upd", "operands": [0], "alias_of": 1})"),
       {"alias", "", StatusCode::kInvalidGraph,
        "graph.ops[2] 'upd' (neg): alias_of 1 is not a parameter op"}},
      {Ops(R"({"kind": "neg", "operands": [0]})", ", \"outputs\": [9]"),
       {"output", "", StatusCode::kInvalidGraph, "output 0 refers to op 9"}},
      {Ops(R"({"kind": "reshape", "name": "r", "operands": [0], "shape": [5, 5]})"),
       {"reshape", "", StatusCode::kInvalidGraph, "graph.ops[1] 'r' (reshape): cannot reshape"}},
      {std::string(300, '['), {"deep", "", StatusCode::kParse, "nesting deeper"}},
  };
  for (const auto& [json, c] : cases) {
    Result<Graph> g = ReadGraphBuffer(json);
    ASSERT_FALSE(g.ok()) << c.name;
    EXPECT_EQ(g.status().code(), c.code) << c.name << ": " << g.status().message();
    EXPECT_NE(g.status().message().find(c.message), std::string::npos)
        << c.name << ": " << g.status().message();
  }
}

TEST(GraphJson, FileErrorsNameThePath) {
  Result<Graph> g = ReadGraphFile("/nonexistent/graph.json");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kIo);
  EXPECT_NE(g.status().message().find("/nonexistent/graph.json"), std::string::npos);
}

TEST(GraphJson, WriterRejectsInvalidGraphs) {
  Graph g;
  Op op;
  op.kind = OpKind::kNeg;
  op.operands = {3};
  g.ops.push_back(op);
  Result<std::string> text = WriteGraphJson(g);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidGraph);
  EXPECT_EQ(WriteGraphJson(Graph{}).value(),
            "{\"format\": \"alpa-graph\", \"version\": 1,\n \"ops\": [],\n \"outputs\": []}\n");
  EXPECT_TRUE(ReadGraphBuffer(WriteGraphJson(Graph{}).value()).value() == Graph{});
}

}  // namespace
}  // namespace alpa
