// `alpa models`: the model-zoo presets and the keys of each family.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "alpa_experimental.h"
#include "cli_output.h"
#include "commands.h"

namespace alpa_cli {
namespace {

// Nominal sizes as "2.6B" and "350M".
constexpr int kSizeDigits = 3;

struct ModelsArgs {
  bool json = false;  // print alpa_model_zoo_to_json's object
};

int RunModels(const ModelsArgs& args) {
  alpa_buffer* buffer = nullptr;
  alpa_error* err = nullptr;
  if (alpa_model_zoo_to_json(&buffer, &err) != ALPA_OK) return ReportError(err);
  if (args.json) {
    std::printf("%s\n", alpa_buffer_data(buffer));
    alpa_buffer_free(buffer);
    return 0;
  }
  const nlohmann::json models = nlohmann::json::parse(alpa_buffer_data(buffer));
  alpa_buffer_free(buffer);
  std::printf("%-16s %-8s %10s %5s  %s\n", "preset", "family", "size", "GPUs", "spec");
  for (const nlohmann::json& preset : models["presets"]) {
    const double params = preset["nominal_params"].get<double>();
    const std::string size = params >= 1e9 ? FormatNumber(params / 1e9, kSizeDigits) + "B"
                                           : FormatNumber(params / 1e6, kSizeDigits) + "M";
    const int gpus = preset["benchmark_gpus"].get<int>();
    std::printf("%-16s %-8s %10s %5s  %s\n", preset["name"].get<std::string>().c_str(),
                preset["family"].get<std::string>().c_str(), size.c_str(),
                gpus > 0 ? std::to_string(gpus).c_str() : "-",
                preset["spec"].get<std::string>().c_str());
  }
  std::printf("\nfamilies (spec = family:key=value,... or preset:key=value,...):\n");
  for (const nlohmann::json& line : models["families"]) {
    std::printf("  %s\n", line.get<std::string>().c_str());
  }
  return 0;
}

}  // namespace

Command AddModelsCommand(CLI::App& app) {
  auto args = std::make_shared<ModelsArgs>();
  CLI::App* models = app.add_subcommand(
      "models",
      "List the model-zoo presets and family keys (families mlp, gpt, bert, moe, wresnet, llama)");
  models->add_flag("--json", args->json, "Print alpa_model_zoo_to_json's object");
  return {models, [args] { return RunModels(*args); }};
}

}  // namespace alpa_cli
