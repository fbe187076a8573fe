// Cutting layer pieces out of a training graph: inputs, outputs, copies, structural keys.
#include "solvers/planner/subgraph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/ir/graph_builder.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

Graph SmallGpt() {
  Result<Graph> g = BuildModel("gpt:layers=3,hidden=64,heads=2,seq=16,vocab=128,batch=4");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

std::vector<int32_t> Markers(const Graph& g) {
  std::vector<int32_t> m;
  for (const Op& op : g.ops) m.push_back(op.layer);
  return m;
}

TEST(Subgraph, BlockIsValidStandaloneGraphWithBoundaryInputsAndOutputs) {
  const Graph g = SmallGpt();
  const std::vector<int32_t> markers = Markers(g);
  Result<Subgraph> sub = ExtractSubgraph(g, markers, 2, 2);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  const Subgraph& s = sub.value();
  EXPECT_TRUE(ValidateGraph(s.graph).ok());
  // Every op of marker 2 is there, once.
  std::set<int32_t> origins;
  for (size_t l = 0; l < s.origin.size(); ++l) {
    if (g.op(s.origin[l]).layer == 2) {
      EXPECT_TRUE(origins.insert(s.origin[l]).second);
    }
  }
  int64_t expected = 0;
  for (const Op& op : g.ops) expected += op.layer == 2 ? 1 : 0;
  EXPECT_EQ(static_cast<int64_t>(origins.size()), expected);
  // Block 2 reads the residual stream of block 1 (forward) and the gradient from block 3
  // (backward): both are inputs of the piece, of the producer's shape and dtype.
  ASSERT_EQ(s.boundary_inputs.size(), 2u);
  bool forward = false, backward = false;
  for (int32_t l : s.boundary_inputs) {
    const Op& in = s.graph.op(l);
    const Op& src = g.op(s.origin[static_cast<size_t>(l)]);
    EXPECT_EQ(in.kind, OpKind::kParameter);
    EXPECT_EQ(in.role, TensorRole::kInput);
    EXPECT_EQ(in.shape, src.shape);
    EXPECT_EQ(in.dtype, src.dtype);
    EXPECT_NE(src.layer, 2);
    forward = forward || src.phase == Phase::kForward;
    backward = backward || src.phase == Phase::kBackward;
  }
  EXPECT_TRUE(forward && backward);
  // Its outputs: the residual for block 3, the gradient for block 1, and its weight updates.
  ASSERT_EQ(s.boundary_outputs.size(), 2u);
  int64_t updates = 0;
  for (int32_t out : s.graph.outputs) updates += s.graph.op(out).alias_of >= 0 ? 1 : 0;
  EXPECT_GT(updates, 0);
}

TEST(Subgraph, IdenticalBlocksShareAStructuralKey) {
  // An importer's sources differ from block to block (the HLO op_names name the layer): they
  // must not split identical blocks (the planner solves one block per key).
  Graph g = SmallGpt();
  for (Op& op : g.ops) op.source = "jit(step)/layers_" + std::to_string(op.layer) + "/op";
  const std::vector<int32_t> markers = Markers(g);
  std::vector<std::string> keys;
  for (int32_t m = 0; m <= 4; ++m) {
    Result<Subgraph> sub = ExtractSubgraph(g, markers, m, m);
    ASSERT_TRUE(sub.ok()) << sub.status().message();
    keys.push_back(StructuralKey(sub.value().graph));
  }
  EXPECT_EQ(keys[1], keys[2]);
  EXPECT_EQ(keys[2], keys[3]);
  EXPECT_NE(keys[0], keys[1]);  // the embedding
  EXPECT_NE(keys[4], keys[1]);  // the head
  EXPECT_NE(keys[0], keys[4]);
}

TEST(Subgraph, TiedEmbeddingIsCopiedIntoTheHead) {
  const Graph g = SmallGpt();
  const std::vector<int32_t> markers = Markers(g);
  Result<Subgraph> head = ExtractSubgraph(g, markers, 4, 4);
  ASSERT_TRUE(head.ok());
  bool embedding_weight = false;
  for (size_t l = 0; l < head.value().origin.size(); ++l) {
    const Op& op = g.op(head.value().origin[l]);
    if (op.layer == 0 && op.kind == OpKind::kParameter && op.role == TensorRole::kParameter) {
      embedding_weight = true;
      EXPECT_EQ(head.value().graph.op(static_cast<int32_t>(l)).role, TensorRole::kParameter);
    }
  }
  EXPECT_TRUE(embedding_weight);
}

// The definition, op by op: a gradient, or a term of a later backward add of its own shape that
// is accumulated itself.
bool AccumulatedByDefinition(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  if (op.role == TensorRole::kGradient) return true;
  for (int32_t v = id + 1; v < graph.size(); ++v) {
    const Op& reader = graph.op(v);
    if (reader.kind == OpKind::kAdd && reader.phase == Phase::kBackward &&
        reader.shape == op.shape &&
        std::find(reader.operands.begin(), reader.operands.end(), id) != reader.operands.end() &&
        AccumulatedByDefinition(graph, v)) {
      return true;
    }
  }
  return false;
}

// The one-pass form agrees with the definition on every op of a GPT and an MLP training graph,
// and finds both kinds: weight gradients and the tied embedding's contributions from the head
// and the embedding lookup.
TEST(Subgraph, AccumulatedIntoGradientMatchesItsDefinition) {
  for (const char* spec : {"gpt:layers=3,hidden=64,heads=2,seq=16,vocab=128,batch=4",
                           "mlp:layers=3,hidden=32,batch=8"}) {
    Result<Graph> g = BuildModel(spec);
    ASSERT_TRUE(g.ok()) << spec << ": " << g.status().message();
    const std::vector<char> all = AccumulatedIntoGradient(g.value());
    ASSERT_EQ(all.size(), static_cast<size_t>(g.value().size()));
    int64_t gradients = 0, terms = 0;
    for (int32_t v = 0; v < g.value().size(); ++v) {
      const bool expected = AccumulatedByDefinition(g.value(), v);
      EXPECT_EQ(all[static_cast<size_t>(v)] != 0, expected) << spec << " op " << v;
      EXPECT_EQ(AccumulatedIntoGradient(g.value(), v), expected) << spec << " op " << v;
      if (expected) ++(g.value().op(v).role == TensorRole::kGradient ? gradients : terms);
    }
    EXPECT_GT(gradients, 0) << spec;
    if (std::string(spec).rfind("gpt", 0) == 0) {
      EXPECT_GT(terms, 0) << spec;
    }
  }
}

TEST(Subgraph, RangesCoverSeveralMarkers) {
  const Graph g = SmallGpt();
  const std::vector<int32_t> markers = Markers(g);
  Result<Subgraph> all = ExtractSubgraph(g, markers, 0, 4);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all.value().boundary_inputs.empty());
  EXPECT_TRUE(all.value().boundary_outputs.empty());
  EXPECT_TRUE(ValidateGraph(all.value().graph).ok());
}

