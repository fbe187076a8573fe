// Deadline and cancellation shared by every phase of a solve.
#pragma once

#include <atomic>
#include <chrono>
#include <limits>

namespace alpa {

class SolveControl {
 public:
  using Clock = std::chrono::steady_clock;

  SolveControl() : start_(Clock::now()), deadline_(Clock::time_point::max()) {}
  // time_limit_seconds <= 0 or infinite: no deadline.
  SolveControl(double time_limit_seconds, const std::atomic<bool>* cancel)
      : start_(Clock::now()), deadline_(Clock::time_point::max()), cancel_(cancel) {
    if (time_limit_seconds > 0 && time_limit_seconds < 1e9) {
      deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(time_limit_seconds));
    }
  }

  bool cancelled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }
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
  Clock::time_point start_;
  Clock::time_point deadline_;
  const std::atomic<bool>* cancel_ = nullptr;
};

}  // namespace alpa
