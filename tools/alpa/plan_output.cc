// What `alpa plan` and `alpa baseline` share (see plan_output.h).
#include "plan_output.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli_output.h"
#include "input_limit.h"
#include "seconds_validator.h"

namespace alpa_cli {
namespace {

// alpa_plan_to_json's detail levels: the summary (--json) and the executable plan (-o: per-op
// strategies, the graph and every piece's sharding, which alpa_plan_read_file reads back).
constexpr int32_t kPlanJsonSummary = 0;
constexpr int32_t kPlanJsonExecutable = 2;
// alpa_simulation_timeline_to_svg's width: the library's default.
constexpr int32_t kDefaultSvgWidth = 0;

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The plan JSON `text` as alpa_plan_to_json wrote it, or without its clock readings:
// "compile_seconds" and the "*_seconds" of "compile" (the planner's phases). The library writes
// with nlohmann::json too, so the rest is reproduced byte for byte.
std::string PlanJsonText(const char* text, ClockReadings clock) {
  if (clock == ClockReadings::kPrint) return text;
  nlohmann::json j = nlohmann::json::parse(text);
  j.erase("compile_seconds");
  auto compile = j.find("compile");
  if (compile != j.end() && compile->is_object()) {
    for (auto it = compile->begin(); it != compile->end();) {
      it = EndsWith(it.key(), "_seconds") ? compile->erase(it) : std::next(it);
    }
  }
  return j.dump();
}

}  // namespace

void AddPlannerOptions(CLI::App* command, PlannerOptionArgs* args) {
  command->add_option("--calibration", args->calibration,
                      "Calibration JSON file applied to the cluster (e.g. "
                      "bench/calibration/a100-megatron-sc21.json; docs/cluster-format.md)");
  command->add_option("--device-memory", args->device_memory,
                      "Device memory to fit, with a unit (16GiB, 80GB, 1000B; default: the "
                      "cluster's)");
  command->add_flag("--exact", args->exact,
                    "Prove every intra-op solve with GLPK (default: local search alone)");
  command
      ->add_option("--intra-op-time-limit", args->intra_op_time_limit,
                   "Seconds per intra-op solve with --exact (default 0.5)")
      ->check(NonNegativeSeconds());
  command->add_option("--threads", args->threads, "Threads (0: all)")->check(CLI::Range(0, 4096));
  const std::pair<const char*, int64_t*> limits[] = {
      {"--max-hosts", &args->max_hosts},
      {"--max-devices", &args->max_devices},
      {"--max-graph-ops", &args->max_graph_ops},
      {"--max-layers", &args->max_layers},
      {"--max-intra-op-solves", &args->max_intra_op_solves}};
  const char* help[] = {"Refuse clusters of more hosts (default 1024; 0: no limit)",
                        "Refuse clusters of more devices (default 16384; 0: no limit)",
                        "Refuse microbatch graphs of more ops (default 1000000; 0: no limit)",
                        "Refuse models of more layers (default 4096; 0: no limit)",
                        "Refuse plans needing more estimated intra-op solves (default 100000; "
                        "0: no limit)"};
  for (size_t k = 0; k < std::size(limits); ++k) {
    command->add_option(limits[k].first, *limits[k].second, help[k]);
  }
}

PlanHandles::~PlanHandles() {
  alpa_plan_destroy(plan);
  alpa_plan_options_destroy(options);
  alpa_graph_destroy(graph);
  alpa_cluster_destroy(cluster);
}

bool SplitPresetHosts(const std::string& text, std::string* preset, int64_t* hosts) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  const std::string tail = text.substr(colon + 1);
  if (tail.empty() || tail.size() > 9 ||
      tail.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *preset = text.substr(0, colon);
  *hosts = std::stoll(tail);
  return true;
}

int MakePlanCluster(const std::string& text, alpa_cluster** out) {
  alpa_error* err = nullptr;
  if (IsFile(text)) {
    return alpa_cluster_read_file(out, text.c_str(), &err) == ALPA_OK
               ? 0
               : ReportError(err, "--cluster");
  }
  std::string spec = text;
  int64_t hosts = 0;
  if (SplitPresetHosts(text, &spec, &hosts) && hosts < 1) {
    return ReportBadInput("--cluster: \"" + text + "\" needs at least one host");
  }
  return alpa_cluster_create_preset(out, spec.c_str(), hosts, &err) == ALPA_OK
             ? 0
             : ReportError(err, "--cluster");
}

int MakePlanCluster(const std::string& text, const std::string& calibration_path,
                    alpa_cluster** out) {
  if (int rc = MakePlanCluster(text, out)) return rc;
  if (calibration_path.empty()) return 0;
  std::string bytes, reason;
  if (!ReadFile(calibration_path, &bytes, kDefaultMaxInputBytes, &reason, StreamContent::kJson)) {
    return ReportBadInput("--calibration: " + calibration_path + ": " + reason);
  }
  alpa_cluster* calibrated = nullptr;
  alpa_error* err = nullptr;
  const int32_t status =
      alpa_cluster_apply_calibration(&calibrated, *out, bytes.data(), bytes.size(), &err);
  if (status != ALPA_OK) return ReportError(err, "--calibration: " + calibration_path);
  alpa_cluster_destroy(*out);
  *out = calibrated;
  return 0;
}

int SetPlannerOptions(alpa_plan_options* options, const PlannerOptionArgs& args) {
  alpa_error* err = nullptr;
  auto set_int = [&](int32_t key, int64_t value, const char* option) {
    return alpa_plan_options_set_int(options, key, value, &err) == ALPA_OK
               ? 0
               : ReportError(err, option);
  };
  if (int rc = set_int(ALPA_PLAN_OPT_THREADS, args.threads, "--threads")) return rc;
  if (!args.device_memory.empty()) {
    // A bare number is ambiguous here (16 would be 16 bytes, meant as GiB): a unit is required.
    if (args.device_memory.find_first_not_of("0123456789.eE+- ") == std::string::npos) {
      return ReportBadInput("--device-memory: \"" + args.device_memory +
                            "\" has no unit; give one, e.g. " + args.device_memory + "GiB (or " +
                            args.device_memory + "B for bytes)");
    }
    int64_t bytes = 0;
    if (!ParseBytes(args.device_memory, &bytes) || bytes < 1) {
      return ReportBadInput("--device-memory: \"" + args.device_memory +
                            "\" is not a positive byte count (e.g. 16GiB)");
    }
    if (int rc = set_int(ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, bytes, "--device-memory")) return rc;
  }
  if (args.exact) {
    if (int rc = set_int(ALPA_PLAN_OPT_INTRA_OP_EXACT, 1, "--exact")) return rc;
  }
  const std::tuple<int32_t, int64_t, const char*> limits[] = {
      {ALPA_PLAN_OPT_MAX_HOSTS, args.max_hosts, "--max-hosts"},
      {ALPA_PLAN_OPT_MAX_DEVICES, args.max_devices, "--max-devices"},
      {ALPA_PLAN_OPT_MAX_GRAPH_OPS, args.max_graph_ops, "--max-graph-ops"},
      {ALPA_PLAN_OPT_MAX_LAYERS, args.max_layers, "--max-layers"},
      {ALPA_PLAN_OPT_MAX_INTRA_OP_SOLVES, args.max_intra_op_solves, "--max-intra-op-solves"}};
  for (const auto& [key, value, option] : limits) {
    if (value == PlannerOptionArgs::kLimitNotGiven) continue;
    if (int rc = set_int(key, value, option)) return rc;
  }
  if (args.intra_op_time_limit > 0 &&
      alpa_plan_options_set_double(options, ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT,
                                   args.intra_op_time_limit, &err) != ALPA_OK) {
    return ReportError(err, "--intra-op-time-limit");
  }
  return 0;
}

int32_t PrintPlanProgress(void* /*user*/, const alpa_plan_progress* progress) {
  const std::string phase = progress->phase;
  if (phase == "estimate") {
    std::printf(
        "# %7.2fs  B=%-5lld estimate: %lld intra-op solves per microbatch count (%lld piece "
        "types x %lld logical meshes; up to %lld with memory levels), at most %lld count(s): "
        "%lld solves; up to %lld stage candidates per count",
        progress->seconds, static_cast<long long>(progress->microbatches),
        static_cast<long long>(progress->solves_per_count),
        static_cast<long long>(progress->piece_types),
        static_cast<long long>(progress->logical_meshes),
        static_cast<long long>(progress->max_solves_per_count),
        static_cast<long long>(progress->microbatch_counts),
        static_cast<long long>(progress->estimated_solves),
        static_cast<long long>(progress->stage_candidates));
    if (progress->time_limit_seconds > 0) {
      std::printf("; time limit %g s", progress->time_limit_seconds);
    }
    std::printf("\n");
  } else if (phase == "time limit") {
    std::printf("# %7.2fs  B=%-5lld time limit of %g s reached: the best plan found so far\n",
                progress->seconds, static_cast<long long>(progress->microbatches),
                progress->time_limit_seconds);
  } else if (phase == "intra-op") {
    // One line per tenth of the solves (and the last), not one per solve.
    const int64_t step = std::max<int64_t>(1, progress->total / 10);
    if (progress->done % step != 0 && progress->done != progress->total) return 0;
    std::printf("# %7.2fs  B=%-5lld intra-op solves %lld/%lld\n", progress->seconds,
                static_cast<long long>(progress->microbatches),
                static_cast<long long>(progress->done), static_cast<long long>(progress->total));
  } else {
    std::printf("# %7.2fs  B=%-5lld %s\n", progress->seconds,
                static_cast<long long>(progress->microbatches), progress->phase);
  }
  std::fflush(stdout);
  return 0;
}

void PrintPlanHeader(const std::string& doing, const std::string& what,
                     const alpa_cluster* cluster) {
  std::printf("# alpa %s: %s %s on %s (%lld hosts x %lld devices)\n", alpa_version_string(),
              doing.c_str(), what.c_str(), alpa_cluster_name(cluster),
              static_cast<long long>(alpa_cluster_hosts(cluster)),
              static_cast<long long>(alpa_cluster_devices_per_host(cluster)));
  std::fflush(stdout);
}

int ReportPlanFailure(int32_t status, alpa_error* err) {
  if (status == ALPA_ERR_INFEASIBLE) {
    std::fprintf(stderr, "alpa: %s\n", err != nullptr ? alpa_error_message(err) : "infeasible");
    alpa_error_free(err);
    return 2;
  }
  return ReportError(err);
}

void PrintPlanSummary(const alpa_plan* plan, const alpa_cluster* cluster,
                      const std::string& time_label) {
  const int32_t stages = alpa_plan_stage_count(plan);
  const int64_t microbatches = alpa_plan_microbatches(plan);
  const int32_t schedule = alpa_plan_pipeline_schedule(plan);
  const int32_t virtual_stages = alpa_plan_virtual_stages(plan);
  const std::string schedule_name =
      schedule == ALPA_SCHEDULE_ZB_H1 ? "ZB-H1"
      : schedule == ALPA_SCHEDULE_INTERLEAVED_1F1B
          ? "interleaved 1F1B (" + std::to_string(virtual_stages) + " stages per device group)"
          : "1F1B";
  std::printf("\nPlan: %d pipeline stage%s, %lld microbatch%s, %s schedule\n", stages,
              stages == 1 ? "" : "s", static_cast<long long>(microbatches),
              microbatches == 1 ? "" : "es", schedule_name.c_str());
  std::printf("%-5s %-7s %-8s %-9s %-11s %-8s %-5s %-5s %-12s %-12s %s\n", "stage", "layers",
              "submesh", "mesh", "devices", "dp x tp", "zero", "remat", "latency/mb", "sync+update",
              "memory/device");
  double max_latency = 0;
  for (int32_t stage = 0; stage < stages; ++stage) {
    alpa_stage_info info;
    if (alpa_plan_stage(&info, sizeof info, plan, stage, nullptr) != ALPA_OK) continue;
    std::vector<int64_t> ids(static_cast<size_t>(alpa_plan_stage_devices(plan, stage, nullptr, 0)));
    alpa_plan_stage_devices(plan, stage, ids.data(), static_cast<int64_t>(ids.size()));
    const std::string layers =
        std::to_string(info.first_layer) + "-" + std::to_string(info.last_layer);
    const std::string submesh = "(" + std::to_string(info.submesh_hosts) + "," +
                                std::to_string(info.submesh_devices_per_host) + ")";
    std::string mesh = "(" + std::to_string(info.logical_mesh[0]);
    if (info.logical_ndim > 1) mesh += "," + std::to_string(info.logical_mesh[1]);
    mesh += ")";
    const std::string degrees =
        std::to_string(info.data_parallel) + " x " + std::to_string(info.tensor_parallel);
    std::printf("%-5d %-7s %-8s %-9s %-11s %-8s %-5s %-5s %-12s %-12s %s\n", stage, layers.c_str(),
                submesh.c_str(), mesh.c_str(), DeviceRuns(ids).c_str(), degrees.c_str(),
                info.zero >= 2 ? std::to_string(info.zero).c_str()
                : info.zero    ? "yes"
                               : "no",
                info.remat == 2   ? "sel"
                : info.remat == 1 ? "full"
                                  : "no",
                Seconds(info.latency_seconds, 2).c_str(),
                Seconds(info.iteration_overhead_seconds, 2).c_str(),
                Bytes(static_cast<double>(info.memory_bytes), 2).c_str());
    max_latency = std::max(max_latency, info.latency_seconds);
  }
  std::printf(
      "\npredicted iteration time  %s  (%lld microbatch%s; slowest stage %s, %s %s per "
      "microbatch)\n",
      Seconds(alpa_plan_iteration_seconds(plan), 2).c_str(), static_cast<long long>(microbatches),
      microbatches == 1 ? "" : "es", Seconds(max_latency, 2).c_str(),
      schedule == ALPA_SCHEDULE_INTERLEAVED_1F1B ? "the busiest device group's stages together"
                                                 : "with the transfers between stages",
      Seconds(alpa_plan_period_seconds(plan), 2).c_str());
  std::printf("throughput                %.1f TFLOP/s per device\n",
              alpa_plan_tflops_per_device(plan));
  const int64_t peak = alpa_plan_peak_memory_bytes(plan);
  const int64_t smallest = alpa_cluster_device_memory_bytes(cluster);
  if (peak <= smallest) {
    std::printf("peak memory per device    %s of %s\n", Bytes(static_cast<double>(peak), 2).c_str(),
                Bytes(static_cast<double>(smallest), 2).c_str());
  } else {
    // A cluster of mixed GPU types: every stage fits its own pool's devices.
    std::printf(
        "peak memory per device    %s (each stage within its pool's device memory; the "
        "smallest is %s)\n",
        Bytes(static_cast<double>(peak), 2).c_str(),
        Bytes(static_cast<double>(smallest), 2).c_str());
  }
  if (!time_label.empty()) {
    std::printf("%-25s %s\n", time_label.c_str(),
                Seconds(alpa_plan_compile_seconds(plan), 2).c_str());
  }
}

int WritePlanFiles(const alpa_plan* plan, const std::string& output, const std::string& svg,
                   ClockReadings clock) {
  alpa_error* err = nullptr;
  if (!output.empty()) {
    alpa_buffer* buffer = nullptr;
    if (alpa_plan_to_json(&buffer, plan, kPlanJsonExecutable, &err) != ALPA_OK)
      return ReportError(err, "-o");
    const std::string text = PlanJsonText(alpa_buffer_data(buffer), clock);
    alpa_buffer_free(buffer);
    if (!WriteFile(output, text.data(), text.size())) {
      return ReportBadInput("-o: cannot write " + output);
    }
  }
  if (!svg.empty()) {
    // The timeline of the plan's simulated iteration (its schedule, the slice moves as planned).
    alpa_simulation* sim = nullptr;
    if (alpa_plan_simulate(&sim, plan, alpa_plan_pipeline_schedule(plan), &err) != ALPA_OK) {
      return ReportError(err, "--svg");
    }
    alpa_buffer* picture = nullptr;
    const int32_t rc = alpa_simulation_timeline_to_svg(&picture, sim, kDefaultSvgWidth, &err);
    alpa_simulation_destroy(sim);
    if (rc != ALPA_OK) return ReportError(err, "--svg");
    const bool ok = WriteFile(svg, alpa_buffer_data(picture), alpa_buffer_size(picture));
    alpa_buffer_free(picture);
    if (!ok) return ReportBadInput("--svg: cannot write " + svg);
  }
  return 0;
}

int PrintPlanJson(const alpa_plan* plan, ClockReadings clock) {
  alpa_error* err = nullptr;
  alpa_buffer* buffer = nullptr;
  if (alpa_plan_to_json(&buffer, plan, kPlanJsonSummary, &err) != ALPA_OK) return ReportError(err);
  std::printf("%s\n", PlanJsonText(alpa_buffer_data(buffer), clock).c_str());
  alpa_buffer_free(buffer);
  return 0;
}

void PrintWrote(const std::string& output, const std::string& svg) {
  if (!output.empty()) std::printf("wrote %s\n", output.c_str());
  if (!svg.empty()) std::printf("wrote %s\n", svg.c_str());
}

}  // namespace alpa_cli
