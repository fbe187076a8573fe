// Measurements -> calibration against a preset's peaks, and GPU names -> presets.
#include "core/cluster/calibration_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/cluster/cost_model.h"

namespace alpa {
namespace {

Measurement Make(MeasurementKind kind, const char* name, DType dtype, double work, double seconds,
                 bool fit = true) {
  Measurement m;
  m.kind = kind;
  m.name = name;
  m.dtype = dtype;
  m.work = work;
  m.seconds = seconds;
  m.fit = fit;
  return m;
}

DeviceSpec H100() { return MakePresetCluster("dgx-h100").value().device; }

TEST(CalibrationFit, GemmRateOverPeak) {
  CalibrationMeasurements m;
  // 600 TFLOP/s of bf16 on the H100's 989 dense: 0.607.
  m.measurements.push_back(
      Make(MeasurementKind::kGemm, "gemm bf16 8192^3", DType::kBF16, 600e12 * 2e-3, 2e-3));
  Result<CalibrationFit> fit = FitCalibration(m, H100());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit.value().calibration.matmul_efficiency, 600.0 / 989.0, 1e-12);
  EXPECT_NEAR(fit.value().calibration.matmul_efficiency, 0.607, 5e-4);
  // What was not measured keeps the base, and the notes say so.
  const Calibration defaults;
  EXPECT_EQ(fit.value().calibration.memory_efficiency, defaults.memory_efficiency);
  EXPECT_EQ(fit.value().calibration.convolution_efficiency, defaults.convolution_efficiency);
  EXPECT_EQ(fit.value().calibration.op_overhead_seconds, defaults.op_overhead_seconds);
  bool memory_noted = false, convolution_noted = false;
  for (const std::string& note : fit.value().notes) {
    memory_noted = memory_noted || note.rfind("memory: not measured", 0) == 0;
    convolution_noted = convolution_noted || note.rfind("convolution: not measured", 0) == 0;
  }
  EXPECT_TRUE(memory_noted);
  EXPECT_TRUE(convolution_noted);
}

// The convolutions `alpa calibrate` runs as the runner does (cuDNN) set the convolution
// efficiency, and the planner prices a convolution's FLOPs at that rate.
TEST(CalibrationFit, ConvolutionsSetTheConvolutionRate) {
  CalibrationMeasurements m;
  const DeviceSpec d = H100();
  for (double tflops : {300.0, 450.0, 420.0, 150.0}) {
    m.measurements.push_back(
        Make(MeasurementKind::kConvolution, "conv", DType::kBF16, tflops * 1e12 * 1e-3, 1e-3));
  }
  // A convolution that ran the direct kernel is reported only.
  m.measurements.push_back(
      Make(MeasurementKind::kConvolution, "direct", DType::kBF16, 1e12, 1.0, /*fit=*/false));
  Result<CalibrationFit> fit = FitCalibration(m, d);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const Calibration& c = fit.value().calibration;
  EXPECT_NEAR(c.convolution_efficiency, 360.0 / 989.0, 1e-12);  // median of 4: (300 + 420) / 2
  EXPECT_EQ(c.matmul_efficiency, Calibration{}.matmul_efficiency);
  EXPECT_STREQ(MeasurementKindName(MeasurementKind::kConvolution), "convolution");
  const double flops = 1e12;
  EXPECT_NEAR(OpComputeSeconds(flops, 0, DType::kBF16, ComputeClass::kConvolution, d, c),
              flops / 360e12 + c.op_overhead_seconds, 1e-12);
  // Against a device with no peak for the dtype: an error naming the measurement.
  DeviceSpec no_bf16 = d;
  no_bf16.peak_flops[static_cast<size_t>(DType::kBF16)] = 0;
  Result<CalibrationFit> bad = FitCalibration(m, no_bf16);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"conv\" (convolution): the device"), std::string::npos)
      << bad.status().message();
}

// Where the runner's own fused kernels were measured, they set the memory efficiency (the
// hand-written streaming kernels, faster, are reported only) and the calibration prices chains
// as the runner fuses them.
TEST(CalibrationFit, TheRunnersFusedKernelsSetTheMemoryRateAndItsFusion) {
  CalibrationMeasurements m;
  const DeviceSpec d = H100();
  m.measurements.push_back(Make(MeasurementKind::kMemory, "hbm stream kernel", DType::kBF16,
                                0.82 * d.memory_bandwidth, 1.0));
  for (double fraction : {0.45, 0.55, 0.6}) {
    m.measurements.push_back(Make(MeasurementKind::kFusedMemory, "fused", DType::kBF16,
                                  fraction * d.memory_bandwidth, 1.0));
  }
  Result<CalibrationFit> fused = FitCalibration(m, d);
  ASSERT_TRUE(fused.ok()) << fused.status().message();
  EXPECT_NEAR(fused.value().calibration.memory_efficiency, 0.55, 1e-12);
  EXPECT_TRUE(fused.value().calibration.fuse_elementwise);
  EXPECT_TRUE(fused.value().calibration.single_reader_fusion);
  EXPECT_STREQ(MeasurementKindName(MeasurementKind::kFusedMemory), "fused_memory");

  // Without them (ALPA_CUDA_FUSION=0): the streaming kernels, and the base's fusion keys.
  m.measurements.resize(1);
  Result<CalibrationFit> plain = FitCalibration(m, d);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_NEAR(plain.value().calibration.memory_efficiency, 0.82, 1e-12);
  EXPECT_FALSE(plain.value().calibration.fuse_elementwise);
  EXPECT_FALSE(plain.value().calibration.single_reader_fusion);
}