// An XLA import defines a constant's broadcast (a causal mask) once, in the first layer that
// reads it, and later layers read that op: each piece computes it itself, so that it is neither
// an input of the readers' pieces (a tensor read from memory in every layer) nor an output of
// the first piece (a transfer between stages).
TEST(Subgraph, ValuesComputedFromConstantsAreCopiedNotHandedOver) {
  GraphBuilder b;
  b.set_layer(0);
  const int32_t x = b.Parameter({4, 8}, DType::kF32, TensorRole::kInput, "x");
  const int32_t mask = b.BroadcastInDim(b.Constant(-1e9, {}, DType::kF32), {4, 8}, {});
  const int32_t h0 = b.Add(x, mask);
  b.set_layer(1);
  const int32_t h1 = b.Mul(h0, mask);
  b.AddOutput(h1);
  ASSERT_TRUE(b.ok()) << b.status().message();
  const Graph& g = b.graph();
  const std::vector<int32_t> markers = Markers(g);

  Result<Subgraph> first = ExtractSubgraph(g, markers, 0, 0);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first.value().boundary_outputs.size(), 1u);  // h0 only
  EXPECT_EQ(first.value().origin[static_cast<size_t>(first.value().boundary_outputs[0])], h0);

  Result<Subgraph> second = ExtractSubgraph(g, markers, 1, 1);
  ASSERT_TRUE(second.ok()) << second.status().message();
  const Subgraph& s = second.value();
  EXPECT_TRUE(ValidateGraph(s.graph).ok());
  ASSERT_EQ(s.boundary_inputs.size(), 1u);  // h0 only
  EXPECT_EQ(s.origin[static_cast<size_t>(s.boundary_inputs[0])], h0);
  // The mask and its constant are copied as they are.
  EXPECT_NE(std::find(s.origin.begin(), s.origin.end(), mask), s.origin.end());
  const int32_t local_mask =
      static_cast<int32_t>(std::find(s.origin.begin(), s.origin.end(), mask) - s.origin.begin());
  EXPECT_EQ(s.graph.op(local_mask).kind, OpKind::kBroadcastInDim);
}

TEST(Subgraph, BadRangesAreErrors) {
  const Graph g = SmallGpt();
  const std::vector<int32_t> markers = Markers(g);
  Result<Subgraph> empty = ExtractSubgraph(g, markers, 3, 2);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  Result<Subgraph> none = ExtractSubgraph(g, markers, 7, 9);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("hold no op"), std::string::npos);
  Result<Subgraph> short_groups = ExtractSubgraph(g, {0, 1}, 0, 0);
  ASSERT_FALSE(short_groups.ok());
  EXPECT_NE(short_groups.status().message().find("op_group"), std::string::npos);
}

}  // namespace
}  // namespace alpa
