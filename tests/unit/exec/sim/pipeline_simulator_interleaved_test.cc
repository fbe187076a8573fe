// The pipeline simulator under interleaved 1F1B (pipeline_schedule.h): a device group runs the
// tasks of its stages in GroupSchedule's order. A hand-derived iteration on two groups of two
// stages, the task-by-task evaluation of pipeline_estimate.h on random stages without transfers,
// the group's statistics and memory peak reported by each of its stages, the timeline tiling each
// group, the checks of the input, a plan JSON with "virtual_stages" as the simulator's input and
// its report, and the timeline SVG's rows per group. Times are sums of dyadic numbers, so
// equalities are exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "exec/sim/pipeline_simulator.h"
#include "exec/sim/plan_simulation.h"
#include "exec/sim/program_simulation.h"
#include "exec/sim/timeline_svg.h"
#include "solvers/pipeline/pipeline_estimate.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "support/clusters.h"
#include "support/pipeline_sim_runs.h"

namespace alpa {
namespace {

using nlohmann::json;
using testing::FindEvent;
using testing::P3;
using testing::Simulate;

constexpr PipelineScheduleKind k1F1B = PipelineScheduleKind::kOneFOneB;
constexpr PipelineScheduleKind kInterleaved = PipelineScheduleKind::kInterleavedOneFOneB;

// `groups` device groups of one device each on one host, `virtual_stages` stages per group
// (stage s on device s % groups), every stage forward f and backward b; zero-byte activation and
// gradient transfers between consecutive stages over links without latency (they order the
// tasks and take no time).
PipelineSimInput Interleaved(int32_t groups, int32_t virtual_stages, int64_t microbatches, double f,
                             double b) {
  PipelineSimInput in;
  in.hosts = 1;
  in.devices_per_host = groups;
  in.intra_host = {1 << 20, 0};
  in.inter_host = {1 << 20, 0};
  in.schedule = virtual_stages > 1 ? kInterleaved : k1F1B;
  in.virtual_stages = virtual_stages;
  in.microbatches = microbatches;
  const int32_t num_stages = groups * virtual_stages;
  for (int32_t s = 0; s < num_stages; ++s) {
    PipelineSimStage st;
    st.devices = {s % groups};
    st.forward_seconds = f;
    st.backward_seconds = b;
    in.stages.push_back(st);
  }
  for (int32_t s = 0; s + 1 < num_stages; ++s) {
    PipelineSimTransfer fwd;
    fwd.from_stage = s;
    fwd.to_stage = s + 1;
    fwd.direction = SimTransferDirection::kForward;
    in.transfers.push_back(fwd);
    PipelineSimTransfer bwd;
    bwd.from_stage = s + 1;
    bwd.to_stage = s;
    bwd.direction = SimTransferDirection::kBackward;
    in.transfers.push_back(bwd);
  }
  return in;
}

int32_t NumGroups(const PipelineSimInput& in) {
  return PipelineGroups(static_cast<int32_t>(in.stages.size()), in.virtual_stages);
}

// Per device group: its non-send events (its stages' tasks, syncs and updates under their own
// stage numbers, its idle and recv intervals under its first stage) tile [0, T]; every stage of
// the group reports the group's stats, busy being the group's compute; every stage runs one
// forward and one backward per microbatch.
void CheckGroupTimelines(const PipelineSimInput& in, const PipelineSimResult& r) {
  const int32_t groups = NumGroups(in);
  const auto num_stages = static_cast<int32_t>(in.stages.size());
  ASSERT_GT(groups, 0);
  for (int32_t g = 0; g < groups; ++g) {
    double t = 0, busy = 0;
    for (const SimEvent& e : r.timeline) {
      if (e.kind == SimEventKind::kSend || e.stage % groups != g) continue;
      EXPECT_EQ(e.start, t) << "group " << g << " " << SimEventKindName(e.kind) << " of stage "
                            << e.stage;
      t = e.end;
      if (e.kind == SimEventKind::kIdle || e.kind == SimEventKind::kRecv) {
        EXPECT_EQ(e.stage, g) << "waits are recorded under the group's first stage";
      } else {
        busy += e.end - e.start;
      }
    }
    EXPECT_EQ(t, r.iteration_seconds) << "group " << g;
    const SimStageStats& stats = r.stages[static_cast<size_t>(g)];
    EXPECT_EQ(stats.busy_seconds, busy) << "group " << g;
    EXPECT_EQ(stats.busy_seconds + stats.communication_wait_seconds + stats.idle_seconds,
              r.iteration_seconds);
    for (int32_t s = g + groups; s < num_stages; s += groups) {
      const SimStageStats& other = r.stages[static_cast<size_t>(s)];
      EXPECT_EQ(other.busy_seconds, stats.busy_seconds) << "stage " << s;
      EXPECT_EQ(other.communication_wait_seconds, stats.communication_wait_seconds);
      EXPECT_EQ(other.idle_seconds, stats.idle_seconds);
      EXPECT_EQ(other.finish_seconds, stats.finish_seconds);
      EXPECT_EQ(other.peak_in_flight, stats.peak_in_flight);
      EXPECT_EQ(other.peak_memory_bytes, stats.peak_memory_bytes);
    }
  }
  for (int32_t s = 0; s < num_stages; ++s) {
    for (int64_t m = 0; m < in.microbatches; ++m) {
      EXPECT_NE(FindEvent(r, s, SimEventKind::kForward, m), nullptr) << s << " " << m;
      EXPECT_NE(FindEvent(r, s, SimEventKind::kBackward, m), nullptr) << s << " " << m;
    }
  }
}

TEST(InterleavedSimulation, TwoGroupsOfTwoStagesByHand) {
  // P = 2 groups, v = 2, B = 4, every stage f = 1, b = 2. Group 0 runs stages 0 and 2:
  //   F0s0 [0,1] F1s0 [1,2] F0s2 [2,3] F1s2 [3,4] F2s0 [4,5] B0s2 [6,8] F3s0 [8,9]
  //   B1s2 [9,11] F2s2 [11,12] B0s0 [12,14] F3s2 [14,15] B1s0 [15,17] B2s2 [18,20]
  //   B3s2 [21,23] B2s0 [23,25] B3s0 [25,27]
  // group 1 stages 1 and 3, ending with B3s1 [23,25]. Each group computes 4 x 2 x 3 = 24 s, so
  // the bubble is 3 s: (P - 1)(f + b) of a group divided by v, where 1F1B on two stages of twice
  // the work (f = 2, b = 4) takes (B - 1) 6 + 12 = 30 s.
  const PipelineSimInput in = Interleaved(2, 2, 4, 1, 2);
  const PipelineSimResult r = Simulate(in);
  EXPECT_EQ(r.iteration_seconds, 27);
  CheckGroupTimelines(in, r);
  const SimEvent* b0s2 = FindEvent(r, 2, SimEventKind::kBackward, 0);
  ASSERT_NE(b0s2, nullptr);
  EXPECT_EQ(b0s2->start, 6);
  EXPECT_EQ(b0s2->devices, (std::vector<int64_t>{0}));
  const SimEvent* f3s2 = FindEvent(r, 2, SimEventKind::kForward, 3);
  ASSERT_NE(f3s2, nullptr);
  EXPECT_EQ(f3s2->start, 14);
  const SimEvent* b3s1 = FindEvent(r, 1, SimEventKind::kBackward, 3);
  ASSERT_NE(b3s1, nullptr);
  EXPECT_EQ(b3s1->end, 25);
  for (int32_t s = 0; s < 4; ++s) {
    const SimStageStats& st = r.stages[static_cast<size_t>(s)];
    EXPECT_EQ(st.busy_seconds, 24) << "stage " << s;
    EXPECT_EQ(st.communication_wait_seconds, 0) << "stage " << s;
    EXPECT_EQ(st.idle_seconds, 3) << "stage " << s;
  }
  EXPECT_EQ(r.stages[0].finish_seconds, 27);
  EXPECT_EQ(r.stages[3].finish_seconds, 25);

  const PipelineSimResult plain = Simulate(Interleaved(2, 1, 4, 2, 4));
  EXPECT_EQ(plain.iteration_seconds, 30);
  EXPECT_LT(r.iteration_seconds, plain.iteration_seconds);
  // The closed form takes each group's stages as one stage: 1F1B's 30 s, which interleaving
  // beats.
  EXPECT_EQ(r.closed_form_seconds, 30);
  EXPECT_EQ(plain.closed_form_seconds, 30);
}

TEST(InterleavedSimulation, OneMicrobatchRoundRunsEveryForwardFirst) {
  // B == P: a group runs all its forwards, then all its backwards. P = 2, v = 2, B = 2, f = 1,
  // b = 2: group 0 F0s0 [0,1] F1s0 [1,2] F0s2 [2,3] F1s2 [3,4], group 1 F0s1 [1,2] F1s1 [2,3]
  // F0s3 [3,4] F1s3 [4,5] B0s3 [5,7] B1s3 [7,9], group 0 B0s2 [7,9] B1s2 [9,11], group 1 B0s1
  // [9,11] B1s1 [11,13], group 0 B0s0 [11,13] B1s0 [13,15]: 12 s of work per group, 3 s bubble.
  const PipelineSimInput in = Interleaved(2, 2, 2, 1, 2);
  const PipelineSimResult r = Simulate(in);
  EXPECT_EQ(r.iteration_seconds, 15);
  const SimEvent* b0s1 = FindEvent(r, 1, SimEventKind::kBackward, 0);
  ASSERT_NE(b0s1, nullptr);
  EXPECT_EQ(b0s1->start, 9);
  CheckGroupTimelines(in, r);
  EXPECT_EQ(r.stages[0].peak_in_flight, 4);  // two microbatches on each of its two stages
}

TEST(InterleavedSimulation, WithoutTransfersItIsTheScheduleEvaluation) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> eighths(1, 24), overhead(0, 8);
  for (int trial = 0; trial < 60; ++trial) {
    const int32_t groups = 2 + trial % 3;                // 2..4
    const int32_t virtual_stages = 2 + (trial / 3) % 3;  // 2..4
    const int64_t microbatches = groups * (1 + (trial / 9) % 3);
    PipelineSimInput in = Interleaved(groups, virtual_stages, microbatches, 1, 2);
    std::vector<PipelineEstimateStage> stages;
    for (PipelineSimStage& st : in.stages) {
      st.forward_seconds = eighths(rng) / 8.0;
      st.backward_seconds = eighths(rng) / 8.0;
      st.gradient_sync_seconds = overhead(rng) / 8.0;
      PipelineEstimateStage e;
      e.forward = st.forward_seconds;
      e.backward = st.backward_seconds;
      e.iteration_overhead = st.gradient_sync_seconds;
      stages.push_back(e);
    }
    SCOPED_TRACE("P " + std::to_string(groups) + " v " + std::to_string(virtual_stages) + " B " +
                 std::to_string(microbatches));
    const PipelineSimResult r = Simulate(in);
    EXPECT_EQ(r.iteration_seconds,
              EvaluateSchedule(kInterleaved, stages, microbatches, virtual_stages));
    CheckGroupTimelines(in, r);
  }
}

TEST(InterleavedSimulation, GroupsReportOneStatisticsWithCommunication) {
  // Two hosts, a group per host, slow inter-host links: the groups wait for activations and
  // gradients, and both stages of a group report the same wait.
  PipelineSimInput in = Interleaved(2, 2, 4, 0.5, 1);
  in.hosts = 2;
  in.devices_per_host = 1;
  in.inter_host = {1024, 0.125};
  for (PipelineSimTransfer& t : in.transfers) t.bytes = 256;  // 0.25 s + 0.125 s latency
  in.stages[0].gradient_sync_seconds = 0.25;
  in.stages[2].update_seconds = 0.5;
  const PipelineSimResult r = Simulate(in);
  CheckGroupTimelines(in, r);
  EXPECT_GT(r.stages[1].communication_wait_seconds, 0);
  EXPECT_GT(r.iteration_seconds, Simulate(Interleaved(2, 2, 4, 0.5, 1)).iteration_seconds);
  // After its last task group 0 runs stage 0's sync, then stage 2's update.
  const SimEvent* sync0 = FindEvent(r, 0, SimEventKind::kSync, -1);
  const SimEvent* update2 = FindEvent(r, 2, SimEventKind::kUpdate, -1);
  ASSERT_NE(sync0, nullptr);
  ASSERT_NE(update2, nullptr);
  EXPECT_EQ(sync0->end - sync0->start, 0.25);
  EXPECT_LE(sync0->end, update2->start);
  EXPECT_EQ(update2->end, r.stages[0].finish_seconds);
  EXPECT_EQ(r.stages[0].busy_seconds, 4 * 2 * 1.5 + 0.25 + 0.5);
}

TEST(InterleavedSimulation, PeakMemoryIsTheGroupsAtItsWorstMoment) {
  // P = 2, v = 2, B = 4 (the hand case above). Group 0's order holds (stage 0, stage 2)
  // microbatches of (1,0) (2,0) (2,1) (2,2) (3,2) (3,1) (4,1) (4,0) (4,1) (3,1) (3,2) ...
  // after each task; group 1's (stage 1, stage 3) peak at (3, 0).
  PipelineSimInput in = Interleaved(2, 2, 4, 1, 2);
  in.stages[0].activation_bytes = 100;
  in.stages[2].activation_bytes = 10;
  in.stages[0].persistent_bytes = 1000;
  in.stages[2].persistent_bytes = 2000;
  in.stages[1].activation_bytes = 7;
  in.stages[3].activation_bytes = 3;
  PipelineSimResult r = Simulate(in);
  // max(3 x 100 + 2 x 10, 4 x 100 + 1 x 10) = 410 over 3000 persistent.
  EXPECT_EQ(r.stages[0].peak_memory_bytes, 3410);
  EXPECT_EQ(r.stages[2].peak_memory_bytes, 3410);
  EXPECT_EQ(r.stages[0].peak_in_flight, 5);
  EXPECT_EQ(r.stages[1].peak_memory_bytes, 3 * 7);
  EXPECT_EQ(r.stages[3].peak_in_flight, 3);
  // Below the sum of the stages' own peaks, which fall at different moments.
  const auto in_flight = [&](int32_t s) { return MicrobatchesInFlight(kInterleaved, 4, s, 4, 2); };
  EXPECT_EQ(in_flight(0), 4);
  EXPECT_EQ(in_flight(2), 2);
  EXPECT_LT(r.stages[0].peak_memory_bytes, 3000 + in_flight(0) * 100 + in_flight(2) * 10);

  // The other way round the peak comes earlier: max(3 x 10 + 2 x 100, 4 x 10 + 100) = 230.
  in.stages[0].activation_bytes = 10;
  in.stages[2].activation_bytes = 100;
  r = Simulate(in);
  EXPECT_EQ(r.stages[0].peak_memory_bytes, 3230);
}

// ValidatePipelineSimInput's message, which must contain `needle`.
void ExpectInvalid(const PipelineSimInput& in, const std::string& needle) {
  const Status st = ValidatePipelineSimInput(in);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << needle;
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  EXPECT_EQ(SimulatePipeline(in).status().code(), StatusCode::kInvalidArgument);
}

TEST(InterleavedSimulation, InvalidShapesAndDevicesNameTheProblem) {
  const PipelineSimInput good = Interleaved(2, 2, 4, 1, 2);
  ASSERT_TRUE(ValidatePipelineSimInput(good).ok());

  PipelineSimInput in = good;
  in.stages[2].devices = {1};  // stage 2 belongs to group 0, on device 0
  ExpectInvalid(in, "stages[2].devices must be those of stages[0]");

  in = good;
  in.devices_per_host = 4;
  in.stages[0].devices = {0, 2};
  in.stages[1].devices = {1, 3};
  in.stages[2].devices = {0, 2};
  in.stages[3].devices = {3, 1};  // the same devices in another order
  ExpectInvalid(in, "stages[3].devices must be those of stages[1]");
  in.stages[3].devices = {1, 3};
  EXPECT_TRUE(ValidatePipelineSimInput(in).ok());
  in.stages[1].devices = {2, 3};  // groups may not share devices
  in.stages[3].devices = {2, 3};
  ExpectInvalid(in, "stages[1].devices[0] = 2 is already used by stages[0]");

  in = good;
  in.microbatches = 3;
  ExpectInvalid(in, "3 microbatches are not a multiple");

  in = good;
  in.virtual_stages = 1;  // interleaved needs 2 or more
  ExpectInvalid(in, "interleaved-1f1b runs at least 2 stages per device group, not 1");

  in = good;
  in.schedule = k1F1B;  // and the other schedules exactly 1
  ExpectInvalid(in, "1f1b runs one stage per device group, not 2");

  in = good;
  in.virtual_stages = 3;
  ExpectInvalid(in, "4 stages do not split into groups of 3");

  in = good;
  in.virtual_stages = 4;
  ExpectInvalid(in, "needs at least 2 device groups");

  in = good;
  for (int32_t s : {0, 2}) {
    in.stages[static_cast<size_t>(s)].persistent_bytes = int64_t{1} << 62;
  }
  ExpectInvalid(in, "device group 0");
}

// A hand-written interleaved plan: four stages on two groups of four devices of one host, the
// schedule interleaved-1f1b with "virtual_stages": 2.
json InterleavedPlanJson() {
  json cluster = ClusterToJson(P3(1));
  cluster["device_memory_bytes"] = 16LL << 30;
  json j = {{"format", "alpa-plan"},
            {"version", 1},
            {"model", "hand"},
            {"cluster", cluster},
            {"microbatches", 4},
            {"iteration_seconds", 1.75},
            {"schedule", "interleaved-1f1b"},
            {"virtual_stages", 2}};
  j["stages"] = json::array();
  const std::vector<std::vector<int64_t>> devices = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  for (int32_t s = 0; s < 4; ++s) {
    j["stages"].push_back({{"layers", {s, s}},
                           {"devices", devices[static_cast<size_t>(s % 2)]},
                           {"latency_seconds", 0.375},
                           {"forward_latency_seconds", 0.125},
                           {"iteration_overhead_seconds", 0.0625},
                           {"memory_bytes", 1000 + 100 * s},
                           {"in_flight", 2},
                           {"activation_bytes", 100}});
  }
  j["transfers"] = json::array();
  for (int32_t s = 0; s < 3; ++s) {
    j["transfers"].push_back(
        {{"from_stage", s}, {"to_stage", s + 1}, {"direction", "forward"}, {"bytes", 1 << 20}});
    j["transfers"].push_back(
        {{"from_stage", s + 1}, {"to_stage", s}, {"direction", "backward"}, {"bytes", 1 << 20}});
  }
  return j;
}

// The same plan as a PipelinePlan (what the planner hands the in-memory conversion).
PipelinePlan InterleavedPlan() {
  PipelinePlan plan;
  plan.microbatches = 4;
  plan.schedule = kInterleaved;
  plan.virtual_stages = 2;
  plan.iteration_seconds = 1.75;
  for (int32_t s = 0; s < 4; ++s) {
    PlannedStage st;
    st.first_layer = st.last_layer = s;
    st.devices = s % 2 == 0 ? std::vector<int64_t>{0, 1, 2, 3} : std::vector<int64_t>{4, 5, 6, 7};
    st.latency = 0.375;
    st.forward_latency = 0.125;
    st.iteration_overhead = 0.0625;
    st.memory_bytes = 1000 + 100 * s;
    st.in_flight = 2;
    st.activation_bytes = 100;
    plan.stages.push_back(st);
  }
  for (int32_t s = 0; s < 3; ++s) {
    CrossStageTransfer forward;
    forward.from_stage = s;
    forward.to_stage = s + 1;
    forward.bytes = 1 << 20;
    plan.transfers.push_back(forward);
    CrossStageTransfer backward;
    backward.from_stage = s + 1;
    backward.to_stage = s;
    backward.bytes = 1 << 20;
    plan.transfers.push_back(backward);
  }
  return plan;
}

TEST(InterleavedSimulation, PlanJsonWithVirtualStagesIsTheInMemoryPlansInput) {
  PlanSimulationContext context;
  Result<PipelineSimInput> from_json =
      SimInputFromPlanJson(InterleavedPlanJson().dump(), kInterleaved, &context);
  ASSERT_TRUE(from_json.ok()) << from_json.status().message();
  const Cluster cluster = P3(1);
  Result<PipelineSimInput> from_plan = SimInputFromPlan(InterleavedPlan(), cluster, kInterleaved);
  ASSERT_TRUE(from_plan.ok()) << from_plan.status().message();
  const PipelineSimInput& a = from_json.value();
  const PipelineSimInput& b = from_plan.value();
  EXPECT_EQ(a.schedule, kInterleaved);
  EXPECT_EQ(a.virtual_stages, 2);
  EXPECT_EQ(b.virtual_stages, 2);
  EXPECT_EQ(a.microbatches, b.microbatches);
  ASSERT_EQ(a.stages.size(), 4u);
  ASSERT_EQ(b.stages.size(), 4u);
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(a.stages[s].devices, b.stages[s].devices);
    EXPECT_EQ(a.stages[s].forward_seconds, b.stages[s].forward_seconds);
    EXPECT_EQ(a.stages[s].backward_seconds, b.stages[s].backward_seconds);
    EXPECT_EQ(a.stages[s].gradient_sync_seconds, b.stages[s].gradient_sync_seconds);
    EXPECT_EQ(a.stages[s].persistent_bytes, b.stages[s].persistent_bytes);
    EXPECT_EQ(a.stages[s].persistent_bytes, 800 + 100 * static_cast<int64_t>(s));
  }
  ASSERT_EQ(a.transfers.size(), b.transfers.size());

