// What `alpa plan` and `alpa baseline` share: the cluster argument, the planner options, the
// progress lines, the plan summary (stage table, iteration time, throughput, memory) and the
// plan's outputs (-o plan JSON, --svg timeline, --json summary).
#pragma once

#include <cstdint>
#include <string>

#include "alpa_experimental.h"

namespace CLI {
class App;
}  // namespace CLI

namespace alpa_cli {

constexpr const char* kDefaultPlanModel = "gpt-2.6b";
constexpr const char* kDefaultPlanCluster = "p3.16xlarge:2";

// The planner options `alpa plan` and `alpa baseline` share.
struct PlannerOptionArgs {
  std::string calibration;         // a calibration file applied to --cluster; empty: none
  std::string device_memory;       // bytes per device ("16GiB"); empty: the cluster's
  double intra_op_time_limit = 0;  // <= 0: the library's default
  bool exact = false;              // intra-op solves proven by GLPK
  int threads = 0;
  // Work limits (planner_limits.h); kLimitNotGiven: the library's default, 0: none. The library
  // checks the values given (a negative one is an error naming the option).
  static constexpr int64_t kLimitNotGiven = INT64_MIN;
  int64_t max_hosts = kLimitNotGiven, max_devices = kLimitNotGiven, max_graph_ops = kLimitNotGiven,
          max_layers = kLimitNotGiven, max_intra_op_solves = kLimitNotGiven;
};

// Registers --calibration, --device-memory, --exact, --intra-op-time-limit, --threads and the work
// limits
// (--max-hosts, --max-devices, --max-graph-ops, --max-layers, --max-intra-op-solves) on
// `command`.
void AddPlannerOptions(CLI::App* command, PlannerOptionArgs* args);

// Owns the handles of one planning run; frees them on every path.
struct PlanHandles {
  alpa_cluster* cluster = nullptr;
  alpa_graph* graph = nullptr;
  alpa_plan_options* options = nullptr;
  alpa_plan* plan = nullptr;
  PlanHandles() = default;
  PlanHandles(const PlanHandles&) = delete;
  PlanHandles& operator=(const PlanHandles&) = delete;
  ~PlanHandles();
};

// "p3.16xlarge:8": the preset and the host count (true), else false (a preset spec such as
// "p3.16xlarge:hosts=8" or a file name).
bool SplitPresetHosts(const std::string& text, std::string* preset, int64_t* hosts);

// "p3.16xlarge:8" (preset and host count), "p3.16xlarge:hosts=8,..." (preset spec) or a file.
// 0, or the exit code after reporting the error (naming --cluster).
int MakePlanCluster(const std::string& text, alpa_cluster** out);

// The same, then the calibration file `calibration_path` applied to it when the path is not
// empty (errors name --calibration).
int MakePlanCluster(const std::string& text, const std::string& calibration_path,
                    alpa_cluster** out);

// Sets the options AddPlannerOptions registers on `options`; 0, or the exit code after reporting
// the error (naming the option).
int SetPlannerOptions(alpa_plan_options* options, const PlannerOptionArgs& args);

// Progress callback printing "# SECONDS  B=N PHASE" lines (intra-op solves one line per tenth;
// the work estimate and the time limit, when set, on the "estimate" line).
int32_t PrintPlanProgress(void* user, const alpa_plan_progress* progress);

// "# alpa VERSION: DOING WHAT on CLUSTER (H hosts x D devices)".
void PrintPlanHeader(const std::string& doing, const std::string& what,
                     const alpa_cluster* cluster);

// The exit code of a failed planning call: 2 (message on stderr) when nothing fits the device
// memory, else 1 as ReportError. Frees err.
int ReportPlanFailure(int32_t status, alpa_error* err);

// Whether the plan's JSON keeps the planner's clock readings (compile_seconds and the compile
// phases' *_seconds). Everything else in a plan depends only on its inputs, so without them
// two runs print the same bytes.
enum class ClockReadings { kPrint, kOmit };

// The stage table, predicted iteration time, TFLOP/s per device, peak memory per device and
// alpa_plan_compile_seconds labelled `time_label` ("compile time"; empty: not printed).
void PrintPlanSummary(const alpa_plan* plan, const alpa_cluster* cluster,
                      const std::string& time_label);

// Writes the detailed plan JSON to `output` and the timeline SVG of its simulated iteration
// (1F1B) to `svg` (each when non-empty); 0, or the exit code after reporting the error.
int WritePlanFiles(const alpa_plan* plan, const std::string& output, const std::string& svg,
                   ClockReadings clock = ClockReadings::kPrint);

// Prints the plan's summary JSON (alpa_plan_to_json, detail 0) as one line; 0 or the exit code.
int PrintPlanJson(const alpa_plan* plan, ClockReadings clock = ClockReadings::kPrint);

// "wrote FILE" for each non-empty name.
void PrintWrote(const std::string& output, const std::string& svg);

}  // namespace alpa_cli
