// A pipeline plan (planner.h, or its JSON from plan_json.h) as the simulator's input
// (pipeline_simulator.h), and a simulation's report as JSON. docs/planner.md, "Simulation".
//
// Conversion, stage by stage:
//   forward_seconds        PlannedStage::forward_latency (the pieces' forward latencies plus the
//                          resharding of forward tensors between them)
//   backward_seconds       latency - forward_latency (with rematerialization this includes the
//                          recomputed forward)
//   weight_gradient_seconds
//                          PlannedStage::weight_gradient_latency (the part of the backward
//                          ZB-H1 runs as its own task; 0 when unknown: the input-gradient task
//                          then runs the whole backward)
//   gradient_sync_seconds  iteration_overhead (gradient synchronisation and the optimizer
//                          update together); update_seconds 0
//   activation_bytes       PlannedStage::activation_bytes
//   persistent_bytes       memory_bytes - in_flight * activation_bytes: weights, optimizer state
//                          and gradients plus the working memory (the planner's peak counts it
//                          once, so under the plan's schedule the simulated peak equals
//                          memory_bytes)
// Every CrossStageTransfer becomes one transfer: forward (an activation) when it goes to a later
// stage, backward (a gradient) otherwise; its slice moves (when known) are the moves. Links are
// the cluster's intra_host_link (per device; with an NVLink graph a move inside a host runs at
// its pair's bandwidth, MovePairBandwidths, as the planner's TransferSeconds) and
// inter_host_link (per host).
// So the simulator's closed form equals the plan's iteration_seconds; the simulated time adds
// the transfers, link contention and the schedule's real dependencies.
// A plan made for interleaved 1F1B (PipelinePlan::virtual_stages v >= 2: stage s on the devices of
// stage s % (stages / v)) becomes an input with that virtual_stages and simulates only under
// interleaved 1F1B; a plan of one stage per device group only under the other schedules. The
// stages keep their own persistent_bytes and activation_bytes; the simulator adds them up per
// device group (pipeline_simulator.h, Memory).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "exec/sim/pipeline_simulator.h"
#include "exec/sim/program_pricing.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/planner.h"

namespace alpa {

// What a report or a picture of a plan's simulation names beyond the simulator's input.
struct PlanSimulationContext {
  std::string model;    // "" when unknown
  std::string cluster;  // the cluster's name
  // The planner's prediction (PipelinePlan::iteration_seconds); NaN when unknown.
  double planner_iteration_seconds = std::numeric_limits<double>::quiet_NaN();
  std::vector<int32_t> first_layer, last_layer;  // per stage: its layer groups (inclusive)
  // The device memory the plan must fit (the cluster's); 0 when unknown. A stage whose
  // simulated peak exceeds it is flagged in the JSON ("exceeds_device_memory").
  int64_t device_memory_bytes = 0;
  // Per stage, where the cluster is mixed: the memory of its devices' type (its pool's), which
  // replaces device_memory_bytes for that stage. Empty: device_memory_bytes for every stage.
  std::vector<int64_t> stage_device_memory_bytes;
  // Set when the stages were priced from the device programs (program_simulation.h): per stage
  // its priced tasks, and the microbatches lowered. Empty: priced from the plan.
  std::vector<ProgramStagePrice> program_prices;
  int64_t lowered_microbatches = 0;
};

// Whether a plan of `virtual_stages` stages per device group can be simulated under
// `schedule`: kInvalidArgument ("the plan runs 2 stages per device group (interleaved-1f1b); it
// cannot be simulated under 1f1b") when interleaving and schedule disagree.
Status CheckPlanSchedule(int32_t virtual_stages, PipelineScheduleKind schedule);

// The simulator's input for `plan` on `cluster` (the one it was planned for) under `schedule`;
// record_timeline stays true, virtual_stages is the plan's. Errors: kInvalidArgument when the
// plan does not fit the cluster (a device out of range, ...), does not fit `schedule`
// (CheckPlanSchedule) or has an invalid stage (ValidatePipelineSimInput's message).
Result<PipelineSimInput> SimInputFromPlan(const PipelinePlan& plan, const Cluster& cluster,
                                          PipelineScheduleKind schedule);
PlanSimulationContext PlanSimulationContextOf(const PipelinePlan& plan, const Cluster& cluster,
                                              const std::string& model);

// The same from a plan JSON (PipelinePlanJson at any detail; docs/planner.md): the summary
// (detail 0) spreads each transfer's bytes evenly, detail 1 gives its slice moves. The plan's
// "schedule" is not read: `schedule` decides; its "virtual_stages" (absent: 1) is, and must
// fit `schedule` (CheckPlanSchedule). Fills *context when non-null. Errors, each naming
// the field ("plan JSON: stages[1].forward_latency_seconds: missing ..."): kParse for text
// that is not JSON, not a plan ("format") or a missing field or one of the wrong type (plans
// written before forward_latency_seconds existed need planning again); kInvalidArgument for
// values out of range (negative times, a transfer whose direction contradicts its stages, a
// move between devices of other stages, an invalid cluster, ...).
Result<PipelineSimInput> SimInputFromPlanJson(
    std::string_view plan_json, PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB,
    PlanSimulationContext* context = nullptr);

// The cluster's part of a simulator input, for either conversion: hosts, devices per host, the
// links and, where the cluster's NICs sit next to some devices only, each device's inter-host
// bandwidth. The caller has checked that the counts fit the simulator's int32.
void SetSimCluster(const Cluster& cluster, PipelineSimInput& in);

// One stage of either conversion (the same arithmetic for both, so that they agree exactly):
// the table at the top of this file. Negative results (and a weight gradient longer than the
// backward) are left for ValidatePipelineSimInput.
PipelineSimStage SimStageFromPlanned(std::vector<int64_t> devices, double latency,
                                     double forward_latency, double weight_gradient_latency,
                                     double iteration_overhead, int64_t memory_bytes,
                                     int64_t in_flight, int64_t activation_bytes);

// Row labels for TimelineSvg: "stage 0: devices 0-7, layers 0-3" (layers when known); under
// interleaving one per device group, "group 0: devices 0-7, stages 0 (layers 0-3), 2 (layers
// 8-11)".
std::vector<std::string> PlanStageLabels(const PipelineSimInput& input,
                                         const PlanSimulationContext& context);
// A title for TimelineSvg: "gpt-2.6b on p3.16xlarge (2 x 8), 1F1B, 32 microbatches: 1.234 s
// simulated, 1.200 s planned (+2.8 %)".
std::string PlanTimelineTitle(const PipelineSimInput& input, const PipelineSimResult& result,
                              const PlanSimulationContext& context);

// (simulated - planned) / planned; NaN when the planner's prediction is unknown or not positive.
double PlanPredictionError(const PipelineSimResult& result, const PlanSimulationContext& context);

// One JSON object (docs/planner.md, "Simulation JSON"): schedule, virtual_stages (only when
// > 1; each stage then names its device "group"), microbatches,
// iteration_seconds, closed_form_seconds, planner_iteration_seconds and relative_error (null
// when unknown), per stage its times, statistics and memory, and the transfers' totals.
std::string SimulationJson(const PipelineSimInput& input, const PipelineSimResult& result,
                           const PlanSimulationContext& context);

}  // namespace alpa