  Result<PipelineSimResult> ra = SimulatePipeline(a);
  Result<PipelineSimResult> rb = SimulatePipeline(b);
  ASSERT_TRUE(ra.ok()) << ra.status().message();
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  EXPECT_EQ(ra.value().iteration_seconds, rb.value().iteration_seconds);
  CheckGroupTimelines(a, ra.value());
  // Group 0 holds stages 0 and 2: 800 + 1000 persistent, and at most (see the hand case) 5
  // microbatches of 100 bytes.
  EXPECT_EQ(ra.value().stages[0].peak_memory_bytes, 1800 + 5 * 100);

  const json report = json::parse(SimulationJson(a, ra.value(), context));
  EXPECT_EQ(report["schedule"], "interleaved-1f1b");
  EXPECT_EQ(report["virtual_stages"], 2);
  ASSERT_EQ(report["stages"].size(), 4u);
  EXPECT_EQ(report["stages"][3]["group"], 1);
  EXPECT_EQ(report["stages"][2]["group"], 0);
  EXPECT_EQ(report["stages"][2]["peak_memory_bytes"].get<int64_t>(), 2300);
  const std::string title = PlanTimelineTitle(a, ra.value(), context);
  EXPECT_NE(title.find("interleaved 1F1B (2 stages per group), 4 microbatches"), std::string::npos)
      << title;
  const std::vector<std::string> labels = PlanStageLabels(a, context);
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[1], "group 1: devices 4-7, stages 1 (layer 1), 3 (layer 3)");

  // Without "virtual_stages" the plan is one of a stage per group, whose stages may not share
  // devices.
  json plain = InterleavedPlanJson();
  plain.erase("virtual_stages");
  Result<PipelineSimInput> shared = SimInputFromPlanJson(plain.dump(), k1F1B);
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find("is already used by stages[0]"), std::string::npos)
      << shared.status().message();
  // A report of one stage per group leaves "virtual_stages" and "group" out.
  const PipelineSimInput one = Interleaved(2, 1, 4, 2, 4);
  const json one_report = json::parse(SimulationJson(one, Simulate(one), PlanSimulationContext{}));
  EXPECT_FALSE(one_report.contains("virtual_stages"));
  EXPECT_FALSE(one_report["stages"][0].contains("group"));
}

