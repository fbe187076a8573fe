// The communicator over NCCL: one process per GPU, the ranks met through a Rendezvous
// (exec/comm/rendezvous.h: ALPA_RENDEZVOUS=file:/path, tcp:host:port, or MPI under mpirun),
// which shares rank 0's ncclUniqueId and then carries failures between the ranks.
//
// It keeps the semantics of communicator.h, with these NCCL-specific points:
//   - Groups: NCCL needs a communicator per group, made by ncclCommSplit, which every rank of
//     the world must call, in the same order. So the groups are declared up front: Prepare(list)
//     on every rank with the same list (each group of it is split off in list order; groups
//     already prepared are skipped). A collective over an unprepared group runs anyway when the
//     group is the whole world in rank order (the world communicator) or a single rank (a local
//     copy); any other unprepared group is kInvalidArgument naming it.
//   - Values: the interface passes host doubles; they are staged in device f64 buffers
//     (ncclFloat64) with synchronous copies, and the collectives run on a communication stream.
//   - Reductions: by default (ordered_reductions) they keep the interface's order: the inputs
//     are gathered (ncclAllGather, or the all-to-all of ReduceScatter) and folded on the host in
//     group order, so every rank gets the same bits as the thread and MPI communicators, at the
//     price of moving n times the data. With ordered_reductions off, ncclAllReduce /
//     ncclReduceScatter run instead: NCCL picks the summation order (ring or tree, by size and
//     topology), so sums may differ in the last bits from the group-order fold (between runs on
//     other topologies too), and ncclMax follows NCCL's rules for NaN.
//   - Send/Recv: NCCL's point-to-point is not buffered (a send completes when the receiver
//     posts its receive, and a communicator's operations complete in the order issued). Send
//     copies the values to device memory and returns; queued sends are issued, in one
//     ncclGroupStart/End with the receive, by this rank's next Recv (so two ranks that send to
//     each other and then receive complete), or on their own before its next collective,
//     Barrier or destruction. Point-to-point traffic has its own communicator (split from the
//     world) and stream. A message is a header (count, tag; ncclInt64) and its values, so Recv
//     matches tags and checks counts as the interface asks; messages of other tags that arrive
//     first are kept for later Recvs. A send to oneself never touches NCCL.
//     A send issued before a collective completes while the collective runs only because NCCL
//     progresses the point-to-point and the collective communicators side by side, which it
//     does in practice but does not promise. What this cannot do: two ranks that each send to
//     the other, then run a collective, then receive. Each send is issued before the
//     collective, on its own, and each rank's receive queues behind its own send, which waits
//     for the other's receive: the receive ends at the wait deadline ("rank R failed: ... not
//     done after ..."), never in a hang.
//   - Waiting: every wait (initialisation, splits, collectives, receives) polls the stream,
//     ncclCommGetAsyncError and the rendezvous's failure channel, up to wait_timeout. On an
//     error or the deadline, the rank reports it through the rendezvous and calls
//     ncclCommAbort on all its communicators; on another rank's failure, it aborts them too. The
//     call, and every later one, returns kCancelled "rank R failed: <message>".
//   - Abort(status) tells every other rank through the rendezvous (tcp: at once; file: when
//     they next poll; MPI: MPI_Abort ends the job) and aborts this rank's NCCL communicators.
// One GPU per rank: NCCL does not allow two ranks of one communicator on one GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/util/status.h"
#include "exec/comm/communicator.h"
#include "exec/comm/rendezvous.h"

namespace alpa {

struct NcclCommunicatorOptions {
  // The GPU of this rank; -1: rank modulo the GPUs this process sees.
  int32_t gpu = -1;
  // Bounds every single wait (a collective, a receive, the initialisation).
  std::chrono::milliseconds wait_timeout{300 * 1000};
  // Reductions in group order, bit-identical on every rank (see above); false: NCCL's own.
  bool ordered_reductions = true;
};

class NcclCommunicator : public Communicator {
 public:
  // Splits off a communicator for each group of `groups` not prepared yet, in list order. Every
  // rank of the world calls it with the same list (a rank outside a group takes part in its
  // split too); a group must be non-empty, of distinct ranks of the world.
  virtual Status Prepare(const std::vector<DeviceGroup>& groups) = 0;
  // The GPU this rank uses.
  virtual int32_t gpu() const = 0;
};

// Shares rank 0's ncclUniqueId through `rendezvous` and initialises this rank's NCCL
// communicator on its GPU (waiting at most options.wait_timeout). The rendezvous stays the
// failure channel for the communicator's life. NCCL itself is opened here, on the first call
// (exec/cuda/nccl_loader.h): kUnsupported naming the library, symbol or version and what to
// install when it cannot be used.
Result<std::unique_ptr<NcclCommunicator>> CreateNcclCommunicator(
    std::unique_ptr<Rendezvous> rendezvous, const NcclCommunicatorOptions& options);

}  // namespace alpa
