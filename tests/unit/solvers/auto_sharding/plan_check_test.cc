// The independent plan checker on hand-built plans: a Megatron-style MLP plan (1-D and 2-D
// meshes) passes with its hand-counted memory peak, and each kind of corruption is reported
// with a message naming the op or edge; then the per-kind layout rules one by one.
#include "solvers/auto_sharding/plan_check.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/cluster/sharding_spec.h"
#include "core/ir/graph_builder.h"

namespace alpa {
namespace {

ShardingSpec Spec(const std::string& text) {
  Result<ShardingSpec> s = ParseShardingSpec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().message();
  return s.ok() ? s.value() : ShardingSpec();
}

Graph MustFinish(GraphBuilder& b) {
  Result<Graph> g = std::move(b).Finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(g).value() : Graph{};
}

PlannedCollective InOp(int32_t op, CollectiveKind kind, std::vector<int32_t> mesh_dims,
                       double cost) {
  PlannedCollective c;
  c.kind = kind;
  c.mesh_dims = std::move(mesh_dims);
  c.tensor = c.consumer = op;
  c.inside_op = true;
  c.cost = cost;
  return c;
}

PlannedCollective OnEdge(int32_t tensor, int32_t consumer, int32_t operand, CollectiveKind kind,
                         std::vector<int32_t> mesh_dims, double cost) {
  PlannedCollective c;
  c.kind = kind;
  c.mesh_dims = std::move(mesh_dims);
  c.tensor = tensor;
  c.consumer = consumer;
  c.operand = operand;
  c.cost = cost;
  return c;
}

void ExpectError(const Status& s, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(s.ok()) << "expected an error containing '" << fragments[0] << "'";
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  for (const std::string& f : fragments) {
    EXPECT_NE(s.message().find(f), std::string::npos)
        << "missing '" << f << "' in: " << s.message();
  }
}

// ---- The 2-layer MLP ----
//   0 x [8,16] input, 1 w1 [16,32], 2 h = x.w1, 3 r = relu(h), 4 w2 [32,16], 5 y = r.w2,
//   6 b2 [16], 7 bb = broadcast(b2) (fused), 8 z = y + bb, 9 c = 0.5 (free), 10 s = z * c,
//   11 loss = reduce_sum(s) (output).
Graph Mlp() {
  GraphBuilder b;
  int32_t x = b.Parameter({8, 16}, DType::kF32, TensorRole::kInput, "x");
  int32_t w1 = b.Parameter({16, 32}, DType::kF32, TensorRole::kParameter, "w1");
  int32_t h = b.MatMul(x, w1);
  b.SetName(h, "h");
  int32_t r = b.Unary(OpKind::kRelu, h);
  b.SetName(r, "r");
  int32_t w2 = b.Parameter({32, 16}, DType::kF32, TensorRole::kParameter, "w2");
  int32_t y = b.MatMul(r, w2);
  b.SetName(y, "y");
  int32_t b2 = b.Parameter({16}, DType::kF32, TensorRole::kParameter, "b2");
  int32_t bb = b.BroadcastInDim(b2, {8, 16}, {1});
  b.SetName(bb, "bb");
  int32_t z = b.Add(y, bb);
  b.SetName(z, "z");
  int32_t c = b.Constant(0.5, {8, 16}, DType::kF32);
  int32_t s = b.Mul(z, c);
  b.SetName(s, "s");
  int32_t loss = b.ReduceSum(s, {0, 1});
  b.SetName(loss, "loss");
  b.AddOutput(loss);
  Graph g = MustFinish(b);
  EXPECT_EQ(loss, 11);
  return g;
}

// Per op: result spec and operand specs ("" for free / fused ops).
struct OpPlan {
  std::string result;
  std::vector<std::string> operands;
};

AutoShardResult Assemble(const Graph& g, std::vector<int32_t> mesh,
                         const std::vector<OpPlan>& plan) {
  AutoShardResult r;
  r.status = SolveStatus::kOptimal;
  r.mesh_shape = std::move(mesh);
  r.ops.resize(g.ops.size());
  for (int32_t id = 0; id < g.size(); ++id) {
    r.schedule.push_back(id);
    const OpPlan& p = plan[static_cast<size_t>(id)];
    if (p.result.empty()) continue;
    r.ops[static_cast<size_t>(id)].result = Spec(p.result);
    for (const std::string& o : p.operands) {
      r.ops[static_cast<size_t>(id)].operands.push_back(Spec(o));
    }
  }
  return r;
}

// Megatron on a 1-D mesh of 4: w1 column-split, w2 row-split, the second dot all-reduces in-op.
AutoShardResult MegatronPlan(const Graph& g) {
  AutoShardResult r = Assemble(g, {4},
                               {{"R R", {}},
                                {"R S0", {}},
                                {"R S0", {"R R", "R S0"}},
                                {"R S0", {"R S0"}},
                                {"S0 R", {}},
                                {"R R", {"R S0", "S0 R"}},
                                {"R", {}},
                                {"", {}},
                                {"R R", {"R R", "R R"}},
                                {"", {}},
                                {"R R", {"R R", "R R"}},
                                {"scalar", {"R R"}}});
  r.ops[7].fused = true;
  r.ops[9].free = true;
  r.ops[2].compute_cost = 1;
  r.ops[5].compute_cost = 1;
  r.ops[5].communication_cost = 3;
  r.collectives.push_back(InOp(5, CollectiveKind::kAllReduce, {0}, 3));
  r.objective = 5;
  // Per device (f32): x 512, w1 512, w2 512, b2 64 live throughout (1600); h [2,3] 256,
  // r [3,5] 256, y [5,8] 512, z [8,10] 512, s [10,11] 512, loss 4. Peak 1600 + y + z = 2624 at
  // position 8 (reached again at 10 by z + s).
  r.peak_memory_bytes = 2624;
  r.peak_memory_time = 8;
  return r;
}

TEST(PlanCheckTest, MegatronMlpPlanPasses) {
  const Graph g = Mlp();
  const AutoShardResult r = MegatronPlan(g);
  Status s = CheckShardingPlan(g, {4}, r, std::nullopt);
  EXPECT_TRUE(s.ok()) << s.message();
  s = CheckShardingPlan(g, {4}, r, 2624);  // exactly at the budget
  EXPECT_TRUE(s.ok()) << s.message();
  Result<PlanMemory> m = RecomputePlanMemory(g, {4}, r);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m.value().peak_bytes, 2624);
  EXPECT_EQ(m.value().peak_time, 8);
  EXPECT_EQ(m.value().usage, (std::vector<int64_t>{1600, 1600, 1856, 2112, 1856, 2368, 2112, 2112,
                                                   2624, 2112, 2624, 2116}));
  // The claimed peak time may be any position at the peak.
  AutoShardResult tie = r;
  tie.peak_memory_time = 10;
  EXPECT_TRUE(CheckShardingPlan(g, {4}, tie, std::nullopt).ok());
}

TEST(PlanCheckTest, AllReduceMayMoveFromTheOpToTheEdge) {
  const Graph g = Mlp();
  AutoShardResult r = MegatronPlan(g);
  r.ops[5].result = Spec("R R partial(0)");
  r.ops[5].communication_cost = 0;
  r.collectives = {OnEdge(5, 8, 0, CollectiveKind::kAllReduce, {0}, 3)};
  Status s = CheckShardingPlan(g, {4}, r, std::nullopt);
  EXPECT_TRUE(s.ok()) << s.message();
  // A reduce-scatter there instead gives z's operand split rows, which z does not read.
  r.collectives = {OnEdge(5, 8, 0, CollectiveKind::kReduceScatter, {0}, 3)};
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"edge op 5 'y' (dot_general) -> operand 0 of op 8 'z' (add)", "reduce-scatter",
               "wants no tensor dim split over mesh dim 0"});
}

