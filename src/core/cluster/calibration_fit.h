// From measurements on a GPU to the roofline's efficiency factors (`alpa calibrate`).
//
// The cost model (cost_model.h) prices an op as max(flops / (peak_flops[dtype] * efficiency),
// bytes / (memory_bandwidth * memory_efficiency)) + op_overhead_seconds against the cluster's
// DeviceSpec. A calibration therefore has to be expressed against the same DeviceSpec: an
// efficiency is a measured rate divided by the preset's datasheet peak. This file holds that
// conversion as a pure function (the measuring itself is exec/cuda/calibration.h), so that it is
// tested without a GPU, and the mapping from the name a GPU reports to the preset whose peaks
// describe it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/util/dtype.h"
#include "core/util/status.h"

namespace alpa {

enum class MeasurementKind {
  kGemm,    // work = FLOPs (2 m n k batch)
  kMemory,  // work = bytes read + bytes written (hand-written streaming kernels)
  // work = bytes read + bytes written by the runner's own generated kernels (fused chains,
  // exec/cuda/fused_calibration.h): what its elementwise traffic runs at
  kFusedMemory,
  kElementwiseCompute,  // work = FLOPs of an arithmetic-bound elementwise kernel
  kLaunch,              // work = kernels launched; seconds = all of them
  // work = FLOPs (as the planner counts them) of a convolution run as the CUDA runner runs it
  // (cuDNN; exec/cuda/convolution_calibration.h)
  kConvolution,
  // work = FLOPs as the planner prices the products of an attention core the CUDA runner's fused
  // attention kernels run (AttentionProductWork: half of them under a causal mask)
  kAttention,
};

// One measured kernel (or batch of kernels): the median over the repeats.
struct Measurement {
  MeasurementKind kind = MeasurementKind::kGemm;
  std::string name;  // "gemm bf16 8192x8192x8192", "hbm stream kernel 1 GiB", ...
  // The dtype whose peak the rate is compared with (kGemm, kElementwiseCompute).
  DType dtype = DType::kF32;
  // f32 GEMMs on tensor cores in TF32: faster than the strict-FP32 peak the presets hold, so
  // never part of the fit (reported only).
  bool tf32 = false;
  // Whether the measurement feeds the efficiency of its kind (the others are reported only:
  // small GEMMs, cudaMemcpy, dtypes other than the fit's).
  bool fit = false;
  double work = 0;
  double seconds = 0;

  double Rate() const { return work / seconds; }
};

struct CalibrationMeasurements {
  std::string device_name;  // as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"
  int32_t gpus = 0;         // GPUs visible to the process
  std::string libraries;  // the versions measured with, e.g. "CUDA runtime 13000, cuBLASLt 130100"
  std::vector<Measurement> measurements;
  // What was not measured and why (a kernel that failed on this GPU), copied into the fit's notes.
  std::vector<std::string> notes;
};

struct CalibrationFit {
  Calibration calibration;
  // Why an efficiency kept the base value, or was capped at 1 (a rate above the preset's peak:
  // the preset does not describe this device, or a TF32 / sparsity rate crept in).
  std::vector<std::string> notes;
};

// The name of a kind in calibration reports: "gemm", "memory", "fused_memory", "elementwise",
// "launch", "convolution", "attention".
const char* MeasurementKindName(MeasurementKind kind);

// The efficiencies of `m` against `device`, on top of `base` for what is not measured (the
// fusion keys unless the runner's kernels were measured):
//   matmul_efficiency       median over the fit GEMMs of rate / peak_flops[dtype]
//   convolution_efficiency  median over the fit convolutions of rate / peak_flops[dtype]
//   memory_efficiency       median over the fit fused-memory measurements of rate /
//                           memory_bandwidth, where there are any: the calibration then describes
//                           libalpa's CUDA runner, so fuse_elementwise and single_reader_fusion
//                           are set too (the runner fuses chains as
//                           SingleReaderMaterializedResults models) and the hand-written
//                           streaming kernels are reported only; else over the fit memory
//                           measurements
//   elementwise_efficiency  median over the fit elementwise-compute measurements of
//   other_efficiency        rate / peak_flops[dtype] (both: vector units, not tensor cores)
//   op_overhead_seconds     median over the launch measurements of seconds / launches
//   attention_efficiency    median over the fit attention measurements of rate /
//                           peak_flops[dtype], where there are any: the calibration then
//                           describes the runner's attention kernels, so fuse_attention is set
//                           too; else the base value (0: the cores' products priced as matmuls)
// A kind without fit measurements keeps the base value (and says so in the notes); a
// measurement with non-positive or non-finite work or seconds, or a dtype whose peak is 0, is an
// InvalidArgument naming it.
Result<CalibrationFit> FitCalibration(const CalibrationMeasurements& m, const DeviceSpec& device,
                                      const Calibration& base = {});

// The preset whose DeviceSpec describes the GPU named `device_name` (as cudaGetDeviceProperties
// reports it): "NVIDIA H100 80GB HBM3" -> "dgx-h100". InvalidArgument, listing the devices
// known, for any other GPU (an H100 PCIe or an H200 has other peaks than the H100 SXM preset).
Result<std::string> PresetForDeviceName(std::string_view device_name);

// A calibration file (docs/cluster-format.md) for `fit`, with a comment naming the device and
// the preset whose peaks the efficiencies are relative to.
std::string WriteCalibrationFile(const CalibrationFit& fit, const std::string& comment);

}  // namespace alpa
