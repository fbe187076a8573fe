// A plan as the simulator's input: the simulator's closed form reproduces the planner's
// iteration time (which checks the conversion), stage memory and in-flight counts match the
// plan's, the JSON path gives the in-memory path's input exactly, and bad plan JSON gets a
// clear status naming the field.
#include "exec/sim/plan_simulation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "core/cluster/cluster.h"
#include "models/planner_model.h"
#include "solvers/planner/plan_json.h"
#include "support/clusters.h"

namespace alpa {
namespace {

using nlohmann::json;

constexpr const char* kSmallGpt = "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1024,batch=16";

using testing::P3;

PipelinePlan PlanOrDie(const std::string& spec, const Cluster& cluster, int64_t microbatches) {
  Result<PlannerModel> model = PlannerModelFromSpec(spec);
  EXPECT_TRUE(model.ok()) << model.status().message();
  PlannerOptions options;
  options.microbatches = microbatches;
  options.threads = 2;
  // Solves proven (not cut by the clock), so that plans do not depend on the machine's load.
  options.intra_op_time_limit_seconds = 600;
  Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(plan).value() : PipelinePlan{};
}

// The plans are the slow part: make each once.
const PipelinePlan& OneHostPlan() {
  static const PipelinePlan plan = PlanOrDie(kSmallGpt, P3(1), 4);
  return plan;
}
const PipelinePlan& TwoHostPlan() {
  static const PipelinePlan plan = PlanOrDie(kSmallGpt, P3(2), 4);
  return plan;
}

void ExpectSameInput(const PipelineSimInput& a, const PipelineSimInput& b, bool slices) {
  EXPECT_EQ(a.hosts, b.hosts);
  EXPECT_EQ(a.devices_per_host, b.devices_per_host);
  EXPECT_EQ(a.intra_host.bandwidth, b.intra_host.bandwidth);
  EXPECT_EQ(a.intra_host.latency, b.intra_host.latency);
  EXPECT_EQ(a.inter_host.bandwidth, b.inter_host.bandwidth);
  EXPECT_EQ(a.inter_host.latency, b.inter_host.latency);
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.microbatches, b.microbatches);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (size_t s = 0; s < a.stages.size(); ++s) {
    const PipelineSimStage& x = a.stages[s];
    const PipelineSimStage& y = b.stages[s];
    EXPECT_EQ(x.devices, y.devices) << "stage " << s;
    EXPECT_EQ(x.forward_seconds, y.forward_seconds) << "stage " << s;
    EXPECT_EQ(x.backward_seconds, y.backward_seconds) << "stage " << s;
    EXPECT_EQ(x.weight_gradient_seconds, y.weight_gradient_seconds) << "stage " << s;
    EXPECT_EQ(x.gradient_sync_seconds, y.gradient_sync_seconds) << "stage " << s;
    EXPECT_EQ(x.update_seconds, y.update_seconds) << "stage " << s;
    EXPECT_EQ(x.activation_bytes, y.activation_bytes) << "stage " << s;
    EXPECT_EQ(x.persistent_bytes, y.persistent_bytes) << "stage " << s;
  }
  ASSERT_EQ(a.transfers.size(), b.transfers.size());
  for (size_t t = 0; t < a.transfers.size(); ++t) {
    const PipelineSimTransfer& x = a.transfers[t];
    const PipelineSimTransfer& y = b.transfers[t];
    EXPECT_EQ(x.from_stage, y.from_stage) << "transfer " << t;
    EXPECT_EQ(x.to_stage, y.to_stage) << "transfer " << t;
    EXPECT_EQ(x.bytes, y.bytes) << "transfer " << t;
    EXPECT_EQ(x.direction, y.direction) << "transfer " << t;
    if (!slices) continue;
    ASSERT_EQ(x.slices.size(), y.slices.size()) << "transfer " << t;
    for (size_t k = 0; k < x.slices.size(); ++k) {
      EXPECT_EQ(x.slices[k].src_device, y.slices[k].src_device);
      EXPECT_EQ(x.slices[k].dst_device, y.slices[k].dst_device);
      EXPECT_EQ(x.slices[k].bytes, y.slices[k].bytes);
    }
  }
}

// The conversion reproduces the planner's numbers; the simulation runs and is consistent.
void CheckPlan(const PipelinePlan& plan, const Cluster& cluster) {
  ASSERT_FALSE(plan.stages.empty());
  Result<PipelineSimInput> in = SimInputFromPlan(plan, cluster, PipelineScheduleKind::kOneFOneB);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in.value().stages.size(), plan.stages.size());
  std::vector<const CrossStageTransfer*> per_microbatch;  // the others cross once, in the sync
  for (const CrossStageTransfer& ct : plan.transfers) {
    if (!ct.once_per_iteration) per_microbatch.push_back(&ct);
  }
  ASSERT_EQ(in.value().transfers.size(), per_microbatch.size());
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlannedStage& st = plan.stages[s];
    const PipelineSimStage& ss = in.value().stages[s];
    EXPECT_GT(st.forward_latency, 0) << "stage " << s;
    EXPECT_LT(st.forward_latency, st.latency) << "stage " << s;
    EXPECT_NEAR(ss.forward_seconds + ss.backward_seconds, st.latency, 1e-12 * st.latency);
    EXPECT_EQ(ss.gradient_sync_seconds, st.iteration_overhead);
    EXPECT_GE(ss.persistent_bytes, 0);
  }
  for (size_t t = 0; t < per_microbatch.size(); ++t) {
    const CrossStageTransfer& ct = *per_microbatch[t];
    const PipelineSimTransfer& tr = in.value().transfers[t];
    EXPECT_EQ(tr.direction, ct.to_stage > ct.from_stage ? SimTransferDirection::kForward
                                                        : SimTransferDirection::kBackward);
    EXPECT_EQ(tr.slices.size(), ct.moves.size());
  }

  Result<PipelineSimResult> r = SimulatePipeline(in.value());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const PipelineSimResult& res = r.value();
  EXPECT_NEAR(res.closed_form_seconds, plan.schedule_seconds, 1e-9 * plan.schedule_seconds);
  EXPECT_GT(res.iteration_seconds, 0);
  EXPECT_TRUE(std::isfinite(res.iteration_seconds));
  ASSERT_EQ(res.stages.size(), plan.stages.size());
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    // 1F1B holds what the planner assumed: its in-flight count and memory peak.
    EXPECT_EQ(res.stages[s].peak_in_flight, plan.stages[s].in_flight) << "stage " << s;
    EXPECT_EQ(res.stages[s].peak_memory_bytes, plan.stages[s].memory_bytes) << "stage " << s;
    const SimStageStats& st = res.stages[s];
    EXPECT_NEAR(st.busy_seconds + st.communication_wait_seconds + st.idle_seconds,
                res.iteration_seconds, 1e-9 * res.iteration_seconds);
  }

  // The detailed JSON gives the same input, slices included; the summary the same without
  // slices; both name the planner's prediction.
  for (int32_t detail : {0, 1}) {
    PlanSimulationContext context;
    Result<PipelineSimInput> from_json =
        SimInputFromPlanJson(PipelinePlanJson(plan, cluster, "small-gpt", detail).value(),
                             PipelineScheduleKind::kOneFOneB, &context);
    ASSERT_TRUE(from_json.ok()) << from_json.status().message();
    ExpectSameInput(in.value(), from_json.value(), detail == 1);
    if (detail == 0) {
      for (const PipelineSimTransfer& t : from_json.value().transfers) {
        EXPECT_TRUE(t.slices.empty());
      }
    }
    EXPECT_EQ(context.planner_iteration_seconds, plan.iteration_seconds);
    EXPECT_EQ(context.model, "small-gpt");
    EXPECT_EQ(context.cluster, cluster.name);
    ASSERT_EQ(context.first_layer.size(), plan.stages.size());
    EXPECT_EQ(context.last_layer.back(), plan.stages.back().last_layer);
  }

  // GPipe holds every microbatch at once.
  Result<PipelineSimInput> gpipe = SimInputFromPlan(plan, cluster, PipelineScheduleKind::kGPipe);
  ASSERT_TRUE(gpipe.ok());
  Result<PipelineSimResult> g = SimulatePipeline(gpipe.value());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g.value().stages.front().peak_in_flight, plan.microbatches);
  EXPECT_NEAR(g.value().closed_form_seconds, plan.schedule_seconds, 1e-9 * plan.schedule_seconds);
}