TEST(PlanCheckTest, WrongDotResultSpecIsNamed) {
  const Graph g = Mlp();
  AutoShardResult r = MegatronPlan(g);
  r.ops[2].result = Spec("S0 R");
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"op 2 'h' (dot_general)", "claims result spec 'S0 R'", "computes 'R S0'"});
}

TEST(PlanCheckTest, MissingAllReduceIsNamed) {
  const Graph g = Mlp();
  AutoShardResult r = MegatronPlan(g);
  r.collectives.clear();
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"op 5 'y' (dot_general)", "partial sum over mesh dim 0",
               "no in-op all-reduce over mesh dim 0"});
  // Left partial without any all-reduce: the edge into z is wrong.
  r.ops[5].result = Spec("R R partial(0)");
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"edge op 5 'y' (dot_general) -> operand 0 of op 8 'z' (add)",
               "still a partial sum over mesh dim 0"});
}

TEST(PlanCheckTest, MemoryPeakAndBudget) {
  const Graph g = Mlp();
  AutoShardResult r = MegatronPlan(g);
  r.peak_memory_bytes = 2620;
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"peak memory 2620", "the schedule gives 2624", "position 8"});
  r = MegatronPlan(g);
  ExpectError(CheckShardingPlan(g, {4}, r, 2000),
              {"peak memory 2624", "exceeds the budget of 2000"});
  r.peak_memory_time = 9;
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"peak memory time 9 is not a peak", "2112 bytes there"});
}

