// `alpa calibrate`: times GEMMs (cuBLASLt), HBM streaming, the runner's fused elementwise kernels,
// its convolutions (cuDNN) and its fused attention kernels (where ALPA_CUDA_FLASH_ATTENTION=1
// has the runner use them), elementwise arithmetic and kernel launches on the first GPU with
// CUDA events, for core/cluster/calibration_fit.h to turn into the cost model's efficiency
// factors.
//
// Every timing is the median over several repeats after a warm-up, the repeats enqueued back to
// back (no host synchronisation between them). Host-only header: compiles without CUDA; in a
// build without it (calibration_without_cuda.cc) MeasureGpu answers kUnsupported.
#pragma once

#include "core/cluster/calibration_fit.h"
#include "core/util/dtype.h"
#include "core/util/status.h"

namespace alpa {

struct GpuMeasureOptions {
  // Fewer shapes, smaller arrays and fewer repeats: under 10 s on an H100 (default under 40 s).
  bool quick = false;
  // The dtype whose GEMMs and elementwise kernels feed the fit (the others are reported only).
  DType fit_dtype = DType::kBF16;
};

// Measures GPU 0. kUnsupported when the build has no CUDA or the machine no usable GPU (the
// message says which); kInternal naming the measurement for a CUDA or cuBLASLt failure.
Result<CalibrationMeasurements> MeasureGpu(const GpuMeasureOptions& options);

}  // namespace alpa
