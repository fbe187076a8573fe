// The frames the tcp rendezvous and its watchdog exchange over a stream socket: a fixed header
// (type, rank, payload length, in network byte order) and the payload. Reads and writes are
// whole frames; writes never raise SIGPIPE (a peer that died is an error status, not a signal).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/util/status.h"

namespace alpa {

enum class FrameType : uint32_t {
  kHello = 1,    // a rank introduces itself to rank 0; payload: the world size it expects
  kBlob = 2,     // rank 0's blob
  kFailure = 3,  // rank `rank` failed; payload: its message
  kGoodbye = 4,  // the sender closes its end normally (its process ends without failing)
};

struct Frame {
  FrameType type = FrameType::kHello;
  int32_t rank = 0;
  std::string payload;
};

// Payloads above this are refused on reading: a peer that is not ours speaking on the port.
constexpr uint32_t kMaxFramePayload = 1 << 20;

Status WriteFrame(int socket, const Frame& frame);
// Waits for one whole frame until `deadline`: kTimeout when it does not come, kIo when the
// connection closes ("connection closed") or breaks, kParse for a frame that is not ours.
Status ReadFrame(int socket, std::chrono::steady_clock::time_point deadline, Frame* frame);

}  // namespace alpa