TEST(PlanCheckTest, ObjectiveIsRecomputed) {
  const Graph g = Mlp();
  AutoShardResult r = MegatronPlan(g);
  r.objective = 5 + 1e-9;  // within 1e-6 relative
  EXPECT_TRUE(CheckShardingPlan(g, {4}, r, std::nullopt).ok());
  r.objective = 8;  // counts the in-op all-reduce twice
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt), {"objective 8", "cost 5"});
}

TEST(PlanCheckTest, StructuralErrors) {
  const Graph g = Mlp();
  AutoShardResult r = MegatronPlan(g);
  r.ops[2].operands.pop_back();
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"op 2 'h' (dot_general)", "has 1 operand specs for 2 operands"});

  r = MegatronPlan(g);
  r.ops[1].result = Spec("R S1");
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"op 1 'w1' (parameter)", "invalid result spec", "out of range"});

  r = MegatronPlan(g);
  r.collectives.push_back(OnEdge(2, 8, 0, CollectiveKind::kAllGather, {0}, 0));
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"collective 1 (all-gather)", "op 2 'h'", "not an edge"});

  r = MegatronPlan(g);
  r.ops[10].free = true;  // s reads z, which is not free
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"op 10 's' (mul)", "marked free", "op 8 'z' (add)"});

  r = MegatronPlan(g);
  r.ops[3].fused = true;
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"op 3 'r' (relu)", "only broadcast_in_dim ops are fused"});

  r = MegatronPlan(g);
  std::swap(r.schedule[2], r.schedule[3]);  // r before h
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"runs op 3 'r' (relu) before its operand op 2 'h'"});

  r = MegatronPlan(g);
  r.schedule.erase(r.schedule.begin() + 5);
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt), {"op 5 'y'", "not in the schedule"});

  r = MegatronPlan(g);
  r.status = SolveStatus::kInfeasible;
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt), {"holds no plan"});
  EXPECT_FALSE(CheckShardingPlan(g, {2, 2}, MegatronPlan(g), std::nullopt).ok());
}

// Values kept on chip (the CUDA runner's fused kernels) hold no memory, and a read of one reads
// what it is made from: with r = relu(h) on chip, h lives until y reads r (position 5); with z =
// y + bb on chip as well, y lives until s reads z (position 10), and b2 (through the fused bb)
// anyway. Usage: h [2, 5] 256, y [5, 10] 512, s [10, 11] 512, loss 4 over the 1600 held
// throughout: the peak 2624 is reached at 10 only.
TEST(PlanCheckTest, OnChipValuesHoldNothingAndKeepWhatTheyAreMadeFromAlive) {
  const Graph g = Mlp();
  AutoShardResult r = MegatronPlan(g);
  r.ops[3].on_chip = true;
  r.ops[8].on_chip = true;
  Result<PlanMemory> m = RecomputePlanMemory(g, {4}, r);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m.value().usage, (std::vector<int64_t>{1600, 1600, 1856, 1856, 1856, 2368, 2112, 2112,
                                                   2112, 2112, 2624, 2116}));
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"peak memory time 8 is not a peak", "2112 bytes there"});
  r.peak_memory_time = 10;
  EXPECT_TRUE(CheckShardingPlan(g, {4}, r, std::nullopt).ok());

  r = MegatronPlan(g);
  r.ops[1].on_chip = true;
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"op 1 'w1' (parameter)", "marked on chip", "held in memory"});
  r = MegatronPlan(g);
  r.ops[11].on_chip = true;  // the output
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"op 11 'loss' (reduce_sum)", "marked on chip"});
  r = MegatronPlan(g);
  r.ops[7].on_chip = true;  // the fused broadcast
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"op 7 'bb' (broadcast_in_dim)", "marked on chip", "not computed"});
}

