// Dominance pruning of stage candidates keeps the stage DP's optimum, at any device memory.
#include "solvers/planner/stage_costs.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

namespace alpa {
namespace {

// Also without the selective-recomputation candidates (config 3 here), as the planner solves
// it too (planner.cc): a selective candidate prunes no other one.
TEST(StageCosts, PruningDominatedCandidatesKeepsTheOptimum) {
  std::mt19937_64 rng(7);
  int64_t pruned_total = 0;
  for (int round = 0; round < 300; ++round) {
    const int32_t layers = 1 + static_cast<int32_t>(rng() % 4);
    const int64_t microbatches = 1 + static_cast<int64_t>(rng() % 6);
    StageCostTable t;
    t.microbatches = microbatches;
    t.submeshes = EnumerateSubmeshShapes(1, 4);
    t.configs.resize(5);
    t.configs[3].remat = Recompute::kSelective;
    t.configs[4].remat = Recompute::kFull;
    std::uniform_real_distribution<double> seconds(0.5, 2.0);
    for (int32_t i = 0; i < layers; ++i) {
      for (int32_t j = i; j < layers; ++j) {
        for (int32_t s = 0; s < static_cast<int32_t>(t.submeshes.size()); ++s) {
          const int configs = 1 + static_cast<int>(rng() % 5);
          for (int c = 0; c < configs; ++c) {
            StageCandidate cand;
            cand.first_layer = i;
            cand.last_layer = j;
            cand.submesh = s;
            cand.config = c;
            // Coarse values so that ties and exact dominance happen often.
            cand.latency = std::round(seconds(rng) * 4) / 4;
            cand.iteration_overhead = static_cast<double>(rng() % 3) / 4;
            StageMemory m{static_cast<int64_t>(rng() % 4) * 100,
                          static_cast<int64_t>(rng() % 3) * 50,
                          static_cast<int64_t>(rng() % 2) * 100};
            t.candidates.push_back(cand);
            t.candidate_memory.push_back(m);
          }
        }
      }
    }
    StageCostTable pruned = t;
    PruneDominatedCandidates(pruned);
    pruned_total += pruned.pruned;
    EXPECT_EQ(pruned.candidates.size() + static_cast<size_t>(pruned.pruned), t.candidates.size());
    for (int64_t memory : {300, 450, 600, 900}) {
      auto solve = [&](const StageCostTable& table, bool with_selective) {
        StageDpInput input;
        input.num_layers = layers;
        input.hosts = 1;
        input.devices_per_host = 4;
        input.submeshes = table.submeshes;
        input.microbatches = microbatches;
        input.candidates = table.candidates;
        for (size_t k = 0; k < input.candidates.size(); ++k) {
          input.candidates[k].max_stages_after =
              MaxStagesAfter(table.candidate_memory[k], memory, microbatches, layers);
          if (!with_selective && input.candidates[k].config == 3) {
            input.candidates[k].max_stages_after = -1;
          }
        }
        Result<StageDpResult> r = SolveStageDp(input);
        EXPECT_TRUE(r.ok()) << r.status().message();
        return r.ok() ? r.value() : StageDpResult{};
      };
      for (bool with_selective : {true, false}) {
        const StageDpResult full = solve(t, with_selective);
        const StageDpResult kept = solve(pruned, with_selective);
        ASSERT_EQ(full.feasible, kept.feasible) << "round " << round << " memory " << memory;
        if (full.feasible) {
          EXPECT_NEAR(full.objective, kept.objective, 1e-12) << "round " << round;
        }
      }
    }
  }
  EXPECT_GT(pruned_total, 0);  // the instances do exercise the pruning
}

TEST(StageCosts, MaxStagesAfterFollowsInFlightMicrobatches) {
  const StageMemory m{100, 10, 20};  // 120 + 10 per microbatch in flight
  EXPECT_EQ(MaxStagesAfter(m, 129, 8, 16), -1);
  EXPECT_EQ(MaxStagesAfter(m, 130, 8, 16), 0);   // one in flight
  EXPECT_EQ(MaxStagesAfter(m, 150, 8, 16), 2);   // three in flight
  EXPECT_EQ(MaxStagesAfter(m, 200, 8, 16), 16);  // all 8 fit: any depth
  EXPECT_EQ(MaxStagesAfter(StageMemory{100, 0, 0}, 100, 8, 5), 5);
}

// Issue 21, item 3: a stage's bytes with microbatches in flight wrapped negative for huge
// models, and such a stage "fit" every device (alpa baseline: -4831 PiB per device).
TEST(StageMemoryWith, SaturatesInsteadOfWrapping) {
  const StageMemory m{int64_t{1} << 62, int64_t{1} << 62, 0};
  EXPECT_EQ(m.With(0), int64_t{1} << 62);
  EXPECT_EQ(m.With(4), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(m.With(int64_t{1} << 40), std::numeric_limits<int64_t>::max());
  const StageMemory small{100, 10, 5};
  EXPECT_EQ(small.With(3), 135);
}

// The update runs after every microbatch's backward, with no activations held: a stage's memory
// is the larger of its forward-backward and its update peaks.
TEST(StageMemoryWith, TakesTheLargerOfTheForwardBackwardAndTheUpdatePeaks) {
  const StageMemory m{100, 10, 20, 60};  // max(120 + 10 per microbatch, 160)
  EXPECT_EQ(m.With(1), 160);
  EXPECT_EQ(m.With(4), 160);
  EXPECT_EQ(m.With(5), 170);
  EXPECT_EQ(MaxStagesAfter(m, 159, 8, 16), -1);
  EXPECT_EQ(MaxStagesAfter(m, 160, 8, 16), 3);  // four in flight
  EXPECT_EQ(MaxStagesAfter(m, 170, 8, 16), 4);
}

// The stage candidates of every range starting at one group are grown a piece and an edge at a
// time: each step must be exactly the stage ComposeStage makes of the whole range (the manual
// plan's evaluator composes it that way, and the two must agree to the bit).
TEST(StageComposer, GrowingAStageGivesExactlyWhatComposeStageGives) {
  std::vector<UnitProfile> units(5);
  for (size_t k = 0; k < units.size(); ++k) {
    UnitProfile& u = units[k];
    const double x = static_cast<double>(k + 1);
    u.latency = 0.1 * x + 1e-7 / x;
    u.forward_latency = 0.03 * x + 1e-9 * x;
    u.selective_latency = 0.01 / x;
    u.weight_gradient_latency = 0.02 * x;
    u.iteration_overhead = 0.3 / x;
    u.zero2_moved_seconds = 0.1 / (x + 1);
    u.persistent_bytes = 1000 * static_cast<int64_t>(k + 1);
    u.activation_bytes = 7 * static_cast<int64_t>(k + 3);
    u.checkpoint_bytes = 3;
    u.selective_activation_bytes = 5;
    u.recomputed_bytes = 11 * static_cast<int64_t>(k);
    u.working_bytes = 50 - 9 * static_cast<int64_t>(k);
    u.update_bytes = 20 * static_cast<int64_t>(k % 3);
    u.zero2_saved_bytes = 100;
    u.zero2_transient_bytes = 40;
  }
  // One edge joins after each piece but the first (its cost summed in join order).
  const std::vector<StageEdgeCost> edge_at = {
      {0, false}, {1.5e-4, true}, {3.3e-5, false}, {7e-6, true}, {1e-3, false}};
  for (Recompute remat : {Recompute::kNone, Recompute::kFull, Recompute::kSelective}) {
    for (bool shard_gradients : {false, true}) {
      StageComposer composer(remat, shard_gradients);
      std::vector<const UnitProfile*> pieces;
      std::vector<StageEdgeCost> edges;
      for (size_t k = 0; k < units.size(); ++k) {
        composer.AddPiece(units[k]);
        pieces.push_back(&units[k]);
        if (k > 0) {
          composer.AddEdge(edge_at[k]);
          edges.push_back(edge_at[k]);
        }
        const ComposedStage grown = composer.Composed();
        const ComposedStage whole = ComposeStage(pieces, edges, remat, shard_gradients);
        EXPECT_EQ(grown.latency, whole.latency) << k;
        EXPECT_EQ(grown.forward_latency, whole.forward_latency) << k;
        EXPECT_EQ(grown.weight_gradient_latency, whole.weight_gradient_latency) << k;
        EXPECT_EQ(grown.iteration_overhead, whole.iteration_overhead) << k;
        EXPECT_EQ(grown.memory.persistent, whole.memory.persistent) << k;
        EXPECT_EQ(grown.memory.activation, whole.memory.activation) << k;
        EXPECT_EQ(grown.memory.working, whole.memory.working) << k;
        EXPECT_EQ(grown.memory.update, whole.memory.update) << k;
      }
      // The whole stage: the pieces' latencies, what the remat reruns, ZeRO-2's moved
      // reduce-scatters, then the edges.
      double pieces_latency = 0, edges_latency = 0;
      for (const UnitProfile& u : units) {
        pieces_latency += u.latency +
                          (remat == Recompute::kFull        ? u.forward_latency
                           : remat == Recompute::kSelective ? u.selective_latency
                                                            : 0.0) +
                          (shard_gradients ? u.zero2_moved_seconds : 0.0);
      }
      for (const StageEdgeCost& e : edges) edges_latency += e.seconds;
      EXPECT_EQ(composer.Composed().latency, pieces_latency + edges_latency);
    }
  }
}

// Edges are summed by their later piece, then in their given order: the order in which a range
// growing one group at a time meets them.
TEST(StageEdgeOrder, ByLaterPieceThenIndex) {
  std::vector<PieceEdge> edges(5);
  edges[0] = {0, 1, 0, 0, true};   // later piece 1
  edges[1] = {2, 1, 0, 0, false};  // later piece 2 (a backward edge read by piece 1)
  edges[2] = {1, 2, 0, 0, true};   // later piece 2
  edges[3] = {0, 3, 0, 0, true};   // later piece 3
  edges[4] = {1, 0, 0, 0, false};  // later piece 1
  EXPECT_EQ(StageEdgeOrder(edges), (std::vector<size_t>{0, 4, 1, 2, 3}));
  EXPECT_TRUE(StageEdgeOrder({}).empty());
}

TEST(ComposeStage, SumsHeldBytesAndTakesTheLargestWorkingAndUpdatePeaks) {
  UnitProfile a, b;
  a.persistent_bytes = 100;
  a.activation_bytes = 10;
  a.working_bytes = 20;
  a.update_bytes = 50;
  a.checkpoint_bytes = 2;
  b.persistent_bytes = 200;
  b.activation_bytes = 30;
  b.working_bytes = 5;
  b.update_bytes = 80;
  b.checkpoint_bytes = 3;
  const StageMemory plain = ComposeStage({&a, &b}, {}, Recompute::kNone, false).memory;
  EXPECT_EQ(plain.persistent, 300);
  EXPECT_EQ(plain.activation, 40);
  EXPECT_EQ(plain.working, 20);
  EXPECT_EQ(plain.update, 80);
  EXPECT_EQ(plain.With(1), 380);  // the update's peak: 300 + 80
  EXPECT_EQ(plain.With(2), 400);  // 300 + 2 x 40 + 20
  // Rematerialization: checkpoints per microbatch; the recomputed piece's activations and
  // temporaries once.
  const StageMemory remat = ComposeStage({&a, &b}, {}, Recompute::kFull, false).memory;
  EXPECT_EQ(remat.activation, 5);
  EXPECT_EQ(remat.working, 35);  // max(20 + 10, 5 + 30)
  EXPECT_EQ(remat.update, 80);
  EXPECT_EQ(remat.With(4), 380);
}

// A stage whose backward is all weight gradients (the first stage of a pipeline needs no input
// gradient): the weight-gradient part is the backward, never above latency - forward_latency
// however the sums round (the plan's readers refuse a larger one).
TEST(StageCosts, TheWeightGradientPartNeverExceedsTheBackward) {
  UnitProfile u;
  u.forward_latency = 0.763774618976614;
  u.weight_gradient_latency = 0.2550690257394217;
  u.latency = u.forward_latency + u.weight_gradient_latency;  // rounds: minus forward is less
  ASSERT_LT(u.latency - u.forward_latency, u.weight_gradient_latency);
  const ComposedStage stage = ComposeStage({&u}, {}, Recompute::kNone, false);
  EXPECT_LE(stage.weight_gradient_latency, stage.latency - stage.forward_latency);
  EXPECT_NEAR(stage.weight_gradient_latency, u.weight_gradient_latency, 1e-15);
}

}  // namespace
}  // namespace alpa