TEST(PlanSimulation, SmallGptOnOneHost) { CheckPlan(OneHostPlan(), P3(1)); }

TEST(PlanSimulation, SmallGptOnTwoHosts) {
  const PipelinePlan& plan = TwoHostPlan();
  CheckPlan(plan, P3(2));
}

// The planner's ZB-H1 plan (four one-device stages, 4 microbatches): the simulator, an independent
// event-by-event run of the same schedule, lands on the plan's prediction (one host, nothing
// contends), beats the same plan simulated under 1F1B, and holds the plan's memory.
TEST(PlanSimulation, ZeroBubblePlanMatchesItsPrediction) {
  Result<PlannerModel> model = PlannerModelFromSpec(
      "gpt:layers=4,hidden=128,heads=4,seq=8,vocab=64,batch=8,dtype=f32,adam_eps=1e-5");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Cluster cluster = P3(1, 4);
  PlannerOptions options;
  options.threads = 2;
  options.microbatches = 4;
  options.pipeline_stages = 4;
  options.search_zero_bubble = true;
  Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster, options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan.value().schedule, PipelineScheduleKind::kZeroBubbleH1);
  Result<PipelineSimInput> zb = SimInputFromPlan(plan.value(), cluster, plan.value().schedule);
  Result<PipelineSimInput> one =
      SimInputFromPlan(plan.value(), cluster, PipelineScheduleKind::kOneFOneB);
  ASSERT_TRUE(zb.ok()) << zb.status().message();
  ASSERT_TRUE(one.ok()) << one.status().message();
  Result<PipelineSimResult> zb_run = SimulatePipeline(zb.value());
  Result<PipelineSimResult> one_run = SimulatePipeline(one.value());
  ASSERT_TRUE(zb_run.ok()) << zb_run.status().message();
  ASSERT_TRUE(one_run.ok()) << one_run.status().message();
  EXPECT_NEAR(zb_run.value().iteration_seconds, plan.value().iteration_seconds,
              1e-9 * plan.value().iteration_seconds);
  EXPECT_LT(zb_run.value().iteration_seconds, 0.9 * one_run.value().iteration_seconds);
  for (size_t s = 0; s < plan.value().stages.size(); ++s) {
    EXPECT_EQ(zb_run.value().stages[s].peak_memory_bytes, plan.value().stages[s].memory_bytes)
        << "stage " << s;
  }
}

