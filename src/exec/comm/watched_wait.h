// How a communicator over an asynchronous transport (NCCL) waits without ever hanging: it polls
// the operation, the rendezvous's failure channel and a deadline, and stops at the first of
//   - the operation is done (OK),
//   - the operation failed (its error, as `poll` returned it),
//   - another rank failed (kCancelled "rank R failed: ...", from the rendezvous),
//   - the deadline passed (kTimeout naming `what` and the timeout).
// The caller then aborts its transport and, for its own errors, reports them to the others.
// Written apart from CUDA so that the CPU tests run the very loop the NCCL communicator runs.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "core/util/status.h"
#include "exec/comm/rendezvous.h"

namespace alpa {

// `poll` answers true when the operation is done, false while it runs, or its error.
Status WaitWatched(const std::string& what, const std::function<Result<bool>()>& poll,
                   const Rendezvous& rendezvous, std::chrono::milliseconds timeout);

}  // namespace alpa
