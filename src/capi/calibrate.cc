// alpa_calibrate (include/alpa_experimental.h): measure the GPU, fit the efficiency factors
// against a preset's peaks, and answer both as JSON.
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "capi/handles.h"
#include "core/cluster/calibration_fit.h"
#include "core/cluster/cluster.h"
#include "exec/cuda/calibration.h"

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

nlohmann::json MeasurementJson(const alpa::Measurement& m, const alpa::DeviceSpec& device) {
  nlohmann::json j = {{"kind", alpa::MeasurementKindName(m.kind)},
                      {"name", m.name},
                      {"dtype", alpa::DTypeName(m.dtype)},
                      {"tf32", m.tf32},
                      {"fit", m.fit},
                      {"work", m.work},
                      {"seconds", m.seconds},
                      {"rate", m.Rate()}};
  double peak = 0;
  if (m.kind == alpa::MeasurementKind::kMemory || m.kind == alpa::MeasurementKind::kFusedMemory) {
    peak = device.memory_bandwidth;
  } else if (m.kind != alpa::MeasurementKind::kLaunch && !m.tf32) {
    // A TF32 product has no peak in the presets (their f32 peak is the vector units'): it would
    // read as several times "the peak".
    peak = device.PeakFlops(m.dtype);
  }
  if (peak > 0) {
    j["peak"] = peak;
    j["fraction_of_peak"] = m.Rate() / peak;
  } else {
    j["peak"] = nullptr;
    j["fraction_of_peak"] = nullptr;
  }
  return j;
}

// The preset named by the caller, or the one that matches the GPU's name.
alpa::Result<alpa::Cluster> PresetFor(const char* preset, const std::string& device_name) {
  std::string name = preset == nullptr ? "" : preset;
  if (name.empty()) {
    alpa::Result<std::string> matched = alpa::PresetForDeviceName(device_name);
    if (!matched.ok()) return matched.status();
    name = matched.value();
  }
  return alpa::MakePresetCluster(name);
}

nlohmann::json Answer(const alpa::CalibrationMeasurements& measured, const alpa::Cluster& preset,
                      const alpa::CalibrationFit& fit, bool quick) {
  nlohmann::json measurements = nlohmann::json::array();
  for (const alpa::Measurement& m : measured.measurements) {
    measurements.push_back(MeasurementJson(m, preset.device));
  }
  std::vector<std::string> notes = fit.notes;
  if (measured.gpus >= 2) {
    notes.push_back(std::to_string(measured.gpus) +
                    " GPUs visible: NCCL bus bandwidth per collective needs the multi-process run "
                    "(one process per GPU) and is not measured here; the links keep the preset's "
                    "values");
  }
  const std::string comment = "alpa calibrate" + std::string(quick ? " --quick" : "") + " on " +
                              measured.device_name + " (" + measured.libraries +
                              "); efficiencies against the peaks of preset " + preset.name;
  return {{"device", measured.device_name},
          {"gpus", measured.gpus},
          {"libraries", measured.libraries},
          {"preset", preset.name},
          {"quick", quick},
          {"calibration", nlohmann::json::parse(alpa::WriteCalibrationFile(fit, comment))},
          {"measurements", std::move(measurements)},
          {"notes", std::move(notes)}};
}

}  // namespace

extern "C" {

ALPA_API int32_t alpa_calibrate(alpa_buffer** out_json, const char* preset, int32_t quick,
                                alpa_error** err) {
  return Guard(err, [&] {
    if (out_json == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out_json is NULL");
    // An unknown preset is bad input whether or not there is a GPU: say so before measuring.
    if (preset != nullptr && preset[0] != '\0') {
      alpa::Result<alpa::Cluster> named = alpa::MakePresetCluster(preset);
      if (!named.ok()) return Fail(err, named.status());
    }
    alpa::GpuMeasureOptions options;
    options.quick = quick != 0;
    alpa::Result<alpa::CalibrationMeasurements> measured = alpa::MeasureGpu(options);
    if (!measured.ok()) return Fail(err, measured.status());
    alpa::Result<alpa::Cluster> cluster = PresetFor(preset, measured.value().device_name);
    if (!cluster.ok()) return Fail(err, cluster.status());
    alpa::Result<alpa::CalibrationFit> fit =
        alpa::FitCalibration(measured.value(), cluster.value().device);
    if (!fit.ok()) return Fail(err, fit.status());
    const nlohmann::json answer =
        Answer(measured.value(), cluster.value(), fit.value(), options.quick);
    alpa_buffer* buffer = alpa::capi::MakeBuffer(answer.dump(2));
    if (buffer == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    *out_json = buffer;
    return ALPA_OK;
  });
}

}  // extern "C"
