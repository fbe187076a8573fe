// The argument checks every communicator runs before it talks to another rank, so a bad call
// fails on the caller with a message naming the call and the offending value, the same way on
// every transport.
#pragma once

#include <cstdint>
#include <string>

#include "exec/comm/communicator.h"

namespace alpa {

// "{2, 0, 1}".
std::string DescribeGroup(const DeviceGroup& group);

// The group is non-empty, its ranks are distinct and in [0, world_size), and it contains
// `caller`. On success *position is the caller's index in the group.
Status CheckGroup(const char* call, const DeviceGroup& group, int32_t caller, int32_t world_size,
                  int32_t* position);

// count >= 0, count * chunks values fit in int64 bytes, and the buffers are non-null when
// values move. `out` may be null for AllReduce (which works in place).
Status CheckBuffers(const char* call, int64_t count, int64_t chunks, const void* in,
                    const void* out);

// `peer` is a rank of the world and the tag is non-negative.
Status CheckPeer(const char* call, const char* peer_role, int32_t peer, int32_t world_size,
                 int64_t tag);

// The count of a received message differs from the one the receiver asked for.
Status RecvCountMismatch(int32_t receiver, int32_t sender, int64_t tag, int64_t expected,
                         int64_t received);

// The status every call returns after an abort: kCancelled, "rank R failed: <message>".
Status AbortedStatus(int32_t failed_rank, const Status& cause);

}  // namespace alpa