TEST(InterleavedSimulation, PlanAndScheduleMustAgreeOnInterleaving) {
  // An interleaved plan under 1F1B, through either conversion.
  Result<PipelineSimInput> json_1f1b = SimInputFromPlanJson(InterleavedPlanJson().dump(), k1F1B);
  ASSERT_FALSE(json_1f1b.ok());
  EXPECT_EQ(json_1f1b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(json_1f1b.status().message().find(
                "the plan runs 2 stages per device group (interleaved-1f1b); it cannot be "
                "simulated under 1f1b"),
            std::string::npos)
      << json_1f1b.status().message();
  Result<PipelineSimInput> plan_gpipe =
      SimInputFromPlan(InterleavedPlan(), P3(1), PipelineScheduleKind::kGPipe);
  ASSERT_FALSE(plan_gpipe.ok());
  EXPECT_NE(plan_gpipe.status().message().find("cannot be simulated under gpipe"),
            std::string::npos)
      << plan_gpipe.status().message();

  // A plan of one stage per group under interleaved 1F1B.
  PipelinePlan one = InterleavedPlan();
  one.virtual_stages = 1;
  one.schedule = k1F1B;
  Result<PipelineSimInput> plan_interleaved = SimInputFromPlan(one, P3(1), kInterleaved);
  ASSERT_FALSE(plan_interleaved.ok());
  EXPECT_EQ(plan_interleaved.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan_interleaved.status().message().find(
                "the plan runs one stage per device group; it cannot be simulated under "
                "interleaved-1f1b"),
            std::string::npos)
      << plan_interleaved.status().message();
  json plain = InterleavedPlanJson();
  plain.erase("virtual_stages");
  Result<PipelineSimInput> json_interleaved = SimInputFromPlanJson(plain.dump(), kInterleaved);
  ASSERT_FALSE(json_interleaved.ok());
  EXPECT_EQ(json_interleaved.status().message().rfind("plan JSON: the plan runs one stage", 0), 0u)
      << json_interleaved.status().message();

  // The device programs' pricing does not take interleaved plans.
  Result<ProgramSimulationInput> programs =
      SimInputFromPrograms(InterleavedPlan(), nullptr, P3(1), kInterleaved);
  EXPECT_EQ(programs.status().code(), StatusCode::kUnsupported) << programs.status().message();

  // "virtual_stages" of the wrong type or out of range names the field.
  json bad = InterleavedPlanJson();
  bad["virtual_stages"] = "two";
  EXPECT_EQ(SimInputFromPlanJson(bad.dump(), kInterleaved).status().code(), StatusCode::kParse);
  bad["virtual_stages"] = 0;
  Result<PipelineSimInput> zero = SimInputFromPlanJson(bad.dump(), kInterleaved);
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("virtual_stages"), std::string::npos)
      << zero.status().message();
  bad["virtual_stages"] = 3;  // does not divide the 4 stages
  Result<PipelineSimInput> three = SimInputFromPlanJson(bad.dump(), kInterleaved);
  EXPECT_EQ(three.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(three.status().message().find("do not split"), std::string::npos)
      << three.status().message();
}

TEST(InterleavedSimulation, TimelineSvgHasARowPerDeviceGroup) {
  const PipelineSimInput in = Interleaved(2, 2, 4, 1, 2);
  const PipelineSimResult r = Simulate(in);
  const std::string svg = TimelineSvg(in, r);
  EXPECT_NE(svg.find("id=\"group0\""), std::string::npos);
  EXPECT_NE(svg.find("id=\"group1\""), std::string::npos);
  EXPECT_EQ(svg.find("id=\"group2\""), std::string::npos);
  EXPECT_EQ(svg.find("id=\"stage"), std::string::npos);
  EXPECT_NE(svg.find("group 0: stages 0, 2"), std::string::npos);
  EXPECT_NE(svg.find("4 stages on 2 device groups"), std::string::npos);
  EXPECT_NE(svg.find(">2:3</text>"), std::string::npos);  // stage 2's task of microbatch 3
  EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 6);

  // With one stage per group: a row per stage, microbatch numbers alone.
  const PipelineSimInput plain = Interleaved(2, 1, 4, 2, 4);
  const std::string plain_svg = TimelineSvg(plain, Simulate(plain));
  EXPECT_NE(plain_svg.find("id=\"stage1\""), std::string::npos);
  EXPECT_EQ(plain_svg.find("id=\"group"), std::string::npos);
  EXPECT_EQ(plain_svg.find(":3</text>"), std::string::npos);
}

}  // namespace
}  // namespace alpa
