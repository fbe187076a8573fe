#include "exec/comm/socket_frames.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace alpa {

namespace {

constexpr size_t kHeaderBytes = 12;

int MillisecondsUntil(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1000 * 1000 ? 1000 * 1000 : static_cast<int>(left.count());
}

// Reads exactly `bytes` bytes.
Status ReadExactly(int socket, std::chrono::steady_clock::time_point deadline, char* into,
                   size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    pollfd entry{socket, POLLIN, 0};
    const int ready = poll(&entry, 1, MillisecondsUntil(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return IoError(std::string("poll: ") + std::strerror(errno));
    if (ready == 0) return Status(StatusCode::kTimeout, "no frame before the deadline");
    const ssize_t got = recv(socket, into + done, bytes - done, 0);
    if (got == 0) return IoError("connection closed");
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return IoError(std::string("recv: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

void PutWord(uint32_t value, char* at) {
  const uint32_t network = htonl(value);
  std::memcpy(at, &network, sizeof(network));
}

uint32_t GetWord(const char* at) {
  uint32_t network = 0;
  std::memcpy(&network, at, sizeof(network));
  return ntohl(network);
}

}  // namespace

Status WriteFrame(int socket, const Frame& frame) {
  if (frame.payload.size() > kMaxFramePayload) {
    return InvalidArgument("frame payload of " + std::to_string(frame.payload.size()) +
                           " bytes is above the limit " + std::to_string(kMaxFramePayload));
  }
  std::string bytes(kHeaderBytes, '\0');
  PutWord(static_cast<uint32_t>(frame.type), &bytes[0]);
  PutWord(static_cast<uint32_t>(frame.rank), &bytes[4]);
  PutWord(static_cast<uint32_t>(frame.payload.size()), &bytes[8]);
  bytes += frame.payload;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t sent = send(socket, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return IoError(std::string("send: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(sent);
  }
  return Status::Ok();
}

Status ReadFrame(int socket, std::chrono::steady_clock::time_point deadline, Frame* frame) {
  char header[kHeaderBytes];
  ALPA_RETURN_IF_ERROR(ReadExactly(socket, deadline, header, kHeaderBytes));
  const uint32_t type = GetWord(header);
  const uint32_t length = GetWord(header + 8);
  if (type < static_cast<uint32_t>(FrameType::kHello) ||
      type > static_cast<uint32_t>(FrameType::kGoodbye) || length > kMaxFramePayload) {
    return ParseError("not a rendezvous frame (type " + std::to_string(type) + ", length " +
                      std::to_string(length) + ")");
  }
  frame->type = static_cast<FrameType>(type);
  frame->rank = static_cast<int32_t>(GetWord(header + 4));
  frame->payload.assign(length, '\0');
  if (length > 0) ALPA_RETURN_IF_ERROR(ReadExactly(socket, deadline, &frame->payload[0], length));
  return Status::Ok();
}

}  // namespace alpa
