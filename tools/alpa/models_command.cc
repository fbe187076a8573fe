// `alpa models`: the model-zoo presets and the keys of each family.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "alpa_experimental.h"
#include "commands.h"

namespace alpa_cli {

int RunModels(bool json) {
  alpa_buffer* buffer = nullptr;
  alpa_error* err = nullptr;
  if (alpa_model_zoo_to_json(&buffer, &err) != ALPA_OK) {
    std::fprintf(stderr, "alpa: error: %s\n", alpa_error_message(err));
    alpa_error_free(err);
    return 1;
  }
  if (json) {
    std::printf("%s\n", alpa_buffer_data(buffer));
    alpa_buffer_free(buffer);
    return 0;
  }
  const nlohmann::json models = nlohmann::json::parse(alpa_buffer_data(buffer));
  alpa_buffer_free(buffer);
  std::printf("%-16s %-8s %10s %5s  %s\n", "preset", "family", "size", "GPUs", "spec");
  for (const nlohmann::json& p : models["presets"]) {
    const double params = p["nominal_params"].get<double>();
    char size[32];
    if (params >= 1e9) {
      std::snprintf(size, sizeof(size), "%.3gB", params / 1e9);
    } else {
      std::snprintf(size, sizeof(size), "%.3gM", params / 1e6);
    }
    const int gpus = p["benchmark_gpus"].get<int>();
    std::printf("%-16s %-8s %10s %5s  %s\n", p["name"].get<std::string>().c_str(),
                p["family"].get<std::string>().c_str(), size,
                gpus > 0 ? std::to_string(gpus).c_str() : "-",
                p["spec"].get<std::string>().c_str());
  }
  std::printf("\nfamilies (spec = family:key=value,... or preset:key=value,...):\n");
  for (const nlohmann::json& line : models["families"]) {
    std::printf("  %s\n", line.get<std::string>().c_str());
  }
  return 0;
}

}  // namespace alpa_cli
