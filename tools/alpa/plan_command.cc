// `alpa plan`: Alpa's two-level search on a model and a cluster, printed as a readable summary
// (stages, submeshes, logical meshes, how each stage shards, predicted iteration time,
// throughput, memory, compile time) or as JSON.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "alpa.h"
#include "cli_output.h"
#include "commands.h"

namespace alpa_cli {
namespace {

constexpr const char* kDefaultModel = "gpt-2.6b";
constexpr const char* kDefaultCluster = "p3.16xlarge:2";

// Owns the handles of one run; frees them on every path.
struct PlanHandles {
  alpa_cluster* cluster = nullptr;
  alpa_graph* graph = nullptr;
  alpa_plan_options* options = nullptr;
  alpa_plan* plan = nullptr;
  ~PlanHandles() {
    alpa_plan_destroy(plan);
    alpa_plan_options_destroy(options);
    alpa_graph_destroy(graph);
    alpa_cluster_destroy(cluster);
  }
};

int32_t PrintPlanProgress(void* /*user*/, const alpa_plan_progress* p) {
  const std::string phase = p->phase;
  if (phase == "intra-op") {
    // One line per tenth of the solves (and the last), not one per solve.
    const int64_t step = std::max<int64_t>(1, p->total / 10);
    if (p->done % step != 0 && p->done != p->total) return 0;
    std::printf("# %7.2fs  B=%-5lld intra-op solves %lld/%lld\n", p->seconds,
                static_cast<long long>(p->microbatches), static_cast<long long>(p->done),
                static_cast<long long>(p->total));
  } else {
    std::printf("# %7.2fs  B=%-5lld %s\n", p->seconds, static_cast<long long>(p->microbatches),
                p->phase);
  }
  std::fflush(stdout);
  return 0;
}

// "p3.16xlarge:8" (preset and host count), "p3.16xlarge:hosts=8,..." (preset spec) or a file.
int MakePlanCluster(const std::string& text, alpa_cluster** out) {
  alpa_error* err = nullptr;
  if (IsFile(text)) {
    return alpa_cluster_read_file(out, text.c_str(), &err) == ALPA_OK
               ? 0
               : ReportError(err, "--cluster");
  }
  std::string spec = text;
  int64_t hosts = 0;
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    const std::string tail = text.substr(colon + 1);
    if (!tail.empty() && tail.size() <= 9 &&
        tail.find_first_not_of("0123456789") == std::string::npos) {
      hosts = std::stoll(tail);
      if (hosts < 1) return ReportBadInput("--cluster: \"" + text + "\" needs at least one host");
      spec = text.substr(0, colon);
    }
  }
  return alpa_cluster_create_preset(out, spec.c_str(), hosts, &err) == ALPA_OK
             ? 0
             : ReportError(err, "--cluster");
}

// "0-7", "0-3,8-11": the device ids as runs.
std::string DeviceRuns(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

std::string Seconds(double s) {
  char buf[32];
  if (s < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  } else if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  }
  return buf;
}

void PrintSummary(const alpa_plan* plan, const alpa_cluster* cluster) {
  const int32_t stages = alpa_plan_stage_count(plan);
  const int64_t b = alpa_plan_microbatches(plan);
  std::printf("\nPlan: %d pipeline stage%s, %lld microbatches, 1F1B schedule\n", stages,
              stages == 1 ? "" : "s", static_cast<long long>(b));
  std::printf("%-5s %-7s %-8s %-9s %-11s %-8s %-5s %-5s %-12s %-12s %s\n", "stage", "layers",
              "submesh", "mesh", "devices", "dp x tp", "zero", "remat", "latency/mb", "sync+update",
              "memory/device");
  double max_latency = 0;
  for (int32_t s = 0; s < stages; ++s) {
    alpa_stage_info info;
    if (alpa_plan_stage(&info, sizeof info, plan, s, nullptr) != ALPA_OK) continue;
    std::vector<int64_t> ids(static_cast<size_t>(alpa_plan_stage_devices(plan, s, nullptr, 0)));
    alpa_plan_stage_devices(plan, s, ids.data(), static_cast<int64_t>(ids.size()));
    const std::string layers =
        std::to_string(info.first_layer) + "-" + std::to_string(info.last_layer);
    const std::string submesh = "(" + std::to_string(info.submesh_hosts) + "," +
                                std::to_string(info.submesh_devices_per_host) + ")";
    std::string mesh = "(" + std::to_string(info.logical_mesh[0]);
    if (info.logical_ndim > 1) mesh += "," + std::to_string(info.logical_mesh[1]);
    mesh += ")";
    const std::string degrees =
        std::to_string(info.data_parallel) + " x " + std::to_string(info.tensor_parallel);
    std::printf("%-5d %-7s %-8s %-9s %-11s %-8s %-5s %-5s %-12s %-12s %s\n", s, layers.c_str(),
                submesh.c_str(), mesh.c_str(), DeviceRuns(ids).c_str(), degrees.c_str(),
                info.zero ? "yes" : "no", info.remat ? "yes" : "no",
                Seconds(info.latency_seconds).c_str(),
                Seconds(info.iteration_overhead_seconds).c_str(),
                Bytes(static_cast<double>(info.memory_bytes), 2).c_str());
    max_latency = std::max(max_latency, info.latency_seconds);
  }
  std::printf(
      "\npredicted iteration time  %s  (%lld microbatches; slowest stage %s per microbatch)\n",
      Seconds(alpa_plan_iteration_seconds(plan)).c_str(), static_cast<long long>(b),
      Seconds(max_latency).c_str());
  std::printf("throughput                %.1f TFLOP/s per device\n",
              alpa_plan_tflops_per_device(plan));
  std::printf("peak memory per device    %s of %s\n",
              Bytes(static_cast<double>(alpa_plan_peak_memory_bytes(plan)), 2).c_str(),
              Bytes(static_cast<double>(alpa_cluster_device_memory_bytes(cluster)), 2).c_str());
  std::printf("compile time              %s\n", Seconds(alpa_plan_compile_seconds(plan)).c_str());
}

}  // namespace