TEST(PlanSimulation, ReportJsonAndLabels) {
  const PipelinePlan& plan = OneHostPlan();
  const Cluster cluster = P3(1);
  Result<PipelineSimInput> in = SimInputFromPlan(plan, cluster, PipelineScheduleKind::kOneFOneB);
  ASSERT_TRUE(in.ok());
  Result<PipelineSimResult> r = SimulatePipeline(in.value());
  ASSERT_TRUE(r.ok());
  const PlanSimulationContext context = PlanSimulationContextOf(plan, cluster, "small-gpt");
  const json j = json::parse(SimulationJson(in.value(), r.value(), context));
  EXPECT_EQ(j["format"], "alpa-simulation");
  EXPECT_EQ(j["schedule"], "1f1b");
  EXPECT_EQ(j["iteration_seconds"].get<double>(), r.value().iteration_seconds);
  EXPECT_EQ(j["planner_iteration_seconds"].get<double>(), plan.iteration_seconds);
  EXPECT_NEAR(j["relative_error"].get<double>(),
              (r.value().iteration_seconds - plan.iteration_seconds) / plan.iteration_seconds,
              1e-12);
  EXPECT_EQ(j["stages"].size(), plan.stages.size());
  EXPECT_EQ(j["stages"][0]["peak_memory_bytes"].get<int64_t>(), plan.stages[0].memory_bytes);

  PlanSimulationContext unknown;
  const json k = json::parse(SimulationJson(in.value(), r.value(), unknown));
  EXPECT_TRUE(k["planner_iteration_seconds"].is_null());
  EXPECT_TRUE(k["relative_error"].is_null());

  const std::vector<std::string> labels = PlanStageLabels(in.value(), context);
  ASSERT_EQ(labels.size(), plan.stages.size());
  EXPECT_EQ(labels[0].rfind("stage 0: devices ", 0), 0u) << labels[0];
  EXPECT_NE(labels[0].find("layer"), std::string::npos) << labels[0];
  const std::string title = PlanTimelineTitle(in.value(), r.value(), context);
  EXPECT_NE(title.find("small-gpt on p3.16xlarge (1 x 8), 1F1B, 4 microbatches"), std::string::npos)
      << title;
}

