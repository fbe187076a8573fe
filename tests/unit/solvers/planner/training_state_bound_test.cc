// The training state's memory bound (training_state_bound.h): what it counts, that no plan
// holds less on its fullest device, and that the planner refuses below it at once and searches
// from it on.
#include "solvers/planner/training_state_bound.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/ir/graph_stats.h"
#include "models/planner_model.h"
#include "solvers/planner/planner.h"
#include "support/clusters.h"
#include "support/plan_checks.h"

namespace alpa {
namespace {

constexpr const char* kGpt = "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=16";

Graph BuildGraph(const std::string& spec, int64_t microbatches) {
  Result<PlannerModel> model = PlannerModelFromSpec(spec);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Graph> graph = model.value().build(microbatches);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return std::move(graph).value();
}

TEST(TrainingStateBound, CountsWeightsGradientsAndOptimizerState) {
  const Graph graph = BuildGraph(kGpt, 4);
  const GraphStats stats = ComputeGraphStats(graph);
  const int64_t state = stats.parameter_bytes + stats.optimizer_state_bytes + stats.gradient_bytes;
  ASSERT_GT(stats.optimizer_state_bytes, 0);
  ASSERT_GT(stats.gradient_bytes, 0);
  const std::vector<int32_t> every_op(graph.ops.size(), 0);
  const TrainingStateBound bound = BoundTrainingState(graph, every_op, 8, int64_t{1} << 30);
  EXPECT_EQ(bound.state_bytes, state);
  // A device's share, less a byte per tensor for rounding.
  EXPECT_LE(bound.per_device, state / 8);
  EXPECT_GT(bound.per_device, state / 8 - 1000);
  EXPECT_EQ(bound.devices_needed, 1);
  // Ops in no layer group hold nothing in any stage.
  const std::vector<int32_t> no_op(graph.ops.size(), -1);
  EXPECT_EQ(BoundTrainingState(graph, no_op, 8, 1000).state_bytes, 0);
}

TEST(TrainingStateBound, DevicesNeededIsTheFewestThatHoldTheState) {
  const Graph graph = BuildGraph(kGpt, 4);
  const std::vector<int32_t> every_op(graph.ops.size(), 0);
  for (const int64_t memory : {int64_t{1000}, int64_t{1} << 20, int64_t{3} << 20}) {
    const TrainingStateBound bound = BoundTrainingState(graph, every_op, 8, memory);
    const int64_t d = bound.devices_needed;
    ASSERT_GT(d, 1) << memory;
    EXPECT_LE(BoundTrainingState(graph, every_op, d, memory).per_device, memory) << memory;
    EXPECT_GT(BoundTrainingState(graph, every_op, d - 1, memory).per_device, memory) << memory;
  }
}

// The bound is a bound: every plan's fullest device holds at least it, however the planner
// shards (data parallel, tensor parallel, pipelines, ZeRO under memory pressure).
TEST(TrainingStateBound, NoPlanHoldsLessOnItsFullestDevice) {
  for (const char* spec : {kGpt, "moe:hidden=256,layers=4,experts=8,batch=16",
                           "wresnet:layers=50,channels=32,width=2,batch=16"}) {
    for (const int64_t hosts : {1, 2}) {
      const Cluster cluster = testing::P3(hosts);
      Result<PlannerModel> model = PlannerModelFromSpec(spec);
      ASSERT_TRUE(model.ok()) << model.status().message();
      PlannerOptions options;
      options.threads = 2;
      options.microbatches = 4;
      Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster, options);
      ASSERT_TRUE(plan.ok()) << spec << ": " << plan.status().message();
      const TrainingStateBound bound =
          BoundTrainingState(plan.value().graph, plan.value().clustering.op_layer,
                             cluster.num_devices(), cluster.device.memory_bytes);
      ASSERT_GT(bound.per_device, 0) << spec;
      EXPECT_GE(plan.value().peak_memory_bytes, bound.per_device) << spec << " on " << hosts;
      // Under pressure (memory levels, ZeRO-3) the plan still holds at least the bound.
      options.device_memory_bytes = plan.value().peak_memory_bytes * 3 / 4;
      Result<PipelinePlan> tight = PlanPipeline(model.value(), cluster, options);
      if (tight.ok()) {
        EXPECT_GE(tight.value().peak_memory_bytes, bound.per_device) << spec << " on " << hosts;
      } else {
        EXPECT_EQ(tight.status().code(), StatusCode::kInfeasible) << tight.status().message();
      }
    }
  }
}

TEST(TrainingStateBound, PlannerRefusesBelowTheBoundAndSearchesFromIt) {
  const Cluster cluster = testing::P3(1);
  Result<PlannerModel> model = PlannerModelFromSpec(kGpt);
  ASSERT_TRUE(model.ok());
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 4;
  options.device_memory_bytes = 1000;
  Result<PipelinePlan> tiny = PlanPipeline(model.value(), cluster, options);
  ASSERT_FALSE(tiny.ok());
  // The planner's bound: the graph's, less what lies in no layer group (Adam's step count).
  const int64_t bound = testing::BytesAfter(tiny.status().message(), "need at least ");
  const Graph graph = BuildGraph(kGpt, 4);
  const std::vector<int32_t> every_op(graph.ops.size(), 0);
  const int64_t whole = BoundTrainingState(graph, every_op, 8, 1000).per_device;
  EXPECT_GE(bound, whole) << tiny.status().message();
  EXPECT_LE(bound, whole + 8) << tiny.status().message();

  options.device_memory_bytes = bound - 1;
  Result<PipelinePlan> below = PlanPipeline(model.value(), cluster, options);
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.status().code(), StatusCode::kInfeasible);
  const std::string& message = below.status().message();
  EXPECT_NE(message.find("the weights, gradients and optimizer state alone"), std::string::npos)
      << message;
  EXPECT_NE(message.find(std::to_string(bound) + " bytes) per device even spread over all 8 "
                                                 "devices (no fewer than 9 devices"),
            std::string::npos)
      << message;
  // Refused before any intra-op solve: the searched message never appears.
  EXPECT_EQ(message.find("smallest device memory"), std::string::npos) << message;
  // At the bound the search runs (and here finds the activations too much).
  options.device_memory_bytes = bound;
  Result<PipelinePlan> at = PlanPipeline(model.value(), cluster, options);
  ASSERT_FALSE(at.ok());
  EXPECT_EQ(at.status().code(), StatusCode::kInfeasible);
  EXPECT_GT(
      testing::BytesAfter(at.status().message(), "smallest device memory that fits a plan is "),
      bound)
      << at.status().message();
}

