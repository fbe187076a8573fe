// `alpa shard`: auto-shards a model-zoo graph or a graph file on one logical mesh and prints the
// plan (objective and its split, collectives, peak memory, the layouts of weights and inputs).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alpa_experimental.h"
#include "cli_output.h"
#include "commands.h"
#include "graph_file.h"
#include "plan_output.h"
#include "seconds_validator.h"

namespace alpa_cli {
namespace {

// Objectives in Alpa's abstract units or in seconds: six digits are plenty.
constexpr int kObjectiveDigits = 6;
// The abstract mesh's alpha and beta as the header line echoes them.
constexpr int kMeshParameterDigits = 6;
// alpa_sharding_plan_collective_counts: gradient syncs of one tensor combined into one, or not.
constexpr int32_t kGradientSyncsCombined = 1;
constexpr int32_t kPerTensor = 0;

struct ShardArgs {
  std::string model;        // a model-zoo spec, or
  std::string file;         // a graph JSON file
  std::string train;        // --train: make the file's forward graph a training step
  InputLimit limit;         // --max-input-bytes
  std::string mesh;         // "8" or "2x4"
  std::string cluster;      // "PRESET:HOSTS", a preset spec ("p3.16xlarge:hosts=2") or a JSON file
  std::string alpha, beta;  // comma lists per mesh dim: an abstract mesh
  std::string cost_model;   // "alpa" | "real"; empty: alpa with --alpha/--beta, else real
  std::string zero;         // "" (off), "off", "search", "force"
  bool force_dp = false;    // force data parallelism
  std::string batch_mesh_dim;  // "" (free), "free", "all" or a mesh dim
  bool no_all_gather = false;
  bool no_all_to_all = false;
  std::string memory_budget;  // bytes per device: "16e9", "16GB", "16GiB"; empty: none
  double time_limit_seconds = 0;
  int threads = 0;
  bool json = false;
  bool quiet = false;
};

// Owns the handles of one run; frees them on every path.
struct Handles {
  alpa_graph* graph = nullptr;
  alpa_cluster* cluster = nullptr;
  alpa_mesh* mesh = nullptr;
  alpa_solve_options* options = nullptr;
  alpa_sharding_plan* plan = nullptr;
  ~Handles() {
    alpa_sharding_plan_destroy(plan);
    alpa_solve_options_destroy(options);
    alpa_mesh_destroy(mesh);
    alpa_cluster_destroy(cluster);
    alpa_graph_destroy(graph);
  }
};

int32_t PrintProgress(void* /*user*/, const alpa_progress* progress) {
  PrintSolveProgress(*progress, kObjectiveDigits);
  return 0;
}

// "a,b,,c" -> {"a", "b", "", "c"}: the pieces between any of `separators`.
std::vector<std::string> SplitOn(const std::string& text, const char* separators) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find_first_of(separators, start);
    parts.push_back(text.substr(start, at == std::string::npos ? at : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

// "2x4" -> {2, 4}; "8" -> {8}. Rank 1 or 2, every dim >= 1.
bool ParseMesh(const std::string& text, std::vector<int64_t>* shape) {
  shape->clear();
  for (const std::string& part : SplitOn(text, "xX")) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 9) {
      return false;
    }
    const int64_t dim = std::stoll(part);
    if (dim < 1) return false;
    shape->push_back(dim);
  }
  return shape->size() == 1 || shape->size() == 2;
}

// "1,0.1" -> {1, 0.1}: finite, non-negative numbers.
bool ParseNumbers(const std::string& text, std::vector<double>* out) {
  out->clear();
  for (const std::string& part : SplitOn(text, ",")) {
    char* end = nullptr;
    const double value = std::strtod(part.c_str(), &end);
    if (part.empty() || end == nullptr || *end != '\0' || !std::isfinite(value) || value < 0) {
      return false;
    }
    out->push_back(value);
  }
  return true;
}

// A plain non-negative mesh dim ("0", "1"); other values ("all", "-1") go to the library.
bool ParseMeshDim(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::stoll(text);
  return true;
}

// The cluster of --cluster (a preset spec or a JSON file), with enough hosts for `devices`
// when the spec leaves the host count open.
int MakeCluster(const ShardArgs& args, int64_t devices, alpa_cluster** out) {
  alpa_error* err = nullptr;
  const std::string spec = args.cluster.empty() ? "p3.16xlarge" : args.cluster;
  const bool file = spec.find('/') != std::string::npos ||
                    spec.find(".json") != std::string::npos || IsFile(spec);
  if (file) {
    if (alpa_cluster_read_file(out, spec.c_str(), &err) != ALPA_OK) {
      return ReportError(err, "--cluster");
    }
    return 0;
  }
  // "PRESET:HOSTS": the host count is given, read as alpa plan reads it.
  std::string preset;
  int64_t hosts = 0;
  if (SplitPresetHosts(spec, &preset, &hosts)) return MakePlanCluster(spec, out);
  if (alpa_cluster_create_preset(out, spec.c_str(), 0, &err) != ALPA_OK) {
    return ReportError(err, "--cluster");
  }
  const int64_t per_host = alpa_cluster_devices_per_host(*out);
  const int64_t hosts_needed = devices <= per_host ? 1 : (devices + per_host - 1) / per_host;
  if (alpa_cluster_hosts(*out) < hosts_needed && spec.find("hosts=") == std::string::npos) {
    alpa_cluster_destroy(*out);
    *out = nullptr;
    if (alpa_cluster_create_preset(out, spec.c_str(), hosts_needed, &err) != ALPA_OK) {
      return ReportError(err, "--cluster");
    }
  }
  return 0;
}

// The logical mesh of a cluster: d0 x d1 <= devices per host uses one host's first d0 * d1
// devices; larger meshes use whole hosts (devices / devices_per_host of them).
int MakeClusterMesh(const std::vector<int64_t>& shape, const alpa_cluster* cluster, alpa_mesh** out,
                    std::string* where) {
  int64_t devices = 1;
  for (int64_t d : shape) devices *= d;
  const int64_t per_host = alpa_cluster_devices_per_host(cluster);
  int64_t hosts = 1, used_per_host = devices;
  if (devices > per_host) {
    if (devices % per_host != 0) {
      return ReportBadInput("--mesh: " + std::to_string(devices) +
                            " devices are more than one host's " + std::to_string(per_host) +
                            " but not a whole number of hosts");
    }
    hosts = devices / per_host;
    used_per_host = per_host;
  }
  if (hosts > alpa_cluster_hosts(cluster)) {
    return ReportBadInput("--mesh: needs " + std::to_string(hosts) + " hosts of " +
                          std::to_string(per_host) + " devices; the cluster has " +
                          std::to_string(alpa_cluster_hosts(cluster)));
  }
  alpa_error* err = nullptr;
  if (alpa_mesh_create(out, cluster, hosts, used_per_host, static_cast<int32_t>(shape.size()),
                       shape.data(), &err) != ALPA_OK) {
    return ReportError(err, "--mesh");
  }
  *where = std::string(alpa_cluster_name(cluster)) + ", " + std::to_string(hosts) +
           (hosts == 1 ? " host" : " hosts") + " x " + std::to_string(used_per_host) + " devices";
  return 0;
}

// Applies the auto-sharding options through the by-name path of the C ABI.
int SetOption(alpa_solve_options* options, const char* name, const std::string& value,
              const std::string& flag) {
  alpa_error* err = nullptr;
  if (alpa_solve_options_set_by_name(options, name, value.c_str(), &err) != ALPA_OK) {
    return ReportError(err, flag);
  }
  return 0;
}

std::string JoinNumbers(const std::vector<double>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) {
    s += (i ? "," : "") + FormatNumber(values[i], kMeshParameterDigits);
  }
  return s;
}

std::string MeshString(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

std::string CountsLine(const alpa_sharding_plan* plan, int32_t combined) {
  int64_t counts[4] = {0, 0, 0, 0};
  alpa_sharding_plan_collective_counts(plan, combined, counts, 4);
  char text[160];
  std::snprintf(text, sizeof(text),
                "all-reduce %lld, all-gather %lld, reduce-scatter %lld, "
                "all-to-all %lld",
                static_cast<long long>(counts[ALPA_COLLECTIVE_ALL_REDUCE]),
                static_cast<long long>(counts[ALPA_COLLECTIVE_ALL_GATHER]),
                static_cast<long long>(counts[ALPA_COLLECTIVE_REDUCE_SCATTER]),
                static_cast<long long>(counts[ALPA_COLLECTIVE_ALL_TO_ALL]));
  return text;
}

// A JSON value as an integer, or -1 when absent or of another type.
long long IntAt(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return -1;
  return j[key].get<long long>();
}

void PrintProblemSize(const nlohmann::json& stats) {
  if (!stats.is_object()) return;
  std::printf(
      "sharding problem: %lld nodes, %lld edges; after normalization %lld nodes, %lld edges; "
      "after reductions %lld nodes, %lld edges\n",
      IntAt(stats, "problem_nodes"), IntAt(stats, "problem_edges"),
      IntAt(stats, "normalized_nodes"), IntAt(stats, "normalized_edges"),
      IntAt(stats, "core_nodes"), IntAt(stats, "core_edges"));
  if (stats.contains("elimination_solved") && stats["elimination_solved"].is_boolean() &&
      stats["elimination_solved"].get<bool>()) {
    std::printf("solved exactly by block elimination: %lld blocks, %lld distinct\n",
                IntAt(stats, "elimination_blocks"), IntAt(stats, "elimination_distinct_blocks"));
  }
  std::printf("ops: %lld (%lld deciding, %lld following, %lld free, %lld fused)\n",
              IntAt(stats, "ops"), IntAt(stats, "deciding_ops"), IntAt(stats, "follower_ops"),
              IntAt(stats, "free_ops"), IntAt(stats, "fused_ops"));
}

// The weights, optimizer state and inputs of the plan (the JSON also lists gradients and
// updated values).
void PrintTensors(const nlohmann::json& tensors) {
  if (!tensors.is_array()) return;
  struct Row {
    std::string name, role, shape, spec;
  };
  std::vector<Row> rows;
  size_t widths[3] = {4, 4, 5};
  for (const auto& t : tensors) {
    auto text = [&](const char* key) {
      return t.contains(key) && t[key].is_string() ? t[key].get<std::string>() : std::string();
    };
    Row row{text("name"), text("role"), "[", text("spec")};
    if (row.role != "parameter" && row.role != "optimizer_state" && row.role != "input") continue;
    if (t.contains("shape") && t["shape"].is_array()) {
      for (size_t k = 0; k < t["shape"].size(); ++k) {
        row.shape += (k ? ", " : "") + t["shape"][k].dump();
      }
    }
    row.shape += "]";
    widths[0] = std::max(widths[0], row.name.size());
    widths[1] = std::max(widths[1], row.role.size());
    widths[2] = std::max(widths[2], row.shape.size());
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return;
  const int w0 = static_cast<int>(widths[0]), w1 = static_cast<int>(widths[1]),
            w2 = static_cast<int>(widths[2]);
  std::printf("tensors:\n  %-*s  %-*s  %-*s  %s\n", w0, "name", w1, "role", w2, "shape", "spec");
  for (const Row& r : rows) {
    std::printf("  %-*s  %-*s  %-*s  %s\n", w0, r.name.c_str(), w1, r.role.c_str(), w2,
                r.shape.c_str(), r.spec.c_str());
  }
}

std::string Objective(double value) { return FormatNumber(value, kObjectiveDigits); }

void PrintPlan(const alpa_sharding_plan* plan, const nlohmann::json& json) {
  const int32_t status = alpa_sharding_plan_status(plan);
  std::printf("status: %s\n", SolveStatusName(status));
  const char* message = alpa_sharding_plan_message(plan);
  if (message[0] != '\0') std::printf("message: %s\n", message);
  std::printf("objective: %s (compute %s, communication %s, resharding %s); lower bound %s\n",
              Objective(alpa_sharding_plan_objective(plan)).c_str(),
              Objective(alpa_sharding_plan_cost(plan, ALPA_PLAN_COST_COMPUTE)).c_str(),
              Objective(alpa_sharding_plan_cost(plan, ALPA_PLAN_COST_COMMUNICATION)).c_str(),
              Objective(alpa_sharding_plan_cost(plan, ALPA_PLAN_COST_RESHARDING)).c_str(),
              Objective(alpa_sharding_plan_lower_bound(plan)).c_str());
  std::printf("collectives (gradient syncs combined): %s\n",
              CountsLine(plan, kGradientSyncsCombined).c_str());
  std::printf("collectives (per tensor): %s\n", CountsLine(plan, kPerTensor).c_str());
  const int64_t peak = alpa_sharding_plan_peak_memory_bytes(plan);
  std::printf("peak memory per device: %lld bytes (%s)\n", static_cast<long long>(peak),
              Bytes(static_cast<double>(peak), 2).c_str());
  if (json.contains("stats")) PrintProblemSize(json["stats"]);
  if (json.contains("tensors")) PrintTensors(json["tensors"]);
}

int RunShard(const ShardArgs& args) {
  if (args.model.empty() == args.file.empty()) {
    return ReportBadInput("give either --model SPEC or --file graph.json");
  }
  if (args.mesh.empty()) return ReportBadInput("--mesh is required (a shape such as 8 or 2x4)");
  std::vector<int64_t> shape;
  if (!ParseMesh(args.mesh, &shape)) {
    return ReportBadInput("--mesh: \"" + args.mesh + "\" is not a mesh shape such as 8 or 2x4");
  }
  const bool abstract_units = !args.alpha.empty() || !args.beta.empty();
  std::string cost_model = args.cost_model;
  if (cost_model.empty()) cost_model = abstract_units ? "alpa" : "real";
  if (cost_model != "alpa" && cost_model != "real") {
    return ReportBadInput("--cost-model: \"" + cost_model + "\" is neither alpa nor real");
  }
  std::vector<double> alpha = {1, 1}, beta = {1, 0.1};
  if (!args.alpha.empty() && !ParseNumbers(args.alpha, &alpha)) {
    return ReportBadInput("--alpha: \"" + args.alpha +
                          "\" is not a list of numbers >= 0 such as 1,1");
  }
  if (!args.beta.empty() && !ParseNumbers(args.beta, &beta)) {
    return ReportBadInput("--beta: \"" + args.beta +
                          "\" is not a list of numbers >= 0 such as 1,0.1");
  }
  if (alpha.size() < shape.size() || beta.size() < shape.size()) {
    return ReportBadInput("--alpha/--beta: give one value per mesh dimension (" +
                          std::to_string(shape.size()) + ")");
  }
  int64_t batch_dim = 0;
  if (!args.batch_mesh_dim.empty() && ParseMeshDim(args.batch_mesh_dim, &batch_dim) &&
      batch_dim >= static_cast<int64_t>(shape.size())) {
    return ReportBadInput("--batch-mesh-dim: mesh dim " + args.batch_mesh_dim +
                          " does not exist on the " + args.mesh + " mesh (dims 0.." +
                          std::to_string(shape.size() - 1) + ", or all)");
  }
  int64_t budget = -1;
  if (!args.memory_budget.empty() && !ParseBytes(args.memory_budget, &budget)) {
    return ReportBadInput("--memory-budget: \"" + args.memory_budget +
                          "\" is not a byte count such as 16e9, 16GB or 16GiB");
  }
  int64_t devices = 1;
  for (int64_t d : shape) devices *= d;

  Handles handles;
  alpa_error* err = nullptr;
  const int32_t read =
      args.model.empty()
          ? ReadGraphFileForTraining(args.file, args.limit, args.train, &handles.graph, &err)
          : alpa_model_build_graph(&handles.graph, args.model.c_str(), &err);
  if (read != ALPA_OK) return ReportError(err, args.model.empty() ? "--file" : "--model");
  // Layer markers matter only to pipeline stages, which one mesh does not have.
  if (!args.file.empty()) WarnIncompleteGraph(handles.graph, args.file, false);

  // The real cost model always needs a cluster (compute times); the Alpa one only when given.
  const bool need_cluster = cost_model == "real" || !args.cluster.empty();
  if (need_cluster) {
    if (int rc = MakeCluster(args, devices, &handles.cluster)) return rc;
  }
  std::string where;
  if (abstract_units || handles.cluster == nullptr) {
    alpha.resize(shape.size());
    beta.resize(shape.size());
    if (alpa_mesh_create_abstract(&handles.mesh, static_cast<int32_t>(shape.size()), shape.data(),
                                  alpha.data(), beta.data(), &err) != ALPA_OK) {
      return ReportError(err, "--mesh");
    }
    where = "abstract, alpha " + JoinNumbers(alpha) + " beta " + JoinNumbers(beta);
  } else {
    if (int rc = MakeClusterMesh(shape, handles.cluster, &handles.mesh, &where)) return rc;
  }

  if (alpa_solve_options_create(&handles.options, &err) != ALPA_OK) return ReportError(err);
  if (int rc = SetOption(handles.options, "cost_model", cost_model, "--cost-model")) return rc;
  if (!args.zero.empty()) {
    if (int rc = SetOption(handles.options, "zero", args.zero, "--zero")) return rc;
  }
  if (args.force_dp) {
    if (int rc = SetOption(handles.options, "force_data_parallel", "1", "--force-dp")) return rc;
  }
  if (!args.batch_mesh_dim.empty()) {
    if (int rc =
            SetOption(handles.options, "batch_mesh_dim", args.batch_mesh_dim, "--batch-mesh-dim")) {
      return rc;
    }
  }
  if (args.no_all_gather) {
    if (int rc = SetOption(handles.options, "allow_all_gather", "0", "--no-all-gather")) return rc;
  }
  if (args.no_all_to_all) {
    if (int rc = SetOption(handles.options, "allow_all_to_all", "0", "--no-all-to-all")) return rc;
  }
  if (budget >= 0) {
    if (alpa_solve_options_set_int(handles.options, ALPA_OPT_MEMORY_BUDGET_BYTES, budget, &err)) {
      return ReportError(err, "--memory-budget");
    }
  }
  if (args.time_limit_seconds > 0 &&
      alpa_solve_options_set_double(handles.options, ALPA_OPT_TIME_LIMIT_SECONDS,
                                    args.time_limit_seconds, &err) != ALPA_OK) {
    return ReportError(err, "--time-limit");
  }
  if (alpa_solve_options_set_int(handles.options, ALPA_OPT_THREADS, args.threads, &err) !=
      ALPA_OK) {
    return ReportError(err, "--threads");
  }
  if (!args.quiet) {
    alpa_solve_options_set_progress(handles.options, PrintProgress, nullptr, nullptr);
    std::printf("# %s: %lld ops; mesh %s (%s); cost model %s\n",
                args.model.empty() ? args.file.c_str() : args.model.c_str(),
                static_cast<long long>(alpa_graph_op_count(handles.graph)),
                MeshString(shape).c_str(), where.c_str(), cost_model.c_str());
    std::fflush(stdout);
  }

  const int32_t sharded = alpa_graph_auto_shard(&handles.plan, handles.graph, handles.mesh,
                                                handles.cluster, handles.options, &err);
  if (IsNoAnswer(sharded)) {
    // No plan (infeasible budget, time limit, cancellation): exit 2, as for any search without
    // an answer.
    std::fprintf(stderr, "alpa: no plan (%s): %s\n", alpa_status_string(sharded),
                 alpa_error_message(err));
    alpa_error_free(err);
    return 2;
  }
  if (sharded != ALPA_OK) return ReportError(err);
  alpa_buffer* json = nullptr;
  if (alpa_sharding_plan_to_json(&json, handles.plan, &err) != ALPA_OK) return ReportError(err);
  if (args.json) {
    std::printf("%s\n", alpa_buffer_data(json));
  } else {
    PrintPlan(handles.plan, nlohmann::json::parse(alpa_buffer_data(json), nullptr, false));
  }
  alpa_buffer_free(json);
  std::fflush(stdout);
  return 0;
}

}  // namespace

Command AddShardCommand(CLI::App& app) {
  auto args = std::make_shared<ShardArgs>();
  CLI::App* shard = app.add_subcommand(
      "shard", "Auto-shard a training-step graph on one logical mesh (Alpa's intra-op pass)");
  AddGraphSourceOptions(shard, &args->model, &args->file, &args->limit);
  AddTrainOption(shard, &args->train);
  // Required, but checked by RunShard so that its absence exits 1 like other bad input.
  shard->add_option("--mesh", args->mesh, "Logical mesh shape: 8 or 2x4 (required)");
  shard->add_option("--cluster", args->cluster,
                    "PRESET:HOSTS (p3.16xlarge:2), a preset spec (dgx-a100-80g:hosts=2) or a "
                    "cluster JSON file (default p3.16xlarge with enough hosts)");
  shard->add_option("--alpha", args->alpha,
                    "Abstract mesh: latency per mesh dim, e.g. 1,1 (implies --cost-model alpa)");
  shard->add_option("--beta", args->beta,
                    "Abstract mesh: inverse bandwidth per mesh dim, e.g. 1,0.1");
  shard->add_option("--cost-model", args->cost_model,
                    "alpa (abstract units, Alpa's tie-breakers) or real (seconds; default)");
  shard
      ->add_option("--zero", args->zero,
                   "ZeRO: off, search (the solver may shard optimizer state and updates; the "
                   "default of a bare --zero) or force")
      ->expected(0, 1)
      ->default_str("search");
  shard->add_flag("--force-dp", args->force_dp,
                  "Force data parallelism: weights replicated, batch split over the mesh");
  shard->add_option("--batch-mesh-dim", args->batch_mesh_dim,
                    "Split inputs' batch dim over this mesh dim (all: every mesh dim)");
  shard->add_flag("--no-all-gather", args->no_all_gather, "Resharding without all-gathers");
  shard->add_flag("--no-all-to-all", args->no_all_to_all, "Resharding without all-to-alls");
  shard->add_option("--memory-budget", args->memory_budget,
                    "Bytes per device: 16e9, 16GB, 16GiB (default: none)");
  shard
      ->add_option("--time-limit", args->time_limit_seconds,
                   "Solver time limit in seconds (default: none)")
      ->check(NonNegativeSeconds());
  shard->add_option("--threads", args->threads, "Threads (0: all)")->check(CLI::Range(0, 4096));
  shard->add_flag("--json", args->json, "Print the plan as one JSON object (last line)");
  shard->add_flag("-q,--quiet", args->quiet, "No progress lines");
  return {shard, [args] { return RunShard(*args); }};
}

}  // namespace alpa_cli
