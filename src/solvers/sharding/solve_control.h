// Deadline and cancellation shared by every phase of a solve.
//
// One deadline is fixed when the solve starts; a phase that may take only part of the time gets
// a child control (WithinSeconds) whose deadline is never later than its parent's. "No deadline"
// is an explicit state (time_point::max()), never the value 0: a limit of 0 seconds, or a phase
// left with 0 seconds, is a deadline that has already passed, so the phase stops at its first
// check and the solve returns the best answer found so far.
//
// Cancellation: up to two flags are polled by expired() itself (the caller's cancel token and
// the solver's own stop flag, set when a progress callback asks to stop), so that every loop
// that checks the deadline also notices a cancel, without waiting for a progress report.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "core/util/status.h"

namespace alpa {

class SolveControl {
 public:
  using Clock = std::chrono::steady_clock;

  // No deadline, no cancellation.
  SolveControl() : start_(Clock::now()), deadline_(Clock::time_point::max()) {}

  // No deadline; stops when `cancel` (may be null) is set.
  static SolveControl Unlimited(const std::atomic<bool>* cancel) {
    SolveControl control;
    control.cancel_ = cancel;
    return control;
  }

  // A deadline `time_limit_seconds` from now: +inf or NaN means none; 0 or less, a deadline
  // that has already passed. Stops early when `cancel` or `stop` (either may be null) is set.
  static SolveControl WithTimeLimit(double time_limit_seconds, const std::atomic<bool>* cancel,
                                    const std::atomic<bool>* stop = nullptr) {
    SolveControl control;
    control.deadline_ = DeadlineAfter(control.start_, time_limit_seconds);
    control.cancel_ = cancel;
    control.stop_ = stop;
    return control;
  }

  // A child control for one phase: starts now, ends at this control's deadline or
  // `max_seconds` from now (+inf: no cap of its own), whichever comes first; same flags.
  SolveControl WithinSeconds(double max_seconds) const {
    SolveControl child = *this;
    child.start_ = Clock::now();
    child.deadline_ = std::min(deadline_, DeadlineAfter(child.start_, max_seconds));
    return child;
  }

  bool cancelled() const { return IsSet(cancel_) || IsSet(stop_); }
  bool expired() const { return cancelled() || Clock::now() >= deadline_; }
  bool has_deadline() const { return deadline_ != Clock::time_point::max(); }
  double elapsed_seconds() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }
  // Seconds until the deadline (infinity without one, 0 once past).
  double remaining_seconds() const {
    if (!has_deadline()) return std::numeric_limits<double>::infinity();
    const double r = std::chrono::duration<double>(deadline_ - Clock::now()).count();
    return r > 0 ? r : 0;
  }
  Clock::time_point deadline() const { return deadline_; }

 private:
  static bool IsSet(const std::atomic<bool>* flag) {
    return flag != nullptr && flag->load(std::memory_order_relaxed);
  }

  // `seconds` after `from`; time_point::max() for +inf, NaN or anything past the clock's range
  // (about 292 years of nanoseconds), `from` itself for 0 or less.
  static Clock::time_point DeadlineAfter(Clock::time_point from, double seconds) {
    if (std::isnan(seconds) || seconds >= kLongestLimitSeconds) return Clock::time_point::max();
    if (!(seconds > 0)) return from;
    return from +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  // A limit this long (about 31 years) is no limit; it keeps the addition above in range.
  static constexpr double kLongestLimitSeconds = 1e9;

  Clock::time_point start_;
  Clock::time_point deadline_;
  const std::atomic<bool>* cancel_ = nullptr;
  const std::atomic<bool>* stop_ = nullptr;
};

// Reads a control every `stride` units of work of a loop whose steps are too short to read the
// clock at each (a cancel then waits at most about `stride` units): stop(units) counts a step's
// units and is true from the first read that finds the control expired on. Deterministic: the
// units are counted, only the stop reads the time.
class PeriodicCheck {
 public:
  PeriodicCheck(const SolveControl& control, int64_t stride)
      : control_(control), stride_(std::max<int64_t>(1, stride)) {}
  bool stop(int64_t units = 1) {
    if (stopped_) return true;
    const int64_t before = steps_;
    steps_ += std::max<int64_t>(1, units);
    if (before / stride_ != steps_ / stride_) stopped_ = control_.expired();
    return stopped_;
  }

 private:
  const SolveControl& control_;
  int64_t stride_;
  int64_t steps_ = 0;
  bool stopped_ = false;
};

// What a solve does before its phases (normalization, memory rows, reductions), for StopStatus.
inline constexpr const char* kPreparingTheProblem = "preparing the problem";

// Why work that needs to run to its end stopped early: kCancelled or kTimeout (naming `what`)
// once `control` has expired; Ok before.
inline Status StopStatus(const SolveControl& control, const std::string& what) {
  if (control.cancelled()) return Status(StatusCode::kCancelled, "cancelled");
  if (control.expired()) {
    return Status(StatusCode::kTimeout, "the time limit was reached while " + what);
  }
  return Status::Ok();
}

}  // namespace alpa