// A hand-written two-stage plan JSON: every field maps as plan_simulation.h says.
json TwoStagePlanJson() {
  json cluster = ClusterToJson(P3(1));
  cluster["device_memory_bytes"] = 16LL << 30;
  json j = {{"format", "alpa-plan"}, {"version", 1},      {"model", "hand"},
            {"cluster", cluster},    {"microbatches", 4}, {"iteration_seconds", 1.75},
            {"schedule", "1f1b"}};
  j["stages"] = json::array({{{"layers", {0, 1}},
                              {"devices", {0, 1, 2, 3}},
                              {"latency_seconds", 0.25},
                              {"forward_latency_seconds", 0.125},
                              {"iteration_overhead_seconds", 0.0625},
                              {"memory_bytes", 1000},
                              {"in_flight", 2},
                              {"activation_bytes", 100}},
                             {{"layers", {2, 2}},
                              {"devices", {4, 5, 6, 7}},
                              {"latency_seconds", 0.5},
                              {"forward_latency_seconds", 0.25},
                              {"iteration_overhead_seconds", 0.0},
                              {"memory_bytes", 500},
                              {"in_flight", 1},
                              {"activation_bytes", 50}}});
  j["transfers"] = json::array(
      {{{"from_stage", 0},
        {"to_stage", 1},
        {"direction", "forward"},
        {"bytes", 64},
        {"moves",
         {{{"src", 0}, {"dst", 4}, {"bytes", 32}}, {{"src", 1}, {"dst", 5}, {"bytes", 32}}}}},
       {{"from_stage", 1}, {"to_stage", 0}, {"direction", "backward"}, {"bytes", 64}}});
  return j;
}

TEST(PlanSimulation, HandWrittenJson) {
  PlanSimulationContext context;
  Result<PipelineSimInput> in =
      SimInputFromPlanJson(TwoStagePlanJson().dump(), PipelineScheduleKind::kGPipe, &context);
  ASSERT_TRUE(in.ok()) << in.status().message();
  const PipelineSimInput& x = in.value();
  EXPECT_EQ(x.schedule, PipelineScheduleKind::kGPipe);
  EXPECT_EQ(x.hosts, 1);
  EXPECT_EQ(x.devices_per_host, 8);
  EXPECT_EQ(x.intra_host.bandwidth, P3(1).intra_host_link.bandwidth);
  EXPECT_EQ(x.microbatches, 4);
  ASSERT_EQ(x.stages.size(), 2u);
  EXPECT_EQ(x.stages[0].forward_seconds, 0.125);
  EXPECT_EQ(x.stages[0].backward_seconds, 0.125);
  EXPECT_EQ(x.stages[0].gradient_sync_seconds, 0.0625);
  EXPECT_EQ(x.stages[0].update_seconds, 0);
  EXPECT_EQ(x.stages[0].activation_bytes, 100);
  EXPECT_EQ(x.stages[0].persistent_bytes, 800);
  EXPECT_EQ(x.stages[1].persistent_bytes, 450);
  ASSERT_EQ(x.transfers.size(), 2u);
  EXPECT_EQ(x.transfers[0].direction, SimTransferDirection::kForward);
  ASSERT_EQ(x.transfers[0].slices.size(), 2u);
  EXPECT_EQ(x.transfers[0].slices[1].src_device, 1);
  EXPECT_EQ(x.transfers[0].slices[1].dst_device, 5);
  EXPECT_EQ(x.transfers[1].direction, SimTransferDirection::kBackward);
  EXPECT_TRUE(x.transfers[1].slices.empty());
  EXPECT_EQ(context.model, "hand");
  EXPECT_EQ(context.planner_iteration_seconds, 1.75);
  EXPECT_EQ(context.first_layer, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(context.last_layer, (std::vector<int32_t>{1, 2}));
  // 0.25 + 0.0625 + 0.5 + 3 * 0.5 = 2.3125.
  Result<PipelineSimResult> r = SimulatePipeline(x);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().closed_form_seconds, 2.3125);
}

