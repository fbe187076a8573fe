#include "exec/comm/watched_wait.h"

#include <thread>

namespace alpa {

Status WaitWatched(const std::string& what, const std::function<Result<bool>()>& poll,
                   const Rendezvous& rendezvous, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  // Short operations finish within the first spins; longer ones are polled every 100 us so a
  // waiting rank leaves its core to others.
  constexpr int kSpins = 2000;
  for (int round = 0;; ++round) {
    Result<bool> done = poll();
    if (!done.ok()) return done.status();
    if (done.value()) return Status::Ok();
    ALPA_RETURN_IF_ERROR(rendezvous.PeerFailure());
    if (Clock::now() >= deadline) {
      return Status(StatusCode::kTimeout, what + ": not done after " + DescribeDuration(timeout) +
                                              " (a rank that never joined, or a stuck "
                                              "transport)");
    }
    if (round < kSpins) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

}  // namespace alpa
