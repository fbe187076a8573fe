// The runner's kernels `alpa calibrate` times (exec/cuda/fused_calibration.h), without a GPU: each
// case is one kernel of the runner's fusion plan, reading what the case says it reads, and its
// source compiles for Hopper; sizes the runner would not fuse so are refused by name.
#include "exec/cuda/fused_calibration.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/cuda/fused_source.h"
#include "exec/cuda/runtime_compiler.h"

namespace alpa::cuda {
namespace {

TEST(FusedCalibration, EachCaseIsOneKernelOfTheRunnersPlan) {
  const int64_t rows = 4096, row = 2048, n = rows * row;
  Result<std::vector<FusedCalibrationCase>> cases = FusedCalibrationCases(rows, row);
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  ASSERT_EQ(cases.value().size(), 3u);
  const FusedCalibrationCase& softmax = cases.value()[0];
  const FusedCalibrationCase& sums = cases.value()[1];
  const FusedCalibrationCase& add = cases.value()[2];
  // exp(x * c - broadcast(m)): the splat, the product, the broadcast and the difference inside
  // the exp's kernel, which reads x and m once and writes its result.
  EXPECT_EQ(softmax.group.members.size(), 4u) << softmax.name;
  EXPECT_EQ(softmax.group.inputs.size(), 2u);
  EXPECT_EQ(softmax.group.row, 0);
  EXPECT_EQ(softmax.bytes, 2 * n * 2 + rows * 2);
  // The row sums: a warp per row of 2,048.
  EXPECT_EQ(sums.group.row, row) << sums.name;
  EXPECT_EQ(sums.group.elements, rows);
  EXPECT_EQ(sums.group.members.size(), 3u);
  EXPECT_EQ(sums.bytes, n * 2 + rows * 2 + rows * 2);
  // x + y alone: a group of one.
  EXPECT_TRUE(add.group.members.empty()) << add.name;
  EXPECT_EQ(add.bytes, 3 * n * 2);
  std::vector<FusedGroup> groups;
  for (const FusedCalibrationCase& c : cases.value()) {
    EXPECT_NE(c.name.find("[4096 x 2048]"), std::string::npos) << c.name;
    groups.push_back(c.group);
  }
  const FusedSource source = FusedKernelsSource(groups);
  ASSERT_EQ(source.units.size(), 3u);
  for (const std::string& unit : source.units) {
    Result<std::string> cubin = CompileToCubin(unit, 9, 0, "the calibration's kernels");
    ASSERT_TRUE(cubin.ok()) << cubin.status().message() << "\n" << unit;
  }
}

TEST(FusedCalibration, SizesTheRunnerWouldNotFuseSoAreRefused) {
  for (const auto& [rows, row] :
       std::vector<std::pair<int64_t, int64_t>>{{1024, 2048},
                                                {4096, 0},
                                                {4096, 2047},
                                                {4096, int64_t{1} << 17},
                                                {int64_t{1} << 22, 1024}}) {
    Result<std::vector<FusedCalibrationCase>> cases = FusedCalibrationCases(rows, row);
    ASSERT_FALSE(cases.ok()) << rows << " x " << row;
    EXPECT_EQ(cases.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(cases.status().message().find(std::to_string(rows) + " rows of " +
                                            std::to_string(row) + " elements"),
              std::string::npos)
        << cases.status().message();
  }
}

}  // namespace
}  // namespace alpa::cuda
