// The library's one way to run independent tasks on threads, and the one default thread count.
#pragma once

#include <cstdint>
#include <functional>

#include "core/util/status.h"

namespace alpa {

// The thread count a caller asked for: `requested` when positive, else one per hardware thread
// (at least 1).
int32_t ResolveThreadCount(int32_t requested);

// Runs fn(task) for tasks 0..count-1 on `threads` threads (the caller's among them); stops
// handing out tasks once fn fails and returns the first failure.
Status RunParallel(int64_t count, int32_t threads, const std::function<Status(int64_t)>& fn);

}  // namespace alpa
