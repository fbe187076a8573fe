// The model zoo through the C ABI: presets, family help and building a model's graph.
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "capi/handles.h"
#include "models/model_zoo.h"

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

const alpa::ModelPreset* FindPreset(int64_t index) {
  const std::vector<alpa::ModelPreset>& presets = alpa::ModelPresets();
  if (index < 0 || index >= static_cast<int64_t>(presets.size())) return nullptr;
  return &presets[static_cast<size_t>(index)];
}

}  // namespace

extern "C" {

ALPA_API int64_t alpa_model_count(void) {
  try {
    return static_cast<int64_t>(alpa::ModelPresets().size());
  } catch (...) {
    return 0;  // the preset table could not be built (out of memory)
  }
}

ALPA_API const char* alpa_model_name(int64_t index) {
  try {
    const alpa::ModelPreset* p = FindPreset(index);
    return p ? p->name.c_str() : "";
  } catch (...) {
    return "";
  }
}

ALPA_API const char* alpa_model_family(int64_t index) {
  try {
    const alpa::ModelPreset* p = FindPreset(index);
    return p ? p->family.c_str() : "";
  } catch (...) {
    return "";
  }
}

ALPA_API int64_t alpa_model_nominal_params(int64_t index) {
  try {
    const alpa::ModelPreset* p = FindPreset(index);
    return p ? p->nominal_params : -1;
  } catch (...) {
    return -1;
  }
}

ALPA_API int32_t alpa_model_benchmark_gpus(int64_t index) {
  try {
    const alpa::ModelPreset* p = FindPreset(index);
    return p ? p->benchmark_gpus : -1;
  } catch (...) {
    return -1;
  }
}

ALPA_API int32_t alpa_model_build_graph(alpa_graph** out, const char* spec, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || spec == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and spec must not be NULL");
    }
    alpa::Result<alpa::Graph> graph = alpa::BuildModel(std::string(spec));
    if (!graph.ok()) {
      // Name the spec (once): a caller building several models must see which one failed.
      const std::string& m = graph.status().message();
      return Fail(
          err, alpa::capi::ToCode(graph.status().code()),
          m.find(spec) != std::string::npos ? m : "model \"" + std::string(spec) + "\": " + m);
    }
    auto* handle = new alpa_graph();
    handle->graph = std::move(graph).value();
    handle->finalized = true;
    *out = handle;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_model_zoo_to_json(alpa_buffer** out, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    nlohmann::json presets = nlohmann::json::array();
    for (const alpa::ModelPreset& p : alpa::ModelPresets()) {
      presets.push_back({{"name", p.name},
                         {"family", p.family},
                         {"spec", p.spec},
                         {"nominal_params", p.nominal_params},
                         {"benchmark_gpus", p.benchmark_gpus},
                         {"description", p.description}});
    }
    nlohmann::json j = {{"presets", std::move(presets)}, {"families", alpa::ModelFamilyHelp()}};
    *out = new alpa_buffer{j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
    return ALPA_OK;
  });
}

}  // extern "C"