int RunPlan(const PlanArgs& args) {
  PlanHandles h;
  alpa_error* err = nullptr;
  const std::string model = args.file.empty() && args.model.empty() ? kDefaultModel : args.model;
  const std::string cluster_text = args.cluster.empty() ? kDefaultCluster : args.cluster;
  if (int rc = MakePlanCluster(cluster_text, &h.cluster)) return rc;

  if (alpa_plan_options_create(&h.options, &err) != ALPA_OK) return ReportError(err);
  auto set_int = [&](int32_t key, int64_t value, const char* option) {
    return alpa_plan_options_set_int(h.options, key, value, &err) == ALPA_OK
               ? 0
               : ReportError(err, option);
  };
  if (args.microbatches_given && args.microbatches < 1) {
    return ReportBadInput("--microbatches: must be >= 1 (got " + std::to_string(args.microbatches) +
                          "; leave it out to search)");
  }
  if (args.microbatches > 0) {
    if (int rc = set_int(ALPA_PLAN_OPT_MICROBATCHES, args.microbatches, "--microbatches")) {
      return rc;
    }
  }
  if (int rc = set_int(ALPA_PLAN_OPT_NUM_LAYERS, args.layers, "--layers")) return rc;
  if (int rc = set_int(ALPA_PLAN_OPT_THREADS, args.threads, "--threads")) return rc;
  if (!args.remat.empty() &&
      alpa_plan_options_set_by_name(h.options, "remat", args.remat.c_str(), &err) != ALPA_OK) {
    return ReportError(err, "--remat");
  }
  if (!args.device_memory.empty()) {
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
  if (args.intra_op_time_limit > 0 &&
      alpa_plan_options_set_double(h.options, ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT,
                                   args.intra_op_time_limit, &err) != ALPA_OK) {
    return ReportError(err, "--intra-op-time-limit");
  }
  if (!args.quiet && !args.json) {
    alpa_plan_options_set_progress(h.options, PrintPlanProgress, nullptr, nullptr);
  }

  const std::string what = args.file.empty() ? model : args.file;
  if (!args.json && !args.quiet) {
    std::printf("# alpa %s: planning %s on %s (%lld hosts x %lld devices)\n", alpa_version_string(),
                what.c_str(), alpa_cluster_name(h.cluster),
                static_cast<long long>(alpa_cluster_hosts(h.cluster)),
                static_cast<long long>(alpa_cluster_devices_per_host(h.cluster)));
    std::fflush(stdout);
  }
  int32_t rc;
  if (args.file.empty()) {
    rc = alpa_plan_model(&h.plan, model.c_str(), h.cluster, h.options, &err);
  } else {
    if (alpa_graph_read_file(&h.graph, args.file.c_str(), &err) != ALPA_OK) {
      return ReportError(err, "--file");
    }
    rc = alpa_plan_graph(&h.plan, h.graph, h.cluster, h.options, &err);
  }
  if (rc == ALPA_ERR_INFEASIBLE) {
    std::fprintf(stderr, "alpa: %s\n", alpa_error_message(err));
    alpa_error_free(err);
    return 2;
  }
  if (rc != ALPA_OK) return ReportError(err);

  if (!args.output.empty()) {
    alpa_buffer* buffer = nullptr;
    if (alpa_plan_to_json(&buffer, h.plan, 1, &err) != ALPA_OK) return ReportError(err, "-o");
    std::FILE* f = std::fopen(args.output.c_str(), "wb");
    const bool ok =
        f != nullptr && std::fwrite(alpa_buffer_data(buffer), 1, alpa_buffer_size(buffer), f) ==
                            alpa_buffer_size(buffer);
    if (f != nullptr && std::fclose(f) != 0) f = nullptr;
    alpa_buffer_free(buffer);
    if (!ok || f == nullptr) return ReportBadInput("-o: cannot write " + args.output);
  }
  if (!args.svg.empty()) {
    // The timeline of the plan's simulated iteration (1F1B, the slice moves as planned).
    alpa_simulation* sim = nullptr;
    if (alpa_plan_simulate(&sim, h.plan, ALPA_SCHEDULE_1F1B, &err) != ALPA_OK) {
      return ReportError(err, "--svg");
    }
    alpa_buffer* svg = nullptr;
    const int32_t rc_svg = alpa_simulation_timeline_svg(&svg, sim, 0, &err);
    alpa_simulation_destroy(sim);
    if (rc_svg != ALPA_OK) return ReportError(err, "--svg");
    const bool ok = WriteFile(args.svg, alpa_buffer_data(svg), alpa_buffer_size(svg));
    alpa_buffer_free(svg);
    if (!ok) return ReportBadInput("--svg: cannot write " + args.svg);
  }
  if (args.json) {
    alpa_buffer* buffer = nullptr;
    if (alpa_plan_to_json(&buffer, h.plan, 0, &err) != ALPA_OK) return ReportError(err);
    std::printf("%s\n", alpa_buffer_data(buffer));
    alpa_buffer_free(buffer);
    return 0;
  }
  PrintSummary(h.plan, h.cluster);
  if (!args.output.empty()) std::printf("wrote %s\n", args.output.c_str());
  if (!args.svg.empty()) std::printf("wrote %s\n", args.svg.c_str());
  return 0;
}

}  // namespace alpa_cli
