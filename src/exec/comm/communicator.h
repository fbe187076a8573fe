// The communicator: how the devices of one run exchange values. One interface for every
// transport (threads of one process, MPI processes on one or many hosts), so the executor's
// runtime is written once and tested on threads.
//
// Semantics every implementation keeps:
//   - Collectives run over a DeviceGroup, an ordered list of distinct ranks: the order defines
//     chunk positions (chunk i belongs to group[i]) and the order in which reductions add.
//     Only the members call; the k-th call of a member over a group matches the k-th call of
//     every other member over the same group, and different groups progress independently.
//   - Reductions are deterministic: element e of a sum is ((in_0[e] + in_1[e]) + in_2[e]) + ...
//     in group order, whoever computes it, so every member gets bit-identical results, run after
//     run. Max propagates NaN.
//   - Send is buffered (returns without waiting for the receiver); messages from one rank to
//     another with one tag arrive in the order sent. Tags are non-negative.
//   - Abort ends the run on every rank with "rank R failed: <message>": calls blocked on other
//     ranks and later calls return kCancelled with that message (the MPI communicator ends every
//     process instead). Calls on one communicator are made by one thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "core/util/status.h"

namespace alpa {

enum class ReduceOp : int32_t { kSum = 0, kMax = 1 };

// The ranks taking part in a collective, in the order that defines chunk positions.
using DeviceGroup = std::vector<int32_t>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
  // Collectives: every member of `group` calls with the same group (same order, distinct ranks,
  // containing the caller) and the same count; the k-th call of a member over a group matches the
  // k-th call of every other member over the same group (groups are independent of each other).
  virtual Status AllReduce(const DeviceGroup& group, ReduceOp op, double* data, int64_t count) = 0;
  // out holds count * group.size() values: chunk i is group[i]'s `in`.
  virtual Status AllGather(const DeviceGroup& group, const double* in, int64_t count,
                           double* out) = 0;
  // in holds count * n values; out (count values) gets chunk p of the reduction, p = caller's
  // position.
  virtual Status ReduceScatter(const DeviceGroup& group, ReduceOp op, const double* in,
                               int64_t count, double* out) = 0;
  // in holds n chunks of count: chunk j goes to group[j]; out chunk i came from group[i].
  virtual Status AllToAll(const DeviceGroup& group, const double* in, int64_t count,
                          double* out) = 0;
  // Point to point. Send never waits for the receiver (buffered); messages from one rank to
  // another with the same tag arrive in the order sent; Recv waits for a message of exactly that
  // (from, tag) and fails (kInvalidArgument, naming both ranks and the tag) when its count
  // differs.
  virtual Status Send(int32_t to, int64_t tag, const double* data, int64_t count) = 0;
  virtual Status Recv(int32_t from, int64_t tag, double* data, int64_t count) = 0;
  virtual Status Barrier() = 0;  // all ranks
  // Ends the run on every rank: calls blocked on other ranks, and later calls, return kCancelled
  // (the StatusCode closest to "aborted") with the message "rank R failed: <status's message>".
  // Idempotent; the first abort's message wins.
  virtual void Abort(const Status& status) = 0;
};

// "AllReduce", "AllGather", ...: the names messages use.
const char* ReduceOpName(ReduceOp op);

}  // namespace alpa
