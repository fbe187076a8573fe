// alpa calibrate's measurements: without a GPU (or CUDA) a clean kUnsupported; on a GPU every
// measurement is positive, within physical bounds of the matched preset, and fits.
#include "exec/cuda/calibration.h"

#include <gtest/gtest.h>

#include <string>

#include "core/cluster/calibration_fit.h"
#include "core/cluster/cluster.h"
#include "exec/cuda/cuda_backend.h"

namespace alpa {
namespace {

TEST(GpuCalibration, WithoutGpuIsUnsupportedWithTheReason) {
  std::string why;
  if (CudaDeviceCount(&why) > 0) GTEST_SKIP() << "a GPU is present: measured in the next test";
  Result<CalibrationMeasurements> m = MeasureGpu(GpuMeasureOptions{});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(m.status().message().find("GPU"), std::string::npos) << m.status().message();
}

TEST(GpuCalibration, QuickMeasurementsFitThePreset) {
  std::string why;
  if (CudaDeviceCount(&why) == 0) GTEST_SKIP() << "no GPU: " << why;
  GpuMeasureOptions options;
  options.quick = true;
  Result<CalibrationMeasurements> m = MeasureGpu(options);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const CalibrationMeasurements& measured = m.value();
  EXPECT_FALSE(measured.device_name.empty());
  EXPECT_GE(measured.gpus, 1);
  int gemms = 0, memory = 0, fused = 0, elementwise = 0, launches = 0, convolutions = 0;
  for (const Measurement& x : measured.measurements) {
    EXPECT_GT(x.seconds, 0) << x.name;
    EXPECT_GT(x.work, 0) << x.name;
    gemms += x.kind == MeasurementKind::kGemm && x.fit;
    memory += x.kind == MeasurementKind::kMemory && x.fit;
    fused += x.kind == MeasurementKind::kFusedMemory && x.fit;
    elementwise += x.kind == MeasurementKind::kElementwiseCompute;
    launches += x.kind == MeasurementKind::kLaunch;
    convolutions += x.kind == MeasurementKind::kConvolution && x.fit;
    // Nothing beats physics: no kernel launch under 100 ns, no copy above 20 TB/s.
    if (x.kind == MeasurementKind::kLaunch) {
      EXPECT_GT(x.seconds / x.work, 1e-7) << x.name;
    }
    if (x.kind == MeasurementKind::kMemory || x.kind == MeasurementKind::kFusedMemory) {
      EXPECT_LT(x.Rate(), 20e12) << x.name;
    }
  }
  EXPECT_GE(gemms, 4);
  // The runner's own kernels set the memory rate (ALPA_CUDA_FUSION is not 0 in the tests); the
  // hand-written streaming kernels are reported only.
  EXPECT_EQ(memory, 0);
  EXPECT_EQ(fused, 3);
  EXPECT_EQ(elementwise, 1);
  EXPECT_EQ(launches, 1);
  // The four convolutions of convolution_calibration.h, every one on cuDNN.
  EXPECT_EQ(convolutions, 4);

  Result<std::string> preset = PresetForDeviceName(measured.device_name);
  if (!preset.ok()) GTEST_SKIP() << preset.status().message();
  const Cluster cluster = MakePresetCluster(preset.value()).value();
  Result<CalibrationFit> fit = FitCalibration(measured, cluster.device);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  // cuBLASLt reaches well over a third of the tensor-core peak on these shapes on any GPU the
  // presets describe, and the runner's fused kernels (whose rate the memory efficiency is)
  // over a quarter of the HBM bandwidth (about half on an H100 in 2026-11).
  EXPECT_GT(fit.value().calibration.matmul_efficiency, 0.35);
  EXPECT_GT(fit.value().calibration.memory_efficiency, 0.25);
  EXPECT_TRUE(fit.value().calibration.fuse_elementwise);
  EXPECT_TRUE(fit.value().calibration.single_reader_fusion);
  EXPECT_GT(fit.value().calibration.op_overhead_seconds, 0);
  // cuDNN's bf16 convolutions: more than a tenth of the tensor-core peak, and no more than it.
  EXPECT_GT(fit.value().calibration.convolution_efficiency, 0.1);
  EXPECT_LE(fit.value().calibration.convolution_efficiency, 1.0);
}

}  // namespace
}  // namespace alpa