// A mixed cluster holds what its pools' memories hold together (each pool's own, or the
// options' for all): a state beyond that is refused at once.
TEST(TrainingStateBound, MixedClustersCountEveryPoolsMemory) {
  Result<Cluster> mixed = ParseClusterSpec(
      "dgx-a100-80g:hosts=1,devices_per_host=4+p3.16xlarge:hosts=1,devices_per_host=4");
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 4;
  // gpt-39b's 624 GB of weights, gradients and Adam state against 4 x 80 + 4 x 16 GiB.
  Result<PlannerModel> big = PlannerModelFromSpec("gpt-39b");
  ASSERT_TRUE(big.ok());
  Result<PipelinePlan> refused = PlanPipeline(big.value(), mixed.value(), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(refused.status().message().find("no plan fits the cluster's device memory: the "
                                            "weights, gradients and optimizer state alone"),
            std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("exceed the memory of all 8 devices together "
                                            "(384.00 GiB)"),
            std::string::npos)
      << refused.status().message();
  // The options' memory replaces every pool's.
  Result<PlannerModel> small = PlannerModelFromSpec(kGpt);
  ASSERT_TRUE(small.ok());
  options.device_memory_bytes = 1000;
  refused = PlanPipeline(small.value(), mixed.value(), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("together (7.81 KiB)"), std::string::npos)
      << refused.status().message();
  // The small model fits the pools' own memories.
  options.device_memory_bytes.reset();
  Result<PipelinePlan> plan = PlanPipeline(small.value(), mixed.value(), options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
}

}  // namespace
}  // namespace alpa
