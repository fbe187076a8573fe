// Measurements -> efficiency factors (calibration_fit.h).
#include "core/cluster/calibration_fit.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

namespace alpa {
namespace {

bool PositiveFinite(double x) { return std::isfinite(x) && x > 0; }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

Status CheckMeasurement(const Measurement& x, const DeviceSpec& device) {
  const std::string where =
      std::string("measurement \"") + x.name + "\" (" + MeasurementKindName(x.kind) + ")";
  if (!PositiveFinite(x.work)) {
    return InvalidArgument(where + ": work must be positive and finite (got " +
                           std::to_string(x.work) + ")");
  }
  if (!PositiveFinite(x.seconds)) {
    return InvalidArgument(where + ": seconds must be positive and finite (got " +
                           std::to_string(x.seconds) + ")");
  }
  const bool against_flops =
      x.kind == MeasurementKind::kGemm || x.kind == MeasurementKind::kConvolution ||
      x.kind == MeasurementKind::kElementwiseCompute || x.kind == MeasurementKind::kAttention;
  if (against_flops && x.fit && !PositiveFinite(device.PeakFlops(x.dtype))) {
    return InvalidArgument(where + ": the device \"" + device.name + "\" has no peak for " +
                           DTypeName(x.dtype));
  }
  const bool memory = x.kind == MeasurementKind::kMemory || x.kind == MeasurementKind::kFusedMemory;
  if (memory && x.fit && !PositiveFinite(device.memory_bandwidth)) {
    return InvalidArgument(where + ": the device \"" + device.name + "\" has no memory bandwidth");
  }
  return Status::Ok();
}

// The fraction of the device's peak that measurement `x` reached.
double FractionOfPeak(const Measurement& x, const DeviceSpec& device) {
  if (x.kind == MeasurementKind::kMemory || x.kind == MeasurementKind::kFusedMemory) {
    return x.Rate() / device.memory_bandwidth;
  }
  return x.Rate() / device.PeakFlops(x.dtype);
}

// The median fraction of peak over the fit measurements of `kind`; nullopt when there are none.
std::optional<double> MedianFraction(const CalibrationMeasurements& m, MeasurementKind kind,
                                     const DeviceSpec& device) {
  std::vector<double> fractions;
  for (const Measurement& x : m.measurements) {
    if (x.kind == kind && x.fit && !x.tf32) fractions.push_back(FractionOfPeak(x, device));
  }
  if (fractions.empty()) return std::nullopt;
  return Median(std::move(fractions));
}

// Sets *efficiency from the median fraction of `kind`, capped at 1; notes what happened.
void FitEfficiency(const CalibrationMeasurements& m, MeasurementKind kind, const char* field,
                   const DeviceSpec& device, double* efficiency, std::vector<std::string>* notes) {
  const std::optional<double> fraction = MedianFraction(m, kind, device);
  if (!fraction.has_value()) {
    notes->push_back(std::string(field) + ": not measured, kept " + std::to_string(*efficiency));
    return;
  }
  if (*fraction > 1.0) {
    notes->push_back(std::string(field) + ": measured " + std::to_string(*fraction) +
                     " of the peak of \"" + device.name +
                     "\", capped at 1 (the preset's peaks do not describe this device)");
    *efficiency = 1.0;
    return;
  }
  *efficiency = *fraction;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

bool Contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

const char* MeasurementKindName(MeasurementKind kind) {
  switch (kind) {
    case MeasurementKind::kGemm:
      return "gemm";
    case MeasurementKind::kMemory:
      return "memory";
    case MeasurementKind::kFusedMemory:
      return "fused_memory";
    case MeasurementKind::kElementwiseCompute:
      return "elementwise";
    case MeasurementKind::kLaunch:
      return "launch";
    case MeasurementKind::kConvolution:
      return "convolution";
    case MeasurementKind::kAttention:
      return "attention";
  }
  return "?";
}

Result<CalibrationFit> FitCalibration(const CalibrationMeasurements& m, const DeviceSpec& device,
                                      const Calibration& base) {
  for (const Measurement& x : m.measurements) ALPA_RETURN_IF_ERROR(CheckMeasurement(x, device));
  CalibrationFit fit;
  fit.calibration = base;
  fit.notes = m.notes;
  Calibration& c = fit.calibration;
  FitEfficiency(m, MeasurementKind::kGemm, "matmul", device, &c.matmul_efficiency, &fit.notes);
  FitEfficiency(m, MeasurementKind::kConvolution, "convolution", device, &c.convolution_efficiency,
                &fit.notes);
  if (MedianFraction(m, MeasurementKind::kAttention, device).has_value()) {
    FitEfficiency(m, MeasurementKind::kAttention, "attention", device, &c.attention_efficiency,
                  &fit.notes);
    c.fuse_attention = true;
    fit.notes.push_back(
        "attention: the runner's fused attention kernels (ALPA_CUDA_FLASH_ATTENTION=1); "
        "fuse_attention: as the runner fuses");
  }
  if (MedianFraction(m, MeasurementKind::kFusedMemory, device).has_value()) {
    // The runner's own kernels were measured: the calibration describes how it runs.
    FitEfficiency(m, MeasurementKind::kFusedMemory, "memory", device, &c.memory_efficiency,
                  &fit.notes);
    c.fuse_elementwise = true;
    c.single_reader_fusion = true;
    fit.notes.push_back(
        "memory: the runner's fused kernels; the hand-written streaming kernels are reported "
        "only. fuse_elementwise and single_reader_fusion: as the runner fuses");
  } else {
    FitEfficiency(m, MeasurementKind::kMemory, "memory", device, &c.memory_efficiency, &fit.notes);
  }
  FitEfficiency(m, MeasurementKind::kElementwiseCompute, "elementwise", device,
                &c.elementwise_efficiency, &fit.notes);
  // Reductions, softmax, gathers and copies run on the same vector units as elementwise
  // kernels; the memory term prices them where they are memory-bound.
  c.other_efficiency = c.elementwise_efficiency;
  std::vector<double> launch_seconds;
  for (const Measurement& x : m.measurements) {
    if (x.kind == MeasurementKind::kLaunch && x.fit) launch_seconds.push_back(x.seconds / x.work);
  }
  if (launch_seconds.empty()) {
    fit.notes.push_back("op_overhead_seconds: not measured, kept " +
                        std::to_string(c.op_overhead_seconds));
  } else {
    c.op_overhead_seconds = Median(std::move(launch_seconds));
  }
  ALPA_RETURN_IF_ERROR(ValidateCalibration(c));
  return fit;
}

Result<std::string> PresetForDeviceName(std::string_view device_name) {
  const std::string name = Lower(device_name);
  // Only the SXM parts the presets describe: the PCIe and NVL variants run at lower clocks and
  // bandwidths, and an H200 has other memory, so the efficiencies would be against wrong peaks.
  const bool pcie = Contains(name, "pcie") || Contains(name, "nvl");
  if (!pcie && Contains(name, "h100") && (Contains(name, "hbm3") || Contains(name, "sxm"))) {
    return std::string("dgx-h100");
  }
  if (!pcie && Contains(name, "a100") && Contains(name, "sxm")) {
    if (Contains(name, "80gb")) return std::string("dgx-a100-80g");
    if (Contains(name, "40gb")) return std::string("dgx-a100-40g");
  }
  if (!pcie && Contains(name, "v100") && Contains(name, "sxm2")) return std::string("p3.16xlarge");
  return InvalidArgument("no cluster preset describes the GPU \"" + std::string(device_name) +
                         "\" (known: H100 SXM 80 GB -> dgx-h100, A100 SXM4 80/40 GB -> "
                         "dgx-a100-80g / dgx-a100-40g, V100 SXM2 -> p3.16xlarge); name the "
                         "preset whose peaks to measure against");
}

std::string WriteCalibrationFile(const CalibrationFit& fit, const std::string& comment) {
  nlohmann::json j = CalibrationToJson(fit.calibration);
  j["comment"] = comment;
  return j.dump(2) + "\n";
}

}  // namespace alpa
