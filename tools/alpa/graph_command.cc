// `alpa graph`: statistics of a model-zoo graph or a graph file, or the graph as JSON.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "alpa_experimental.h"
#include "cli_output.h"
#include "commands.h"
#include "graph_file.h"
#include "input_limit.h"

namespace alpa_cli {
namespace {

struct GraphArgs {
  std::string model;   // a model-zoo spec, or
  std::string file;    // a graph JSON file, or
  std::string hlo;     // an XLA HLO text file (jax.jit(step).lower(...).as_text())
  std::string train;   // --train: make the file's forward graph a training step
  bool json = false;   // statistics as one JSON object (alpa_graph_stats_to_json)
  std::string output;  // write the graph JSON here instead of printing statistics ("-": stdout)
  InputLimit limit;    // --max-input-bytes
};

// 1234567 -> "1,234,567".
std::string Grouped(long long n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string Count(double x) {
  static const char* const kUnits[] = {"", "K", "M", "B", "T", "P", "E", nullptr};
  return ScaledNumber(x, kUnits, 1000, 1);
}

void PrintStats(const std::string& what, const nlohmann::json& s) {
  const double flops = s["flops"].get<double>();
  const double dot = s["dot_flops"].get<double>();
  std::printf("graph: %s\n", what.c_str());
  std::printf("ops: %s in %lld layers\n", Grouped(s["ops"].get<long long>()).c_str(),
              s["layers"].get<long long>());
  const long long params = s["parameters"].get<long long>();
  std::printf("parameters: %s (%s)\n", Grouped(params).c_str(),
              Count(static_cast<double>(params)).c_str());
  std::printf("FLOPs of one step: %.4g (%s), dot_general %.4g (%.1f%%)\n", flops,
              Count(flops).c_str(), dot, flops > 0 ? 100 * dot / flops : 0.0);
  std::printf("bytes: parameters %s, gradients %s, optimizer state %s, inputs %s\n",
              Bytes(s["parameter_bytes"].get<double>(), 1).c_str(),
              Bytes(s["gradient_bytes"].get<double>(), 1).c_str(),
              Bytes(s["optimizer_state_bytes"].get<double>(), 1).c_str(),
              Bytes(s["input_bytes"].get<double>(), 1).c_str());
  std::printf("activations: %s (forward results, an upper bound without rematerialization)\n",
              Bytes(s["activation_bytes"].get<double>(), 1).c_str());
  std::string phases;
  for (const auto& [phase, n] : s["ops_by_phase"].items()) {
    phases += (phases.empty() ? "" : ", ") + phase + " " + Grouped(n.get<long long>());
  }
  std::printf("ops by phase: %s\n", phases.c_str());
  std::printf("ops by kind:\n");
  for (const auto& [kind, n] : s["ops_by_kind"].items()) {
    std::printf("  %-20s %s\n", kind.c_str(), Grouped(n.get<long long>()).c_str());
  }
}

int WriteGraph(const alpa_graph* graph, const std::string& path) {
  alpa_buffer* text = nullptr;
  alpa_error* err = nullptr;
  if (alpa_graph_to_json(&text, graph, &err) != ALPA_OK) return ReportError(err);
  const bool to_stdout = path == "-";
  std::FILE* file = to_stdout ? stdout : std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    const std::string reason = std::strerror(errno);
    alpa_buffer_free(text);
    return ReportBadInput("cannot write " + path + ": " + reason);
  }
  const size_t size = alpa_buffer_size(text);
  const bool ok = std::fwrite(alpa_buffer_data(text), 1, size, file) == size &&
                  (to_stdout ? std::fflush(file) : std::fclose(file)) == 0;
  alpa_buffer_free(text);
  if (!ok) {
    return ReportBadInput("cannot write " + path);
  }
  if (!to_stdout) {
    std::printf("wrote %s (%lld ops)\n", path.c_str(),
                static_cast<long long>(alpa_graph_op_count(graph)));
  }
  return 0;
}

int RunGraph(const GraphArgs& args) {
  if (!args.model.empty() + !args.file.empty() + !args.hlo.empty() != 1) {
    return ReportBadInput("give one of --model SPEC, --file graph.json or --hlo step.hlo");
  }
  alpa_graph* graph = nullptr;
  alpa_error* err = nullptr;
  int32_t status = ALPA_OK;
  if (!args.hlo.empty()) {
    status = alpa_graph_read_hlo_file(&graph, args.hlo.c_str(), &err);
  } else if (!args.file.empty()) {
    status = ReadGraphFileForTraining(args.file, args.limit, args.train, &graph, &err);
  } else {
    status = alpa_model_build_graph(&graph, args.model.c_str(), &err);
  }
  if (status != ALPA_OK) return ReportError(err);
  int rc = 0;
  if (!args.output.empty()) {
    rc = WriteGraph(graph, args.output);
  } else {
    alpa_buffer* stats = nullptr;
    if (alpa_graph_stats_to_json(&stats, graph, &err) != ALPA_OK) {
      rc = ReportError(err);
    } else if (args.json) {
      std::printf("%s\n", alpa_buffer_data(stats));
    } else {
      PrintStats(!args.hlo.empty()    ? args.hlo
                 : args.model.empty() ? args.file
                                      : args.model,
                 nlohmann::json::parse(alpa_buffer_data(stats)));
    }
    alpa_buffer_free(stats);
  }
  alpa_graph_destroy(graph);
  return rc;
}

}  // namespace

void AddGraphSourceOptions(CLI::App* command, std::string* model, std::string* file,
                           InputLimit* limit) {
  CLI::Option* from_model =
      command->add_option("--model", *model, "Model spec, e.g. gpt-350m or mlp:layers=2");
  CLI::Option* from_file = command->add_option("--file", *file, "Graph JSON file");
  from_model->excludes(from_file);
  AddInputLimitOption(command, limit);
}

Command AddGraphCommand(CLI::App& app) {
  auto args = std::make_shared<GraphArgs>();
  CLI::App* graph = app.add_subcommand(
      "graph",
      "Statistics of a training-step graph (a model spec, a graph JSON file or XLA HLO text)");
  AddGraphSourceOptions(graph, &args->model, &args->file, &args->limit);
  AddHloOption(graph, &args->hlo);
  AddTrainOption(graph, &args->train);
  graph->add_flag("--json", args->json, "Print the statistics as one JSON object");
  graph->add_option("-o,--output", args->output,
                    "Write the graph JSON to this file instead (- for stdout)");
  return {graph, [args] { return RunGraph(*args); }};
}

}  // namespace alpa_cli
