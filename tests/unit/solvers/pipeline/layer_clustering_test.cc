// Layer clustering: zoo graphs with layer markers, hand-built chains without markers, the bytes
// objective and its tie-breaks, slack relaxation, clamping and option errors. Every result is
// also checked by an independent evaluator that recomputes each group's forward FLOPs and
// crossing bytes from op_layer alone.
#include "solvers/pipeline/layer_clustering.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/autodiff/autodiff.h"
#include "core/ir/graph_builder.h"
#include "core/ir/graph_stats.h"
#include "models/model_zoo.h"

namespace alpa {
namespace {

constexpr char kGpt4[] = "gpt:layers=4,hidden=64,heads=2,seq=16,vocab=128,batch=4";
// One residual-stream tensor of kGpt4: [batch 4, seq 16, hidden 64] in f16.
constexpr long double kGpt4Residual = 4 * 16 * 64 * 2;

Graph MustBuild(const std::string& spec) {
  Result<Graph> g = BuildModel(spec);
  EXPECT_TRUE(g.ok()) << spec << ": " << g.status().message();
  return g.ok() ? std::move(g).value() : Graph{};
}

LayerClustering MustCluster(const Graph& graph, int32_t num_layers, double delta = 0.5) {
  LayerClusteringOptions options;
  options.num_layers = num_layers;
  options.delta = delta;
  Result<LayerClustering> r = ClusterLayers(graph, options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : LayerClustering{};
}

// Recomputes per group the forward FLOPs and the bytes of forward tensors computed in an
// earlier group that a forward op of the group reads (each tensor once per group).
struct Evaluated {
  std::vector<long double> flops, bytes;
};

Evaluated Evaluate(const Graph& graph, const std::vector<int32_t>& op_layer, int32_t groups) {
  Evaluated e;
  e.flops.assign(static_cast<size_t>(groups), 0);
  e.bytes.assign(static_cast<size_t>(groups), 0);
  std::vector<std::set<int32_t>> entering(static_cast<size_t>(groups));
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    const int32_t g = op_layer[static_cast<size_t>(id)];
    if (op.phase != Phase::kForward || g < 0) continue;
    e.flops[static_cast<size_t>(g)] += OpFlops(graph, id);
    for (int32_t p : op.operands) {
      const Op& in = graph.op(p);
      const int32_t from = op_layer[static_cast<size_t>(p)];
      if (in.phase == Phase::kForward && !in.operands.empty() && from >= 0 && from < g) {
        entering[static_cast<size_t>(g)].insert(p);
      }
    }
  }
  for (int32_t g = 0; g < groups; ++g) {
    for (int32_t t : entering[static_cast<size_t>(g)]) {
      e.bytes[static_cast<size_t>(g)] += static_cast<long double>(TensorBytes(graph.op(t)));
    }
  }
  return e;
}

// Shape of the result, groups in forward order, marker -1 kept, and the evaluator's numbers.
void ExpectWellFormed(const Graph& graph, const LayerClustering& c) {
  const size_t groups = static_cast<size_t>(c.num_layers);
  ASSERT_GE(c.num_layers, 1);
  ASSERT_EQ(c.op_layer.size(), graph.ops.size());
  ASSERT_EQ(c.first_unit.size(), groups);
  ASSERT_EQ(c.flops.size(), groups);
  ASSERT_EQ(c.input_bytes.size(), groups);
  std::vector<int32_t> forward_ops(groups, 0);
  int32_t last_group = 0;
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    const int32_t g = c.op_layer[static_cast<size_t>(id)];
    ASSERT_GE(g, -1) << DescribeOp(graph, id);
    ASSERT_LT(g, c.num_layers) << DescribeOp(graph, id);
    if (op.layer < 0) {
      EXPECT_EQ(g, -1) << DescribeOp(graph, id);
      continue;
    }
    EXPECT_GE(g, 0) << DescribeOp(graph, id);
    if (op.phase == Phase::kForward && !op.operands.empty()) {
      EXPECT_GE(g, last_group) << "forward groups out of order at " << DescribeOp(graph, id);
      last_group = g;
      ++forward_ops[static_cast<size_t>(g)];
    }
  }
  for (size_t g = 0; g < groups; ++g) EXPECT_GT(forward_ops[g], 0) << "group " << g << " empty";
  const Evaluated e = Evaluate(graph, c.op_layer, c.num_layers);
  long double total = 0;
  for (long double f : e.flops) total += f;
  const long double upper = (1 + c.slack) * total / c.num_layers;
  for (size_t g = 0; g < groups; ++g) {
    EXPECT_NEAR(static_cast<double>(c.flops[g]), static_cast<double>(e.flops[g]),
                1e-9 * static_cast<double>(total))
        << "group " << g;
    EXPECT_EQ(c.input_bytes[g], e.bytes[g]) << "group " << g;
    EXPECT_LE(e.flops[g], upper * (1 + 1e-9L)) << "group " << g;
  }
  EXPECT_GE(c.slack, 0);
}

// ---- Graphs with markers (the model zoo) ----

TEST(LayerClusteringTest, GptMarkersIntoAsManyGroupsKeepOneMarkerEach) {
  const Graph g = MustBuild(kGpt4);
  const LayerClustering c = MustCluster(g, 6);
  ExpectWellFormed(g, c);
  EXPECT_TRUE(c.from_markers);
  EXPECT_EQ(c.num_layers, 6);
  EXPECT_EQ(c.slack, 0.5);
  EXPECT_EQ(c.first_unit, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  for (int32_t id = 0; id < g.size(); ++id) {
    const int32_t layer = g.op(id).layer;
    EXPECT_EQ(c.op_layer[static_cast<size_t>(id)], layer >= 0 ? layer : -1) << DescribeOp(g, id);
  }
  // Every block boundary crosses the residual stream alone (the embedding table read again
  // by the tied head is a parameter: no group's output).
  EXPECT_EQ(c.input_bytes, (std::vector<long double>{0, kGpt4Residual, kGpt4Residual, kGpt4Residual,
                                                     kGpt4Residual, kGpt4Residual}));
}

TEST(LayerClusteringTest, GptMarkersIntoThreeGroupsFollowTheirMarker) {
  const Graph g = MustBuild(kGpt4);
  const LayerClustering c = MustCluster(g, 3);
  ExpectWellFormed(g, c);
  EXPECT_TRUE(c.from_markers);
  EXPECT_EQ(c.num_layers, 3);
  EXPECT_EQ(c.slack, 0.5);
  long double total = 0;
  for (long double f : c.flops) total += f;
  for (long double f : c.flops) EXPECT_LE(f, 1.5L * total / 3);
  // Blocks are equal and two fit the bound (three do not): markers {0, 1} {2, 3} {4, 5}, the
  // most balanced of the splits that all cross one residual tensor per boundary.
  EXPECT_EQ(c.first_unit, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(c.input_bytes, (std::vector<long double>{0, kGpt4Residual, kGpt4Residual}));
  const std::vector<int32_t> group_of_marker = {0, 0, 1, 1, 2, 2};
  int32_t backward = 0, update = 0, global = 0;
  for (int32_t id = 0; id < g.size(); ++id) {
    const Op& op = g.op(id);
    const int32_t got = c.op_layer[static_cast<size_t>(id)];
    if (op.layer < 0) {
      EXPECT_EQ(got, -1) << DescribeOp(g, id);
      ++global;
      continue;
    }
    ASSERT_LT(op.layer, 6);
    EXPECT_EQ(got, group_of_marker[static_cast<size_t>(op.layer)]) << DescribeOp(g, id);
    backward += op.phase == Phase::kBackward ? 1 : 0;
    update += op.phase == Phase::kUpdate ? 1 : 0;
  }
  EXPECT_GT(backward, 0);
  EXPECT_GT(update, 0);
  EXPECT_GT(global, 0);  // Adam's step counter
}

TEST(LayerClusteringTest, Gpt39bIntoSixteenGroupsOfThreeBlocks) {
  const Graph g = MustBuild("gpt-39b");
  const LayerClustering c = MustCluster(g, 16);
  ExpectWellFormed(g, c);
  // 50 markers (embedding, 48 blocks, head): every split crosses one residual tensor per
  // boundary, so balance decides: the embedding and the head ride along with three blocks.
  std::vector<int32_t> first = {0};
  for (int32_t m = 4; m <= 46; m += 3) first.push_back(m);
  EXPECT_EQ(c.first_unit, first);
}

TEST(LayerClusteringTest, DefaultAndOversizedLayerCountsClampToTheUnits) {
  const Graph g = MustBuild(kGpt4);
  for (int32_t num_layers : {0, 6, 7, 100}) {
    SCOPED_TRACE(num_layers);
    const LayerClustering c = MustCluster(g, num_layers);
    ExpectWellFormed(g, c);
    EXPECT_EQ(c.num_layers, 6);
    EXPECT_EQ(c.first_unit, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  }
  const LayerClustering big = MustCluster(MustBuild("gpt-39b"), 0);
  EXPECT_EQ(big.num_layers, 16);  // 50 units, at most 16 by default
}

// ---- Graphs without markers ----

struct Chain {
  Graph graph;
  int32_t x = -1;
  std::vector<int32_t> weights, matmuls;  // matmuls[k] = x . w0 . ... . wk
  int32_t loss = -1;
};

// x [8, widths[0]] through matmuls with weights [widths[k], widths[k + 1]] (all declared first,
// so they follow their reader rather than their position), then an optional scalar loss.
Chain BuildChain(const std::vector<int64_t>& widths, bool with_loss) {
  GraphBuilder b;
  Chain chain;
  chain.x = b.Parameter({8, widths[0]}, DType::kF32, TensorRole::kInput, "x");
  for (size_t k = 0; k + 1 < widths.size(); ++k) {
    chain.weights.push_back(b.Parameter({widths[k], widths[k + 1]}, DType::kF32,
                                        TensorRole::kParameter, "w" + std::to_string(k)));
  }
  int32_t h = chain.x;
  for (int32_t w : chain.weights) chain.matmuls.push_back(h = b.MatMul(h, w));
  if (with_loss) {
    chain.loss = b.ReduceSum(h, {0, 1});
    b.AddOutput(chain.loss);
  }
  Result<Graph> g = std::move(b).Finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (g.ok()) chain.graph = std::move(g).value();
  return chain;
}

TEST(LayerClusteringTest, ChainWithoutMarkersSplitsEvenlyAndBackwardFollows) {
  Chain chain = BuildChain({64, 64, 64, 64, 64, 64, 64}, /*with_loss=*/true);
  Result<Graph> trained = BuildTrainingGraph(chain.graph, OptimizerConfig{});  // Adam
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  const Graph& g = trained.value();
  // delta = 0.1 admits two matmuls per group, not three.
  const LayerClustering c = MustCluster(g, 3, 0.1);
  ExpectWellFormed(g, c);
  EXPECT_FALSE(c.from_markers);
  EXPECT_EQ(c.num_layers, 3);
  EXPECT_EQ(c.slack, 0.1);
  const std::vector<int32_t> group_of_matmul = {0, 0, 1, 1, 2, 2};
  EXPECT_EQ(c.first_unit,
            (std::vector<int32_t>{chain.matmuls[0], chain.matmuls[2], chain.matmuls[4]}));
  const long double h_bytes = 8 * 64 * 4;
  EXPECT_EQ(c.input_bytes, (std::vector<long double>{0, h_bytes, h_bytes}));
  EXPECT_EQ(c.op_layer[static_cast<size_t>(chain.loss)], 2);
  EXPECT_EQ(c.op_layer[static_cast<size_t>(chain.x)], 0);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(c.op_layer[static_cast<size_t>(chain.matmuls[k])], group_of_matmul[k]);
    EXPECT_EQ(c.op_layer[static_cast<size_t>(chain.weights[k])], group_of_matmul[k]);
  }
  // Each backward matmul differentiates matmul k: it reads w_k (input gradient) or the
  // matmul's input x / matmul k-1 (weight gradient), and must sit in matmul k's group, also
  // where matmul k-1 lies in the previous group.
  int32_t checked = 0;
  for (int32_t id = 0; id < g.size(); ++id) {
    const Op& op = g.op(id);
    if (op.phase != Phase::kBackward || op.kind != OpKind::kDotGeneral) continue;
    int32_t k = -1;
    for (int32_t p : op.operands) {
      for (int32_t j = 0; j < 6; ++j) {
        if (p == chain.weights[static_cast<size_t>(j)]) k = j;
        if (j < 5 && p == chain.matmuls[static_cast<size_t>(j)]) k = j + 1;
      }
      if (p == chain.x) k = 0;
    }
    ASSERT_GE(k, 0) << DescribeOp(g, id);
    EXPECT_EQ(c.op_layer[static_cast<size_t>(id)], group_of_matmul[static_cast<size_t>(k)])
        << DescribeOp(g, id);
    ++checked;
  }
  EXPECT_EQ(checked, 11);  // 6 weight gradients, 5 input gradients (x needs none)
  // Updates and Adam's moments ("w3.m", "w3.v") join their weight's group; the step counter
  // stays out.
  auto weight_group = [&](const std::string& name) {
    const int32_t k = name[1] - '0';
    return group_of_matmul[static_cast<size_t>(k)];
  };
  int32_t updates = 0;
  for (int32_t id = 0; id < g.size(); ++id) {
    const Op& op = g.op(id);
    const int32_t got = c.op_layer[static_cast<size_t>(id)];
    if (op.layer < 0) {
      EXPECT_EQ(got, -1) << DescribeOp(g, id);
    } else if (op.phase == Phase::kUpdate && op.alias_of >= 0) {
      EXPECT_EQ(got, weight_group(g.op(op.alias_of).name)) << DescribeOp(g, id);
      ++updates;
    } else if (op.kind == OpKind::kParameter && op.role == TensorRole::kOptimizerState) {
      EXPECT_EQ(got, weight_group(op.name)) << DescribeOp(g, id);
    }
  }
  EXPECT_EQ(updates, 18);  // w, m, v for six weights
}

TEST(LayerClusteringTest, BytesObjectiveDecidesTheCut) {
  // FLOPs per matmul: 65536, 65536, 4096, 4096, 65536 (total 204800). With L = 2 and
  // delta = 0.5 a group needs between 68267 and 153600 FLOPs, which leaves two cuts: after
  // matmuls[1] (groups 131072 + 73728, crossing [8, 64] f32 = 2048 bytes; the earlier and more
  // balanced one) and after matmuls[2] (135168 + 69632, crossing [8, 4] = 128 bytes). The
  // bytes win.
  const Chain chain = BuildChain({64, 64, 64, 4, 64, 64}, /*with_loss=*/false);
  const LayerClustering c = MustCluster(chain.graph, 2);
  ExpectWellFormed(chain.graph, c);
  EXPECT_EQ(c.first_unit, (std::vector<int32_t>{chain.matmuls[0], chain.matmuls[3]}));
  EXPECT_EQ(c.input_bytes, (std::vector<long double>{0, 128}));
  EXPECT_EQ(c.flops, (std::vector<long double>{135168, 69632}));
  EXPECT_EQ(c.op_layer[static_cast<size_t>(chain.matmuls[2])], 0);
  EXPECT_EQ(c.op_layer[static_cast<size_t>(chain.matmuls[3])], 1);
}

TEST(LayerClusteringTest, TiesGoToBalanceThenEarlierCuts) {
  // Four equal matmuls and a small loss into three groups: every split crosses one [8, 64]
  // tensor per boundary; {1}{2}{1 + loss} and {2}{1}{1 + loss} are equally balanced (and
  // {1}{1}{2 + loss} exceeds the bound), so the earlier first cut wins.
  const Chain chain = BuildChain({64, 64, 64, 64, 64}, /*with_loss=*/true);
  const LayerClustering c = MustCluster(chain.graph, 3);
  ExpectWellFormed(chain.graph, c);
  EXPECT_EQ(c.first_unit,
            (std::vector<int32_t>{chain.matmuls[0], chain.matmuls[1], chain.matmuls[3]}));
  EXPECT_EQ(c.op_layer[static_cast<size_t>(chain.loss)], 2);
}

TEST(LayerClusteringTest, RelaxesTheSlackWhenNoSplitFits) {
  // FLOPs 4096, 4096, 65536 into three groups: the last matmul alone needs (1 + s) / 3 of the
  // total >= 65536 / 73728, i.e. s >= 1.67; the slack doubles from delta (or from 1/16).
  const Chain chain = BuildChain({16, 16, 16, 256}, /*with_loss=*/false);
  for (double delta : {0.5, 0.0}) {
    SCOPED_TRACE(delta);
    const LayerClustering c = MustCluster(chain.graph, 3, delta);
    ExpectWellFormed(chain.graph, c);
    EXPECT_EQ(c.slack, 2.0);
    EXPECT_EQ(c.first_unit, chain.matmuls);
  }
}

TEST(LayerClusteringTest, ChainClampsToItsOps) {
  const Chain chain = BuildChain({64, 64, 64, 64}, /*with_loss=*/true);
  const LayerClustering c = MustCluster(chain.graph, 100);
  ExpectWellFormed(chain.graph, c);
  EXPECT_EQ(c.num_layers, 4);  // three matmuls and the loss
  EXPECT_EQ(c.first_unit, (std::vector<int32_t>{chain.matmuls[0], chain.matmuls[1],
                                                chain.matmuls[2], chain.loss}));
}

TEST(LayerClusteringTest, LargeGraphWithoutMarkersIsChunkedAtLayerBoundaries) {
  Graph g = MustBuild(kGpt4);
  for (Op& op : g.ops) {
    if (op.layer > 0) op.layer = 0;  // erase the markers, keep -1
  }
  int32_t forward = 0;
  for (const Op& op : g.ops) forward += op.phase == Phase::kForward && !op.operands.empty();
  ASSERT_GT(forward, 256);  // more units than the DP takes: coarsened into chunks
  const LayerClustering c = MustCluster(g, 4);
  ExpectWellFormed(g, c);
  EXPECT_FALSE(c.from_markers);
  EXPECT_EQ(c.slack, 0.5);
  long double total = 0;
  for (long double f : c.flops) total += f;
  for (long double f : c.flops) EXPECT_GE(f, total / (1.5L * 4) * (1 - 1e-9L));
  // Cuts land where only the residual stream is live, as with the markers.
  for (size_t g_id = 1; g_id < 4; ++g_id) EXPECT_EQ(c.input_bytes[g_id], kGpt4Residual);
  const LayerClustering again = MustCluster(g, 4);
  EXPECT_EQ(again.op_layer, c.op_layer);
}

// ---- Errors ----

TEST(LayerClusteringTest, BadOptionsAndGraphsAreInvalidArguments) {
  const Chain chain = BuildChain({8, 8, 8}, /*with_loss=*/false);
  LayerClusteringOptions options;
  options.num_layers = -1;
  Result<LayerClustering> r = ClusterLayers(chain.graph, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("num_layers"), std::string::npos) << r.status().message();
  for (double delta : {-0.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    options = LayerClusteringOptions{};
    options.delta = delta;
    r = ClusterLayers(chain.graph, options);
    ASSERT_FALSE(r.ok()) << delta;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("delta"), std::string::npos) << r.status().message();
  }
  r = ClusterLayers(Graph{}, LayerClusteringOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("forward"), std::string::npos) << r.status().message();
  Graph global = chain.graph;
  for (Op& op : global.ops) op.layer = -1;
  r = ClusterLayers(global, LayerClusteringOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace alpa