TEST(CalibrationFit, TheAttentionKernelsSetTheAttentionRateAndTheirFusion) {
  CalibrationMeasurements m;
  const DeviceSpec d = H100();
  const double peak = d.PeakFlops(DType::kBF16);
  m.measurements.push_back(Make(MeasurementKind::kGemm, "gemm", DType::kBF16, 0.75 * peak, 1.0));
  // The kernels failed on the GPU (MeasureGpu goes on without them and says why).
  m.notes.push_back("attention: not measured (a kernel failed)");
  Result<CalibrationFit> without = FitCalibration(m, d);
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_EQ(without.value().calibration.attention_efficiency, 0.0);  // the products as matmuls
  EXPECT_FALSE(without.value().calibration.fuse_attention);
  ASSERT_FALSE(without.value().notes.empty());
  EXPECT_EQ(without.value().notes[0], "attention: not measured (a kernel failed)");
  m.notes.clear();
  // The forward and the backward alone are reported only; the two together fit.
  Measurement forward = Make(MeasurementKind::kAttention, "fwd", DType::kBF16, 0.30 * peak, 1.0);
  Measurement backward = Make(MeasurementKind::kAttention, "bwd", DType::kBF16, 0.42 * peak, 1.0);
  forward.fit = backward.fit = false;
  m.measurements.push_back(forward);
  m.measurements.push_back(backward);
  m.measurements.push_back(
      Make(MeasurementKind::kAttention, "both", DType::kBF16, 0.38 * peak, 1.0));
  Result<CalibrationFit> with = FitCalibration(m, d);
  ASSERT_TRUE(with.ok()) << with.status().message();
  EXPECT_NEAR(with.value().calibration.attention_efficiency, 0.38, 1e-12);
  EXPECT_NEAR(with.value().calibration.matmul_efficiency, 0.75, 1e-12);
  EXPECT_TRUE(with.value().calibration.fuse_attention);
  EXPECT_STREQ(MeasurementKindName(MeasurementKind::kAttention), "attention");
  // The file keeps it (written only when measured).
  const std::string file = WriteCalibrationFile(with.value(), "test");
  EXPECT_NE(file.find("\"attention\": 0.38"), std::string::npos) << file;
  EXPECT_EQ(WriteCalibrationFile(without.value(), "test").find("\"attention\":"),
            std::string::npos);
}

TEST(CalibrationFit, EveryKindMediansAndReportOnlyEntries) {
  CalibrationMeasurements m;
  const DeviceSpec d = H100();
  // Three fit GEMMs (500, 700, 650 TFLOP/s): the median is 650.
  for (double tflops : {500.0, 700.0, 650.0}) {
    m.measurements.push_back(
        Make(MeasurementKind::kGemm, "gemm", DType::kBF16, tflops * 1e12 * 1e-3, 1e-3));
  }
  // Report-only entries do not move the fit: a tiny GEMM, a TF32 GEMM far above the FP32 peak.
  m.measurements.push_back(
      Make(MeasurementKind::kGemm, "gemm small", DType::kBF16, 1e9, 1e-3, /*fit=*/false));
  Measurement tf32 = Make(MeasurementKind::kGemm, "gemm tf32", DType::kF32, 400e12, 1.0);
  tf32.tf32 = true;
  m.measurements.push_back(tf32);
  // Memory: 2.8 and 3.0 TB/s fit (median 2.9 of 3.35), cudaMemcpy reported only.
  m.measurements.push_back(Make(MeasurementKind::kMemory, "stream", DType::kBF16, 2.8e12, 1.0));
  m.measurements.push_back(Make(MeasurementKind::kMemory, "add", DType::kBF16, 3.0e12, 1.0));
  m.measurements.push_back(
      Make(MeasurementKind::kMemory, "memcpy", DType::kBF16, 1e12, 1.0, /*fit=*/false));
  // Elementwise arithmetic: 59.35 TFLOP/s of f32 FMAs on bf16 data, against the bf16 peak.
  m.measurements.push_back(
      Make(MeasurementKind::kElementwiseCompute, "fma", DType::kBF16, 59.34e12, 1.0));
  // 1000 launches in 2.5 ms: 2.5 us each.
  m.measurements.push_back(Make(MeasurementKind::kLaunch, "empty", DType::kF32, 1000, 2.5e-3));

  Result<CalibrationFit> fit = FitCalibration(m, d);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const Calibration& c = fit.value().calibration;
  EXPECT_NEAR(c.matmul_efficiency, 650.0 / 989.0, 1e-12);
  EXPECT_NEAR(c.memory_efficiency, 2.9e12 / 3350e9, 1e-12);
  EXPECT_NEAR(c.elementwise_efficiency, 59.34 / 989.0, 1e-12);
  EXPECT_EQ(c.other_efficiency, c.elementwise_efficiency);
  EXPECT_NEAR(c.op_overhead_seconds, 2.5e-6, 1e-18);

  // The calibration prices a 8192^3 bf16 GEMM at the median measured rate (+ the launch).
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  EXPECT_NEAR(OpComputeSeconds(flops, 0, DType::kBF16, ComputeClass::kMatmul, d, c),
              flops / 650e12 + 2.5e-6, 1e-12);

  // The file reads back to the same calibration, and carries the comment.
  const std::string text = WriteCalibrationFile(fit.value(), "NVIDIA H100 80GB HBM3 vs dgx-h100");
  EXPECT_NE(text.find("\"comment\": \"NVIDIA H100 80GB HBM3 vs dgx-h100\""), std::string::npos);
  Result<Calibration> back = ReadCalibrationBuffer(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value(), c);
}