// The optional weight-gradient part of a stage's backward: read when present (0 when absent),
// run as ZB-H1's W tasks, written back in the report.
TEST(PlanSimulation, WeightGradientLatencyFromJson) {
  json plan = TwoStagePlanJson();
  plan["stages"][0]["weight_gradient_latency_seconds"] = 0.0625;
  PlanSimulationContext context;
  Result<PipelineSimInput> in =
      SimInputFromPlanJson(plan.dump(), PipelineScheduleKind::kZeroBubbleH1, &context);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in.value().schedule, PipelineScheduleKind::kZeroBubbleH1);
  EXPECT_EQ(in.value().stages[0].backward_seconds, 0.125);
  EXPECT_EQ(in.value().stages[0].weight_gradient_seconds, 0.0625);
  EXPECT_EQ(in.value().stages[1].weight_gradient_seconds, 0);
  Result<PipelineSimResult> r = SimulatePipeline(in.value());
  ASSERT_TRUE(r.ok()) << r.status().message();
  int64_t weight_gradients = 0;
  for (const SimEvent& e : r.value().timeline) {
    if (e.kind != SimEventKind::kWeightGradient) continue;
    ++weight_gradients;
    EXPECT_EQ(e.end - e.start, e.stage == 0 ? 0.0625 : 0.0);
  }
  EXPECT_EQ(weight_gradients, 2 * 4);
  // ZB-H1 holds min(S, B) = 2 microbatches on both stages.
  EXPECT_EQ(r.value().stages[1].peak_in_flight, 2);
  const json report = json::parse(SimulationJson(in.value(), r.value(), context));
  EXPECT_EQ(report["schedule"], "zb-h1");
  EXPECT_EQ(report["stages"][0]["weight_gradient_seconds"].get<double>(), 0.0625);
  EXPECT_EQ(report["stages"][1]["weight_gradient_seconds"].get<double>(), 0.0);
  EXPECT_EQ(report["stages"][0]["backward_seconds"].get<double>(), 0.125);
  const std::string title = PlanTimelineTitle(in.value(), r.value(), context);
  EXPECT_NE(title.find("hand on p3.16xlarge (1 x 8), ZB-H1, 4 microbatches"), std::string::npos)
      << title;
  // The whole backward as the weight gradient is allowed (an input gradient of 0).
  plan["stages"][0]["weight_gradient_latency_seconds"] = 0.125;
  EXPECT_TRUE(SimInputFromPlanJson(plan.dump(), PipelineScheduleKind::kZeroBubbleH1).ok());
}

// Parses `j` (after `edit`) and expects `code` with `needle` in the message.
template <typename Edit>
void ExpectError(Edit edit, StatusCode code, const std::string& needle) {
  json j = TwoStagePlanJson();
  edit(j);
  Result<PipelineSimInput> in = SimInputFromPlanJson(j.dump());
  ASSERT_FALSE(in.ok()) << needle;
  EXPECT_EQ(in.status().code(), code) << in.status().message();
  EXPECT_NE(in.status().message().find(needle), std::string::npos) << in.status().message();
  EXPECT_EQ(in.status().message().rfind("plan JSON", 0), 0u) << in.status().message();
}

