// SolveControl: one deadline for a whole solve; children never outlive it; 0 is a deadline that
// has passed, never "no deadline"; expired() sees the cancel flags without a progress report.
#include "solvers/sharding/solve_control.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>

namespace alpa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(SolveControl, ZeroSecondsIsADeadlineThatHasPassedNotNoDeadline) {
  const SolveControl control = SolveControl::WithTimeLimit(0, nullptr);
  EXPECT_TRUE(control.has_deadline());
  EXPECT_TRUE(control.expired());
  EXPECT_EQ(control.remaining_seconds(), 0);
  EXPECT_TRUE(SolveControl::WithTimeLimit(-5, nullptr).expired());
}

TEST(SolveControl, InfinityAndNanMeanNoDeadline) {
  for (double limit : {kInf, std::nan("")}) {
    const SolveControl control = SolveControl::WithTimeLimit(limit, nullptr);
    EXPECT_FALSE(control.has_deadline());
    EXPECT_FALSE(control.expired());
    EXPECT_TRUE(std::isinf(control.remaining_seconds()));
  }
}

TEST(SolveControl, APhaseLeftWithZeroSecondsStopsAtOnce) {
  const SolveControl solve = SolveControl::WithTimeLimit(60, nullptr);
  const SolveControl phase = solve.WithinSeconds(0);
  EXPECT_TRUE(phase.has_deadline());
  EXPECT_TRUE(phase.expired());
  EXPECT_FALSE(solve.expired());
}

TEST(SolveControl, AChildNeverEndsAfterItsParent) {
  const SolveControl solve = SolveControl::WithTimeLimit(1, nullptr);
  EXPECT_EQ(solve.WithinSeconds(kInf).deadline(), solve.deadline());
  EXPECT_EQ(solve.WithinSeconds(100).deadline(), solve.deadline());
  EXPECT_LT(solve.WithinSeconds(0.5).deadline(), solve.deadline());
  const SolveControl passed = SolveControl::WithTimeLimit(0, nullptr);
  EXPECT_TRUE(passed.WithinSeconds(kInf).expired());
}

TEST(SolveControl, ExpiresOnTheCallersTokenOrTheStopFlagWithoutADeadline) {
  std::atomic<bool> cancel{false};
  std::atomic<bool> stop{false};
  const SolveControl control = SolveControl::WithTimeLimit(kInf, &cancel, &stop);
  const SolveControl phase = control.WithinSeconds(kInf);
  EXPECT_FALSE(phase.expired());
  stop.store(true);
  EXPECT_TRUE(phase.cancelled());
  EXPECT_TRUE(phase.expired());
  stop.store(false);
  cancel.store(true);
  EXPECT_TRUE(phase.expired());
  EXPECT_TRUE(SolveControl::Unlimited(&cancel).expired());
}

}  // namespace
}  // namespace alpa