TEST(CalibrationFit, AbovePeakIsCappedAndNoted) {
  CalibrationMeasurements m;
  // 4 TB/s on a 3.35 TB/s preset: the device is not the preset's (an H200, say).
  m.measurements.push_back(Make(MeasurementKind::kMemory, "stream", DType::kBF16, 4e12, 1.0));
  Result<CalibrationFit> fit = FitCalibration(m, H100());
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit.value().calibration.memory_efficiency, 1.0);
  bool capped = false;
  for (const std::string& note : fit.value().notes) {
    capped = capped || note.find("capped at 1") != std::string::npos;
  }
  EXPECT_TRUE(capped);
}

TEST(CalibrationFit, BadMeasurementsNameThemselves) {
  for (double seconds : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                         std::numeric_limits<double>::infinity()}) {
    CalibrationMeasurements m;
    m.measurements.push_back(
        Make(MeasurementKind::kGemm, "gemm bf16 4096^3", DType::kBF16, 1e12, seconds));
    Result<CalibrationFit> fit = FitCalibration(m, H100());
    ASSERT_FALSE(fit.ok()) << seconds;
    EXPECT_EQ(fit.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(fit.status().message().find("measurement \"gemm bf16 4096^3\" (gemm): seconds"),
              std::string::npos)
        << fit.status().message();
  }
  CalibrationMeasurements m;
  m.measurements.push_back(Make(MeasurementKind::kLaunch, "empty", DType::kF32, 0, 1e-3));
  EXPECT_NE(FitCalibration(m, H100()).status().message().find("\"empty\" (launch): work"),
            std::string::npos);

  // A device with no peak for the dtype cannot be fitted against.
  DeviceSpec no_bf16 = H100();
  no_bf16.peak_flops[static_cast<size_t>(DType::kBF16)] = 0;
  CalibrationMeasurements g;
  g.measurements.push_back(Make(MeasurementKind::kGemm, "gemm", DType::kBF16, 1e12, 1e-2));
  EXPECT_NE(FitCalibration(g, no_bf16).status().message().find("no peak for bf16"),
            std::string::npos);
}

TEST(CalibrationFit, PresetForDeviceName) {
  EXPECT_EQ(PresetForDeviceName("NVIDIA H100 80GB HBM3").value(), "dgx-h100");
  EXPECT_EQ(PresetForDeviceName("NVIDIA H100 SXM5 80GB").value(), "dgx-h100");
  EXPECT_EQ(PresetForDeviceName("NVIDIA A100-SXM4-80GB").value(), "dgx-a100-80g");
  EXPECT_EQ(PresetForDeviceName("NVIDIA A100-SXM4-40GB").value(), "dgx-a100-40g");
  EXPECT_EQ(PresetForDeviceName("Tesla V100-SXM2-16GB").value(), "p3.16xlarge");
  for (const char* other : {"NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200",
                            "NVIDIA A100 80GB PCIe", "NVIDIA GeForce RTX 4090", ""}) {
    Result<std::string> r = PresetForDeviceName(other);
    ASSERT_FALSE(r.ok()) << other;
    EXPECT_NE(r.status().message().find(std::string("\"") + other + "\""), std::string::npos);
    EXPECT_NE(r.status().message().find("dgx-h100"), std::string::npos);
  }
  // Every name it answers is a preset.
  EXPECT_TRUE(MakePresetCluster(PresetForDeviceName("NVIDIA H100 80GB HBM3").value()).ok());
}

}  // namespace
}  // namespace alpa