TEST(PlanCheckTest, FusedBroadcastEdgeMapsBackToItsOperand) {
  const Graph g = Mlp();
  AutoShardResult r = MegatronPlan(g);
  r.ops[6].result = Spec("S0");  // b2 split; z reads the broadcast replicated
  r.peak_memory_bytes = 2624 - 48;
  ExpectError(CheckShardingPlan(g, {4}, r, std::nullopt),
              {"edge op 6 'b2' (parameter) -> operand 1 of op 8 'z' (add)", "laid out 'S0'",
               "read as 'R'"});
  r.collectives.push_back(OnEdge(6, 8, 1, CollectiveKind::kAllGather, {0}, 0.5));
  r.objective = 5.5;
  Status s = CheckShardingPlan(g, {4}, r, std::nullopt);
  EXPECT_TRUE(s.ok()) << s.message();
}

// An update (alias_of >= 0) writes into its parameter's buffer when nothing reads the parameter
// later; otherwise it needs a buffer of its own.
TEST(PlanCheckTest, UpdatesAreDonatedOnlyAfterTheLastReaderOfTheParameter) {
  GraphBuilder b;
  int32_t w = b.Parameter({4, 4}, DType::kF32, TensorRole::kParameter, "w");  // 0
  int32_t x = b.Parameter({4, 4}, DType::kF32, TensorRole::kInput, "x");      // 1
  int32_t y = b.Mul(x, w);                                                    // 2
  b.SetName(y, "y");
  int32_t c = b.Constant(0.5, {4, 4}, DType::kF32);  // 3 (free)
  int32_t wn = b.Sub(w, c);                          // 4
  b.SetName(wn, "w.next");
  b.SetAlias(wn, w);
  b.AddOutput(y);
  b.AddOutput(wn);
  const Graph g = MustFinish(b);
  AutoShardResult r = Assemble(
      g, {2},
      {{"R R", {}}, {"R R", {}}, {"R R", {"R R", "R R"}}, {"", {}}, {"R R", {"R R", "R R"}}});
  r.ops[3].free = true;
  // w, x 64 bytes each throughout; y from 2 to the end; w.next in w's buffer.
  r.peak_memory_bytes = 192;
  r.peak_memory_time = 2;
  Status s = CheckShardingPlan(g, {2}, r, std::nullopt);
  EXPECT_TRUE(s.ok()) << s.message();
  Result<PlanMemory> m = RecomputePlanMemory(g, {2}, r);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m.value().copied_updates.empty());
  // Updating w before y reads it: w.next needs its own 64 bytes (256 at position 4).
  r.schedule = {0, 1, 3, 4, 2};
  ExpectError(CheckShardingPlan(g, {2}, r, std::nullopt),
              {"peak memory 192", "the schedule gives 256",
               "op 4 'w.next' (sub) (position 3) cannot update op 0 'w' (parameter) in place: it "
               "is still read at position 4"});
  r.peak_memory_bytes = 256;
  r.peak_memory_time = 4;
  s = CheckShardingPlan(g, {2}, r, std::nullopt);
  EXPECT_TRUE(s.ok()) << s.message();
}

// Data parallel on mesh dim 0 and Megatron on mesh dim 1, then y all-gathered into a replicated
// tail.
AutoShardResult TwoDimPlan(const Graph& g) {
  AutoShardResult r = Assemble(g, {2, 2},
                               {{"S0 R", {}},
                                {"R S1", {}},
                                {"S0 S1", {"S0 R", "R S1"}},
                                {"S0 S1", {"S0 S1"}},
                                {"S1 R", {}},
                                {"S0 R", {"S0 S1", "S1 R"}},
                                {"R", {}},
                                {"", {}},
                                {"R R", {"R R", "R R"}},
                                {"", {}},
                                {"R R", {"R R", "R R"}},
                                {"scalar", {"R R"}}});
  r.ops[7].fused = true;
  r.ops[9].free = true;
  r.ops[2].compute_cost = 1;
  r.ops[5].compute_cost = 1;
  r.ops[5].communication_cost = 1.5;
  r.collectives.push_back(InOp(5, CollectiveKind::kAllReduce, {1}, 1.5));
  r.collectives.push_back(OnEdge(5, 8, 0, CollectiveKind::kAllGather, {0}, 2.5));
  r.objective = 6;
  // Per device: x 256, w1 1024, w2 1024, b2 64 throughout (2368); h 256 [2,3], r 256 [3,5],
  // y 256 [5,8], z 512 [8,10], s 512 [10,11], loss 4: peak 2368 + z + s = 3392 at 10.
  r.peak_memory_bytes = 3392;
  r.peak_memory_time = 10;
  return r;
}

