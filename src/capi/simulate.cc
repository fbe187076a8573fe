// Simulation of a pipeline plan through the C ABI: alpa_plan_simulate, alpa_plan_simulate_json and
// alpa_plan_simulate_programs, and the simulation's getters (versioned stage statistics, the
// timeline as SVG, JSON).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "capi/handles.h"
#include "exec/sim/pipeline_simulator.h"
#include "exec/sim/plan_simulation.h"
#include "exec/sim/program_simulation.h"
#include "exec/sim/timeline_svg.h"

static_assert(ALPA_SCHEDULE_GPIPE == static_cast<int32_t>(alpa::PipelineScheduleKind::kGPipe));
static_assert(ALPA_SCHEDULE_1F1B == static_cast<int32_t>(alpa::PipelineScheduleKind::kOneFOneB));
static_assert(ALPA_SCHEDULE_ZB_H1 ==
              static_cast<int32_t>(alpa::PipelineScheduleKind::kZeroBubbleH1));

// A simulated iteration: the simulator's input (timeline recording off, so that a handle stays
// small whatever the microbatch count; the SVG runs it again with recording on), its result
// and the plan's names. Only this file sees it. Immutable once made.
struct alpa_simulation {
  alpa::PipelineSimInput input;
  alpa::PipelineSimResult result;
  alpa::PlanSimulationContext context;
};

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

constexpr size_t kSimulatedStageV1Size =
    offsetof(alpa_simulated_stage, peak_memory_bytes) + sizeof(int64_t);
constexpr int32_t kDefaultSvgWidth = 1600;
constexpr int32_t kMinSvgWidth = 200, kMaxSvgWidth = 20000;

int32_t CheckSchedule(int32_t schedule, alpa_error** err) {
  if (schedule == ALPA_SCHEDULE_GPIPE || schedule == ALPA_SCHEDULE_1F1B ||
      schedule == ALPA_SCHEDULE_ZB_H1 || schedule == ALPA_SCHEDULE_INTERLEAVED_1F1B) {
    return ALPA_OK;
  }
  return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
              "schedule must be ALPA_SCHEDULE_GPIPE (0), ALPA_SCHEDULE_1F1B (1), "
              "ALPA_SCHEDULE_ZB_H1 (2) or ALPA_SCHEDULE_INTERLEAVED_1F1B (3) (got " +
                  std::to_string(schedule) + ")");
}

// Runs the simulation of `input` and hands out the handle.
int32_t Simulate(alpa_simulation** out, alpa::PipelineSimInput input,
                 alpa::PlanSimulationContext context, alpa_error** err) {
  input.record_timeline = false;
  alpa::Result<alpa::PipelineSimResult> result = alpa::SimulatePipeline(input);
  if (!result.ok()) return Fail(err, result.status());
  auto sim = std::make_unique<alpa_simulation>();
  sim->input = std::move(input);
  sim->result = std::move(result).value();
  sim->context = std::move(context);
  *out = sim.release();
  return ALPA_OK;
}

}  // namespace

extern "C" {

ALPA_API int32_t alpa_plan_simulate(alpa_simulation** out, const alpa_plan* plan, int32_t schedule,
                                    alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    if (int32_t rc = CheckSchedule(schedule, err)) return rc;
    alpa::Result<alpa::PipelineSimInput> input = alpa::SimInputFromPlan(
        plan->plan, plan->cluster, static_cast<alpa::PipelineScheduleKind>(schedule));
    if (!input.ok()) return Fail(err, input.status());
    return Simulate(out, std::move(input).value(),
                    alpa::PlanSimulationContextOf(plan->plan, plan->cluster, plan->model), err);
  });
}

ALPA_API int32_t alpa_plan_simulate_json(alpa_simulation** out, const char* json, size_t size,
                                         int32_t schedule, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || json == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and json must not be NULL");
    }
    if (int32_t rc = CheckSchedule(schedule, err)) return rc;
    alpa::PlanSimulationContext context;
    alpa::Result<alpa::PipelineSimInput> input = alpa::SimInputFromPlanJson(
        std::string_view(json, size), static_cast<alpa::PipelineScheduleKind>(schedule), &context);
    if (!input.ok()) return Fail(err, input.status());
    return Simulate(out, std::move(input).value(), std::move(context), err);
  });
}

