// `alpa simulate`: one training iteration of a plan (a plan JSON file) run by the pipeline
// simulator, printed next to the planner's prediction: iteration time, relative error, and per
// stage busy / communication-wait / idle time, bubble fraction and peak memory; or as JSON.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alpa_experimental.h"
#include "cli_output.h"
#include "commands.h"

namespace alpa_cli {
namespace {

struct SimulationHandle {
  alpa_simulation* simulation = nullptr;
  ~SimulationHandle() { alpa_simulation_destroy(simulation); }
};

struct BufferHandle {
  alpa_buffer* buffer = nullptr;
  ~BufferHandle() { alpa_buffer_free(buffer); }
};

bool ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return false;
  *out = bytes.str();
  return true;
}

void PrintReport(const alpa_simulation* sim, const nlohmann::json& report) {
  const double simulated = alpa_simulation_iteration_seconds(sim);
  const double planned = alpa_simulation_planner_seconds(sim);
  const std::string model = report.value("model", "");
  std::printf("Simulation: %s on %s (%d x %d), %s schedule, %lld microbatches\n",
              model.empty() ? "plan" : model.c_str(), report["cluster"].value("name", "").c_str(),
              report["cluster"].value("hosts", 0), report["cluster"].value("devices_per_host", 0),
              report.value("schedule", "") == "gpipe" ? "GPipe" : "1F1B",
              static_cast<long long>(report.value("microbatches", int64_t{0})));
  std::printf("\n%-5s %-11s %-7s %-11s %-11s %-11s %-11s %-11s %-9s %s\n", "stage", "devices",
              "layers", "fwd/mb", "bwd/mb", "busy", "comm wait", "idle", "bubble",
              "peak memory (in flight)");
  const nlohmann::json& stages = report["stages"];
  for (int32_t s = 0; s < alpa_simulation_stage_count(sim); ++s) {
    alpa_simulated_stage st;
    if (alpa_simulation_stage(&st, sizeof st, sim, s, nullptr) != ALPA_OK) continue;
    const nlohmann::json& js = stages[static_cast<size_t>(s)];
    std::string layers = "-";
    if (js.contains("layers")) {
      const int32_t a = js["layers"][0].get<int32_t>(), b = js["layers"][1].get<int32_t>();
      layers = a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b);
    }
    char bubble[32];
    std::snprintf(bubble, sizeof bubble, "%.1f %%", st.bubble_fraction * 100);
    std::printf(
        "%-5d %-11s %-7s %-11s %-11s %-11s %-11s %-11s %-9s %s (%lld)\n", s,
        DeviceRuns(js["devices"].get<std::vector<int64_t>>()).c_str(), layers.c_str(),
        Seconds(js.value("forward_seconds", 0.0), 3).c_str(),
        Seconds(js.value("backward_seconds", 0.0), 3).c_str(), Seconds(st.busy_seconds, 3).c_str(),
        Seconds(st.communication_wait_seconds, 3).c_str(), Seconds(st.idle_seconds, 3).c_str(),
        bubble, Bytes(static_cast<double>(st.peak_memory_bytes), 2).c_str(),
        static_cast<long long>(st.peak_in_flight));
  }
  std::printf("\nsimulated iteration time  %s\n", Seconds(simulated, 3).c_str());
  if (std::isfinite(planned) && planned > 0) {
    std::printf("planner's prediction      %s  (relative error %+.2f %%: simulated vs planned)\n",
                Seconds(planned, 3).c_str(), (simulated - planned) / planned * 100);
  } else {
    std::printf("planner's prediction      unknown\n");
  }
  std::printf("closed form               %s  (the planner's formula: no transfers)\n",
              Seconds(alpa_simulation_closed_form_seconds(sim), 3).c_str());
  const nlohmann::json& t = report["transfers"];
  std::printf("transfers per microbatch  %lld forward, %lld backward, %lld moves, %s\n",
              static_cast<long long>(t.value("forward", int64_t{0})),
              static_cast<long long>(t.value("backward", int64_t{0})),
              static_cast<long long>(t.value("moves_per_microbatch", int64_t{0})),
              Bytes(t.value("bytes_per_microbatch", 0.0), 2).c_str());
}

}  // namespace

int RunSimulate(const SimulateArgs& args) {
  int32_t schedule = ALPA_SCHEDULE_1F1B;
  if (args.schedule == "gpipe" || args.schedule == "GPipe") {
    schedule = ALPA_SCHEDULE_GPIPE;
  } else if (args.schedule != "1f1b" && args.schedule != "1F1B") {
    return ReportBadInput("--schedule: \"" + args.schedule + "\" is not 1f1b or gpipe");
  }
  std::string bytes;
  if (!ReadWholeFile(args.file, &bytes)) return ReportBadInput("cannot read " + args.file);
  alpa_error* err = nullptr;
  SimulationHandle h;
  if (alpa_plan_simulate_json(&h.simulation, bytes.data(), bytes.size(), schedule, &err) !=
      ALPA_OK) {
    return ReportError(err, args.file);
  }
  if (!args.svg.empty()) {
    BufferHandle svg;
    if (alpa_simulation_timeline_to_svg(&svg.buffer, h.simulation, args.width, &err) != ALPA_OK) {
      return ReportError(err, "--width");
    }
    if (!WriteFile(args.svg, alpa_buffer_data(svg.buffer), alpa_buffer_size(svg.buffer))) {
      return ReportBadInput("--svg: cannot write " + args.svg);
    }
  }
  BufferHandle report;
  if (alpa_simulation_to_json(&report.buffer, h.simulation, &err) != ALPA_OK) {
    return ReportError(err);
  }
  if (args.json) {
    std::printf("%s\n", alpa_buffer_data(report.buffer));
    return 0;
  }
  const char* data = alpa_buffer_data(report.buffer);
  PrintReport(h.simulation, nlohmann::json::parse(data, data + alpa_buffer_size(report.buffer)));
  if (!args.svg.empty()) std::printf("wrote %s\n", args.svg.c_str());
  return 0;
}

}  // namespace alpa_cli