TEST(PlanCheckTest, TwoDimPlanWithAllGatherPasses) {
  const Graph g = Mlp();
  Status s = CheckShardingPlan(g, {2, 2}, TwoDimPlan(g), 3392);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(PlanCheckTest, AllGatherOnTheWrongMeshDimIsNamed) {
  const Graph g = Mlp();
  AutoShardResult r = TwoDimPlan(g);
  r.collectives[1].mesh_dims = {1};
  ExpectError(CheckShardingPlan(g, {2, 2}, r, std::nullopt),
              {"edge op 5 'y' (dot_general) -> operand 0 of op 8 'z' (add)",
               "all-gather over mesh dim 1", "no tensor dim of 'S0 R' is split over mesh dim 1"});
  // And an in-op all-reduce on the wrong mesh dim.
  r = TwoDimPlan(g);
  r.collectives[0].mesh_dims = {0};
  ExpectError(CheckShardingPlan(g, {2, 2}, r, std::nullopt),
              {"op 5 'y' (dot_general)", "in-op all-reduce over mesh dim 0",
               "not a partial sum over mesh dim 0"});
}

// ---- Per-kind rules on small graphs ----

// A plan from per-op result specs (ops not listed: replicated); operand specs default to the
// operand op's result spec; memory filled in from RecomputePlanMemory (not under test here).
struct RulePlan {
  const Graph& g;
  std::vector<int64_t> mesh;
  AutoShardResult r;

  RulePlan(const Graph& graph, std::vector<int64_t> mesh_shape,
           const std::map<int32_t, std::string>& specs,
           const std::map<int32_t, std::vector<std::string>>& operand_specs = {})
      : g(graph), mesh(std::move(mesh_shape)) {
    r.status = SolveStatus::kOptimal;
    r.ops.resize(g.ops.size());
    for (int32_t id = 0; id < g.size(); ++id) {
      r.schedule.push_back(id);
      auto it = specs.find(id);
      r.ops[static_cast<size_t>(id)].result =
          it != specs.end() ? Spec(it->second) : ShardingSpec::Replicated(g.op(id).shape.size());
    }
    for (int32_t id = 0; id < g.size(); ++id) {
      auto it = operand_specs.find(id);
      for (size_t k = 0; k < g.op(id).operands.size(); ++k) {
        r.ops[static_cast<size_t>(id)].operands.push_back(
            it != operand_specs.end() ? Spec(it->second[k])
                                      : r.ops[static_cast<size_t>(g.op(id).operands[k])].result);
      }
    }
  }
  Status Check() {
    Result<PlanMemory> m = RecomputePlanMemory(g, mesh, r);
    if (m.ok()) {
      r.peak_memory_bytes = m.value().peak_bytes;
      r.peak_memory_time = m.value().peak_time;
    }
    return CheckShardingPlan(g, mesh, r, std::nullopt);
  }
};

TEST(PlanCheckRulesTest, PartialSumsPassOnlyLinearOps) {
  GraphBuilder b;
  int32_t x = b.Parameter({4, 8}, DType::kF32, TensorRole::kInput, "x");  // 0
  int32_t y = b.Parameter({4, 8}, DType::kF32, TensorRole::kInput, "y");  // 1
  b.SetName(b.Add(x, y), "sum");                                          // 2
  b.SetName(b.Mul(x, y), "prod");                                         // 3
  b.SetName(b.Unary(OpKind::kExp, x), "e");                               // 4
  b.SetName(b.Div(x, y), "q");                                            // 5
  b.SetName(b.Convert(x, DType::kS32), "i");                              // 6
  const Graph g = MustFinish(b);
  const std::vector<int64_t> mesh = {2};
  {  // All partial over the same mesh dims, or exactly one factor / the numerator: fine.
    RulePlan p(g, mesh,
               {{0, "R R partial(0)"},
                {1, "R R partial(0)"},
                {2, "R R partial(0)"},
                {3, "R R partial(0)"},
                {5, "R R partial(0)"}},
               {{3, {"R R partial(0)", "R R"}},
                {5, {"R R partial(0)", "R R"}},
                {4, {"R R"}},
                {6, {"R R"}}});
    p.r.collectives = {OnEdge(1, 3, 1, CollectiveKind::kAllReduce, {0}, 0),
                       OnEdge(1, 5, 1, CollectiveKind::kAllReduce, {0}, 0),
                       OnEdge(0, 4, 0, CollectiveKind::kAllReduce, {0}, 0),
                       OnEdge(0, 6, 0, CollectiveKind::kAllReduce, {0}, 0)};
    Status s = p.Check();
    EXPECT_TRUE(s.ok()) << s.message();
  }
  {
    RulePlan p(g, mesh, {{0, "R R partial(0)"}, {2, "R R partial(0)"}});
    ExpectError(p.Check(), {"op 2 'sum' (add)", "add / sub of partial sums"});
  }
  {
    RulePlan p(g, mesh,
               {{0, "R R partial(0)"},
                {1, "R R partial(0)"},
                {2, "R R partial(0)"},
                {3, "R R partial(0)"}});
    ExpectError(p.Check(), {"op 3 'prod' (mul)", "both partial sums"});
  }
  {
    RulePlan p(g, mesh, {{0, "R R partial(0)"}, {4, "R R partial(0)"}});
    p.r.ops[2].operands = {Spec("R R"), Spec("R R")};
    p.r.ops[3].operands = {Spec("R R"), Spec("R R")};
    p.r.ops[5].operands = {Spec("R R"), Spec("R R")};
    p.r.ops[6].operands = {Spec("R R")};
    ExpectError(p.Check(), {"op 4 'e' (exp)", "not linear"});
  }
  {
    RulePlan p(g, mesh, {{1, "R R partial(0)"}, {5, "R R partial(0)"}},
               {{2, {"R R", "R R"}}, {3, {"R R", "R R"}}});
    ExpectError(p.Check(), {"op 5 'q' (div)", "only the numerator"});
  }
  {
    RulePlan p(g, mesh, {{0, "R R partial(0)"}, {6, "R R partial(0)"}},
               {{2, {"R R", "R R"}}, {3, {"R R", "R R"}}, {4, {"R R"}}, {5, {"R R", "R R"}}});
    ExpectError(p.Check(), {"op 6 'i' (convert)", "convert to s32 is not linear"});
  }
  {  // Operands split differently.
    RulePlan p(g, mesh, {{0, "S0 R"}, {1, "R S0"}, {2, "S0 R"}});
    ExpectError(p.Check(), {"op 2 'sum' (add)", "operand 1 is split as 'R S0'"});
  }
}

TEST(PlanCheckRulesTest, DotGeneralWithBatchDims) {
  GraphBuilder b;
  int32_t q = b.Parameter({4, 8, 16}, DType::kF32, TensorRole::kInput, "q");  // 0
  int32_t k = b.Parameter({4, 8, 16}, DType::kF32, TensorRole::kInput, "k");  // 1
  DotDims d;
  d.lhs_batch = {0};
  d.rhs_batch = {0};
  d.lhs_contracting = {2};
  d.rhs_contracting = {2};
  b.SetName(b.DotGeneral(q, k, d), "scores");  // 2: [4, 8, 8]
  const Graph g = MustFinish(b);
  {  // Batch on mesh dim 0, contracting on mesh dim 1, all-reduced inside.
    RulePlan p(g, {2, 2}, {{0, "S0 R S1"}, {1, "S0 R S1"}, {2, "S0 R R"}});
    p.r.collectives = {InOp(2, CollectiveKind::kAllReduce, {1}, 0)};
    Status s = p.Check();
    EXPECT_TRUE(s.ok()) << s.message();
    // A reduce-scatter inside the op onto the result's last dim works too.
    RulePlan rs(g, {2, 2}, {{0, "S0 R S1"}, {1, "S0 R S1"}, {2, "S0 R S1"}});
    rs.r.collectives = {InOp(2, CollectiveKind::kReduceScatter, {1}, 0)};
    s = rs.Check();
    EXPECT_TRUE(s.ok()) << s.message();
  }
  {
    RulePlan p(g, {2, 2}, {{0, "S0 R R"}, {1, "R R R"}, {2, "S0 R R"}});
    ExpectError(p.Check(),
                {"op 2 'scores' (dot_general)", "batch dim pair 0 is split differently"});
  }
  {  // Free dims of both sides on the same mesh dim.
    RulePlan p(g, {2, 2}, {{0, "R S0 R"}, {1, "R S0 R"}, {2, "R S0 R"}});
    ExpectError(p.Check(), {"op 2 'scores'", "mesh dim 0 would split two different things"});
  }
  {  // Both operands partial over the same mesh dim.
    RulePlan p(g, {2, 2},
               {{0, "R R R partial(0)"}, {1, "R R R partial(0)"}, {2, "R R R partial(0)"}});
    ExpectError(p.Check(), {"op 2 'scores'", "both operands are partial sums over mesh dim 0"});
  }
  {  // Mesh dims of size 1 change nothing: a (1, 4) mesh where the size-1 dim is "misused".
    RulePlan p(g, {1, 4}, {{0, "S0 R S1"}, {1, "R R S1"}, {2, "R R R"}});
    p.r.collectives = {InOp(2, CollectiveKind::kAllReduce, {1}, 0)};
    Status s = p.Check();
    EXPECT_TRUE(s.ok()) << s.message();
  }
}

TEST(PlanCheckRulesTest, ReductionsAndReshapes) {
  GraphBuilder b;
  int32_t x = b.Parameter({8, 16}, DType::kF32, TensorRole::kInput, "x");  // 0
  b.SetName(b.ReduceMax(x, {1}), "mx");                                    // 1: [8]
  b.SetName(b.ReduceSum(x, {1}), "sm");                                    // 2: [8]
  b.SetName(b.Reshape(x, {2, 4, 16}), "split");                            // 3
  b.SetName(b.Reshape(x, {128}), "flat");                                  // 4
  b.SetName(b.Transpose(x, {1, 0}), "t");                                  // 5
  b.SetName(b.Slice(x, {0, 0}, {8, 8}), "half");                           // 6: [8, 8]
  const Graph g = MustFinish(b);
  const std::vector<int64_t> mesh = {2};
  {
    RulePlan p(g, mesh,
               {{0, "R S0"},
                {1, "R"},
                {2, "R partial(0)"},
                {3, "R R S0"},
                {4, "R"},
                {5, "S0 R"},
                {6, "R S0"}},
               {{4, {"R R"}}});
    p.r.collectives = {InOp(1, CollectiveKind::kAllReduce, {0}, 0),
                       OnEdge(0, 4, 0, CollectiveKind::kAllGather, {0}, 0)};
    // The slice keeps dim 1's first half: dim 1 is touched and may not be split.
    ExpectError(p.Check(), {"op 6 'half' (slice)", "split on dim 1"});
    p.r.ops[6].result = Spec("R R");
    p.r.ops[6].operands = {Spec("R R")};
    p.r.collectives.push_back(OnEdge(0, 6, 0, CollectiveKind::kAllGather, {0}, 0));
    Status s = p.Check();
    EXPECT_TRUE(s.ok()) << s.message();
    p.r.collectives.erase(p.r.collectives.begin());
    ExpectError(p.Check(), {"op 1 'mx' (reduce_max)", "needs an in-op all-reduce (max)"});
  }
  {  // Reshape: the major dim keeps its split ([8, 16] -> [2, 4, 16]: 8 -> 2).
    RulePlan p(g, mesh, {{0, "S0 R"}, {3, "S0 R R"}, {4, "S0"}, {5, "R S0"}, {2, "S0"}},
               {{1, {"R R"}}, {6, {"R R"}}});
    p.r.collectives = {OnEdge(0, 1, 0, CollectiveKind::kAllGather, {0}, 0),
                       OnEdge(0, 6, 0, CollectiveKind::kAllGather, {0}, 0)};
    Status s = p.Check();
    EXPECT_TRUE(s.ok()) << s.message();
    p.r.ops[3].result = Spec("R S0 R");
    ExpectError(p.Check(), {"op 3 'split' (reshape)", "computes 'S0 R R'"});
  }
  {  // Flattening [8, 16] with the minor dim split is not a local reshape.
    RulePlan p(g, mesh,
               {{0, "R S0"}, {1, "R"}, {2, "R partial(0)"}, {3, "R R S0"}, {4, "S0"}, {5, "S0 R"}});
    p.r.collectives = {InOp(1, CollectiveKind::kAllReduce, {0}, 0)};
    ExpectError(p.Check(), {"op 4 'flat' (reshape)", "not the major dim of a run"});
  }
}

TEST(PlanCheckRulesTest, GatherScatterAndConvolution) {
  GraphBuilder b;
  int32_t table = b.Parameter({16, 8}, DType::kF32, TensorRole::kParameter, "wte");  // 0
  int32_t ids = b.Parameter({4, 6}, DType::kS32, TensorRole::kInput, "ids");         // 1
  int32_t emb = b.Gather(table, ids, 0);                                             // 2: [4,6,8]
  b.SetName(emb, "emb");
  int32_t zeros = b.Constant(0, {16, 8}, DType::kF32);                              // 3 (free)
  b.SetName(b.ScatterAdd(zeros, ids, emb, 0), "grad");                              // 4: [16, 8]
  int32_t img = b.Parameter({2, 4, 8, 8}, DType::kF32, TensorRole::kInput, "img");  // 5
  int32_t ker = b.Parameter({6, 4, 3, 3}, DType::kF32, TensorRole::kParameter, "ker");  // 6
  b.SetName(b.Convolution(img, ker, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}), "conv");   // 7
  const Graph g = MustFinish(b);
  const std::vector<int64_t> mesh = {2};
  auto base = [&]() {
    // Vocab-parallel embedding: table rows split, the lookup partial; the scatter of the
    // batch-split updates into a partial zero base; conv split on batch.
    RulePlan p(g, mesh,
               {{0, "S0 R"},
                {1, "R R"},
                {2, "R R R partial(0)"},
                {4, "R R partial(0)"},
                {5, "S0 R R R"},
                {6, "R R R R"},
                {7, "S0 R R R"}},
               {{4, {"R R partial(0)", "S0 R", "S0 R R"}}});
    p.r.ops[3].free = true;
    // ids are replicated; the scatter reads them batch-split (a free slice) and the updates
    // reduce-scattered from the partial lookup.
    p.r.collectives = {OnEdge(2, 4, 2, CollectiveKind::kReduceScatter, {0}, 0)};
    return p;
  };
  {
    RulePlan p = base();
    Status s = p.Check();
    EXPECT_TRUE(s.ok()) << s.message();
    p.r.ops[2].result = Spec("R R R");
    ExpectError(p.Check(),
                {"op 2 'emb' (gather)", "partial sum over mesh dim 0", "no in-op all-reduce"});
  }
  {  // The scatter's base must be partial where the updates' contribution is.
    RulePlan p = base();
    p.r.ops[4].operands[0] = Spec("R R");
    p.r.ops[4].result = Spec("R R");
    ExpectError(p.Check(), {"op 4 'grad' (scatter_add)", "the base is partial over none"});
  }
  {  // Input channels split on both sides: partial result, all-reduced inside.
    RulePlan p = base();
    p.r.collectives = {OnEdge(2, 4, 2, CollectiveKind::kReduceScatter, {0}, 0),
                       InOp(7, CollectiveKind::kAllReduce, {0}, 0)};
    p.r.ops[5].result = Spec("R S0 R R");
    p.r.ops[6].result = Spec("R S0 R R");
    p.r.ops[7].result = Spec("R R R R");
    p.r.ops[7].operands = {Spec("R S0 R R"), Spec("R S0 R R")};
    Status s = p.Check();
    EXPECT_TRUE(s.ok()) << s.message();
    p.r.ops[7].operands = {Spec("R R S0 R"), Spec("R R R R")};
    p.r.ops[5].result = Spec("R R S0 R");
    ExpectError(p.Check(), {"op 7 'conv' (convolution)", "spatial dim 2 is split"});
  }
}

}  // namespace
}  // namespace alpa
