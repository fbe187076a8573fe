// `alpa calibrate` in a build without CUDA (ALPA_WITH_CUDA=OFF): there is no GPU to measure.
#include "exec/cuda/calibration.h"

namespace alpa {

Result<CalibrationMeasurements> MeasureGpu(const GpuMeasureOptions&) {
  return Status(StatusCode::kUnsupported,
                "calibrating needs a GPU and libalpa built with ALPA_WITH_CUDA=ON (this build is "
                "without CUDA)");
}

}  // namespace alpa