TEST(PlanSimulation, BadJsonNamesTheField) {
  EXPECT_EQ(SimInputFromPlanJson("{\"format\": ").status().code(), StatusCode::kParse);
  EXPECT_EQ(SimInputFromPlanJson("").status().code(), StatusCode::kParse);
  EXPECT_EQ(SimInputFromPlanJson(std::string(200, '[')).status().code(), StatusCode::kParse);
  ExpectError([](json& j) { j = json::array(); }, StatusCode::kParse, "expected an object");
  ExpectError([](json& j) { j["format"] = "alpa-cluster"; }, StatusCode::kParse, "format");
  ExpectError([](json& j) { j["version"] = 2; }, StatusCode::kParse, "version");
  ExpectError(
      [](json& j) {
        j["cluster"] = {{"name", "x"}, {"hosts", 1}};
      },
      StatusCode::kParse, "cluster");
  ExpectError([](json& j) { j["cluster"]["hosts"] = 0; }, StatusCode::kInvalidArgument, "hosts");
  ExpectError([](json& j) { j.erase("microbatches"); }, StatusCode::kParse, "microbatches");
  ExpectError([](json& j) { j["microbatches"] = 0; }, StatusCode::kInvalidArgument, "microbatches");
  ExpectError([](json& j) { j["stages"] = json::array(); }, StatusCode::kInvalidArgument, "stages");
  ExpectError([](json& j) { j["stages"][1].erase("forward_latency_seconds"); }, StatusCode::kParse,
              "stages[1].forward_latency_seconds: missing");
  ExpectError([](json& j) { j["stages"][0]["latency_seconds"] = "fast"; }, StatusCode::kParse,
              "stages[0].latency_seconds");
  ExpectError([](json& j) { j["stages"][0]["latency_seconds"] = -1; }, StatusCode::kInvalidArgument,
              "stages[0].latency_seconds");
  ExpectError([](json& j) { j["stages"][0]["forward_latency_seconds"] = 1; },
              StatusCode::kInvalidArgument, "stages[0].forward_latency_seconds");
  // Longer than the backward (latency 0.25 - forward 0.125), negative, not a number.
  ExpectError([](json& j) { j["stages"][0]["weight_gradient_latency_seconds"] = 0.25; },
              StatusCode::kInvalidArgument, "stages[0].weight_gradient_latency_seconds");
  ExpectError([](json& j) { j["stages"][1]["weight_gradient_latency_seconds"] = -0.5; },
              StatusCode::kInvalidArgument, "stages[1].weight_gradient_latency_seconds");
  ExpectError([](json& j) { j["stages"][1]["weight_gradient_latency_seconds"] = "half"; },
              StatusCode::kParse, "stages[1].weight_gradient_latency_seconds");
  ExpectError([](json& j) { j["stages"][0]["activation_bytes"] = 600; },
              StatusCode::kInvalidArgument, "stages[0]");
  ExpectError([](json& j) { j["stages"][1]["devices"][0] = 8; }, StatusCode::kInvalidArgument,
              "stages[1].devices[0]");
  ExpectError([](json& j) { j["stages"][1]["devices"][3] = 3; }, StatusCode::kInvalidArgument,
              "already used");
  ExpectError([](json& j) { j["transfers"][0]["direction"] = "backward"; },
              StatusCode::kInvalidArgument, "transfers[0].direction");
  ExpectError([](json& j) { j["transfers"][0]["direction"] = "sideways"; },
              StatusCode::kInvalidArgument, "transfers[0].direction");
  ExpectError([](json& j) { j["transfers"][1].erase("direction"); }, StatusCode::kParse,
              "transfers[1].direction: missing");
  ExpectError([](json& j) { j["transfers"][0]["to_stage"] = 2; }, StatusCode::kInvalidArgument,
              "transfers[0].to_stage");
  ExpectError([](json& j) { j["transfers"][0]["moves"][1]["src"] = 4; },
              StatusCode::kInvalidArgument, "transfers[0].moves[1].src");
  ExpectError([](json& j) { j["transfers"][0]["moves"][0]["dst"] = 0; },
              StatusCode::kInvalidArgument, "transfers[0].moves[0].dst");
  ExpectError([](json& j) { j["transfers"][0]["moves"][0].erase("bytes"); }, StatusCode::kParse,
              "transfers[0].moves[0].bytes");
}

}  // namespace
}  // namespace alpa
