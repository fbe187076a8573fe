// The runner's own fused kernels that `alpa calibrate` times (calibration.h): small device
// programs of the chains a transformer's step is made of, fused by PlanFusion as the runner fuses
// a plan's programs, so that the calibration prices elementwise memory traffic at the rate the
// runner's generated kernels reach (not a hand-written streaming kernel's).
// Host code: the cases are made and checked without a GPU; calibration.cu times them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/program/program.h"

namespace alpa {
namespace cuda {

struct FusedCalibrationCase {
  std::string name;  // e.g. "fused exp(x * c - broadcast(m)) bf16 [131072 x 2048]"
  DeviceProgram program;
  FusedGroup group;   // the one group PlanFusion makes of the program
  int64_t bytes = 0;  // what the kernel reads (each input once) and writes
};

// The cases over bf16 rows of `row` elements, `rows` of them (rows * row elements per tensor):
//  - a softmax pass: exp(x * c - broadcast(m)), m one value per row (three ops, one kernel);
//  - the row sums a softmax or a layer norm takes: reduce_sum(exp(x - broadcast(m))) per row;
//  - a residual add: x + y (a group of one).
// InvalidArgument for sizes that are not positive, rows under kMinFusedRowReductions, rows
// longer than kMaxFusedRowLength or not a multiple of 8, or more than 2^31 elements; kInternal
// when PlanFusion does not make the one group (with the one result) a case expects (the
// runner's rules changed).
Result<std::vector<FusedCalibrationCase>> FusedCalibrationCases(int64_t rows, int64_t row);

}  // namespace cuda
}  // namespace alpa