ALPA_API int32_t alpa_plan_simulate_programs(alpa_simulation** out, const alpa_plan* plan,
                                             int32_t schedule, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    if (int32_t rc = CheckSchedule(schedule, err)) return rc;
    // Without the whole batch's graph (a graph file's plan) the lowering keeps every gradient
    // per microbatch until the sum: the same instructions, rounded elsewhere.
    std::optional<alpa::Graph> whole;
    if (!plan->model.empty() || plan->plan.microbatches == 1) {
      alpa::Result<alpa::Graph> built = alpa::capi::WholeBatchGraph(*plan);
      if (!built.ok()) return Fail(err, built.status());
      whole = std::move(built).value();
    }
    alpa::Result<alpa::ProgramSimulationInput> input =
        alpa::SimInputFromPrograms(plan->plan, whole ? &*whole : nullptr, plan->cluster,
                                   static_cast<alpa::PipelineScheduleKind>(schedule));
    if (!input.ok()) return Fail(err, input.status());
    alpa::PlanSimulationContext context =
        alpa::PlanSimulationContextOf(plan->plan, plan->cluster, plan->model);
    context.program_prices = std::move(input.value().stages);
    context.lowered_microbatches = input.value().lowered_microbatches;
    return Simulate(out, std::move(input.value().input), std::move(context), err);
  });
}

ALPA_API void alpa_simulation_destroy(alpa_simulation* simulation) { delete simulation; }

ALPA_API double alpa_simulation_iteration_seconds(const alpa_simulation* simulation) {
  return simulation == nullptr ? std::numeric_limits<double>::quiet_NaN()
                               : simulation->result.iteration_seconds;
}

ALPA_API double alpa_simulation_closed_form_seconds(const alpa_simulation* simulation) {
  return simulation == nullptr ? std::numeric_limits<double>::quiet_NaN()
                               : simulation->result.closed_form_seconds;
}

ALPA_API double alpa_simulation_planner_seconds(const alpa_simulation* simulation) {
  return simulation == nullptr ? std::numeric_limits<double>::quiet_NaN()
                               : simulation->context.planner_iteration_seconds;
}

ALPA_API int32_t alpa_simulation_stage_count(const alpa_simulation* simulation) {
  return simulation == nullptr ? 0 : static_cast<int32_t>(simulation->input.stages.size());
}

ALPA_API int32_t alpa_simulation_stage(alpa_simulated_stage* out, size_t element_size,
                                       const alpa_simulation* simulation, int32_t stage,
                                       alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || simulation == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and simulation must not be NULL");
    }
    if (element_size < kSimulatedStageV1Size) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "element_size " + std::to_string(element_size) +
                      " is smaller than version 1 of alpa_simulated_stage (" +
                      std::to_string(kSimulatedStageV1Size) + " bytes)");
    }
    const size_t stages = simulation->result.stages.size();
    if (stage < 0 || static_cast<size_t>(stage) >= stages) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "stage " + std::to_string(stage) + " is out of range (the simulation has " +
                      std::to_string(stages) + " stages)");
    }
    const alpa::SimStageStats& s = simulation->result.stages[static_cast<size_t>(stage)];
    alpa_simulated_stage info;
    std::memset(&info, 0, sizeof(info));
    info.version = 1;
    info.busy_seconds = s.busy_seconds;
    info.communication_wait_seconds = s.communication_wait_seconds;
    info.idle_seconds = s.idle_seconds;
    info.bubble_fraction = s.bubble_fraction;
    info.finish_seconds = s.finish_seconds;
    info.peak_in_flight = s.peak_in_flight;
    info.peak_memory_bytes = s.peak_memory_bytes;
    const size_t written = std::min(element_size, sizeof(info));
    info.struct_size = written;
    std::memcpy(out, &info, written);
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_simulation_timeline_to_svg(alpa_buffer** out,
                                                 const alpa_simulation* simulation, int32_t width,
                                                 alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || simulation == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and simulation must not be NULL");
    }
    if (width != 0 && (width < kMinSvgWidth || width > kMaxSvgWidth)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "width must be 0 (the default, " + std::to_string(kDefaultSvgWidth) +
                      ") or between " + std::to_string(kMinSvgWidth) + " and " +
                      std::to_string(kMaxSvgWidth) + " pixels (got " + std::to_string(width) + ")");
    }
    alpa::PipelineSimInput input = simulation->input;
    input.record_timeline = true;
    alpa::Result<alpa::PipelineSimResult> result = alpa::SimulatePipeline(input);
    if (!result.ok()) return Fail(err, result.status());
    alpa::TimelineSvgOptions options;
    options.width = width == 0 ? kDefaultSvgWidth : width;
    options.title = alpa::PlanTimelineTitle(input, result.value(), simulation->context);
    options.stage_labels = alpa::PlanStageLabels(input, simulation->context);
    alpa_buffer* buffer = alpa::capi::MakeBuffer(alpa::TimelineSvg(input, result.value(), options));
    if (buffer == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    *out = buffer;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_simulation_to_json(alpa_buffer** out, const alpa_simulation* simulation,
                                         alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || simulation == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and simulation must not be NULL");
    }
    alpa_buffer* buffer = alpa::capi::MakeBuffer(
        alpa::SimulationJson(simulation->input, simulation->result, simulation->context));
    if (buffer == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    *out = buffer;
    return ALPA_OK;
  });
}

}  // extern "C"
