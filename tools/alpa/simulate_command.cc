// `alpa simulate`: one training iteration of a plan (a plan JSON file) run by the pipeline
// simulator, printed next to the planner's prediction: iteration time, relative error, and per
// stage busy / communication-wait / idle time, bubble fraction and peak memory; or as JSON.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alpa_experimental.h"
#include "cli_output.h"
#include "commands.h"
#include "input_limit.h"

namespace alpa_cli {
namespace {

struct SimulateArgs {
  std::string file;  // a plan JSON file (alpa plan -o / --json)
  // "1f1b", "gpipe", "zb-h1", "interleaved-1f1b"; empty: the plan's own ("schedule", else 1f1b)
  std::string schedule;
  std::string svg;        // write the timeline SVG here
  int32_t width = 0;      // SVG width in pixels; 0: the library's default
  bool json = false;      // print alpa_simulation_to_json's object as the last line
  bool programs = false;  // price the device programs instead of the plan's figures
  InputLimit limit;       // --max-input-bytes
};

struct SimulationHandle {
  alpa_simulation* simulation = nullptr;
  ~SimulationHandle() { alpa_simulation_destroy(simulation); }
};

struct BufferHandle {
  alpa_buffer* buffer = nullptr;
  ~BufferHandle() { alpa_buffer_free(buffer); }
};

struct PlanHandle {
  alpa_plan* plan = nullptr;
  ~PlanHandle() { alpa_plan_destroy(plan); }
};

// "1.234 ms (+2.1 %)": a priced time beside the plan's.
std::string AgainstPlan(double priced, double planned) {
  std::string s = Seconds(priced, 3);
  if (planned > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%+.1f %%)", (priced - planned) / planned * 100);
    s += buf;
  }
  return s;
}

// With --programs: per stage the priced tasks against the plan's figures, and what they hold.
void PrintProgramPrices(const nlohmann::json& report) {
  const int64_t lowered = report.value("lowered_microbatches", int64_t{0});
  std::printf("\nPriced from the device programs (%lld microbatch%s lowered; against the plan):\n",
              static_cast<long long>(lowered), lowered == 1 ? "" : "es");
  std::printf("%-5s %-22s %-22s %-22s %-11s %-11s %-11s %s\n", "stage", "forward/mb", "backward/mb",
              "sync+update", "compute", "collective", "bookkeeping", "instructions");
  const nlohmann::json& stages = report["stages"];
  for (size_t s = 0; s < stages.size(); ++s) {
    if (!stages[s].contains("programs")) continue;
    const nlohmann::json& p = stages[s]["programs"];
    const nlohmann::json& f = p["forward"];
    const nlohmann::json& b = p["backward"];
    const nlohmann::json& u = p["update"];
    auto part = [&](const char* name) {
      return f.value(name, 0.0) + b.value(name, 0.0) + u.value(name, 0.0);
    };
    std::printf(
        "%-5zu %-22s %-22s %-22s %-11s %-11s %-11s %lld\n", s,
        AgainstPlan(f.value("seconds", 0.0), p.value("planned_forward_seconds", 0.0)).c_str(),
        AgainstPlan(b.value("seconds", 0.0), p.value("planned_backward_seconds", 0.0)).c_str(),
        AgainstPlan(u.value("seconds", 0.0), p.value("planned_overhead_seconds", 0.0)).c_str(),
        Seconds(part("compute"), 3).c_str(), Seconds(part("collective"), 3).c_str(),
        Seconds(part("bookkeeping"), 3).c_str(),
        static_cast<long long>(p.value("instructions", int64_t{0})));
  }
}

// The report's schedule ("1f1b", "gpipe", "zb-h1", "interleaved-1f1b") as the table names it.
std::string ScheduleTitle(const std::string& name) {
  if (name == "gpipe") return "GPipe";
  if (name == "zb-h1") return "ZB-H1";
  if (name == "1f1b") return "1F1B";
  if (name == "interleaved-1f1b") return "interleaved 1F1B";
  return name;
}

void PrintReport(const alpa_simulation* sim, const nlohmann::json& report) {
  const double simulated = alpa_simulation_iteration_seconds(sim);
  const double planned = alpa_simulation_planner_seconds(sim);
  const std::string model = report.value("model", "");
  std::printf("Simulation: %s on %s (%d x %d), %s schedule, %lld microbatches\n",
              model.empty() ? "plan" : model.c_str(), report["cluster"].value("name", "").c_str(),
              report["cluster"].value("hosts", 0), report["cluster"].value("devices_per_host", 0),
              ScheduleTitle(report.value("schedule", "")).c_str(),
              static_cast<long long>(report.value("microbatches", int64_t{0})));
  std::printf("\n%-5s %-11s %-7s %-11s %-11s %-11s %-11s %-11s %-9s %s\n", "stage", "devices",
              "layers", "fwd/mb", "bwd/mb", "busy", "comm wait", "idle", "bubble",
              "peak memory (in flight)");
  const nlohmann::json& stages = report["stages"];
  for (int32_t stage = 0; stage < alpa_simulation_stage_count(sim); ++stage) {
    alpa_simulated_stage stage_result;
    if (alpa_simulation_stage(&stage_result, sizeof stage_result, sim, stage, nullptr) != ALPA_OK)
      continue;
    const nlohmann::json& planned_stage = stages[static_cast<size_t>(stage)];
    std::string layers = "-";
    if (planned_stage.contains("layers")) {
      const int32_t first = planned_stage["layers"][0].get<int32_t>();
      const int32_t last = planned_stage["layers"][1].get<int32_t>();
      layers = first == last ? std::to_string(first)
                             : std::to_string(first) + "-" + std::to_string(last);
    }
    char bubble[32];
    std::snprintf(bubble, sizeof bubble, "%.1f %%", stage_result.bubble_fraction * 100);
    std::printf("%-5d %-11s %-7s %-11s %-11s %-11s %-11s %-11s %-9s %s (%lld)\n", stage,
                DeviceRuns(planned_stage["devices"].get<std::vector<int64_t>>()).c_str(),
                layers.c_str(), Seconds(planned_stage.value("forward_seconds", 0.0), 3).c_str(),
                Seconds(planned_stage.value("backward_seconds", 0.0), 3).c_str(),
                Seconds(stage_result.busy_seconds, 3).c_str(),
                Seconds(stage_result.communication_wait_seconds, 3).c_str(),
                Seconds(stage_result.idle_seconds, 3).c_str(), bubble,
                Bytes(static_cast<double>(stage_result.peak_memory_bytes), 2).c_str(),
                static_cast<long long>(stage_result.peak_in_flight));
  }
  const int32_t virtual_stages = report.value("virtual_stages", 1);
  if (virtual_stages > 1) {
    std::printf(
        "(%d stages per device group, stage s on group s %% %zu: busy, wait, idle, bubble "
        "and peak memory are the group's)\n",
        virtual_stages, stages.size() / static_cast<size_t>(virtual_stages));
  }
  // A plan whose peak does not fit the device (planned for more memory than the cluster file
  // now gives, or edited): the simulation runs, but the plan would not.
  const int64_t device_memory = report.value("device_memory_bytes", int64_t{0});
  for (size_t stage = 0; stage < stages.size(); ++stage) {
    const nlohmann::json& simulated_stage = stages[stage];
    if (!simulated_stage.value("exceeds_device_memory", false)) continue;
    std::printf(
        "warning: stage %zu peaks at %s per device, more than the device memory %s\n", stage,
        Bytes(static_cast<double>(simulated_stage.value("peak_memory_bytes", int64_t{0})), 2)
            .c_str(),
        Bytes(static_cast<double>(device_memory), 2).c_str());
  }
  std::printf("\nsimulated iteration time  %s\n", Seconds(simulated, 3).c_str());
  if (std::isfinite(planned) && planned > 0) {
    std::printf("planner's prediction      %s  (relative error %+.2f %%: simulated vs planned)\n",
                Seconds(planned, 3).c_str(), (simulated - planned) / planned * 100);
  } else {
    std::printf("planner's prediction      unknown\n");
  }
  std::printf(
      "closed form               %s  (the stage DP's objective: no transfers, overheads summed)\n",
      Seconds(alpa_simulation_closed_form_seconds(sim), 3).c_str());
  const nlohmann::json& transfers = report["transfers"];
  std::printf("transfers per microbatch  %lld forward, %lld backward, %lld moves, %s\n",
              static_cast<long long>(transfers.value("forward", int64_t{0})),
              static_cast<long long>(transfers.value("backward", int64_t{0})),
              static_cast<long long>(transfers.value("moves_per_microbatch", int64_t{0})),
              Bytes(transfers.value("bytes_per_microbatch", 0.0), 2).c_str());
}

// Exit code 0, or 1 for bad input (stderr).
int RunSimulate(const SimulateArgs& args) {
  std::string bytes, reason;
  const InputLimit& limit = args.limit;
  if (!ReadFile(args.file, &bytes, limit.bytes, &reason, StreamContent::kJson)) {
    return ReportBadInput("cannot read " + args.file + ": " + reason);
  }
  std::string name = args.schedule;
  if (name.empty()) {
    // The plan's own schedule; a plan without one (or a file the library will refuse) is 1F1B.
    const nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, false);
    name = doc.is_object() && doc.contains("schedule") && doc["schedule"].is_string()
               ? doc["schedule"].get<std::string>()
               : "1f1b";
  }
  const int32_t schedule = ScheduleFromName(name);
  if (schedule < 0) {
    return ReportBadInput("--schedule: \"" + name +
                          "\" is not 1f1b, gpipe, zb-h1 or interleaved-1f1b");
  }
  alpa_error* err = nullptr;
  SimulationHandle handles;
  if (args.programs) {
    PlanHandle plan;
    if (alpa_plan_read_json(&plan.plan, bytes.data(), bytes.size(), &err) != ALPA_OK) {
      return ReportError(err, args.file);
    }
    if (alpa_plan_simulate_programs(&handles.simulation, plan.plan, schedule, &err) != ALPA_OK) {
      return ReportError(err, args.file);
    }
  } else if (alpa_plan_simulate_json(&handles.simulation, bytes.data(), bytes.size(), schedule,
                                     &err) != ALPA_OK) {
    return ReportError(err, args.file);
  }
  if (!args.svg.empty()) {
    BufferHandle svg;
    if (alpa_simulation_timeline_to_svg(&svg.buffer, handles.simulation, args.width, &err) !=
        ALPA_OK) {
      return ReportError(err, "--width");
    }
    if (!WriteFile(args.svg, alpa_buffer_data(svg.buffer), alpa_buffer_size(svg.buffer))) {
      return ReportBadInput("--svg: cannot write " + args.svg);
    }
  }
  BufferHandle report;
  if (alpa_simulation_to_json(&report.buffer, handles.simulation, &err) != ALPA_OK) {
    return ReportError(err);
  }
  if (args.json) {
    std::printf("%s\n", alpa_buffer_data(report.buffer));
    return 0;
  }
  const char* data = alpa_buffer_data(report.buffer);
  const nlohmann::json parsed = nlohmann::json::parse(data, data + alpa_buffer_size(report.buffer));
  PrintReport(handles.simulation, parsed);
  if (args.programs) PrintProgramPrices(parsed);
  if (!args.svg.empty()) std::printf("wrote %s\n", args.svg.c_str());
  return 0;
}

}  // namespace

Command AddSimulateCommand(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* simulate = app.add_subcommand(
      "simulate", "Simulate one training iteration of a plan and compare it with the prediction");
  simulate->add_option("plan", args->file, "Plan JSON file (alpa plan -o or --json)")->required();
  simulate->add_option("--schedule", args->schedule,
                       "Pipeline schedule: 1f1b, gpipe, zb-h1 (zero-bubble: the backward split "
                       "into input and weight gradients) or interleaved-1f1b (only for a plan "
                       "made for it, and such a plan only under it); default: the plan's own");
  simulate->add_option("--svg", args->svg, "Write the timeline (SVG) to this file");
  AddInputLimitOption(simulate, &args->limit);
  simulate->add_option("--width", args->width, "SVG width in pixels (default 1600; 200..20000)");
  simulate->add_flag("--json", args->json, "Print the simulation as one JSON object (last line)");
  simulate->add_flag("--programs", args->programs,
                     "Simulate the device programs the plan lowers to (alpa compile), every "
                     "instruction priced by the cost model, instead of the plan's own figures");
  return {simulate, [args] { return RunSimulate(*args); }};
}

}  // namespace alpa_cli
