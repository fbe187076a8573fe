// Communicators for ranks that are threads of one process: a ThreadWorld is shared by N ranks
// and hands each its Communicator. Collectives rendezvous per (group, call number) under one
// mutex and read each other's buffers directly (no copy of the inputs); reductions fold in group
// order, so every rank gets the same bits. A watchdog turns a wait longer than the world's
// timeout into an abort naming the waiting rank and its call, so a plan that deadlocks fails
// instead of hanging.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "exec/comm/communicator.h"

namespace alpa {

class ThreadWorldState;
class ThreadCommunicator;

class ThreadWorld {
 public:
  static constexpr std::chrono::milliseconds kDefaultWatchdogTimeout{600 * 1000};

  // `ranks` >= 1 (fewer is treated as 1); `watchdog_timeout` bounds every single wait.
  explicit ThreadWorld(int32_t ranks,
                       std::chrono::milliseconds watchdog_timeout = kDefaultWatchdogTimeout);
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  int32_t size() const;
  // The communicator of `rank`, in [0, size()); used by one thread at a time.
  Communicator& communicator(int32_t rank);

  // The status the first Abort was given (the failing rank's own error), or OK when no rank
  // aborted.
  Status first_failure() const;
  // Declares that `rank` makes no more calls: a rank waiting for it (a collective it has not
  // joined, a message it has not sent) fails at once instead of waiting for the watchdog.
  // RunOnThreads marks each rank when its body returns.
  void MarkFinished(int32_t rank);
  // Undoes MarkFinished for every rank (before running a new body on the same world).
  void ClearFinished();

 private:
  std::unique_ptr<ThreadWorldState> state_;
  std::vector<std::unique_ptr<ThreadCommunicator>> communicators_;
};

// Runs body(communicator of rank r) on one thread per rank of `world` and joins them. When a body
// returns an error (or throws), every other rank is aborted with its message; the result is the
// first failing rank's own status (not the "rank R failed" statuses the others then return), or
// OK.
Status RunOnThreads(ThreadWorld& world, const std::function<Status(Communicator&)>& body);
// The same on a fresh world of `ranks` threads with the default watchdog.
Status RunOnThreads(int32_t ranks, const std::function<Status(Communicator&)>& body);

}  // namespace alpa
